"""run/retry.py's circuit breaker: when an engine's first calls stop it, and when they must not.

Driven by scripted ``EngineError``s (no sockets, no wall-clock waits except the one test that
checks a long retry wait ends when the circuit opens); the end-to-end runs are in
``test_fail_fast.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sealedeval.engines import http
from sealedeval.engines.base import EngineError
from sealedeval.run.retry import TRIP_AFTER, Attempts, CircuitBreaker, RetryPolicy, with_retries


def refused() -> EngineError:
    return EngineError("connection", "ConnectError: [Errno 111] refused", unreachable=http.REFUSED)


def status(code: int) -> EngineError:
    return http.status_error(code, {}, f"status {code}")


def test_trips_after_the_named_number_of_consecutive_unreachable_failures() -> None:
    b = CircuitBreaker()
    for _ in range(TRIP_AFTER - 1):
        b.failed(refused())
    assert b.trip is None
    b.failed(refused())
    assert b.trip is not None
    assert (b.trip.kind, b.trip.reason, b.trip.calls) == (
        "connection",
        "unreachable: connection refused",
        TRIP_AFTER,
    )
    assert b.trip.first_error == "ConnectError: [Errno 111] refused"
    e = b.not_called()
    assert e.kind == "connection" and str(e).startswith("not called: circuit open after 3 ")


@pytest.mark.parametrize(
    ("code", "immediate", "reason"),
    [
        (401, True, "credentials rejected (HTTP 401)"),
        (403, False, "access denied (HTTP 403)"),
        (404, False, "no such endpoint or model (HTTP 404)"),
    ],
)
def test_401_trips_at_once_403_and_404_need_a_streak(
    code: int, immediate: bool, reason: str
) -> None:
    b = CircuitBreaker()
    b.failed(status(code))
    assert (b.trip is not None) is immediate
    for _ in range(TRIP_AFTER - 1):
        b.failed(status(code))
    assert b.trip is not None and b.trip.kind == "refused" and b.trip.reason == reason


@pytest.mark.parametrize("code", [400, 408, 422, 429, 500, 502, 503, 529])
def test_other_statuses_and_transient_failures_never_trip(code: int) -> None:
    b = CircuitBreaker()
    for _ in range(10 * TRIP_AFTER):
        b.failed(status(code))
        b.failed(EngineError("timeout", "ReadTimeout after 1s"))
        b.failed(EngineError("connection", "RemoteProtocolError: reset"))  # not unreachable
        b.failed(EngineError("malformed", "not JSON"))
    assert b.trip is None


def test_any_other_outcome_breaks_the_streak() -> None:
    b = CircuitBreaker()
    for _ in range(5):
        for _ in range(TRIP_AFTER - 1):
            b.failed(refused())
        b.failed(status(503))  # the host answered: not a wrong URL
    assert b.trip is None


def test_a_first_success_disarms_it_for_the_rest_of_the_run() -> None:
    b = CircuitBreaker()
    b.failed(refused())
    b.succeeded()
    for _ in range(10 * TRIP_AFTER):
        b.failed(refused())
        b.failed(status(401))  # a key revoked mid-run: error rows, not a stopped engine
    assert b.trip is None


def test_the_quoted_error_is_scrubbed() -> None:
    key = "sk-secret-0123456789"
    b = CircuitBreaker(scrub=lambda s: s.replace(key, "***"))
    b.failed(EngineError("refused", f"HTTP 401: bad key {key}", response={"status": 401}))
    assert b.trip is not None and key not in b.trip.first_error and "***" in b.trip.first_error
    assert key not in str(b.not_called())


def test_with_retries_stops_at_once_when_the_circuit_opens() -> None:
    """Three requests hitting a refused port: the third failure opens the circuit; the two
    waiting retries wake from a long wait at once and end with their own error; a fourth
    request makes no call at all."""
    b = CircuitBreaker()
    policy = RetryPolicy(max_retries=4, base_s=30.0, max_s=30.0)
    calls = 0

    async def call() -> Any:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        raise refused()

    async def one(attempts: Attempts) -> EngineError:
        try:
            await with_retries(call, policy, seed=1, attempts=attempts, sleep=b.sleep, breaker=b)
        except EngineError as e:
            return e
        raise AssertionError("a refused call succeeded")

    async def main() -> list[tuple[EngineError, int]]:
        counts = [Attempts() for _ in range(TRIP_AFTER + 1)]
        first = await asyncio.gather(*(one(a) for a in counts[:TRIP_AFTER]))
        last = await one(counts[TRIP_AFTER])
        return [(e, a.n) for e, a in zip([*first, last], counts, strict=True)]

    t0 = time.perf_counter()
    out = asyncio.run(main())
    assert time.perf_counter() - t0 < 10  # a 30 s backoff was not waited out
    assert calls == TRIP_AFTER
    for e, n in out[:TRIP_AFTER]:
        assert n == 1 and e.kind == "connection" and "not retried: circuit open" in str(e)
    e, n = out[TRIP_AFTER]
    assert n == 0 and str(e).startswith("not called: circuit open after 3 failed calls")


def test_transient_failures_then_success_keep_the_retry_policy() -> None:
    b = CircuitBreaker()
    errors = [status(503), status(503), EngineError("timeout", "t"), status(429)]

    async def call() -> str:
        if errors:
            raise errors.pop(0)
        return "answer"

    attempts = Attempts()

    async def nosleep(s: float) -> None:
        return None

    got = asyncio.run(
        with_retries(
            call, RetryPolicy(4, 0.01, 0.02), seed=1, attempts=attempts, sleep=nosleep, breaker=b
        )
    )
    assert got == "answer" and attempts.n == 5 and b.trip is None and not b.armed
