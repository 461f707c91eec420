"""Retries with exponential backoff and jitter, honouring Retry-After.

Only transient kinds (rate_limit, server, timeout, connection) are retried; malformed and
truncated answers are final because asking again would mostly return the same bytes, and the
raw row must show what the engine really did.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from sealedeval.engines.base import EngineError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None) -> float:
        """Full-jitter backoff for attempt ``attempt`` (1-based), never below Retry-After."""
        expo: float = min(self.max_s, self.base_s * (2 ** (attempt - 1)))
        wait: float = expo * (0.5 + rng.random() / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_s * 4))
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
            if rng is None:
                rng = random.Random(seed)
            await sleep(policy.delay(tries, rng, e.retry_after))
