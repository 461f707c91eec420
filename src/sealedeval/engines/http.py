"""What every HTTP engine kind shares: Retry-After, and how a failed exchange is classified.

The dispatcher retries by ``EngineError.kind`` (``base.RETRYABLE``), so every kind must name the
same failure the same way, whichever HTTP client it uses:

- an HTTP status (``status_error``): 429 → ``rate_limit`` and 5xx → ``server`` (both with the
  server's Retry-After, if usable), any other 4xx → ``refused`` (the same request would be
  refused again: bad credentials, a bad request);
- a transport failure (``transport_error``): a client, connect or read timeout → ``timeout``;
  anything else that broke the exchange (refused, reset, a garbled response) → ``connection``,
  with ``EngineError.unreachable`` set when no exchange could even start (connection refused,
  host name not resolved, TLS failure: ``unreachable_reason``).

``engine_unusable`` names the failures that say the engine *as configured* cannot answer any
request (unreachable, or HTTP 401 / 403 / 404): the dispatcher's circuit breaker
(``run.retry.CircuitBreaker``) stops an engine whose first calls all fail that way.

What a 2xx body must look like is each kind's own business (``malformed`` when it does not).
Nothing here imports an HTTP client: httpx is recognised only if something already imported it.
"""

from __future__ import annotations

import errno
import socket
import ssl
import sys
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Final

from sealedeval.engines.base import EngineError

TEXT_KEPT: Final = 2000
"""Characters of an error body kept in ``EngineError.response`` (and so in the raw row)."""
TEXT_IN_MESSAGE: Final = 200
"""Characters of an error body quoted in a ``refused`` error's message."""


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The Retry-After header in seconds (delta-seconds or an HTTP-date, RFC 9110 §10.2.3).

    A date in the past is 0; a missing or unparseable header is None (no hint), never an
    exception: the dispatcher then falls back on its own backoff.
    """
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def status_error(status: int, headers: Mapping[str, str], text: str) -> EngineError:
    """The classified error of an HTTP error status (400 and above).

    ``text`` is the response body as text (already scrubbed of anything secret by the caller);
    the first ``TEXT_KEPT`` characters go into ``response`` beside the status. Callers test the
    status first, so a success never pays for decoding its body as text.

    Raises:
        ValueError: ``status`` is not an error status.
    """
    if status < 400:
        raise ValueError(f"HTTP {status} is not an error status")
    info = {"status": status, "text": text[:TEXT_KEPT]}
    if status == 429:
        return EngineError(
            "rate_limit", "HTTP 429", retry_after=retry_after(headers), response=info
        )
    if status >= 500:
        return EngineError(
            "server", f"HTTP {status}", retry_after=retry_after(headers), response=info
        )
    return EngineError("refused", f"HTTP {status}: {text[:TEXT_IN_MESSAGE]}", response=info)


REFUSED: Final = "connection refused"
NOT_RESOLVED: Final = "host name not resolved"
TLS_FAILED: Final = "TLS failure"

HTTP_UNUSABLE: Final = {
    401: "credentials rejected (HTTP 401)",
    403: "access denied (HTTP 403)",
    404: "no such endpoint or model (HTTP 404)",
}
"""HTTP statuses that say the engine's URL, model or key is wrong rather than one request:
credentials and permissions belong to the engine, and a chat-completions endpoint answers 404
only for a wrong path or an unknown model. (403 is also what some gateways answer for one
flagged prompt, and a 404 could be one request's model override: so only a streak of them
opens the circuit, see ``run.retry.CircuitBreaker``.)"""

AUTH_STATUS: Final = 401
"""The one status that opens the circuit on its own: a key is the engine's, never a request's."""


def _wrapped(e: BaseException) -> list[BaseException]:
    """``e`` and every exception it wraps (cause, context, aiohttp's ``os_error`` and
    ``certificate_error``, exception groups), each once, outermost first."""
    out: list[BaseException] = []
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        x = todo.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        out.append(x)
        todo += [x.__cause__, x.__context__]
        for attr in ("os_error", "certificate_error"):
            inner = getattr(x, attr, None)
            if isinstance(inner, BaseException):
                todo.append(inner)
        if isinstance(x, BaseExceptionGroup):
            todo += list(x.exceptions)
    return out


def unreachable_reason(e: BaseException) -> str:
    """Why no exchange could start with the host, from the exception ``e`` and what it wraps:
    ``REFUSED`` (nothing listens at that port), ``NOT_RESOLVED`` (DNS has no such name) or
    ``TLS_FAILED`` (handshake or certificate); "" for anything else (a reset, a timeout, a
    garbled answer), which may well succeed when asked again."""
    for x in _wrapped(e):
        if isinstance(x, socket.gaierror):
            return NOT_RESOLVED
        if isinstance(x, ssl.SSLError):  # includes ssl.CertificateError
            return TLS_FAILED
        if isinstance(x, ConnectionRefusedError) or (
            isinstance(x, OSError) and x.errno == errno.ECONNREFUSED
        ):
            return REFUSED
    return ""


def engine_unusable(e: EngineError) -> str:
    """A short reason when ``e`` says the engine as configured cannot answer any request:
    ``"unreachable: connection refused"``, ``"credentials rejected (HTTP 401)"``, ...; "" when
    ``e`` may be about this request or this moment only (429, 5xx, timeouts, resets, other
    4xx, malformed answers)."""
    if e.unreachable:
        return f"unreachable: {e.unreachable}"
    status = e.response.get("status") if e.kind == "refused" else None
    return HTTP_UNUSABLE.get(status, "") if isinstance(status, int) else ""


def transport_error(e: BaseException, timeout_s: float) -> EngineError:
    """A transport failure → ``timeout`` or ``connection``, whichever library raised it.

    aiohttp's read timeouts subclass ``TimeoutError``; httpx's own timeouts wrap httpcore's and
    are ``httpx.TimeoutException``. Everything else that broke the exchange (refused, reset,
    a garbled response) is ``connection``. The message names the underlying exception (the
    wrapped cause, for httpx).
    """
    cause = e.__cause__ if e.__cause__ is not None and not isinstance(e, TimeoutError) else e
    is_timeout = isinstance(e, TimeoutError) or isinstance(cause, TimeoutError)
    if not is_timeout:
        httpx_mod = sys.modules.get("httpx")
        is_timeout = httpx_mod is not None and isinstance(e, httpx_mod.TimeoutException)
    if is_timeout:
        return EngineError("timeout", f"{type(cause).__name__} after {timeout_s}s")
    return EngineError(
        "connection", f"{type(cause).__name__}: {cause}", unreachable=unreachable_reason(e)
    )
