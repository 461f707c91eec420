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
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from sealedeval.engines.base import EngineError

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


class Attempts:
    """Counts calls so the raw row can say how many attempts an answer took."""

    def __init__(self) -> None:
        self.n = 0


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    seed: int,
    attempts: Attempts,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_wait: WaitFn | None = None,
) -> T:
    rng: random.Random | None = None  # seeded on the first retry: most calls never need it
    tries = 0  # per call: ``attempts`` is shared by every call a solver makes for one row
    while True:
        tries += 1
        attempts.n += 1
        try:
            return await call()
        except EngineError as e:
            if not e.retryable or tries > policy.max_retries:
                raise
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
                rng = random.Random(seed)
            wait = policy.delay(tries, rng, e.retry_after)
            if on_wait is not None:
                on_wait(wait, e, tries)
            await sleep(wait)
