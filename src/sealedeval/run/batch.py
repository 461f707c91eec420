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
It holds ids, keys, tokens and states, never a key or a header.

A create whose answer never arrives: the provider may have made the batch all the same (a reset
or a timeout after it accepted, a proxy's 5xx, a kill before the file's write). So before each
create the driver takes a *mark* (the newest batch the provider lists) and writes an *intent*
(the submission's token, keys and mark) to the file; the batch's id replaces the intent once
known. Before a retry of that create, and on the next start for every intent a killed run left,
it reads the batches listed since the mark (``BatchEngine.batch_find``) and re-attaches to the
submission's batch if the provider made it ("re-attached to batch X (token T) found on the
provider") instead of creating a second. A first try needs no look beyond the mark it has just
taken: nothing listed after that mark can be this submission's yet. The token
(``submission_token``) is a hash of the
engine, URL, seal and the chunk's keys, the same on every retry and after a restart; the mark,
not the token, keeps an older batch of the same requests (a finished run's, re-asked on purpose)
out of the look. What is guaranteed, and what not:

- OpenAI: the token is in the batch's metadata, so the look is exact: one batch per submission,
  whether the answer was lost to a reset, a timeout, a 5xx or a kill. A batch found ended
  ``failed``/``cancelled``/``expired`` without output is not re-attached: its requests are
  submitted anew.
- Anthropic: a Message Batch carries no metadata, so a batch created since the mark with as many
  requests is a candidate; it is polled like any, and if its results hold none of the
  submission's requests (another client's batch of the same size), they are asked again in the
  next round, with no attempt counted. The one loss left: a foreign candidate delays those
  requests until it ends.
- Both: a look needs the provider's batch list, and trusts it to show an accepted batch at
  once (one it does not show yet is created again); an OpenAI-compatible server without
  ``GET /batches`` (a refused list or look) disables the look, with a line saying so, and
  submits as before. An intent whose look fails transiently (the provider down, after the
  retries) keeps its requests out of this run (error rows) and stays in the file (``finish``
  keeps it) for the next run, which looks again before asking them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

from sealedeval.canonical import compact, dumps
from sealedeval.engines.base import EngineError, Request
from sealedeval.engines.batch import (
    BATCH_RETRYABLE,
    BatchEngine,
    BatchLine,
    BatchStatus,
    Found,
    Outcome,
    split,
)
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.run.progress import batch_line
from sealedeval.run.retry import Attempts, RetryPolicy, with_retries

T = TypeVar("T")

STATE_FORMAT: Final = 2
"""2 added ``intents`` and each batch's ``token`` and ``found``; a format-1 file (no intents) is
read as one of format 2, so a run killed under the older code re-attaches under this one."""
READABLE_FORMATS: Final = (1, 2)
STATE_NAME: Final = "_batch.json"
TOKEN_CHARS: Final = 32
"""Hex digits of a submission token: 128 bits, far inside OpenAI's 512-character metadata
values."""


def state_name(shard: tuple[int, int] | None) -> str:
    """The batch-state file's name: one per shard, as the run markers are."""
    if shard is None or shard[1] == 1:
        return STATE_NAME
    return f"_batch.{shard[0]}-of-{shard[1]}.json"


@dataclass
class SubmittedBatch:
    """One batch this run submitted: its id, the follow-up round (0 first), its keys, the
    submission's token, and ``found``: "" when the create's answer named it, else how a look
    on the provider found it (``Found.by``: ``token`` or ``size``)."""

    id: str
    round: int
    keys: list[str]
    submitted_at: str
    state: str = "submitted"
    token: str = ""
    found: str = ""


@dataclass
class Intent:
    """A create under way: written before the call, replaced by its ``SubmittedBatch`` once the
    id is known. One still in the file means the create's answer was lost (a kill, or every
    attempt failed): before its keys are asked again, the batches listed since ``mark`` are
    searched for it."""

    token: str
    round: int
    keys: list[str]
    mark: str
    at: str


@dataclass
class BatchState:
    """The batch-state file: whose batches these are, the batches in submission order, and the
    creates whose answer is not known yet."""

    engine: str
    kind: str
    base_url: str
    rubric_sha256: str
    batches: list[SubmittedBatch] = field(default_factory=list)
    intents: list[Intent] = field(default_factory=list)

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
            if doc.get("format") not in READABLE_FORMATS:
                raise ValueError(f"format {doc.get('format')!r}, expected {STATE_FORMAT}")
            return cls(
                engine=str(doc["engine"]),
                kind=str(doc["kind"]),
                base_url=str(doc["base_url"]),
                rubric_sha256=str(doc["rubric_sha256"]),
                batches=[SubmittedBatch(**b) for b in doc["batches"]],
                intents=[Intent(**i) for i in doc.get("intents", [])],
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


def submission_token(state: BatchState, keys: Sequence[str]) -> str:
    """The token of a submission of ``keys`` by the run ``state`` names: the same on every
    retry and after a restart (what makes a lost create findable), different for another
    engine, URL, seal or set of requests. A hash: it says nothing of the prompts."""
    doc = {
        "engine": state.engine,
        "kind": state.kind,
        "base_url": state.base_url,
        "rubric_sha256": state.rubric_sha256,
        "keys": list(keys),
    }
    return hashlib.sha256(compact(doc).encode()).hexdigest()[:TOKEN_CHARS]


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
    held: set[str] = set()
    """Keys of an intent that could not be looked for: not asked again in this run."""
    lookup = True
    """False once the provider refused to list batches: lost creates cannot be looked for."""
    said: set[str] = set()

    async def retried(what: Callable[[], Awaitable[T]], salt: str) -> T:
        return await with_retries(
            what, policy, seed=zlib.crc32(salt.encode()), attempts=Attempts(), sleep=sleep
        )

    def save() -> None:
        write_text_atomic(state_path, state.to_json())

    def no_lookup(e: EngineError) -> None:
        nonlocal lookup
        if lookup:
            lookup = False
            report(
                f"the provider does not list batches ({e}): a create whose answer is lost "
                "cannot be looked for, and may be submitted twice"
            )

    async def look(intent: Intent) -> list[Found]:
        """The batches the provider lists since the intent's mark that may be its batch (not
        one this file already names). A refused list is no list: nothing found (holding the
        requests would hold them in every run); a transient failure is raised."""
        try:
            found = await engine.batch_find(intent.token, len(intent.keys), intent.mark)
        except EngineError as e:
            if e.retryable:
                raise
            no_lookup(e)
            return []
        known = {b.id for b in state.batches}
        return [f for f in found if f.status.id not in known]

    def adopt(intent: Intent, found: Sequence[Found]) -> list[SubmittedBatch]:
        """Record the found batches as the intent's (the keys asked once, as submitted)."""
        got = [
            SubmittedBatch(
                f.status.id, intent.round, list(intent.keys), now(), f.status.state, found=f.by
            )
            for f in found
        ]
        state.batches += got
        state.intents.remove(intent)
        save()
        for f in found:
            report(
                f"re-attached to batch {f.status.id} (token {intent.token}) found on the provider"
                + (
                    f": created since the lost create, {len(intent.keys)} requests like it; "
                    "its results tell whether it is this run's"
                    if f.by == "size"
                    else ""
                )
            )
        return got

    def unusable(intent: Intent, found: Sequence[Found]) -> None:
        for f in found:
            if not f.usable and f.status.id not in said:
                said.add(f.status.id)
                report(
                    f"batch {f.status.id} (token {intent.token}) found on the provider ended "
                    f"{f.status.state} without results: its requests are submitted anew"
                )

    async def resolve() -> list[SubmittedBatch]:
        """Look for the batch of every open intent (a killed run's, or a create that failed);
        adopt what is found, forget the rest (their keys are asked as usual)."""
        adopted: list[SubmittedBatch] = []
        for intent in list(state.intents):
            try:
                found = await retried(partial(look, intent), intent.token)
            except EngineError as e:  # transient, after the retries: keep looking next run
                report(
                    f"could not look for batch (token {intent.token}) on the provider: {e}; "
                    f"its {len(intent.keys)} requests wait for a later run"
                )
                for k in intent.keys:
                    if k in lines:
                        held.add(k)
                        out.answers[k] = BatchAnswer(e, asked[k])
                continue
            usable = [f for f in found if f.usable]
            unusable(intent, found)
            if usable:
                adopted += adopt(intent, usable)
            else:
                state.intents.remove(intent)
                save()
        return adopted

    async def mark() -> str | None:
        """The provider's newest batch before a create; None when it lists no batches."""
        if not lookup:
            return None
        try:
            return await retried(engine.batch_mark, "mark")
        except EngineError as e:
            if e.retryable:
                raise  # the provider is failing: the create would fail too
            no_lookup(e)
            return None

    async def submit(chunk: list[BatchLine], rnd: int) -> list[SubmittedBatch]:
        """Create a batch of ``chunk`` (or re-attach to the one a lost create made)."""
        keys = [line.key for line in chunk]
        token = submission_token(state, keys)
        at = await mark()
        intent = None if at is None else Intent(token, rnd, keys, at, now())
        if intent is not None:
            state.intents.append(intent)
            save()  # before the create: a kill from here on looks for it on the next start
        tries = 0

        async def once() -> tuple[str, list[Found]]:
            nonlocal tries
            tries += 1
            if tries > 1 and intent is not None:  # the first try's look is the mark itself
                found = await look(intent)
                unusable(intent, found)
                usable = [f for f in found if f.usable]
                if usable:
                    return "", usable
            return await engine.batch_submit(chunk, token), []

        batch_id, found = await retried(once, keys[0])
        if found:
            assert intent is not None
            return adopt(intent, found)
        b = SubmittedBatch(batch_id, rnd, keys, now(), token=token)
        state.batches.append(b)
        if intent is not None:
            state.intents.remove(intent)
        save()  # before the first poll: a kill from here on re-attaches
        size = sum(len(line.data) for line in chunk)
        report(f"submitted batch {batch_id}: {len(keys)} requests, {size} bytes, round {rnd}")
        out.submitted += 1
        return [b]

    # re-attach: every batch a killed run's creates made, every recorded batch of this run's
    await resolve()
    mine = [b for b in state.batches if any(k in lines for k in b.keys)]
    for b in mine:
        asked.update(k for k in b.keys if k in lines)
    if mine:
        report(f"re-attaching to {len(mine)} batch(es) in {state_path.name}: " + _ids(mine))
    covered = {k for b in mine for k in b.keys}
    pending = [lines[k] for k in lines if k not in covered and k not in held]
    rnd = 0  # the first submission of a request; follow-ups count up from the last round
    in_flight = list(mine)
    while True:
        for chunk in split(pending, opts.limits):
            keys = [line.key for line in chunk]
            asked.update(keys)
            try:
                in_flight += await submit(chunk, rnd)
            except EngineError as e:
                for k in keys:
                    out.answers[k] = BatchAnswer(e, asked[k])
                report(f"batch of {len(keys)} requests not submitted: {e}")
                continue
        pending = []
        ended = await _poll(engine, in_flight, opts.poll_seconds, retried, report, sleep)
        read: list[tuple[SubmittedBatch, BatchStatus | EngineError, dict[str, Outcome]]] = []
        foreign: list[tuple[SubmittedBatch, dict[str, Request]]] = []
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
            if b.found == "size" and isinstance(status, BatchStatus) and not results:
                foreign.append((b, reqs))  # after the others: one of them may answer its keys
            else:
                read.append((b, status, results))
        answered: set[str] = set()  # answered in this round
        for b, status, results in read:
            for k in b.keys:
                if k not in lines:
                    continue
                got = results.get(k)
                if got is None:
                    got = _missing(b, status)
                prev = out.answers.get(k)
                if (
                    k in answered
                    and prev is not None
                    and not isinstance(prev.outcome, EngineError)
                    and isinstance(got, EngineError)
                ):
                    continue  # a duplicate batch of the same requests answered it
                out.answers[k] = BatchAnswer(got, asked[k])
                answered.add(k)
            b.state = status.state if isinstance(status, BatchStatus) else "unreadable"
        for b, reqs in foreign:
            _not_ours(b, reqs, asked, answered, out, report)
        save()
        in_flight = []
        again = [
            k
            for k, a in out.answers.items()
            if k in lines
            and k not in held
            and isinstance(a.outcome, EngineError)
            and a.outcome.kind in BATCH_RETRYABLE
            and asked[k] <= policy.max_retries
        ]
        if state.intents:  # a create failed for good this round: had it made its batch?
            in_flight = [b for b in await resolve() if any(k in lines for k in b.keys)]
            taken = {k for b in in_flight for k in b.keys}
            again = [k for k in again if k not in taken and k not in held]
        if not again and not in_flight:
            break
        if again:
            kinds = Counter(
                o.kind for k in again if isinstance(o := out.answers[k].outcome, EngineError)
            )
            report(
                f"{len(again)} requests ended retryable ("
                + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
                + "): a follow-up batch asks them again"
            )
        pending = [lines[k] for k in again]
        rnd = max(b.round for b in state.batches) + 1 if state.batches else rnd + 1
    out.batch_ids = [b.id for b in state.batches if any(k in lines for k in b.keys)]
    return out


def _not_ours(
    b: SubmittedBatch,
    reqs: dict[str, Request],
    asked: Counter[str],
    answered: set[str],
    out: BatchRun,
    report: Callable[[str], None],
) -> None:
    """A candidate found by size whose results hold none of its requests: another client's
    batch. It is dropped from the run (no keys, out of the ledger's ids); its requests that no
    other batch answered this round are asked again next round, the look not counted as an
    attempt."""
    left = [k for k in reqs if k not in answered]
    report(
        f"batch {b.id} holds none of these {len(reqs)} requests: not this run's"
        + (f"; {len(left)} are asked again" if left else "")
    )
    b.keys, b.state = [], "not this run's"
    for k in left:
        asked[k] -= 1
        why = f"batch {b.id}, found after a lost create answer, was not this run's"
        out.answers[k] = BatchAnswer(EngineError("server", why), asked[k])


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
    """Every answer is a stored row: the batches need no re-attaching any more. A create whose
    batch could not be looked for (``Intent``) stays: the next run looks for it before it asks
    those requests again."""
    state = BatchState.load(state_path)
    if state is not None and state.intents:
        state.batches = []
        write_text_atomic(state_path, state.to_json())
        return
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
