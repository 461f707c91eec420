"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint, over httpx.

Errors are classified so the dispatcher can retry what is transient and record what is not:
429 → rate_limit (with Retry-After), 5xx → server, client/read timeouts → timeout, refused or reset
connections → connection, a 200 whose body is not a chat completion (HTML error pages, broken
JSON, no choices) → malformed, ``finish_reason == "length"`` → truncated.

The client keeps httpx's API but, when ``httpx-aiohttp`` is installed, sends through aiohttp's
transport: httpx's own pool costs several times more CPU per call at high concurrency (measured
in ``benchmarks/dispatch.py``), which on a small machine caps calls/s below what a fast local
server answers. aiohttp errors arrive mapped to httpx exceptions; the mapping calls a dropped
connection a ``ConnectTimeout``, so ``_classify`` looks at the cause to keep ``connection``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, EngineError, Request, engine_kind


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            import time

            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _aiohttp_transport(limits: httpx.Limits) -> httpx.AsyncBaseTransport | None:
    try:
        from httpx_aiohttp import AiohttpTransport
    except ImportError:  # optional speed-up; plain httpx is correct, only slower
        return None
    return AiohttpTransport(limits=limits)


def _classify(e: Exception, timeout_s: float) -> EngineError:
    """A transport failure → ``timeout`` or ``connection`` (whatever library raised it)."""
    cause = e.__cause__ if isinstance(e, httpx.HTTPError) and e.__cause__ is not None else e
    # httpx's own timeouts wrap httpcore's (not TimeoutError subclasses); httpx-aiohttp wraps
    # a dropped connection in ConnectTimeout too, so an aiohttp non-timeout cause is a connection.
    is_timeout = isinstance(cause, TimeoutError | asyncio.TimeoutError) or (
        isinstance(e, httpx.TimeoutException) and not _is_aiohttp_error(cause)
    )
    if is_timeout:
        return EngineError("timeout", f"{type(cause).__name__} after {timeout_s}s")
    return EngineError("connection", f"{type(cause).__name__}: {cause}")


def _is_aiohttp_error(e: BaseException) -> bool:
    try:
        import aiohttp
    except ImportError:
        return False
    return isinstance(e, aiohttp.ClientError)


def parse_completion(body: Any) -> Completion:
    """Validate a chat.completion body; anything else is ``malformed``."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise EngineError("malformed", "response is not a chat completion", response={"raw": body})
    if not body["choices"]:
        raise EngineError("malformed", "response has no choices", response=body)
    choice = body["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise EngineError("malformed", "choice has no message", response=body)
    text = message.get("content") or ""
    if not isinstance(text, str):
        raise EngineError("malformed", "message content is not text", response=body)
    usage = body.get("usage") or {}
    finish = str(choice.get("finish_reason") or "")
    comp = Completion(
        output_text=text,
        response=body,
        tokens_in=int(usage.get("prompt_tokens") or 0),
        tokens_out=int(usage.get("completion_tokens") or 0),
        finish_reason=finish,
        message=message,
    )
    if finish == "length":
        raise EngineError("truncated", "output hit max_tokens", response=body, output_text=text)
    return comp


@engine_kind("openai_chat")
class OpenAIChatEngine:
    """Engine for any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, ...)."""

    def __init__(self, config: EngineConfig, **_: Any) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self._client: httpx.AsyncClient | None = None

    @property
    def model(self) -> str:
        return self.config.model

    def identity(self) -> dict[str, Any]:
        return self.config.public()

    async def start(self) -> None:
        headers = {"content-type": "application/json"}
        key = self.config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        limits = httpx.Limits(
            max_connections=self.config.concurrency,
            max_keepalive_connections=self.config.concurrency,
        )
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(self.config.timeout_s, connect=min(10.0, self.config.timeout_s)),
            limits=limits,
            transport=_aiohttp_transport(limits),
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def payload(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": list(request.messages)}
        body.update(request.params)
        if request.tools:
            body["tools"] = list(request.tools)
        return body

    async def complete(self, request: Request) -> Completion:
        if self._client is None:
            await self.start()
        assert self._client is not None
        try:
            resp = await self._client.post("/chat/completions", json=self.payload(request))
        except (TimeoutError, httpx.TransportError, httpx.RemoteProtocolError) as e:
            raise _classify(e, self.config.timeout_s) from e
        except Exception as e:
            if _is_aiohttp_error(e):  # not in httpx-aiohttp's map (e.g. a garbled response)
                raise _classify(e, self.config.timeout_s) from e
            raise
        if resp.status_code == 429:
            raise EngineError(
                "rate_limit",
                "HTTP 429",
                retry_after=_retry_after(resp.headers),
                response={"status": 429, "text": resp.text[:2000]},
            )
        if resp.status_code >= 500:
            raise EngineError(
                "server",
                f"HTTP {resp.status_code}",
                retry_after=_retry_after(resp.headers),
                response={"status": resp.status_code, "text": resp.text[:2000]},
            )
        if resp.status_code >= 400:
            raise EngineError(
                "refused",
                f"HTTP {resp.status_code}: {resp.text[:200]}",
                response={"status": resp.status_code, "text": resp.text[:2000]},
            )
        try:
            body = json.loads(resp.content)
        except ValueError:
            ctype = resp.headers.get("content-type", "")
            raise EngineError(
                "malformed",
                f"HTTP 200 with a body that is not JSON ({ctype or 'no content-type'})",
                response={"status": 200, "text": resp.text[:2000]},
            ) from None
        return parse_completion(body)
