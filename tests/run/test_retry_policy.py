"""run/retry.py: what is retried, how often, and how long the waits are.

A fake ``sleep`` records every delay instead of waiting, so the timing policy is checked exactly
and the tests take no wall-clock time.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from sealedeval.engines.base import FINAL, RETRYABLE, EngineError
from sealedeval.run.retry import Attempts, RetryPolicy, with_retries


class Script:
    """An engine call that fails with the given errors in order, then returns ``value``."""

    def __init__(self, errors: list[EngineError], value: Any = "ok") -> None:
        self.errors = list(errors)
        self.value = value
        self.calls = 0

    async def __call__(self) -> Any:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, s: float) -> None:
        self.delays.append(s)


def _go(script: Script, policy: RetryPolicy, sleeps: Sleeps, seed: int = 1) -> tuple[Any, int]:
    attempts = Attempts()

    async def main() -> Any:
        return await with_retries(script, policy, seed=seed, attempts=attempts, sleep=sleeps)

    return asyncio.run(main()), attempts.n


@pytest.mark.parametrize("kind", sorted(RETRYABLE))
def test_retryable_kinds_retried_up_to_max_then_raised(kind: str) -> None:
    err = EngineError(kind, f"boom {kind}")
    script = Script([err] * 10)
    sleeps = Sleeps()
    attempts = Attempts()

    async def main() -> Any:
        return await with_retries(
            script, RetryPolicy(3, 0.01, 1.0), seed=5, attempts=attempts, sleep=sleeps
        )

    with pytest.raises(EngineError) as ei:
        asyncio.run(main())
    assert ei.value is err and ei.value.kind == kind
    assert script.calls == 4  # the first try + max_retries
    assert attempts.n == 4
    assert len(sleeps.delays) == 3  # a wait between tries, none after the last


@pytest.mark.parametrize("kind", sorted(RETRYABLE))
def test_retryable_kind_recovers(kind: str) -> None:
    script = Script([EngineError(kind, "x"), EngineError(kind, "y")], value="answer")
    sleeps = Sleeps()
    value, n = _go(script, RetryPolicy(4, 0.01, 1.0), sleeps)
    assert value == "answer"
    assert n == 3 and script.calls == 3
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize("kind", sorted(FINAL | {"malformed", "truncated"}))
def test_final_kinds_not_retried(kind: str) -> None:
    err = EngineError(kind, "final", output_text="half an ans")
    script = Script([err], value="never")
    sleeps = Sleeps()
    attempts = Attempts()

    async def main() -> Any:
        return await with_retries(
            script, RetryPolicy(5, 0.01, 1.0), seed=1, attempts=attempts, sleep=sleeps
        )

    with pytest.raises(EngineError) as ei:
        asyncio.run(main())
    assert ei.value is err
    assert script.calls == 1 and attempts.n == 1
    assert sleeps.delays == []


def test_max_retries_zero_means_one_try() -> None:
    script = Script([EngineError("server", "x")])
    sleeps = Sleeps()
    with pytest.raises(EngineError):
        _go(script, RetryPolicy(0, 0.01, 1.0), sleeps)
    assert script.calls == 1 and sleeps.delays == []


def test_non_engine_errors_propagate_untouched() -> None:
    class Bug(Exception):
        pass

    calls = 0

    async def call() -> None:
        nonlocal calls
        calls += 1
        raise Bug("harness bug")

    sleeps = Sleeps()

    async def main() -> None:
        await with_retries(call, RetryPolicy(3), seed=1, attempts=Attempts(), sleep=sleeps)

    with pytest.raises(Bug):
        asyncio.run(main())
    assert calls == 1 and sleeps.delays == []


def test_retry_after_is_a_floor_for_every_wait() -> None:
    # backoff alone would be ~0.01 s; the server asked for 2.5 s each time
    errs = [EngineError("rate_limit", "429", retry_after=2.5) for _ in range(3)]
    sleeps = Sleeps()
    value, n = _go(Script(errs), RetryPolicy(4, 0.01, 1.0), sleeps)
    assert value == "ok" and n == 4
    assert len(sleeps.delays) == 3
    assert all(d >= 2.5 for d in sleeps.delays), sleeps.delays


def test_retry_after_on_server_error_also_honoured() -> None:
    sleeps = Sleeps()
    _go(Script([EngineError("server", "503", retry_after=1.75)]), RetryPolicy(2, 0.01, 1.0), sleeps)
    assert sleeps.delays and sleeps.delays[0] >= 1.75


def test_small_retry_after_does_not_shorten_backoff() -> None:
    policy = RetryPolicy(8, 1.0, 100.0)
    for attempt in range(1, 6):
        expo = 2.0 ** (attempt - 1)
        for seed in range(20):
            d = policy.delay(attempt, random.Random(seed), retry_after=0.001)
            assert expo / 2 <= d <= expo


@pytest.mark.parametrize("retry_after", [0.0, 0.3, 3.0, 29.0, 60.0])
def test_delay_never_below_retry_after(retry_after: float) -> None:
    policy = RetryPolicy(4, 0.5, 30.0)
    for attempt in range(1, 6):
        for seed in range(20):
            assert policy.delay(attempt, random.Random(seed), retry_after) >= retry_after


def test_backoff_grows_exponentially_with_jitter_within_bounds() -> None:
    base, cap = 0.5, 8.0
    policy = RetryPolicy(10, base, cap)
    for attempt in range(1, 10):
        expo = min(cap, base * 2 ** (attempt - 1))
        values = [policy.delay(attempt, random.Random(seed), None) for seed in range(200)]
        assert all(expo / 2 <= v <= expo for v in values), (attempt, min(values), max(values))
        # jitter: not a constant, and it spreads over most of the band
        assert len(set(values)) > 100
        assert min(values) < expo * 0.6 and max(values) > expo * 0.9
    # the cap holds for absurd attempt numbers
    assert policy.delay(60, random.Random(0), None) <= cap


def test_waits_recorded_by_with_retries_grow() -> None:
    errs = [EngineError("server", "500") for _ in range(6)]
    sleeps = Sleeps()
    _go(Script(errs), RetryPolicy(6, 0.1, 100.0), sleeps, seed=42)
    d = sleeps.delays
    assert len(d) == 6
    for i, v in enumerate(d, start=1):
        expo = 0.1 * 2 ** (i - 1)
        assert expo / 2 <= v <= expo
    # equal-jitter bands do not overlap, so the waits never shrink
    assert d == sorted(d)
    assert d[-1] > 8 * d[0]


def test_jitter_is_seeded_per_request() -> None:
    def delays(seed: int) -> list[float]:
        sleeps = Sleeps()
        _go(Script([EngineError("timeout", "t")] * 3), RetryPolicy(3, 0.1, 10.0), sleeps, seed)
        return sleeps.delays

    assert delays(7) == delays(7)  # reproducible per request key
    assert delays(7) != delays(8)  # but requests do not retry in lockstep


def test_each_call_of_a_multi_call_solver_gets_its_own_retry_budget() -> None:
    """An agent making several calls shares one Attempts counter (for the raw row), but the
    retry budget is per call: the third call's one 429 must still be retried."""
    attempts = Attempts()
    sleeps = Sleeps()
    policy = RetryPolicy(1, 0.01, 1.0)

    async def main() -> list[Any]:
        out = []
        for i in range(3):
            script = Script([EngineError("rate_limit", "429")], value=i)
            out.append(await with_retries(script, policy, seed=i, attempts=attempts, sleep=sleeps))
        return out

    assert asyncio.run(main()) == [0, 1, 2]
    assert attempts.n == 6  # the row says how many calls the answer took in total
    # and the backoff restarts for each call instead of growing with earlier calls' attempts
    assert all(d <= 0.01 for d in sleeps.delays)
