"""The HTTP helpers every engine kind shares (``engines.http``), directly.

The engines' own tests drive them over loopback fakes (``test_openai_chat_engine.py`` for both
clients, ``tests/bloodpanel/test_bloodpanel_kantesti.py``); these pin the rules themselves.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import errno
import socket
import ssl
import threading
from collections.abc import Iterator

import httpx
import pytest

from sealedeval.engines import http
from sealedeval.engines.base import EngineError


@pytest.mark.parametrize(
    ("value", "expected"),
    [("7", 7.0), ("0.25", 0.25), ("-3", 0.0), (None, None), ("soon-ish", None), ("", None)],
)
def test_retry_after_seconds_and_unusable_values(value: str | None, expected: float | None) -> None:
    headers = {} if value is None else {"retry-after": value}
    assert http.retry_after(headers) == expected


def test_retry_after_http_date_future_and_past() -> None:
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    got = http.retry_after({"retry-after": email.utils.format_datetime(soon, usegmt=True)})
    assert got is not None and 27.0 <= got <= 30.5
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    assert http.retry_after({"retry-after": email.utils.format_datetime(past, usegmt=True)}) == 0.0


def test_retry_after_reads_case_insensitive_headers() -> None:
    assert http.retry_after(httpx.Headers({"Retry-After": "5"})) == 5.0


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "rate_limit", True),
        (500, "server", True),
        (503, "server", True),
        (400, "refused", False),
        (401, "refused", False),
        (404, "refused", False),
    ],
)
def test_status_error_classification(status: int, kind: str, retryable: bool) -> None:
    body = "x" * 5000
    err = http.status_error(status, {"retry-after": "2"}, body)
    assert err.kind == kind and err.retryable is retryable
    assert err.response == {"status": status, "text": body[: http.TEXT_KEPT]}
    assert err.retry_after == (2.0 if retryable else None)
    if kind == "refused":
        assert str(err) == f"HTTP {status}: {body[: http.TEXT_IN_MESSAGE]}"
    else:
        assert str(err) == f"HTTP {status}"


def test_status_error_refuses_a_success_status() -> None:
    with pytest.raises(ValueError, match="not an error status"):
        http.status_error(200, {}, "")


def test_transport_error_timeouts_and_connection_failures() -> None:
    assert http.transport_error(TimeoutError(), 5.0).kind == "timeout"
    err = http.transport_error(httpx.ReadTimeout("slow"), 2.5)
    assert err.kind == "timeout" and str(err) == "ReadTimeout after 2.5s" and err.retryable
    try:
        try:
            raise OSError("reset by peer")
        except OSError as inner:
            raise httpx.ConnectError("boom") from inner
    except httpx.ConnectError as e:
        wrapped = http.transport_error(e, 1.0)
    assert wrapped.kind == "connection" and str(wrapped) == "OSError: reset by peer"
    assert http.transport_error(ConnectionResetError("gone"), 1.0).kind == "connection"


# -- what says "this engine cannot answer at all" (the circuit breaker's input) ---------------


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except BaseException as e:
        return e


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), http.REFUSED),
        (OSError(errno.ECONNREFUSED, "Connect call failed"), http.REFUSED),
        (_raised_from(httpx.ConnectError("All connection attempts failed"),
                      ConnectionRefusedError(errno.ECONNREFUSED, "x")), http.REFUSED),
        (_raised_from(httpx.ConnectError("[Errno -2]"), socket.gaierror(-2, "not known")),
         http.NOT_RESOLVED),
        (ssl.SSLCertVerificationError("certificate verify failed"), http.TLS_FAILED),
        (ExceptionGroup("all", [ConnectionRefusedError(errno.ECONNREFUSED, "x")]), http.REFUSED),
        (ConnectionResetError(errno.ECONNRESET, "reset by peer"), ""),
        (_raised_from(httpx.RemoteProtocolError("closed"), OSError("eof")), ""),
        (OSError("no errno"), ""),
    ],
)  # fmt: skip
def test_unreachable_reason_reads_the_wrapped_cause(exc: BaseException, reason: str) -> None:
    assert http.unreachable_reason(exc) == reason
    err = http.transport_error(exc, 1.0)
    assert err.kind == "connection" and err.unreachable == reason and err.retryable


@pytest.fixture
def not_tls_port() -> Iterator[int]:
    """A loopback port that answers plain HTTP bytes to anyone (so TLS to it fails)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            with c:
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield int(srv.getsockname()[1])
    finally:
        stop.set()
        t.join(timeout=5)
        srv.close()


@pytest.mark.parametrize("client", ["aiohttp", "httpx"])
def test_real_unreachable_failures_are_classified_by_both_clients(
    client: str, not_tls_port: int
) -> None:
    """A bound, not listening loopback port (refused), a ``.invalid`` name (RFC 6761: never
    resolves; only the local resolver is asked) and TLS to a plain-HTTP port, through each
    client the engines use: what they raise is classified as the breaker needs."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    cases = {
        f"http://127.0.0.1:{closed.getsockname()[1]}/v1/chat/completions": http.REFUSED,
        "http://nonexistent.invalid/v1/chat/completions": http.NOT_RESOLVED,
        f"https://127.0.0.1:{not_tls_port}/v1/chat/completions": http.TLS_FAILED,
    }

    async def post(url: str) -> BaseException:
        try:
            if client == "aiohttp":
                import aiohttp

                async with (
                    aiohttp.ClientSession() as s,
                    s.post(url, data=b"{}", timeout=aiohttp.ClientTimeout(total=20)) as r,
                ):
                    raise AssertionError(f"{url} answered {r.status}")
            async with httpx.AsyncClient(timeout=20) as c:
                r = await c.post(url, content=b"{}")
                raise AssertionError(f"{url} answered {r.status_code}")
        except AssertionError:
            raise
        except Exception as e:
            return e

    try:
        for url, reason in cases.items():
            err = http.transport_error(asyncio.run(post(url)), 20.0)
            assert (err.kind, err.unreachable) == ("connection", reason), (url, str(err))
    finally:
        closed.close()


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "credentials rejected (HTTP 401)"),
        (403, "access denied (HTTP 403)"),
        (404, "no such endpoint or model (HTTP 404)"),
        (400, ""),
        (413, ""),
        (429, ""),
        (500, ""),
        (503, ""),
    ],
)
def test_engine_unusable_names_only_engine_level_statuses(status: int, reason: str) -> None:
    assert http.engine_unusable(http.status_error(status, {}, "body")) == reason


def test_engine_unusable_for_transport_and_answer_failures() -> None:
    refused = http.transport_error(ConnectionRefusedError(errno.ECONNREFUSED, "x"), 1.0)
    assert http.engine_unusable(refused) == "unreachable: connection refused"
    assert http.engine_unusable(http.transport_error(TimeoutError(), 1.0)) == ""
    assert http.engine_unusable(http.transport_error(ConnectionResetError(), 1.0)) == ""
    # a refusal without an HTTP status (a kind's own validation) is about the request
    assert http.engine_unusable(EngineError("refused", "param 'x' not supported")) == ""
