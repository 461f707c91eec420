"""Retries with exponential backoff and jitter, honouring Retry-After.

Only transient kinds (rate_limit, server, timeout, connection) are retried; malformed and
truncated answers are final because asking again would mostly return the same bytes, and the
raw row must show what the engine really did.

Retry-After is a floor for the wait, honoured up to the engine's ``retry_after_max_s``
(``DEFAULT_RETRY_AFTER_MAX_S`` unless configured): a provider's per-minute limits ask for
seconds to a minute, but a daily or spend limit can ask for hours, and a run that silently
sleeps for hours looks hung. A hint beyond the maximum ends the call at once as its error row
(the message says how long the server asked for; a rerun retries it) instead of retrying early
into another 429. Every wait is reported through ``on_wait`` (the dispatcher shows it on the
progress line and in the log).

A per-run circuit breaker (``CircuitBreaker``) stops an engine whose first calls show that it
cannot answer at all (wrong URL, port, host name, TLS or key): retrying those calls only makes
a misconfiguration look like a slow run.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from sealedeval.engines.base import EngineError
from sealedeval.engines.http import AUTH_STATUS, engine_unusable

T = TypeVar("T")


DEFAULT_RETRY_AFTER_MAX_S: Final = 600.0
"""Ten minutes: above the one-minute windows of per-minute rate limits (Anthropic's and
OpenAI's token buckets refill within a minute), below the hours a daily or spend limit asks
for, which should end as error rows rather than a run that looks hung."""

WaitFn = Callable[[float, EngineError, int], None]
"""``on_wait(seconds, error, attempt)``: called before each retry's sleep."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_s: float = 0.5
    max_s: float = 30.0
    retry_after_max_s: float = DEFAULT_RETRY_AFTER_MAX_S

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None) -> float:
        """Full-jitter backoff for attempt ``attempt`` (1-based), never below Retry-After
        (up to ``retry_after_max_s``; ``with_retries`` does not retry beyond it)."""
        expo: float = min(self.max_s, self.base_s * (2 ** (attempt - 1)))
        wait: float = expo * (0.5 + rng.random() / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.retry_after_max_s))
        return wait


TRIP_AFTER: Final = 3
"""Consecutive unusable-engine failures, with no call of the run answered yet, that open the
circuit. More than one because a single refused connection or 403 can be a fluke (a server
restarting between two calls, a gateway flagging one prompt); three in a row with nothing
answered is the configuration. At the default concurrency the first wave of calls reaches it
within milliseconds of the start."""


@dataclass(frozen=True)
class Trip:
    """Why a circuit opened: the error kind and short reason of the failure that started the
    streak, its message (the key scrubbed), and how many failed calls the streak had."""

    kind: str
    reason: str
    first_error: str
    calls: int

    def describe(self) -> str:
        """``circuit open after 3 failed calls and no success (unreachable: connection
        refused; first: ConnectError: ...)``."""
        calls = f"{self.calls} failed call{'s' if self.calls != 1 else ''}"
        return (
            f"circuit open after {calls} and no success ({self.reason}; first: {self.first_error})"
        )


