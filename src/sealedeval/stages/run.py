"""``sealedeval run SUITE --engine E``: seal check → requests → dispatch → raw store.

Resume is by request key: keys already answered ok under the current seal are skipped, errored
keys are asked again (a new row is appended; the old error row stays as history). Raw rows sealed
under a *different* rubric hash are refused rather than mixed: a re-sealed rubric needs new runs.

A run fails (its ledger entry's ``outcome`` is ``failed`` with a ``reason``, and ``run`` exits 2
with one line) when the engine's circuit opened (``run.retry.CircuitBreaker``: the engine could
not answer at all) or when more calls ended in error than ``fail_on_error`` allows; every
request still has its row, so a rerun after the fix asks exactly the errored ones again.

``sealedeval pilot`` goes through the same code with a ``Target`` naming the pilot store, the
ledger kind ``pilot`` and the items to ask: one way to plan, dispatch, resume and ledger a run.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final

import pyarrow.compute as pc

from sealedeval.canonical import dumps
from sealedeval.config import Config, EngineConfig
from sealedeval.engines import build_engine
from sealedeval.engines.base import Request
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_text_atomic
from sealedeval.keys import suite_seed
from sealedeval.plugins import FollowupContext, RequestContext, Suite, get_suite, hook
from sealedeval.run import batch
from sealedeval.run.dispatcher import Dispatcher, RunStats, key_scrubber, now_iso, retry_policy
from sealedeval.run.gcpolicy import quiet_gc
from sealedeval.run.retry import CircuitBreaker, Trip
from sealedeval.seal import design, lock, shards
from sealedeval.stages.pipeline import load_items, suite_config_sha256
from sealedeval.store import ledger, segments
from sealedeval.store.raw import (
    RAW_ROOT,
    RawRecord,
    RawWriter,
    all_true,
    iter_raw,
    latest_rows,
    raw_dir,
    raw_files,
    read_columns,
)

MARKER = "_run.json"


@dataclass(frozen=True)
class Target:
    """Where a run writes and what it asks.

    Attributes:
        store: The store under the project root (``results/raw``: the study; ``results/pilot``:
            a pilot, which ``raw_files`` never lists).
        kind: The ledger entry's ``kind`` (``run``; ``pilot`` is disclosed, never counted).
        items: Given the planned item ids in plan order, the ones to ask (None: every item).
        after: Called once the run ended without failure, before its ledger entry is written;
            what it returns is recorded in the entry under ``sequential`` (a sequential run's
            look: ``stages/sequential.py``).
    """

    store: Path = RAW_ROOT
    kind: str = "run"
    items: Callable[[Sequence[str]], Collection[str]] | None = None
    after: Callable[[], Mapping[str, Any]] | None = None


STUDY = Target()


@dataclass(frozen=True)
class Plan:
    suite: Suite
    seal: lock.SealState
    seed: int
    items: list[dict[str, Any]]


def plan(cfg: Config, suite_name: str, *, unsealed: bool = False) -> Plan:
    suite = get_suite(suite_name, cfg)
    cfg.suite(suite_name)
    seal = lock.check(cfg.root, suite_name, suite.rubric_inputs(), unsealed=unsealed)
    seed = suite_seed(cfg, suite_name, seal.rubric_sha256)

    return Plan(suite, seal, seed, load_items(cfg, suite_name, seal.rubric_sha256))


def _existing(
    root: Path, suite: str, engine: str, seal: lock.SealState, store: Path = RAW_ROOT
) -> set[str]:
    """Keys already answered ok under this very seal state. The study's store refuses to mix
    seal states; the pilot store keeps rows of an earlier rubric beside the new ones, unused.

    Column-wise in Arrow (no per-row Python objects): this scan is part of every run's
    start-up, and a resumed run may sit on a million rows.
    """
    files = [f for f in raw_files(root, suite, store=store) if f.parent.name == engine]
    if not files:
        return set()
    t = read_columns(files, ["request_key", "status", "rubric_sha256", "sealed"])
    where = raw_dir(root, suite, engine, store=store)
    other = set(pc.unique(t.column("rubric_sha256")).to_pylist()) - {seal.rubric_sha256}
    if other and store != RAW_ROOT:
        # a pilot's store is no study: a pilot after a rubric edit asks again beside them
        t = t.filter(pc.equal(t.column("rubric_sha256"), seal.rubric_sha256))
    elif other:
        raise UserError(
            f"{where}: holds rows under another rubric hash ({sorted(other)[0][:12]}…); "
            "move them aside before running under the new seal"
        )
    if seal.sealed and not all_true(t.column("sealed")):
        raise UserError(
            f"{where}: holds rows run with --unsealed; a sealed run cannot reuse them "
            "(move them aside; `sealedeval pilot` tries items outside the study)"
        )
    # The "ok" scalar is taken from the column itself: converting a Python value to an Arrow
    # scalar imports pandas, ~0.3 s of the start-up of every run.
    status = t.column("status")
    ok_value = [v for v in pc.unique(status) if v.as_py() == "ok"]
    if not ok_value:
        return set()
    return set(t.filter(pc.equal(status, ok_value[0])).column("request_key").to_pylist())


def _adoptable(root: Path, out_dir: Path, shard: tuple[int, int] | None) -> list[dict[str, Any]]:
    """Parts in this engine's store that no ledger entry lists: left by a run killed before
    its entry. This run resumes from their rows, so its entry lists them (``adopted``) and the
    audit counts them aloud.

    Only what a killed run can have written is adopted: under sharding, parts wholly of this
    shard (a sibling shard running beside this one lists its own); and never a part with an ok
    answer to a key another part already answered ok (a killed run asked only what was not
    answered, so such a part was copied or injected, and stays unledgered for the audit)."""

    files = sorted(f for f in out_dir.glob("part-*.parquet") if not f.name.startswith("."))
    if not files:
        return []
    known = {str(x["path"]) for e in segments.all_entries(root) for x in ledger.entry_parts(e)}
    orphans = [f for f in files if f.relative_to(root).as_posix() not in known]
    if not orphans:
        return []
    answered: Counter[str] = Counter()
    columns: dict[Path, tuple[list[str], set[str]]] = {}
    for f in files:
        t = read_columns([f], ["request_key", "status"])
        keys = t.column("request_key").to_pylist()
        ok = {k for k, s in zip(keys, t.column("status").to_pylist(), strict=True) if s == "ok"}
        answered.update(ok)
        columns[f] = (keys, ok)
    out: list[dict[str, Any]] = []
    for f in orphans:
        keys, ok = columns[f]
        if shard is not None and not all(in_shard(k, shard) for k in keys):
            continue
        if any(answered[k] > 1 for k in ok):
            continue
        out.append(
            {"path": f.relative_to(root).as_posix(), "sha256": sha256_file(f), "rows": len(keys)}
        )
    return out


def parse_shard(text: str) -> tuple[int, int]:
    """'I/N' (0-based I) → (I, N); a bad value is a one-line user error."""
    try:
        i_s, n_s = text.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise UserError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise UserError(f"--shard {text!r}: need 0 <= I < N")
    return i, n


def in_shard(request_key: str, shard: tuple[int, int] | None) -> bool:
    """Shards split by request key, so a request's shard never depends on list order (the
    sealed partition: ``seal/shards.py``)."""
    return shards.in_shard(request_key, shard)


def marker_name(shard: tuple[int, int] | None) -> str:
    if shard is None or shard[1] == 1:
        return MARKER
    return f"_run.{shard[0]}-of-{shard[1]}.json"


def _sigterm_to_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def suite_engine(cfg: Config, suite_name: str, engine_name: str) -> EngineConfig:
    """The engine's config for one suite: ``suites.<suite>.engine_options.<engine>`` merged over
    the engine's options, so one suite can give the embedded model what only it needs (the
    grounding prompts need a 16k context and a prompt cache that can hold one ~12k-token
    state; golden and bloodpanel keep the smaller, faster server)."""
    ecfg = cfg.engine(engine_name)
    over = (cfg.suite(suite_name).get("engine_options") or {}).get(engine_name) or {}
    return replace(ecfg, extra={**ecfg.extra, **over}) if over else ecfg


def run_suite(
    cfg: Config,
    suite_name: str,
    engine_name: str,
    *,
    unsealed: bool = False,
    progress: bool = True,
    flush_rows: int = 16,
    max_part_rows: int = 8192,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    allow_errors: bool = False,
    status: IO[str] | None = None,
    target: Target = STUDY,
) -> RunStats:
    """Plan, dispatch what is not stored yet, write the shard's marker (``sealedeval run``);
    fail (``UserError``, one line) when the engine's circuit opened or more calls ended in error
    than the engine's ``fail_on_error`` allows, unless ``allow_errors`` (then the line is a
    warning on stderr). ``fail_on_error`` tolerates errors among answered calls; an open circuit
    means no call was answered, so only ``allow_errors`` lets it pass, and its ledger entry says
    ``failed`` either way. ``status`` receives throttled one-line progress reports
    (``run.progress``; the run rule points it at Snakemake's stderr). ``target`` says where the
    rows go and which items are asked (the study's raw store and every item by default)."""
    with quiet_gc():  # planning builds every request up front: see run/gcpolicy.py
        return _run_suite(
            cfg,
            suite_name,
            engine_name,
            unsealed=unsealed,
            progress=progress,
            flush_rows=flush_rows,
            max_part_rows=max_part_rows,
            limit=limit,
            shard=shard,
            allow_errors=allow_errors,
            status=status,
            target=target,
        )


def _run_suite(
    cfg: Config,
    suite_name: str,
    engine_name: str,
    *,
    unsealed: bool,
    progress: bool,
    flush_rows: int,
    max_part_rows: int,
    limit: int | None,
    shard: tuple[int, int] | None,
    allow_errors: bool,
    status: IO[str] | None = None,
    target: Target = STUDY,
) -> RunStats:
    ecfg = suite_engine(cfg, suite_name, engine_name)
    ecfg.api_key()  # an unset key variable fails here, before anything is written
    p = plan(cfg, suite_name, unsealed=unsealed)
    store = target.store
    out_dir = raw_dir(cfg.root, suite_name, engine_name, store=store)
    log_dir = cfg.root / "logs" / "engines"
    log_dir.mkdir(parents=True, exist_ok=True)
    engine = build_engine(
        ecfg,
        answerer=p.suite.reference_answer,
        log_path=log_dir / f"{engine_name}.log",
        root=cfg.root,  # kinds that read project files (replay's source) resolve them here
    )
    requests = p.suite.requests(
        RequestContext(cfg=cfg, items=p.items, engine=ecfg, model=engine.model, seed=p.seed)
    )
    if limit is not None:
        requests = requests[:limit]
    chosen: Collection[str] | None = None
    if target.items is not None:
        chosen = set(target.items(list(dict.fromkeys(r.item_id for r in requests))))
        requests = [r for r in requests if r.item_id in chosen]
    requests = [r for r in requests if in_shard(r.request_key, shard)]
    done = _existing(cfg.root, suite_name, engine_name, p.seal, store)
    adopted = _adoptable(cfg.root, out_dir, shard)
    if target.kind == "run":
        _say_design(cfg, suite_name, engine_name)  # once the stored rows read cleanly
    todo: list[Request] = [r for r in requests if r.request_key not in done]
    stats = RunStats(requested=len(requests), skipped=len(requests) - len(todo))
    # Parts of 16, 32, 64, ... up to 8192 rows, or every 2 s: see RawWriter.
    writer = RawWriter(out_dir, flush_rows=flush_rows, max_rows=max_part_rows)
    breaker = CircuitBreaker(scrub=key_scrubber(ecfg))  # one per run: phase 2 shares it
    label = f"{suite_name}/{engine_name}" + (f" shard {shard[0] + 1}/{shard[1]}" if shard else "")
    batcher = batch.batcher_for(  # None unless the engine says ``batch: true``
        engine,
        out_dir / batch.state_name(shard),
        p.seal.rubric_sha256,
        retry_policy(ecfg),
        lambda line: _say(f"{label}: {line}", status),
        now_iso,
    )

    def followups() -> list[Request]:
        """Phase 2 (e.g. a judge grading this engine's transcripts): requests derived from the
        stored answers, so they can only be built once phase 1 is on disk."""
        rows = engine_rows(cfg.root, suite_name, engine_name, store=store)
        more = [
            r
            for r in followup_requests(p, cfg, ecfg, engine.model, rows)
            if in_shard(r.request_key, shard) and (chosen is None or r.item_id in chosen)
        ]
        done2 = _existing(cfg.root, suite_name, engine_name, p.seal, store)
        stats.requested += len(more)
        stats.skipped += sum(1 for r in more if r.request_key in done2)
        return [r for r in more if r.request_key not in done2]

    started = now_iso()
    outcome, failure = "interrupted", None
    look: Mapping[str, Any] | None = None
    try:
        later = None if todo else followups()
        if todo or later:
            old = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
            try:
                asyncio.run(
                    _dispatch(
                        engine,
                        writer,
                        p,
                        todo,
                        stats,
                        progress,
                        followups if todo else lambda: later,
                        status=status,
                        label=label,
                        breaker=breaker,
                        batcher=batcher,
                    )
                )
                if batcher is not None:
                    batcher.finish()  # every answer is a stored row: nothing to re-attach
            finally:
                signal.signal(signal.SIGTERM, old)
                writer.close()
        failure = run_failure(stats, breaker.trip, ecfg, suite_name, allow_errors=allow_errors)
        outcome = "done" if failure is None else "failed"
        if failure is None and target.after is not None:
            look = target.after()
    finally:
        _ledger(
            cfg,
            p,
            engine_name,
            engine.model,
            requests,
            shard,
            writer,
            stats,
            started,
            outcome,
            failure.reason if failure is not None else "",
            target,
            adopted,
            batcher.ids if batcher is not None else (),
            look,
        )
    marker: dict[str, Any] = {
        "suite": suite_name,
        "engine": engine_name,
        "shard": list(shard or (0, 1)),
        "requested": stats.requested,
        "ok_before": stats.skipped,
        "ok_now": stats.ok,
        "error_now": stats.error,
        "errors_by_kind": dict(stats.by_kind),
        "sealed": p.seal.sealed,
        "rubric_sha256": p.seal.rubric_sha256,
        "seal_commit": p.seal.seal_commit,
    }
    write_text_atomic(out_dir / marker_name(shard), dumps(marker))
    if stats.bugs:
        raise stats.bugs[0]
    if failure is not None:
        if not allow_errors:
            raise UserError(failure.line)
        print(f"warning: {failure.line}", file=sys.stderr)
    return stats


FIRST_ERROR_CHARS: Final = 160
"""Characters of the circuit's first error quoted in ``run``'s one line (its rows keep more)."""


@dataclass(frozen=True)
class RunFailure:
    """Why a run failed: ``reason`` short, for the ledger and the status table (``unreachable:
    connection refused``), ``line`` the one line ``run`` prints."""

    reason: str
    line: str


def run_failure(
    stats: RunStats, trip: Trip | None, ecfg: EngineConfig, suite: str, *, allow_errors: bool
) -> RunFailure | None:
    """The run's failure, if any: its circuit opened (whatever ``allow_errors``: the engine did
    not answer), or, unless ``allow_errors``, more errors than ``fail_on_error`` allows."""
    if trip is not None:
        at = f" at {ecfg.base_url}" if ecfg.base_url else ""
        made = stats.ok + stats.error
        called = "call" if trip.calls == 1 else "calls"
        line = (
            f"{suite}/{ecfg.name}: engine {trip.reason}{at} (circuit open after {trip.calls} "
            f"failed {called} and no success, first: {trip.first_error[:FIRST_ERROR_CHARS]}; "
            f"{stats.not_called} of {made} requests recorded as errors without a call); "
            "fix the engine's config and rerun: the errored requests are asked again"
        )
        return RunFailure(trip.reason, line)
    if allow_errors:
        return None
    policy = error_policy_failure(stats, ecfg, suite)
    if policy is None:
        return None
    return RunFailure(f"{stats.error} of {stats.ok + stats.error} calls ended in error", policy)


def errors_allowed(made: int, threshold: float) -> float:
    """How many errored calls ``fail_on_error`` tolerates out of ``made`` calls."""
    return threshold * made if 0 < threshold < 1 else threshold


def error_policy_failure(stats: RunStats, ecfg: EngineConfig, suite: str) -> str | None:
    """The one line of a run that ends with more errors than the engine's ``fail_on_error``
    allows (``run`` exits 2 with it), else None. Its rows are stored: a rerun retries the
    errored keys."""
    made = stats.ok + stats.error
    if stats.error and stats.error > errors_allowed(made, ecfg.fail_on_error):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(stats.by_kind.items()))
        return (
            f"{suite}/{ecfg.name}: {stats.error} of {made} calls ended in error after retries "
            f"({kinds}), more than fail_on_error {ecfg.fail_on_error:g} allows; the rows are "
            "stored: rerun to retry them, or pass --allow-errors"
        )
    return None


def _say_design(cfg: Config, suite: str, engine: str) -> None:
    """Say, before the first call, when this engine is not part of the sealed design: the run
    goes ahead (adding an engine is allowed), and the report will label it."""

    status = design.run_status(cfg, suite, engine)
    if status != "sealed":
        print(f"note: {suite}/{engine}: {status} ({cfg.where})")


def _ledger(
    cfg: Config,
    p: Plan,
    engine_name: str,
    model: str,
    requests: Sequence[Request],
    shard: tuple[int, int] | None,
    writer: RawWriter,
    stats: RunStats,
    started: str,
    outcome: str,
    reason: str = "",
    target: Target = STUDY,
    adopted: Sequence[Mapping[str, Any]] = (),
    batches: Sequence[str] = (),
    look: Mapping[str, Any] | None = None,
) -> None:
    """Append this run's ledger entry: what was planned, what was written, under which seal,
    how it ended (``outcome`` done / failed / interrupted; a failed run's ``reason``), the
    parts of an interrupted run it resumed from (``adopted``), the provider batch ids its
    answers came from (``batches``, with ``batch: true``) and the sequential look this run
    completed (``look``)."""

    design_status = design.run_status(cfg, p.suite.name, engine_name)

    out_dir = raw_dir(cfg.root, p.suite.name, engine_name, store=target.store)
    parts = []
    for name, rows in list(writer.parts):
        f = out_dir / name
        if f.exists():
            parts.append(
                {"path": f.relative_to(cfg.root).as_posix(), "sha256": sha256_file(f), "rows": rows}
            )
    # a shard of a sharded study run chains into its own segment: no lock shared across nodes
    sharded = shard is not None and shard[1] > 1 and target.kind == "run"
    append = (
        (lambda root, e: segments.append(root, p.suite.name, engine_name, shard, e))
        if sharded and shard is not None
        else ledger.append
    )
    append(
        cfg.root,
        {
            "kind": target.kind,
            "suite": p.suite.name,
            "engine": engine_name,
            "model": model,
            "rubric_sha256": p.seal.rubric_sha256,
            "seal_commit": p.seal.seal_commit,
            "sealed": p.seal.sealed,
            "config_sha256": suite_config_sha256(cfg, p.suite.name),
            "design": design_status,
            "shard": list(shard or (0, 1)),
            "planned": len(requests),
            "planned_keys_sha256": ledger.keys_sha256([r.request_key for r in requests]),
            "parts": parts,
            **({"adopted": list(adopted)} if adopted else {}),
            **({"batches": list(batches)} if batches else {}),
            "ok": stats.ok,
            "error": stats.error,
            "errors_by_kind": dict(sorted(stats.by_kind.items())),
            "skipped": stats.skipped,
            "outcome": outcome,
            **({"reason": reason} if reason else {}),
            **({"sequential": dict(look)} if look is not None else {}),
            "started_at": started,
            "finished_at": now_iso(),
        },
    )


def engine_rows(root: Path, suite: str, engine: str, *, store: Path = RAW_ROOT) -> list[RawRecord]:
    """The latest row per key of one engine's raw runs."""
    files = [f for f in raw_files(root, suite, store=store) if f.parent.name == engine]
    return list(latest_rows(iter_raw(files)).values())


def followup_requests(
    p: Plan, cfg: Config, ecfg: Any, model: str, rows: Sequence[Mapping[str, Any]]
) -> list[Request]:
    """A suite's optional second phase (``followup_requests``), else nothing."""
    follow = hook(p.suite, "followup_requests")
    if follow is None:
        return []
    ctx = FollowupContext(cfg=cfg, items=p.items, engine=ecfg, model=model, seed=p.seed, rows=rows)
    return list(follow(ctx))


async def _dispatch(
    engine: Any,
    writer: RawWriter,
    p: Plan,
    todo: list[Request],
    stats: RunStats,
    progress: bool,
    later: Callable[[], list[Request] | None] | None = None,
    *,
    status: IO[str] | None = None,
    label: str | None = None,
    breaker: CircuitBreaker | None = None,
    batcher: batch.Batcher | None = None,
) -> None:
    async def dispatcher(phase_label: str | None, reqs: list[Request]) -> Dispatcher:
        served = await batcher.serve(reqs) if batcher is not None else None
        return Dispatcher(
            engine,
            writer,
            p.seal,
            progress=progress,
            status=status,
            label=phase_label,
            breaker=breaker,
            served=served,
        )

    await engine.start()
    try:
        if todo:
            await (await dispatcher(label, todo)).run(todo, stats)
        writer.flush()
        more = later() if later is not None else None
        if more:
            await (await dispatcher(f"{label} phase 2" if label else None, more)).run(more, stats)
    finally:
        await engine.close()


def _say(line: str, status: IO[str] | None) -> None:
    """A batch line (submitted, states, follow-ups) on stderr, and on the status stream."""
    print(line, file=sys.stderr, flush=True)
    if status is not None and status is not sys.stderr:
        status.write(line + "\n")
        status.flush()


def print_stats(stats: RunStats, suite: str, engine: str) -> None:
    print(f"{suite}/{engine}: {stats.line()}", file=sys.stderr)
