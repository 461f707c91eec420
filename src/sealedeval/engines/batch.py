"""What the provider batch APIs share: options, limits, the batch price, splitting, states.

A run of an ``openai_chat`` or ``anthropic`` engine with ``batch: true`` sends its single-call
requests through the provider's batch API instead of one live call each: half the price, in
exchange for a completion window of up to 24 hours. The kinds speak their own protocol
(``OpenAIChatEngine.batch_*``, ``AnthropicEngine.batch_*``); the driver that splits, submits,
polls, re-attaches after a kill and retries is ``run.batch``. Everything a batch gives back is
a ``Completion`` or a classified ``EngineError`` per request key, so the dispatcher writes the
same rows as for live calls.

Provider limits and prices (named, cited, overridable per engine for tests):

- OpenAI: "a single batch may include up to 50,000 requests, and a batch input file can be up
  to 200 MB in size" (https://platform.openai.com/docs/guides/batch, "Rate limits"); batch
  requests cost 50% of the synchronous price (https://openai.com/api/pricing/, "Batch API").
- Anthropic: "A Message Batch is limited to either 100,000 Message requests or 256 MB in size,
  whichever is reached first"; "all usage is charged at 50% of the standard API prices"
  (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing, "Batch limitations"
  and "Pricing").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Completion, EngineError, Request
from sealedeval.errors import UserError

BATCH_PRICE_FACTOR: Final = 0.5
"""A batched request costs half the list price at both providers (see the module docstring)."""

DEFAULT_POLL_SECONDS: Final = 60.0
"""How often a batch's status is asked for: batches take minutes to hours; a poll a minute is
far inside both providers' rate limits and adds at most a minute to a finished batch."""

OPENAI_MAX_REQUESTS: Final = 50_000
OPENAI_MAX_BYTES: Final = 200 * 1024 * 1024
ANTHROPIC_MAX_REQUESTS: Final = 100_000
ANTHROPIC_MAX_BYTES: Final = 256 * 1024 * 1024

EXPIRED: Final = "expired"
"""Error kind of a request the provider did not run within the completion window; a follow-up
batch asks it again (``run.batch``)."""
CANCELLED: Final = "cancelled"
"""Error kind of a request whose batch was cancelled (by someone else: the harness never
cancels); final for this run, a rerun asks it again like any errored request."""

BATCH_RETRYABLE: Final = frozenset({"rate_limit", "server", "timeout", "connection", EXPIRED})
"""Per-request errors a follow-up batch asks again (the live path's retryable kinds, and
expiry)."""


@dataclass(frozen=True)
class BatchLimits:
    """The most requests and bytes one batch may hold."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class BatchOptions:
    """An engine's batch options (``batch``, ``batch_poll_seconds``, ``batch_max_requests``,
    ``batch_max_bytes`` in its config; the limits default to the provider's)."""

    enabled: bool
    poll_seconds: float
    limits: BatchLimits


def batch_options(cfg: EngineConfig, provider: BatchLimits) -> BatchOptions:
    """The engine's batch options over the provider's limits; a limit above the provider's is
    a user error (the provider would refuse the batch)."""
    x = cfg.extra
    n = int(x.get("batch_max_requests", provider.max_requests))
    size = int(x.get("batch_max_bytes", provider.max_bytes))
    for key, value, most in (
        ("batch_max_requests", n, provider.max_requests),
        ("batch_max_bytes", size, provider.max_bytes),
    ):
        if not 1 <= value <= most:
            raise UserError(f"engines.{cfg.name}.{key}: {value} is not in 1..{most}")
    return BatchOptions(
        enabled=bool(x.get("batch", False)),
        poll_seconds=float(x.get("batch_poll_seconds", DEFAULT_POLL_SECONDS)),
        limits=BatchLimits(n, size),
    )


@dataclass(frozen=True)
class BatchLine:
    """One request as its line of the batch input (``data``: the encoded line, newline
    included for JSONL; its length counts against ``max_bytes``)."""

    key: str
    data: bytes


def split(
    lines: Iterable[BatchLine], limits: BatchLimits, overhead: int = 0
) -> Iterator[list[BatchLine]]:
    """Consecutive chunks within ``limits`` (``overhead``: bytes the envelope adds per batch).
    A single line over ``max_bytes`` goes alone: the provider refuses that batch, and its
    request gets the refusal as its error row, instead of being silently dropped."""
    chunk: list[BatchLine] = []
    size = overhead
    for line in lines:
        n = len(line.data) + 1  # a separator (newline or comma)
        if chunk and (len(chunk) >= limits.max_requests or size + n > limits.max_bytes):
            yield chunk
            chunk, size = [], overhead
        chunk.append(line)
        size += n
    if chunk:
        yield chunk


@dataclass(frozen=True)
class BatchStatus:
    """A batch as its provider last described it.

    Attributes:
        id: The provider's batch id.
        state: The provider's own status word (OpenAI ``validating`` ... ``completed``;
            Anthropic ``in_progress``, ``canceling``, ``ended``): shown on the progress line.
        ended: No request in it will change any more; its results can be read.
        done: Requests finished so far (succeeded or not), of ``total``.
        failed: Requests finished with an error so far.
        error: Why the whole batch failed (OpenAI ``failed``: validation errors), else "".
        kind_if_missing: The error kind of a request an ended batch has no result line for
            (``expired`` after expiry, ``cancelled`` after cancelling, else ``server``).
        refs: Where its results are (OpenAI: the output and error file ids; Anthropic: the
            ``results_url``).
    """

    id: str
    state: str
    ended: bool
    done: int = 0
    total: int = 0
    failed: int = 0
    error: str = ""
    kind_if_missing: str = "server"
    refs: tuple[str, ...] = ()


Outcome = Completion | EngineError
"""What one request of a batch came to: an answer, or its classified error."""


class BatchEngine(Protocol):
    """What a kind offers the batch driver (``run.batch``). Each method is one exchange (or a
    few) with the provider; transient failures raise retryable ``EngineError``s, which the
    driver retries with the engine's retry policy."""

    def batch_options(self) -> BatchOptions: ...

    def batch_line(self, request: Request) -> BatchLine:
        """The request as a batch line; ``EngineError`` (refused) for one the API cannot take,
        which becomes its error row without being sent."""
        ...

    async def batch_submit(self, lines: Sequence[BatchLine]) -> str:
        """Create a batch of ``lines``; its id."""
        ...

    async def batch_poll(self, batch_id: str) -> BatchStatus: ...

    async def batch_results(
        self, status: BatchStatus, requests: dict[str, Request]
    ) -> dict[str, Outcome]:
        """The outcome of every request of an ended batch that has a result (``requests``:
        the batch's requests by key, for parsing their answers)."""
        ...
