"""The stage functions the CLI, the workflow and the audit share.

Each stage is ``inputs → value`` in memory plus a file; the CLI writes the file, the next stage
reads it, and the audit calls the same functions without the files and compares. Nothing here
reads a clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, sha256_text
from sealedeval.keys import suite_seed
from sealedeval.plugins import (
    FollowupContext,
    GenerateContext,
    RequestContext,
    RowChunks,
    Suite,
    get_suite,
    hook,
    suite_info,
)
from sealedeval.run.gcpolicy import keep_alive, quiet_gc
from sealedeval.seal.design import sealed_suite_design
from sealedeval.stages import artifacts, chunked
from sealedeval.stages.analyze import analyze
from sealedeval.stages.grade import grade
from sealedeval.store.buckets import LatestBuckets
from sealedeval.store.columns import Coded
from sealedeval.store.raw import (
    LatestRows,
    RawRecord,
    RowsAt,
    all_true,
    latest_records,
    raw_files,
    read_columns,
    record_column,
)

ITEMS_FORMAT = "sealedeval.items/1"


def suite_config_sha256(cfg: Config, name: str) -> str:
    """The hash of the merged config this suite's items and requests depend on: its own section,
    the project seed and the engines it names (not other suites' sections)."""

    scfg = cfg.suite(name)
    engines = {e: cfg.data["engines"].get(e) for e in scfg.get("engines", [])}
    return sha256_text(compact({"seed": cfg.seed, "suite": scfg, "engines": engines}))


def generate_items(cfg: Config, name: str, rubric_sha256: str) -> list[dict[str, Any]]:
    """The suite's items under this rubric hash, normalised as they read back from disk."""
    suite = get_suite(name, cfg)
    seed = suite_seed(cfg, name, rubric_sha256)
    return artifacts.normalize_items(suite.generate(GenerateContext(cfg=cfg, seed=seed)))


def items_meta(cfg: Config, name: str, rubric_sha256: str) -> dict[str, str]:
    return {
        "format": ITEMS_FORMAT,
        "suite": name,
        "rubric_sha256": rubric_sha256,
        "seed": str(suite_seed(cfg, name, rubric_sha256)),
        "config_sha256": suite_config_sha256(cfg, name),
    }


def write_items(cfg: Config, name: str, rubric_sha256: str) -> tuple[Path, int]:
    items = generate_items(cfg, name, rubric_sha256)
    path = artifacts.items_path(cfg.root, name)
    artifacts.write_items(path, items, items_meta(cfg, name, rubric_sha256))
    return path, len(items)


def load_items(cfg: Config, name: str, rubric_sha256: str) -> list[dict[str, Any]]:
    """The items file when it was generated under exactly this rubric hash and config (what the
    workflow's generate rule wrote), else the items generated in memory (same values)."""
    path = artifacts.items_path(cfg.root, name)
    if path.exists() and artifacts.read_items_meta(path) == items_meta(cfg, name, rubric_sha256):
        return artifacts.read_items(path)
    return generate_items(cfg, name, rubric_sha256)


def latest(cfg: Config, name: str) -> Sequence[RawRecord]:
    rows = latest_records(raw_files(cfg.root, name))
    if not rows:
        raise UserError(f"results/raw/{name}: no raw runs; run `sealedeval run {name}` first")
    return rows


def hash_label(distinct: set[str]) -> str:
    hashes = sorted(distinct)
    return hashes[0] if len(hashes) == 1 else ("mixed:" + ",".join(h[:12] for h in hashes))


def rows_rubric(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rubric hash the rows were run under (the items they answered derive from it)."""
    return hash_label({str(r["rubric_sha256"]) for r in rows}).removeprefix("mixed:")


def graded_rows(
    cfg: Config, name: str, items: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> artifacts.GradedRows:
    return artifacts.normalize_graded(grade(cfg, get_suite(name, cfg), items, rows))


@dataclass
class _Attempts:
    rows_by_engine: Counter[str]
    rubric_hashes: set[str]
    seal_commits: set[str]
    all_sealed: bool


def _attempt_summary(files: list[Path]) -> _Attempts:
    """Seal facts over every attempt row (not only the latest per key), column by column in
    Arrow, one part at a time: no per-row Python objects for a million rows."""
    import pyarrow.compute as pc  # ~0.1 s to import: only the stages that summarise pay it

    out = _Attempts(Counter(), set(), set(), True)
    cols = ["engine", "sealed", "seal_commit", "rubric_sha256"]
    for f in files:
        t = read_columns([f], cols)
        if t.num_rows == 0:
            continue
        for v in pc.value_counts(t.column("engine")).to_pylist():
            out.rows_by_engine[v["values"]] += v["counts"]
        out.rubric_hashes.update(pc.unique(t.column("rubric_sha256")).to_pylist())
        out.seal_commits.update(pc.unique(t.column("seal_commit")).to_pylist())
        out.all_sealed = out.all_sealed and all_true(t.column("sealed"))
    return out


def planned_keys(
    cfg: Config,
    suite: Suite,
    items: Sequence[Mapping[str, Any]],
    engine: str,
    model: str,
    seed: int,
    rows: Sequence[Mapping[str, Any]],
) -> set[str]:
    """Every request key the suite plans for this engine (phase 2 from the answers present)."""
    ctx = RequestContext(cfg=cfg, items=items, engine=cfg.engine(engine), model=model, seed=seed)
    return set(_planned(suite, ctx, rows))


def completeness(
    cfg: Config, name: str, items: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """What the rows say about their seal, and planned-vs-present request counts per engine."""
    suite = get_suite(name, cfg)
    # By column and position: at ten million rows, lists of each engine's rows (a row object
    # per slot) and a set of all their keys were ~0.5 GB (``benchmarks/scale.py``).
    engines, statuses, keys = (record_column(rows, c) for c in ("engine", "status", "request_key"))
    by_engine: dict[str, RowsAt[Mapping[str, Any]]] = {}
    for i, e in enumerate(engines):
        view = by_engine.get(str(e))
        if view is None:
            view = by_engine[str(e)] = RowsAt(rows)
        view.append(i)
    seed = suite_seed(cfg, name, hash_label({str(h) for h in record_column(rows, "rubric_sha256")}))
    counts = {}
    for eng, mine in sorted(by_engine.items()):
        at = mine.positions
        missing = 0
        if eng in cfg.data["engines"]:
            planned = planned_keys(cfg, suite, items, eng, str(mine[0]["model"]), seed, mine)
            missing = len(planned) - len({k for k in (str(keys[i]) for i in at) if k in planned})
        counts[eng] = Counter(str(statuses[i]) for i in at), len(mine), missing
    return _seal_summary(cfg, name, counts)


def _seal_summary(
    cfg: Config, name: str, counts: Mapping[str, tuple[Counter[str], int, int]]
) -> dict[str, Any]:
    """``completeness`` from each engine's status counts, rows and missing planned keys, and
    the seal facts over every attempt row."""
    attempts = _attempt_summary(raw_files(cfg.root, name))
    out = {}
    for eng, (c, n, missing) in sorted(counts.items()):
        out[eng] = {
            "requests": n,
            "ok": c["ok"],
            "error": c["error"],
            "refused": c["refused"],
            "missing": missing,
            "attempt_rows": attempts.rows_by_engine.get(eng, 0),
            "complete": c["error"] == 0 and c["refused"] == 0 and missing == 0,
        }
    sealed = attempts.all_sealed
    return {
        "rubric_sha256": hash_label(attempts.rubric_hashes),
        "seal_commits": sorted(c for c in attempts.seal_commits if c),
        "pre_registered": sealed,
        "status": "pre-registered" if sealed else "not pre-registered",
        "counts": out,
    }


def _completeness_by_chunk(
    cfg: Config,
    name: str,
    items: Sequence[Mapping[str, Any]],
    src: RowChunks,
    hashes: set[str],
) -> tuple[dict[str, Any], dict[str, str]]:
    """``completeness`` and ``identities`` read a stretch of rows at a time: status counts
    per engine, each engine's first row, its planned keys against its rows' keys split by
    bucket on disk (``chunked.planned_missing``)."""
    suite = get_suite(name, cfg)
    seed = suite_seed(cfg, name, hash_label(hashes))
    counts: dict[str, tuple[Counter[str], int, int]] = {}
    ids: dict[str, str] = {}
    for eng, stretches in chunked.engine_rows(src):
        c: Counter[str] = Counter()
        n, first = 0, None
        for rows, where in stretches:
            c.update(str(s) for s in record_column(rows, "status"))
            n += len(rows)
            if first is None and len(rows):
                first = src.rows_at([int(where[0])])[0]  # its few columns, from its row group
        if first is None:
            continue
        ids.setdefault(str(eng), str(first["engine_identity"]))
        missing = 0
        if eng in cfg.data["engines"]:
            ctx = RequestContext(
                cfg=cfg, items=items, engine=cfg.engine(eng), model=str(first["model"]), seed=seed
            )
            keys = _planned(suite, ctx, chunked.EngineRows(src, eng))
            found = chunked.planned_missing(keys, src, eng)
            if found is None:  # keys that are not hex: counted in a set
                planned = set(_planned(suite, ctx, chunked.EngineRows(src, eng)))
                have = {
                    str(k)
                    for rows, _ in chunked.stretches(src, eng)
                    for k in record_column(rows, "request_key")
                    if str(k) in planned
                }
                found = len(planned) - len(have)
            missing = found
        counts[eng] = c, n, missing
    return _seal_summary(cfg, name, counts), dict(sorted(ids.items()))


def _planned(suite: Suite, ctx: RequestContext, rows: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """The request keys the suite plans for ``ctx``'s engine (phase 2 from ``rows``), one at a
    time (``planned_keys`` as they come)."""
    each = hook(suite, "iter_requests")
    for q in each(ctx) if each is not None else suite.requests(ctx):
        yield q.request_key
    follow = hook(suite, "followup_requests")
    if follow is not None:
        for q in follow(FollowupContext(**vars(ctx), rows=rows)):
            yield q.request_key


def identities(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each engine's identity, as its first row gives it. Latest rows with a coded engine
    column are read at each engine's first row only: reading every row's identity (ten
    million rows, after the analysis) was the analyze stage's peak and ~10 s of it."""
    if isinstance(rows, LatestRows) and isinstance(engines := record_column(rows, "engine"), Coded):
        import numpy as np

        codes = engines.code_view()
        first: list[int] = []
        for c in range(len(engines.values)):
            mine = codes == c
            if mine[at := int(mine.argmax())]:  # the engine's first row, if it has one
                first.append(at)
        rows = rows.subset(np.array(sorted(first), dtype=np.int64))
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(str(r["engine"]), str(r["engine_identity"]))
    return dict(sorted(out.items()))


def stage_key(cfg: Config, name: str) -> str:
    """What the graded and analysis files of a suite were derived from: every raw part of the
    suite (path and sha256) and the suite's config. A file whose key differs is stale: new
    calls were stored, a part changed, the config moved, or the suite's sealed design (which
    comparisons are pre-registered) was re-sealed since it was written."""

    raw = [[f.relative_to(cfg.root).as_posix(), sha256_file(f)] for f in raw_files(cfg.root, name)]
    doc = {
        "format": ITEMS_FORMAT,
        "raw": raw,
        "config_sha256": suite_config_sha256(cfg, name),
        "design": sealed_suite_design(cfg, name),
    }
    return sha256_text(compact(doc))


def analysis_doc(
    cfg: Config,
    name: str,
    items: Sequence[Mapping[str, Any]],
    graded: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    key: str,
) -> dict[str, Any]:
    """What ``results/analysis/S.json`` holds: the suite's analysis, its seal and completeness,
    the suite's provenance, the engine identities its rows name and the stage key."""
    return {
        "suite": suite_info(name, cfg),
        "stage_key": key,
        "seal": completeness(cfg, name, items, rows),
        "analysis": analyze(cfg, get_suite(name, cfg), items, graded, rows),
        "engines": identities(rows),
    }


def _analysis_by_chunk(
    cfg: Config, name: str, key: str, lb: LatestBuckets | None = None
) -> dict[str, Any] | None:
    """``analysis_doc`` with the rows read a stretch at a time (``stages.chunked``), from the
    graded file, when the suite's analysis can read them so and there are more than a
    chunk's; None when the rows are read whole. ``lb``: the rows already split."""
    suite = get_suite(name, cfg)
    files = raw_files(cfg.root, name)
    if hook(suite, "analyze_columns") is None or not chunked.more_than_a_chunk(files):
        return None
    graded = artifacts.graded_path(cfg.root, name)
    with chunked.row_chunks(suite, files, graded, lb=lb) as found:
        if found is None:
            return None
        src, hashes = found
        items = load_items(cfg, name, hash_label(hashes).removeprefix("mixed:"))
        seal, engines = _completeness_by_chunk(cfg, name, items, src, hashes)
        return {
            "suite": suite_info(name, cfg),
            "stage_key": key,
            "seal": seal,
            "analysis": analyze(cfg, suite, items, (), (), chunks=src),
            "engines": engines,
        }


def write_graded(cfg: Config, name: str, graded: Sequence[Mapping[str, Any]], key: str) -> Path:
    path = artifacts.graded_path(cfg.root, name)
    artifacts.write_graded(path, graded, {"stage_key": key})
    return path


def fresh_graded(cfg: Config, name: str, key: str) -> artifacts.GradedRows | None:
    path = artifacts.graded_path(cfg.root, name)
    if path.exists() and artifacts.read_graded_meta(path).get("stage_key") == key:
        return artifacts.read_graded(path)
    return None


def grade_suite(cfg: Config, name: str) -> tuple[artifacts.GradedRows, Path]:
    """The grade stage on the stored raw runs, its file written (``sealedeval grade``)."""
    chunked = _grade_by_chunk(cfg, name, stage_key(cfg, name))
    if chunked is not None:
        return chunked, artifacts.graded_path(cfg.root, name)
    with quiet_gc():  # the rows are long-lived: frozen once loaded
        rows = latest(cfg, name)
        items = load_items(cfg, name, rows_rubric(rows))
        keep_alive()
        graded = graded_rows(cfg, name, items, rows)
    return graded, write_graded(cfg, name, graded, stage_key(cfg, name))


def _grade_by_chunk(
    cfg: Config, name: str, key: str, lb: LatestBuckets | None = None
) -> artifacts.GradedRows | None:
    """The graded file written a chunk of the latest rows at a time (``stages.chunked``) when
    the suite can be graded so and has more rows than a chunk, then its rows as read back
    (columns read when asked for); None when it is graded whole. ``lb``: the rows already
    split."""
    suite = get_suite(name, cfg)
    files = raw_files(cfg.root, name)
    if not chunked.worth_chunking(suite, files):
        return None
    path = artifacts.graded_path(cfg.root, name)

    def items_for(hashes: set[str]) -> Sequence[Mapping[str, Any]]:
        return load_items(cfg, name, hash_label(hashes).removeprefix("mixed:"))

    meta = {"stage_key": key}
    if chunked.grade_by_chunk(cfg, suite, files, items_for, path, meta, lb=lb) is None:
        return None
    return artifacts.read_graded(path)


@contextmanager
def _one_split(cfg: Config, name: str, grading: bool) -> Iterator[LatestBuckets | None]:
    """The latest rows split once by cell for grading and then analysing (``chunked.split``)
    when the stage grades by chunk; None when it does not (the graded file is fresh, or the
    rows are graded whole)."""
    suite = get_suite(name, cfg)
    files = raw_files(cfg.root, name)
    if not grading or not chunked.worth_chunking(suite, files):
        yield None
        return
    with chunked.split(suite, files, analysis=True) as lb:
        yield lb


def build_analysis(
    cfg: Config, name: str, key: str, graded: artifacts.GradedRows | None = None
) -> tuple[artifacts.GradedRows, bool, dict[str, Any]]:
    """(graded rows, whether they were graded now, the analysis document) from the stored raw
    runs: ``graded`` when given (a fresh graded file), else the grade stage first, its file
    written (by chunk when it can be: ``_grade_by_chunk``). The analysis file is the caller's
    to write."""
    made = graded is None
    with _one_split(cfg, name, made) as lb:
        if graded is None:
            graded = _grade_by_chunk(cfg, name, key, lb)
        if graded is not None:
            doc = _analysis_by_chunk(cfg, name, key, lb)
            if doc is not None:
                return graded, made, doc
    with quiet_gc():  # rows, then graded rows: long-lived, never scanned again
        rows = latest(cfg, name)
        items = load_items(cfg, name, rows_rubric(rows))
        keep_alive()
        if graded is None:
            graded = graded_rows(cfg, name, items, rows)
            write_graded(cfg, name, graded, key)
        keep_alive()
        doc = analysis_doc(cfg, name, items, graded, rows, key)
    return graded, made, doc


def ensure_analysis(cfg: Config, name: str) -> dict[str, Any]:
    """The suite's analysis document: the file when it is fresh (what the workflow's analyze
    rule wrote), else the missing or stale stages derived now and their files written — so
    ``sealedeval publish`` after ``run`` works from the command line too, and never publishes
    numbers from a graded or analysis file older than the raw runs."""
    key = stage_key(cfg, name)
    apath = artifacts.analysis_path(cfg.root, name)
    if apath.exists():
        doc = artifacts.read_analysis(apath)
        if doc.get("stage_key") == key:
            return doc
    _, _, doc = build_analysis(cfg, name, key, fresh_graded(cfg, name, key))
    artifacts.write_analysis(apath, doc)
    return doc


@dataclass
class Derived:
    """One suite derived in memory from its raw rows: what the files should hold."""

    name: str
    items: list[dict[str, Any]]
    graded: artifacts.GradedRows
    doc: dict[str, Any]


def derive(cfg: Config, name: str) -> Derived:
    """Every stage of one suite in memory (the audit's re-derivation, and the benchmark's)."""
    with quiet_gc():  # as ensure_analysis
        rows = latest(cfg, name)
        items = generate_items(cfg, name, rows_rubric(rows))
        keep_alive()
        graded = graded_rows(cfg, name, items, rows)
        keep_alive()
        doc = analysis_doc(cfg, name, items, graded, rows, stage_key(cfg, name))
    return Derived(name, items, graded, doc)
