"""The HTTP helpers every engine kind shares (``engines.http``), directly.

The engines' own tests drive them over loopback fakes (``test_openai_chat_engine.py`` for both
clients, ``tests/bloodpanel/test_bloodpanel_kantesti.py``); these pin the rules themselves.
"""

from __future__ import annotations

import datetime as dt
import email.utils

import httpx
import pytest

from sealedeval.engines import http


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