class CircuitBreaker:
    """Stops one engine's run when its first calls show it cannot answer any request.

    The rule, over every *call* (attempt) the run makes, in the order they end:

    - A failure is *unusable* when ``engines.http.engine_unusable`` names it: connection
      refused, host name not resolved, TLS failure, HTTP 401, 403 or 404.
    - Until the first call of the run returns an answer, the breaker is armed: each unusable
      failure extends a streak, any other outcome (429, 5xx, a timeout, a reset, a malformed
      answer) ends it, and the circuit opens when the streak reaches ``trip_after``
      (``TRIP_AFTER``) or at once on HTTP 401 (a key is the engine's, never a request's).
    - The first answered call disarms it for the rest of the run: the engine works, and later
      failures (an outage, a refused prompt) keep the retry policy and their own error rows.
      Transient failures (429, 5xx, timeouts) never open it.

    Once open: no call starts (``with_retries`` raises ``not_called``), a retry that is
    waiting wakes and ends with its own last error (``stopped``), and the dispatcher records
    every request it has not called as an error row of the trip's kind whose message says it
    was not called and why, so every planned request has a row and a rerun asks them again
    (resume skips only ``ok`` rows). ``scrub`` removes the API key from quoted messages.
    """

    def __init__(
        self, trip_after: int = TRIP_AFTER, scrub: Callable[[str], str] = lambda s: s
    ) -> None:
        if trip_after < 1:
            raise ValueError(f"trip_after must be at least 1, got {trip_after}")
        self.trip_after = trip_after
        self.scrub = scrub
        self.armed = True
        self.trip: Trip | None = None
        self._streak = 0
        self._first: tuple[EngineError, str] | None = None
        self._opened: asyncio.Event | None = None

    def succeeded(self) -> None:
        """A call returned an answer: the engine works."""
        if self.armed:
            self.armed = False
            self._streak, self._first = 0, None

    def failed(self, e: EngineError) -> None:
        """A call failed with ``e``; opens the circuit when the rule says so."""
        if not self.armed or self.trip is not None:
            return
        reason = engine_unusable(e)
        if not reason:
            self._streak, self._first = 0, None
            return
        self._streak += 1
        if self._first is None:
            self._first = (e, reason)
        immediate = e.kind == "refused" and e.response.get("status") == AUTH_STATUS
        if self._streak >= self.trip_after or immediate:
            first, first_reason = (e, reason) if immediate else self._first
            self.trip = Trip(
                first.kind,
                first_reason,
                self.scrub(str(first))[:300],
                1 if immediate else self._streak,
            )
            if self._opened is not None:
                self._opened.set()

    def not_called(self) -> EngineError:
        """The error of a request (or a solver's further call) the open circuit did not make."""
        assert self.trip is not None
        return EngineError(self.trip.kind, f"not called: {self.trip.describe()}")

    def stopped(self, e: EngineError) -> EngineError:
        """``e`` as the final error of a call whose retry the open circuit cancelled."""
        assert self.trip is not None
        return EngineError(
            e.kind,
            f"{e} (not retried: {self.trip.describe()})",
            retry_after=e.retry_after,
            response=e.response,
            output_text=e.output_text,
            unreachable=e.unreachable,
        )

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep`` that ends early when the circuit opens."""
        if self.trip is not None:
            return
        if self._opened is None:
            self._opened = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._opened.wait(), seconds)


class Attempts:
    """Counts calls so the raw row can say how many attempts an answer took."""

    def __init__(self) -> None:
        self.n = 0


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    seed: int | Callable[[], int],
    attempts: Attempts,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_wait: WaitFn | None = None,
    breaker: CircuitBreaker | None = None,
) -> T:
    """``call()`` until it answers or fails for good (see the module docstring). With a
    ``breaker``, every outcome is reported to it, no call starts while it is open, and a retry
    it opened during is not made (pass ``sleep=breaker.sleep`` so a long wait ends at once).
    ``seed`` seeds the jitter of the waits; it may be a function giving it, called only on a
    first retry (the dispatcher's is a CRC of the request key, work most calls never need)."""
    rng: random.Random | None = None  # seeded on the first retry: most calls never need it
    tries = 0  # per call: ``attempts`` is shared by every call a solver makes for one row
    while True:
        if breaker is not None and breaker.trip is not None:
            raise breaker.not_called()
        tries += 1
        attempts.n += 1
        try:
            result = await call()
        except EngineError as e:
            if breaker is not None:
                breaker.failed(e)
            if not e.retryable or tries > policy.max_retries:
                raise
            if breaker is not None and breaker.trip is not None:
                raise breaker.stopped(e) from e
            if e.retry_after is not None and e.retry_after > policy.retry_after_max_s:
                raise EngineError(
                    e.kind,
                    f"{e} (the server asked to wait {e.retry_after:.0f} s, more than "
                    f"retry_after_max_s {policy.retry_after_max_s:g}: not retried)",
                    retry_after=e.retry_after,
                    response=e.response,
                    output_text=e.output_text,
                ) from e
            if rng is None:
                rng = random.Random(seed if isinstance(seed, int) else seed())
            wait = policy.delay(tries, rng, e.retry_after)
            if on_wait is not None:
                on_wait(wait, e, tries)
            await sleep(wait)
            if breaker is not None and breaker.trip is not None:
                raise breaker.stopped(e) from e
        else:
            if breaker is not None:
                breaker.succeeded()
            return result
