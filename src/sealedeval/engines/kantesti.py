"""The ``kantesti`` engine: a PDF lab report (the request's attachment), posted as multipart.

Protocol (as the published V11 harness used it): ``POST {base_url}{endpoint}`` with
``multipart/form-data`` fields ``file`` (the PDF, ``application/pdf``), ``username``,
``password`` and ``language``. A good answer is JSON ``{"status": "success", "data":
{"interpretation" | "sections": [...], "parameters": [...], "metadata": {...}}, "api_version",
"timestamp"}`` whose sections have the V11 shape ``{title, shortcode, subsections: [{subtitle,
shortcode, items: [{item}]}]}``. ``output_text`` is ``{"sections": [...]}`` as JSON, which the
bloodpanel rubric reads.

Two phases, path recorded in the raw row (``engine_path``):

* **primary** — up to ``primary_tries`` (2) calls with a ``primary_timeout_s`` (25 s) timeout;
  a timeout, connection failure, 429 or 5xx waits ``phase_backoff_s · 2^(try-1)`` (honouring a
  Retry-After) and tries again; a malformed or non-success body ends the phase.
* **fallback** ("Phase 2") — one call with ``fallback_timeout_s`` (120 s).

401/403 (bad credentials) and other 4xx end the call at once as ``refused``: a fallback would
send the same credentials and spend a credit for nothing. When both phases fail the last error
is raised, classified like every engine's (rate_limit, server, timeout, connection, malformed).
The engine retries internally, so configure it with ``max_retries: 0`` unless the dispatcher
should repeat the whole two-phase call.

What is sent: the request's first attachment (``Request.attachments[0]``, a PDF), which the suite
renders for engines whose capabilities say ``input_pdf`` (bloodpanel: ``suites.bloodpanel.pdf``,
which also says what the PDF holds); the engine renders nothing itself and knows no suite. A
request without one is ``refused`` (final: the same request would be refused again). The
messages and params are not sent.

Secrets: username and password are read from the environment variables named by
``username_env`` / ``password_env`` (default ``KANTESTI_USERNAME`` / ``KANTESTI_PASSWORD``) when
the engine starts; only the variable names reach ``identity()``, and any echo of either value in
a response or error message is replaced by ``***`` before it can reach a raw row.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import TYPE_CHECKING, Any, Final

from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import (
    Attachment,
    Capabilities,
    Completion,
    EngineError,
    Request,
    engine_kind,
)
from sealedeval.engines.http import TEXT_KEPT, status_error, transport_error
from sealedeval.errors import UserError

if TYPE_CHECKING:
    import httpx

DEFAULT_ENDPOINT: Final = "/api/v11/01-06-2025/analyze"
TRANSIENT: Final = frozenset({"timeout", "connection", "rate_limit", "server"})
PDF: Final = "application/pdf"


class _Secrets:
    """Credentials held in memory only; ``scrub`` removes them from anything stored."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self.password = password

    def scrub_text(self, text: str) -> str:
        for s in (self.password, self.username):
            if s and len(s) >= 3:
                text = text.replace(s, "***")
        return text

    def scrub(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.scrub_text(obj)
        if isinstance(obj, dict):
            return {self.scrub_text(str(k)): self.scrub(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.scrub(v) for v in obj]
        return obj


@engine_kind("kantesti", Capabilities(chat=False, input_pdf=True))
class KantestiEngine:
    """PDF upload to the Kantesti blood-test analysis API, primary path then one fallback."""

    def __init__(self, config: EngineConfig, **_: Any) -> None:
        if not config.base_url:
            raise UserError(f"engine {config.name!r}: kantesti needs base_url")
        self.config = config
        x = config.extra
        self.endpoint = str(x.get("endpoint", DEFAULT_ENDPOINT))
        self.username_env = str(x.get("username_env", "KANTESTI_USERNAME"))
        self.password_env = str(x.get("password_env", "KANTESTI_PASSWORD"))
        self.language = str(x.get("language", "en"))
        self.primary_timeout_s = float(x.get("primary_timeout_s", 25.0))
        self.primary_tries = int(x.get("primary_tries", 2))
        self.fallback_timeout_s = float(x.get("fallback_timeout_s", 120.0))
        self.backoff_s = float(x.get("phase_backoff_s", 2.0))
        self._client: httpx.AsyncClient | None = None
        self._secrets: _Secrets | None = None

    @property
    def model(self) -> str:
        return self.config.model or "kantesti"

    def identity(self) -> dict[str, Any]:
        return self.config.public() | {
            "model": self.model,
            "endpoint": self.endpoint,
            "language": self.language,
            "username_env": self.username_env,
            "password_env": self.password_env,
            "primary_timeout_s": self.primary_timeout_s,
            "primary_tries": self.primary_tries,
            "fallback_timeout_s": self.fallback_timeout_s,
        }

    def _credentials(self) -> _Secrets:
        values = []
        for var in (self.username_env, self.password_env):
            v = os.environ.get(var)
            if not v:
                raise UserError(
                    f"engine {self.config.name!r}: environment variable {var} is not set"
                )
            values.append(v)
        return _Secrets(values[0], values[1])

    async def start(self) -> None:
        import httpx  # lazily: every `sealedeval run` builds its engine through this registry

        self._secrets = self._credentials()
        limits = httpx.Limits(
            max_connections=self.config.concurrency,
            max_keepalive_connections=self.config.concurrency,
        )
        self._client = httpx.AsyncClient(base_url=self.config.base_url.rstrip("/"), limits=limits)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _post(self, pdf: Attachment, timeout_s: float) -> dict[str, Any]:
        """One upload; returns the success body or raises a classified EngineError."""
        assert self._client is not None and self._secrets is not None
        import httpx

        s = self._secrets
        data = {"username": s.username, "password": s.password, "language": self.language}
        files = {"file": (pdf.filename, pdf.data, pdf.media_type)}
        timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        try:
            resp = await self._client.post(self.endpoint, data=data, files=files, timeout=timeout)
        except httpx.TransportError as e:
            err = transport_error(e, timeout_s)
            raise EngineError(err.kind, s.scrub_text(str(err))) from None
        text = s.scrub_text(resp.text[:TEXT_KEPT])
        info = {"status": resp.status_code, "text": text}
        if resp.status_code >= 400:
            raise status_error(resp.status_code, resp.headers, text)
        try:
            body = json.loads(resp.content)
        except ValueError:
            raise EngineError(
                "malformed", "HTTP 200 with a body that is not JSON", response=info
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise EngineError("malformed", "API returned a non-success payload", response=info)
        data_block = body.get("data")
        sections = None
        if isinstance(data_block, dict):
            sections = data_block.get("interpretation") or data_block.get("sections")
        if not isinstance(sections, list) or not sections:
            raise EngineError(
                "malformed", "API response has no interpretation sections", response=info
            )
        scrubbed: dict[str, Any] = s.scrub(body)
        return scrubbed

    async def complete(self, request: Request) -> Completion:
        if self._client is None:
            await self.start()
        if not request.attachments or request.attachments[0].media_type != PDF:
            raise EngineError(
                "refused",
                "kantesti engine needs a PDF as the request's first attachment "
                "(Request.attachments); suites attach one for engines with input_pdf",
            )
        pdf = request.attachments[0]
        phases: list[dict[str, Any]] = []
        last: EngineError | None = None

        async def attempt(phase: str, n: int, timeout_s: float) -> dict[str, Any] | None:
            nonlocal last
            t0 = time.perf_counter()
            try:
                body = await self._post(pdf, timeout_s)
            except EngineError as e:
                phases.append(
                    {
                        "phase": phase,
                        "try": n,
                        "outcome": e.kind,
                        "elapsed_s": round(time.perf_counter() - t0, 3),
                    }
                )
                last = e
                return None
            phases.append(
                {
                    "phase": phase,
                    "try": n,
                    "outcome": "ok",
                    "elapsed_s": round(time.perf_counter() - t0, 3),
                }
            )
            return body

        body: dict[str, Any] | None = None
        path = "primary"
        for n in range(1, self.primary_tries + 1):
            body = await attempt("primary", n, self.primary_timeout_s)
            if body is not None or last is None:
                break
            if last.kind == "refused":
                raise EngineError(
                    "refused", str(last), response={"phases": phases, **last.response}
                )
            if last.kind not in TRANSIENT:
                break
            if n < self.primary_tries:
                wait = self.backoff_s * 2 ** (n - 1)
                if last.retry_after is not None:
                    wait = max(wait, min(last.retry_after, self.fallback_timeout_s))
                await asyncio.sleep(wait)
        if body is None:
            path = "fallback"
            body = await attempt("fallback", 1, self.fallback_timeout_s)
        if body is None:
            assert last is not None
            raise EngineError(
                last.kind,
                f"both phases failed; last: {last}",
                retry_after=last.retry_after,
                response={"phases": phases, **last.response},
            )
        data_block = body.get("data") or {}
        sections = data_block.get("interpretation") or data_block.get("sections") or []
        text = json.dumps({"sections": sections}, ensure_ascii=False)
        return Completion(
            output_text=text,
            response={"body": body, "phases": phases, "pdf_bytes": len(pdf.data)},
            engine_path=path,
            message={"role": "assistant", "content": text},
        )
