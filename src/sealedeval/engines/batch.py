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

Finding a submission on the provider (``batch_mark``, ``batch_find``): a create whose answer is
lost (a reset, a timeout, a proxy's 5xx after the provider accepted it, a kill) may have made a
batch all the same, and submitting again would pay twice. Neither API takes an idempotency key
for a batch create, so the driver takes a *mark* before the first create (the newest batch the
provider lists) and, before a retry or on the next start, reads the batches listed before the
mark: the ones created since. What identifies the submission among them differs:

- OpenAI: a batch carries ``metadata`` ("16 key-value pairs", https://platform.openai.com/docs/
  api-reference/batch/create); ``batch_submit`` puts the submission's token there
  (``TOKEN_KEY``), so a found batch is certainly this submission (``Found.by == "token"``).
- Anthropic: a Message Batch carries nothing of its creator's: the create body is ``{requests}``
  alone, a listed batch shows its id, status, times and ``request_counts``, and its requests'
  ``custom_id``s appear only in its results, which exist once it has ended
  (https://docs.anthropic.com/en/api/creating-message-batches, /en/api/listing-message-batches,
  /en/api/retrieving-message-batch-results). A batch created since the mark holding as many
  requests is therefore only a *candidate* (``by == "size"``), confirmed or refused by its
  results: the driver polls it, and if none of its results is one of the submission's requests
  it was another client's batch and the requests are asked again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

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

TOKEN_KEY: Final = "sealedeval_token"
"""The OpenAI batch ``metadata`` key that holds a submission's token."""
LIST_PAGE: Final = 100
"""Batches per list page: OpenAI's largest ``limit`` (1 to 100; Anthropic's is 1 to 1000)."""
LOOK_BACK_PAGES: Final = 10
"""The most list pages one look reads: the mark is normally on the first (a look happens seconds
after the mark, or on the next start); without it (no batch listed at the mark, or the mark's
batch deleted since) a look stops after 1,000 batches instead of walking a workspace's history."""

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


@dataclass(frozen=True)
class Found:
    """A batch the provider lists that may be a submission whose create answer was lost.

    Attributes:
        status: The batch as the list describes it.
        by: ``token``: its metadata names the submission (OpenAI: certain); ``size``: created
            after the mark with as many requests (Anthropic: a candidate its results confirm).
        usable: Re-attaching can give answers: False for a batch that ended failed, cancelled
            or expired without a single result, whose requests are submitted anew instead.
    """

    status: BatchStatus
    by: str
    usable: bool


async def look_back(
    page: Callable[[str, int], Awaitable[tuple[list[dict[str, Any]], bool]]],
    mark: str,
    pages: int = LOOK_BACK_PAGES,
) -> list[dict[str, Any]]:
    """The listed batches newer than ``mark``, newest first (both providers list newest first).
    ``page(after, limit)`` is one page after the cursor ("" for the first) and whether more
    follow; the walk stops at the mark, at the end of the list, or after ``pages`` pages."""
    out: list[dict[str, Any]] = []
    after = ""
    for _ in range(pages):
        data, more = await page(after, LIST_PAGE)
        for doc in data:
            if doc["id"] == mark:
                return out
            out.append(doc)
        if not more or not data:
            break
        after = str(data[-1]["id"])
    return out


def list_page(doc: dict[str, Any], what: str) -> tuple[list[dict[str, Any]], bool]:
    """A list answer's batches (each with an id) and ``has_more``; anything else is
    ``malformed`` (both providers answer ``{data: [...], has_more, ...}``)."""
    data = doc.get("data")
    if not isinstance(data, list) or not all(
        isinstance(b, dict) and isinstance(b.get("id"), str) and b["id"] for b in data
    ):
        raise EngineError("malformed", f"{what}: not a list of batches", response=doc)
    return data, bool(doc.get("has_more"))


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

    async def batch_submit(self, lines: Sequence[BatchLine], token: str) -> str:
        """Create a batch of ``lines``; its id. ``token`` names the submission where the API can
        carry it (OpenAI's metadata), so ``batch_find`` can tell it."""
        ...

    async def batch_mark(self) -> str:
        """The newest batch the provider lists now ("" when it lists none): what a later
        ``batch_find`` reads back to. A refused (non-retryable) error: the provider lists no
        batches, and a lost create answer cannot be looked for."""
        ...

    async def batch_find(self, token: str, count: int, mark: str) -> list[Found]:
        """The batches created after ``mark`` that may be the submission ``token`` of ``count``
        requests (see the module docstring), newest first."""
        ...

    async def batch_poll(self, batch_id: str) -> BatchStatus: ...

    async def batch_results(
        self, status: BatchStatus, requests: dict[str, Request]
    ) -> dict[str, Outcome]:
        """The outcome of every request of an ended batch that has a result (``requests``:
        the batch's requests by key, for parsing their answers)."""
        ...
