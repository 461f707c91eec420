"""The batch driver: a run's requests through a provider's batch API, re-attachable after a kill.

``run_batches`` turns the requests into batch lines (the kind's ``batch_line``: the body a live
call would send), splits them at the engine's limits, submits each chunk, polls every
``batch_poll_seconds`` until every batch has ended, reads the results, and submits the requests
that ended in a retryable error (``engines.batch.BATCH_RETRYABLE``: rate limits, server errors,
expiry) again in a follow-up batch, until each has been in ``max_retries + 1`` batches. It
returns one ``BatchAnswer`` per request; the dispatcher then writes each as the row a live call
would have written (``Dispatcher(served=...)``), at the batch price.

Re-attaching instead of paying twice: each batch id is written, with the keys it holds, to the
run's batch-state file (``_batch.json`` beside the raw parts; ``_batch.I-of-N.json`` for a
shard) atomically right after the provider accepted it and before any poll. A run killed while
batches are in flight finds the file on its next start and polls those batches instead of
submitting their requests again; only requests in no recorded batch are submitted. The file is
removed once every answer is a stored row (``finish``); the ids stay in the run's ledger entry.
It holds ids, keys and states, never a key or a header. The one window left: a kill between the
provider accepting a batch and the file's write (milliseconds) leaves that batch unknown here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

from sealedeval.canonical import dumps
from sealedeval.engines.base import EngineError, Request
from sealedeval.engines.batch import (
    BATCH_RETRYABLE,
    BatchEngine,
    BatchLine,
    BatchStatus,
    Outcome,
    split,
)
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.run.progress import batch_line
from sealedeval.run.retry import Attempts, RetryPolicy, with_retries

T = TypeVar("T")

STATE_FORMAT: Final = 1
STATE_NAME: Final = "_batch.json"


def state_name(shard: tuple[int, int] | None) -> str:
    """The batch-state file's name: one per shard, as the run markers are."""
    if shard is None or shard[1] == 1:
        return STATE_NAME
    return f"_batch.{shard[0]}-of-{shard[1]}.json"


@dataclass
class SubmittedBatch:
    """One batch this run submitted: its id, the follow-up round (0 first), its keys."""

    id: str
    round: int
    keys: list[str]
    submitted_at: str
    state: str = "submitted"


@dataclass
class BatchState:
    """The batch-state file: whose batches these are, and the batches in submission order."""

    engine: str
    kind: str
    base_url: str
    rubric_sha256: str
    batches: list[SubmittedBatch] = field(default_factory=list)

    def to_json(self) -> str:
        return dumps({"format": STATE_FORMAT, **asdict(self)})

    @classmethod
    def load(cls, path: Path) -> BatchState | None:
        """The file's state, None when there is none; a file this code cannot read is a user
        error naming it (never silently replaced: it may name batches already paid for)."""
        if not path.exists():
            return None
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("format") != STATE_FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, expected {STATE_FORMAT}")
            return cls(
                engine=str(doc["engine"]),
                kind=str(doc["kind"]),
                base_url=str(doc["base_url"]),
                rubric_sha256=str(doc["rubric_sha256"]),
                batches=[SubmittedBatch(**b) for b in doc["batches"]],
            )
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"{path}: not a batch-state file ({e}); move it aside") from None


@dataclass(frozen=True)
class BatchAnswer:
    """A request's last outcome and how many batches asked it (the row's ``attempts``)."""

    outcome: Outcome
    batches: int


@dataclass
class BatchRun:
    """What ``run_batches`` got: an answer per request, and every batch id it used (the
    re-attached ones included), for the ledger entry."""

    answers: dict[str, BatchAnswer] = field(default_factory=dict)
    batch_ids: list[str] = field(default_factory=list)
    submitted: int = 0
    """Batches this call submitted (re-attached ones not counted)."""


def _check_state(state: BatchState, fresh: BatchState, path: Path) -> None:
    for what in ("engine", "kind", "base_url", "rubric_sha256"):
        old, new = getattr(state, what), getattr(fresh, what)
        if old != new:
            raise UserError(
                f"{path}: holds batches of {what} {str(old)[:40]!r}, this run has "
                f"{str(new)[:40]!r}; finish that run, or move the file aside (its batches are "
                "then not re-attached)"
            )


