"""Any OpenAI-compatible ``/v1/chat/completions`` endpoint, over aiohttp (httpx as fallback).

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
httpx stays as the fallback when aiohttp is not importable (``USE_AIOHTTP``), and both paths
classify every failure the same way (``tests/engines`` runs each test over both).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from sealedeval.canonical import compact
from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind
from sealedeval.engines.http import status_error, transport_error

if TYPE_CHECKING:
    import aiohttp
    import httpx

# Set False to send through plain httpx (the tests do, to cover the fallback).
USE_AIOHTTP = True


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


@engine_kind("openai_chat", Capabilities(json_schema=True, seeds=True))
class OpenAIChatEngine:
    """Engine for any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, ...)."""

    def __init__(self, config: EngineConfig, **_: Any) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self._url = self.base_url + "/chat/completions"
        self._session: aiohttp.ClientSession | None = None
        self._client: httpx.AsyncClient | None = None
        self._transport_errors: tuple[type[BaseException], ...] = (TimeoutError, OSError)

    @property
    def model(self) -> str:
        return self.config.model

    def identity(self) -> dict[str, Any]:
        return self.config.public()

    def _headers(self) -> dict[str, str]:
        """The headers every call sends (kinds on the same transport add their own auth)."""
        headers = {"content-type": "application/json"}
        key = self.config.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    async def start(self) -> None:
        headers = self._headers()
        t = self.config.timeout_s
        conc = self.config.concurrency
        if _have_aiohttp():
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
        return ('{"messages":' + request.messages_json + "," + _encode_body(rest)[1:]).encode()

    async def _post(self, data: bytes) -> _Reply:
        """One POST; transport failures are classified here, HTTP statuses by the caller."""
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

    async def complete(self, request: Request) -> Completion:
        if self._session is None and self._client is None:
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
