"""What every HTTP engine kind shares: Retry-After, and how a failed exchange is classified.

The dispatcher retries by ``EngineError.kind`` (``base.RETRYABLE``), so every kind must name the
same failure the same way, whichever HTTP client it uses:

- an HTTP status (``status_error``): 429 → ``rate_limit`` and 5xx → ``server`` (both with the
  server's Retry-After, if usable), any other 4xx → ``refused`` (the same request would be
  refused again: bad credentials, a bad request);
- a transport failure (``transport_error``): a client, connect or read timeout → ``timeout``;
  anything else that broke the exchange (refused, reset, a garbled response) → ``connection``.

What a 2xx body must look like is each kind's own business (``malformed`` when it does not).
Nothing here imports an HTTP client: httpx is recognised only if something already imported it.
"""

from __future__ import annotations

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
    return EngineError("connection", f"{type(cause).__name__}: {cause}")
