"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint, over HTTP/1.1 (``engines.http1``),
aiohttp or httpx.

Errors are classified so the dispatcher can retry what is transient and record what is not:
429 → rate_limit (with Retry-After), 5xx → server, client/read timeouts → timeout, refused or reset
connections → connection (the rules every HTTP kind shares, ``engines.http``); a 200 whose body
is not a chat completion (HTML error pages, broken JSON, no choices) → malformed,
``finish_reason == "length"`` → truncated.

Why aiohttp directly: on a small machine the HTTP client's per-call CPU caps calls/s against a
fast local server. Measured with ``benchmarks/dispatch.py`` (2 cores, 10,000 calls, 64
concurrent): bare aiohttp answers about 3× more calls/s than httpx with the ``httpx-aiohttp``
transport, and about 4× more than plain httpx, whose pool also opens too few connections at
high concurrency (encode/httpx#3215). httpx's request/response objects cost more than aiohttp's
whole round trip, so keeping httpx's API on aiohttp's transport does not close the gap. Plain
httpx stays as the fallback when aiohttp is not importable (``USE_AIOHTTP``). On ``http://``
URLs (local and LAN servers, where calls are fast enough for this to matter) chat calls go
through ``engines.http1``, about 3× aiohttp's calls/s again; ``https://`` stays on aiohttp.
The ``http_client`` option picks one by hand. Every path classifies every failure the same way
(``tests/engines`` runs each test over each).
"""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import orjson

from sealedeval.canonical import compact
from sealedeval.config_types import EngineConfig
from sealedeval.engines import batch as batchapi
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind
from sealedeval.engines.http import TEXT_KEPT, status_error, transport_error
from sealedeval.engines.http1 import Http1Pool

if TYPE_CHECKING:
    import aiohttp
    import httpx

# Set False to send through plain httpx (the tests do, to cover the fallback).
USE_AIOHTTP = True
# Set False to send ``http://`` chat calls through aiohttp too (the tests do, to cover it).
USE_HTTP1 = True


def _have_aiohttp() -> bool:
    if not USE_AIOHTTP:
        return False
    try:
        import aiohttp  # noqa: F401
    except ImportError:  # optional speed-up; plain httpx is correct, only slower
        return False
    return True


def _loads(content: bytes) -> Any:
    """Parse a response body: orjson (~4x faster), the stdlib where orjson refuses valid JSON
    it cannot represent (integers beyond 64 bits); ``ValueError`` if neither can parse it."""
    try:
        return orjson.loads(content)
    except ValueError:
        return json.loads(content)


_encode_body = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""The compact encoding httpx's ``json=`` sends; key order kept."""


def _same_as_stdlib(obj: Any) -> bool:
    """Whether orjson writes ``obj`` exactly as ``_encode_body`` does (key order kept).

    A chat call's params are a handful of ints, strings and small floats; the stdlib encoder
    spent more time setting itself up for them than encoding. orjson differs on non-finite
    floats (``null`` instead of an error), on floats written with an exponent by either
    library, on integers beyond 64 bits and on anything not a builtin JSON type; those trees
    take the stdlib path."""
    t = type(obj)
    if t is str or t is bool or obj is None:
        return True
    if t is int:
        return bool(-(2**63) <= obj < 2**64)
    if t is float:
        return bool(obj == 0 or 1e-4 <= abs(obj) < 1e15)
    if t is dict:
        return all(type(k) is str and _same_as_stdlib(v) for k, v in obj.items())
    if t is list or t is tuple:
        return all(_same_as_stdlib(v) for v in obj)
    return False


def _encode_params(obj: dict[str, Any]) -> bytes:
    """``_encode_body(obj).encode()``, through orjson when its bytes are the same."""
    if _same_as_stdlib(obj):
        try:
            return orjson.dumps(obj)
        except TypeError:  # a lone surrogate, deep nesting: the stdlib's answer
            pass
    return _encode_body(obj).encode()


_FLOAT_LITERAL = re.compile(rb"\d[.eE]")


def _canonical_response(content: bytes, body: Any) -> str:
    """``compact(body)``, cheaply when the bytes hold no float.

    Every JSON float literal has a digit followed by ``.``, ``e`` or ``E``; without one
    anywhere in the body (digits inside strings only cause false alarms) the parsed tree is
    strings, ints, bools and None, which orjson writes exactly as ``compact`` does. With one,
    or a value orjson refuses (a 65-bit int, a lone surrogate), ``compact`` itself runs.
    """
    if _FLOAT_LITERAL.search(content) is None:
        try:
            return str(orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode())
        except TypeError:
            pass
    return compact(body)


class _Reply(NamedTuple):
    """What the engine needs of an HTTP response, whichever client fetched it."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


def parse_completion(body: Any, response_json: str = "") -> Completion:
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
        response_json=response_json,
    )
    if finish == "length":
        raise EngineError("truncated", "output hit max_tokens", response=body, output_text=text)
    return comp


BATCH_ENDPOINT: Final = "/v1/chat/completions"
BATCH_WINDOW: Final = "24h"
"""The one completion window the Batch API offers."""
OPENAI_ENDED: Final = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch statuses after which nothing changes (``validating``, ``in_progress``,
``finalizing``, ``cancelling`` are on the way)."""
OPENAI_MISSING: Final = {
    "expired": batchapi.EXPIRED,
    "cancelled": batchapi.CANCELLED,
    "failed": "refused",
}
"""The error kind of a request an ended batch returned no line for, by the batch's status (a
failed batch did not pass validation: asking again would fail again)."""
OPENAI_LINE_ERRORS: Final = {
    "batch_expired": batchapi.EXPIRED,
    "batch_cancelled": batchapi.CANCELLED,
}


def openai_line_outcome(line: Mapping[str, Any]) -> batchapi.Outcome:
    """One output- or error-file line → the completion, or the error a live call would have
    raised for the same status and body (``response.status_code``), or for a line without a
    response its ``error.code`` (``batch_expired`` → expired, other codes → refused)."""
    resp = line.get("response")
    if isinstance(resp, dict) and isinstance(resp.get("status_code"), int):
        status, body = int(resp["status_code"]), resp.get("body")
        if status >= 400:
            text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            return status_error(status, {}, text)
        try:
            return parse_completion(body, compact(body) if isinstance(body, dict) else "")
        except EngineError as e:
            return e
    raw_err = line.get("error")
    err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
    code = str(err.get("code") or "")
    message = str(err.get("message") or "no response and no error in the batch's line")
    return EngineError(
        OPENAI_LINE_ERRORS.get(code, "refused"), f"batch: {code}: {message}"[:500], response=err
    )


def batch_identity(cfg: EngineConfig) -> dict[str, Any]:
    return {"batch": True} if cfg.extra.get("batch") else {}


@engine_kind("openai_chat", Capabilities(json_schema=True, seeds=True))
class OpenAIChatEngine:
    """Engine for any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, ...)."""

    def __init__(self, config: EngineConfig, **_: Any) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self._url = self.base_url + "/chat/completions"
        self._session: aiohttp.ClientSession | None = None
        self._client: httpx.AsyncClient | None = None
        self._pool: Http1Pool | None = None
        self._http_client = str(config.extra.get("http_client", "auto"))
        self._transport_errors: tuple[type[BaseException], ...] = (TimeoutError, OSError)

    @property
    def model(self) -> str:
        return self.config.model

    def identity(self) -> dict[str, Any]:
        """The public config, and ``batch: true`` when answers come from the batch API (the
        rows say how they were asked; a live engine's identity is unchanged)."""
        return self.config.public() | batch_identity(self.config)

    def _headers(self) -> dict[str, str]:
        """The headers every call sends (kinds on the same transport add their own auth)."""
        headers = {"content-type": "application/json"}
        key = self.config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    @property
    def _started(self) -> bool:
        return self._pool is not None or self._session is not None or self._client is not None

    async def start(self) -> None:
        """The chat calls' client: ``engines.http1`` for an ``http://`` URL under
        ``http_client: auto``, else aiohttp (httpx without it). The batch protocol's client is
        opened when a batch first needs it (``_call``): an aiohttp session costs ~30 ms of
        certificate loading that a run of chat calls over http1 never uses."""
        t = self.config.timeout_s
        if self._http_client == "auto" and USE_HTTP1 and self._url.startswith("http://"):
            self._pool = Http1Pool(
                self._url,
                self._headers(),
                limit=self.config.concurrency,
                connect_timeout=min(10.0, t),
                read_timeout=t,
            )
            return
        self._open_client()

    def _open_client(self) -> None:
        """The aiohttp session (or httpx client) that calls other than chat calls go through."""
        headers = self._headers()
        t = self.config.timeout_s
        conc = self.config.concurrency
        if self._http_client != "httpx" and _have_aiohttp():
            import aiohttp

            self._transport_errors = (TimeoutError, aiohttp.ClientError, OSError)
            # sock_read/sock_connect match httpx's per-operation read/connect timeouts (a long
            # generation is fine as long as bytes keep coming); ``connect`` also bounds the wait
            # for a pooled connection, like httpx's pool timeout.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=conc, limit_per_host=0),
                headers=headers,
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=t, sock_connect=min(10.0, t), sock_read=t
                ),
                auto_decompress=True,
            )
            return
        import httpx

        limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(t, connect=min(10.0, t)),
            limits=limits,
        )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def payload(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": list(request.messages)}
        body.update(request.params)
        if request.tools:
            body["tools"] = list(request.tools)
        return body

    def body(self, request: Request) -> bytes:
        """The POST body: ``payload`` as compact JSON, the messages spliced in pre-encoded.

        ``Request.messages_json`` is already encoded for the request key and the raw row; for a
        4 KB prompt, encoding it a third time was the largest part of building a call. Only the
        messages come canonical (a chat message's field order means nothing to a server); the
        model, params and tools keep their order, because order does mean something there: a
        ``response_format`` JSON schema's property order is the order a constrained decoder
        (llama.cpp's grammar, OpenAI's structured outputs) writes the fields in. A ``messages``
        key in the params would collide, so that (never used) case takes the plain path.
        """
        rest: dict[str, Any] = {"model": self.config.model}
        rest.update(request.params)
        if request.tools:
            rest["tools"] = list(request.tools)
        if "messages" in rest:
            return _encode_body(self.payload(request)).encode()
        return b'{"messages":' + request.messages_json.encode() + b"," + _encode_params(rest)[1:]

    async def _post(self, data: bytes) -> _Reply:
        """One POST; transport failures are classified here, HTTP statuses by the caller."""
        if self._pool is not None:
            try:
                status, headers, content = await self._pool.post(data)
            except (TimeoutError, OSError) as e:
                raise transport_error(e, self.config.timeout_s) from e
            return _Reply(status, headers, content)
        if self._session is not None:
            try:
                async with self._session.post(self._url, data=data) as r:
                    return _Reply(r.status, r.headers, await r.read())
            except self._transport_errors as e:
                raise transport_error(e, self.config.timeout_s) from e
        import httpx

        assert self._client is not None
        try:
            resp = await self._client.post(self._url, content=data)
        except (TimeoutError, httpx.TransportError) as e:
            raise transport_error(e, self.config.timeout_s) from e
        return _Reply(resp.status_code, resp.headers, resp.content)

    async def _call(
        self,
        method: str,
        url: str,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> _Reply:
        """One request of the batch protocol (upload, create, poll, download) on the engine's
        transport; transport failures classified like a chat call's, statuses by the caller."""
        if self._session is None and self._client is None:
            self._open_client()
        if self._session is not None:
            try:
                async with self._session.request(method, url, data=data, headers=headers) as r:
                    return _Reply(r.status, r.headers, await r.read())
            except self._transport_errors as e:
                raise transport_error(e, self.config.timeout_s) from e
        import httpx

        assert self._client is not None
        try:
            resp = await self._client.request(method, url, content=data, headers=headers)
        except (TimeoutError, httpx.TransportError) as e:
            raise transport_error(e, self.config.timeout_s) from e
        return _Reply(resp.status_code, resp.headers, resp.content)

    async def _json(
        self,
        method: str,
        url: str,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """``_call`` whose answer must be a JSON object (an error status or anything else is
        the classified error)."""
        resp = await self._call(method, url, data, headers)
        if resp.status >= 400:
            raise self.batch_status_error(resp)
        try:
            doc = _loads(resp.content)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise EngineError(
                "malformed",
                f"{method} {url}: HTTP {resp.status} with a body that is not a JSON object",
                response={"status": resp.status, "text": resp.text[:TEXT_KEPT]},
            )
        return doc

    def batch_status_error(self, resp: _Reply) -> EngineError:
        return status_error(resp.status, resp.headers, resp.text)

    # -- the Batch API (https://platform.openai.com/docs/guides/batch) -------------------

    def batch_options(self) -> batchapi.BatchOptions:
        return batchapi.batch_options(
            self.config,
            batchapi.BatchLimits(batchapi.OPENAI_MAX_REQUESTS, batchapi.OPENAI_MAX_BYTES),
        )

    def batch_line(self, request: Request) -> batchapi.BatchLine:
        """``{"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": ...}``
        with the very body a live call would POST."""
        head = _encode_body(
            {"custom_id": request.request_key, "method": "POST", "url": BATCH_ENDPOINT}
        )
        return batchapi.BatchLine(
            request.request_key, (head[:-1] + ',"body":').encode() + self.body(request) + b"}\n"
        )

    async def batch_submit(self, lines: Sequence[batchapi.BatchLine], token: str) -> str:
        """Upload the lines as a JSONL file (``purpose: batch``) named after the submission's
        token, then create the batch with the token in its ``metadata`` (``TOKEN_KEY``), which
        ``batch_find`` looks for when the create's answer was lost."""
        boundary = f"sealedeval-{uuid.uuid4().hex}"
        data = b"".join(
            [
                f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
                f"batch\r\n--{boundary}\r\n"
                'Content-Disposition: form-data; name="file"; '
                f'filename="sealedeval-{token}.jsonl"\r\n'
                "Content-Type: application/jsonl\r\n\r\n".encode(),
                *(line.data for line in lines),
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        up = await self._json(
            "POST",
            self.base_url + "/files",
            data,
            {"content-type": f"multipart/form-data; boundary={boundary}"},
        )
        body = {
            "input_file_id": str(up.get("id", "")),
            "endpoint": BATCH_ENDPOINT,
            "completion_window": BATCH_WINDOW,
            "metadata": {batchapi.TOKEN_KEY: token},
        }
        made = await self._json("POST", self.base_url + "/batches", _encode_body(body).encode())
        if not made.get("id"):
            raise EngineError("malformed", "POST /batches: no batch id", response=made)
        return str(made["id"])

    async def _batch_page(self, after: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """One page of ``GET /batches`` (newest first), after the cursor ``after``."""
        query = f"?limit={limit}" + (f"&after={urllib.parse.quote(after)}" if after else "")
        doc = await self._json("GET", f"{self.base_url}/batches{query}")
        return batchapi.list_page(doc, "GET /batches")

    async def batch_mark(self) -> str:
        data, _ = await self._batch_page("", 1)
        return str(data[0]["id"]) if data else ""

    async def batch_find(self, token: str, count: int, mark: str) -> list[batchapi.Found]:
        """The batches since ``mark`` whose metadata holds ``token``: certainly the submission.
        One that ended ``failed`` (validation), ``cancelled`` or ``expired`` with no output file
        has no answer to give: it is reported unusable and the requests go in a new batch."""
        out = []
        for doc in await batchapi.look_back(self._batch_page, mark):
            meta = doc.get("metadata")
            if isinstance(meta, dict) and meta.get(batchapi.TOKEN_KEY) == token:
                st = self._batch_status(str(doc["id"]), doc)
                dead = st.state in ("failed", "cancelled", "expired") and not doc.get(
                    "output_file_id"
                )
                out.append(batchapi.Found(st, "token", usable=not dead))
        return out

    async def batch_poll(self, batch_id: str) -> batchapi.BatchStatus:
        return self._batch_status(
            batch_id, await self._json("GET", f"{self.base_url}/batches/{batch_id}")
        )

    def _batch_status(self, batch_id: str, doc: Mapping[str, Any]) -> batchapi.BatchStatus:
        state = str(doc.get("status") or "")
        counts = doc.get("request_counts") or {}
        errors = (doc.get("errors") or {}).get("data") or []
        said = "; ".join(
            f"{e.get('code')}: {e.get('message')}"
            + (f" (line {e['line']})" if e.get("line") else "")
            for e in errors
            if isinstance(e, dict)
        )
        refs = tuple(str(doc[f]) for f in ("output_file_id", "error_file_id") if doc.get(f))
        return batchapi.BatchStatus(
            id=batch_id,
            state=state,
            ended=state in OPENAI_ENDED,
            done=int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
            total=int(counts.get("total") or 0),
            failed=int(counts.get("failed") or 0),
            error=f"batch {batch_id} {state}: {said or 'no reason given'}"
            if state == "failed"
            else "",
            kind_if_missing=OPENAI_MISSING.get(state, "server"),
            refs=refs,
        )

    async def batch_results(
        self, status: batchapi.BatchStatus, requests: dict[str, Request]
    ) -> dict[str, batchapi.Outcome]:
        """The output file's and the error file's lines, by ``custom_id``."""
        out: dict[str, batchapi.Outcome] = {}
        for file_id in status.refs:
            resp = await self._call("GET", f"{self.base_url}/files/{file_id}/content")
            if resp.status >= 400:
                raise self.batch_status_error(resp)
            for n, raw in enumerate(resp.content.splitlines(), 1):
                if not raw.strip():
                    continue
                try:
                    line = _loads(raw)
                except ValueError:
                    line = None
                if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                    raise EngineError(
                        "malformed",
                        f"batch {status.id}: file {file_id} line {n} is not a result line",
                        response={"text": raw[:TEXT_KEPT].decode("utf-8", "replace")},
                    )
                key = line["custom_id"]
                if key in requests:
                    out[key] = openai_line_outcome(line)
        return out

    async def complete(self, request: Request) -> Completion:
        if not self._started:
            await self.start()
        resp = await self._post(self.body(request))
        if resp.status >= 400:  # (the body is decoded as text only for an error)
            raise status_error(resp.status, resp.headers, resp.text)
        try:
            body = _loads(resp.content)
        except ValueError:
            ctype = resp.headers.get("content-type", "")
            raise EngineError(
                "malformed",
                f"HTTP 200 with a body that is not JSON ({ctype or 'no content-type'})",
                response={"status": 200, "text": resp.text[:2000]},
            ) from None
        return parse_completion(body, _canonical_response(resp.content, body))