async def run_batches(
    engine: BatchEngine,
    requests: Sequence[Request],
    state_path: Path,
    fresh: BatchState,
    policy: RetryPolicy,
    *,
    report: Callable[[str], None] = lambda line: None,
    now: Callable[[], str],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> BatchRun:
    """Ask ``requests`` through the engine's batch API (see the module docstring). ``fresh``
    names this run (engine, kind, URL, seal); a state file of another is refused."""
    opts = engine.batch_options()
    state = BatchState.load(state_path)
    if state is None:
        state = fresh
    else:
        _check_state(state, fresh, state_path)
    by_key = {r.request_key: r for r in requests}
    out = BatchRun()
    lines: dict[str, BatchLine] = {}
    for r in requests:
        try:
            lines[r.request_key] = engine.batch_line(r)
        except EngineError as e:  # the API cannot take it: its error row, nothing sent
            out.answers[r.request_key] = BatchAnswer(e, 0)
    asked: Counter[str] = Counter()

    async def retried(what: Callable[[], Awaitable[T]], salt: str) -> T:
        return await with_retries(
            what, policy, seed=zlib.crc32(salt.encode()), attempts=Attempts(), sleep=sleep
        )

    def save() -> None:
        write_text_atomic(state_path, state.to_json())

    # re-attach: every recorded batch that holds a request of this run
    mine = [b for b in state.batches if any(k in lines for k in b.keys)]
    for b in mine:
        asked.update(k for k in b.keys if k in lines)
    if mine:
        report(f"re-attaching to {len(mine)} batch(es) in {state_path.name}: " + _ids(mine))
    covered = {k for b in mine for k in b.keys}
    pending = [lines[k] for k in lines if k not in covered]
    rnd = 0  # the first submission of a request; follow-ups count up from the last round
    in_flight = list(mine)
    while True:
        for chunk in split(pending, opts.limits):
            keys = [line.key for line in chunk]
            asked.update(keys)
            try:
                batch_id = await retried(partial(engine.batch_submit, chunk), keys[0])
            except EngineError as e:
                for k in keys:
                    out.answers[k] = BatchAnswer(e, asked[k])
                report(f"batch of {len(keys)} requests not submitted: {e}")
                continue
            b = SubmittedBatch(batch_id, rnd, keys, now())
            state.batches.append(b)
            save()  # before the first poll: a kill from here on re-attaches
            out.submitted += 1
            in_flight.append(b)
            size = sum(len(line.data) for line in chunk)
            report(f"submitted batch {batch_id}: {len(keys)} requests, {size} bytes, round {rnd}")
        pending = []
        ended = await _poll(engine, in_flight, opts.poll_seconds, retried, report, sleep)
        for b, status in ended:
            reqs = {k: by_key[k] for k in b.keys if k in lines}
            try:
                results = (
                    await retried(partial(engine.batch_results, status, reqs), b.id)
                    if isinstance(status, BatchStatus)
                    else {}
                )
            except EngineError as e:
                results, status = {}, e
            for k in reqs:
                got = results.get(k)
                if got is None:
                    got = _missing(b, status)
                out.answers[k] = BatchAnswer(got, asked[k])
            b.state = status.state if isinstance(status, BatchStatus) else "unreadable"
        save()
        in_flight = []
        again = [
            k
            for k, a in out.answers.items()
            if k in lines
            and isinstance(a.outcome, EngineError)
            and a.outcome.kind in BATCH_RETRYABLE
            and asked[k] <= policy.max_retries
        ]
        if not again:
            break
        kinds = Counter(
            o.kind for k in again if isinstance(o := out.answers[k].outcome, EngineError)
        )
        report(
            f"{len(again)} requests ended retryable ("
            + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
            + "): a follow-up batch asks them again"
        )
        pending = [lines[k] for k in again]
        rnd = max(b.round for b in state.batches) + 1
    out.batch_ids = [b.id for b in state.batches if any(k in lines for k in b.keys)]
    return out


def _missing(b: SubmittedBatch, status: BatchStatus | EngineError) -> EngineError:
    """The error of a request an ended batch gave no result for."""
    if isinstance(status, EngineError):
        return status
    why = status.error or f"batch {b.id} {status.state}: no result for this request"
    return EngineError(status.kind_if_missing, why[:500])


def _ids(batches: Sequence[SubmittedBatch]) -> str:
    shown = ", ".join(b.id for b in batches[:3])
    return shown + (f" and {len(batches) - 3} more" if len(batches) > 3 else "")


async def _poll(
    engine: BatchEngine,
    batches: Sequence[SubmittedBatch],
    every_s: float,
    retried: Callable[[Callable[[], Awaitable[BatchStatus]], str], Awaitable[BatchStatus]],
    report: Callable[[str], None],
    sleep: Callable[[float], Awaitable[None]],
) -> list[tuple[SubmittedBatch, BatchStatus | EngineError]]:
    """Poll until every batch has ended (or its status can no longer be read: that error is
    then every one of its requests' row); reports a line whenever a state or count moved."""

    ended: dict[str, BatchStatus | EngineError] = {}
    last: dict[str, BatchStatus] = {}
    shown = ""
    while True:
        for b in batches:
            if b.id in ended:
                continue
            try:
                st = await retried(partial(engine.batch_poll, b.id), b.id)
            except EngineError as e:
                ended[b.id] = e
                continue
            last[b.id] = st
            if st.ended:
                ended[b.id] = st
        line = batch_line([last[b.id] for b in batches if b.id in last])
        if line and line != shown:
            report(line)
            shown = line
        if len(ended) == len(batches):
            return [(b, ended[b.id]) for b in batches]
        await sleep(every_s)


def finish(state_path: Path) -> None:
    """Every answer is a stored row: the batches need no re-attaching any more."""
    with contextlib.suppress(FileNotFoundError):
        state_path.unlink()


ONE_CALL_SOLVERS: Final = frozenset({"single", "tasks_answer", "judge_call"})
"""Solvers whose one engine call is ``call(request)`` on the planned request itself (the
default, the ``tasks`` suite's answer and golden's judge), so a batched answer can serve it.
Multi-call solvers (agents, self-consistency) go live: each step depends on the one before."""


class Batcher:
    """One run's use of the batch API: serves each phase's one-call requests from batches,
    keeps every batch id for the ledger entry, and clears the state file once the rows are
    stored (``finish``)."""

    def __init__(
        self,
        engine: BatchEngine,
        state_path: Path,
        fresh: BatchState,
        policy: RetryPolicy,
        report: Callable[[str], None],
        now: Callable[[], str],
    ) -> None:
        self.engine, self.state_path, self.fresh = engine, state_path, fresh
        self.policy, self.report, self.now = policy, report, now
        self.ids: list[str] = []
        self.submitted = 0

    async def serve(self, requests: Sequence[Request]) -> dict[str, BatchAnswer]:
        """The batched answers of ``requests``' one-call requests (the rest go live)."""
        one = [r for r in requests if r.solver in ONE_CALL_SOLVERS]
        if not one:
            return {}
        got = await run_batches(
            self.engine,
            one,
            self.state_path,
            self.fresh,
            self.policy,
            report=self.report,
            now=self.now,
        )
        self.ids += [i for i in got.batch_ids if i not in self.ids]
        self.submitted += got.submitted
        return got.answers

    def finish(self) -> None:
        finish(self.state_path)


def batcher_for(
    engine: object,
    state_path: Path,
    rubric_sha256: str,
    policy: RetryPolicy,
    report: Callable[[str], None],
    now: Callable[[], str],
) -> Batcher | None:
    """A ``Batcher`` when the engine's kind speaks a batch API and its config says
    ``batch: true``; None otherwise (the run goes live, as before)."""
    options = getattr(engine, "batch_options", None)
    if options is None or not options().enabled:
        return None
    cfg = engine.config  # type: ignore[attr-defined]
    fresh = BatchState(cfg.name, cfg.kind, str(getattr(engine, "base_url", "")), rubric_sha256)
    return Batcher(engine, state_path, fresh, policy, report, now)  # type: ignore[arg-type]
