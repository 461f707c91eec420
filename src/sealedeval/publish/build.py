"""Build result.json and report.md from the raw runs alone.

``build`` is the one function both ``sealedeval publish`` and ``sealedeval audit`` call: the audit
re-derives the published bytes with exactly the code that wrote them. Nothing here reads a clock.
"""

from __future__ import annotations

import platform
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import pyarrow.compute as pc

from sealedeval import __version__
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.graders.stage import grade
from sealedeval.run.runner import suite_seed
from sealedeval.seal import lock
from sealedeval.store.raw import all_true, latest_records, part_rows, raw_files, read_columns
from sealedeval.suites.base import get_suite

RESULT = Path("results/result.json")
REPORT_MD = Path("results/report.md")
_VERSIONED = ("numpy", "pyarrow", "httpx")


@dataclass
class SuiteBuild:
    name: str
    items: list[dict[str, Any]]
    rows: Sequence[Mapping[str, Any]]
    graded: list[dict[str, Any]]
    analysis: dict[str, Any]


def versions() -> dict[str, str]:
    out = {"sealedeval": __version__, "python": ".".join(platform.python_version_tuple()[:2])}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def manifest(root: Path) -> list[dict[str, Any]]:
    out = []
    for f in raw_files(root):
        rows = part_rows(f)  # from the footer: reading every part's data here cost minutes
        out.append({"path": f.relative_to(root).as_posix(), "sha256": sha256_file(f), "rows": rows})
    return out


def _rubric_hash(rows: Iterable[Mapping[str, Any]]) -> str:
    return _hash_label({r["rubric_sha256"] for r in rows})


def _hash_label(distinct: set[str]) -> str:
    hashes = sorted(distinct)
    return hashes[0] if len(hashes) == 1 else ("mixed:" + ",".join(h[:12] for h in hashes))


def build_suite(cfg: Config, name: str) -> SuiteBuild:
    suite = get_suite(name)
    rows = latest_records(raw_files(cfg.root, name))
    if not rows:
        raise UserError(f"results/raw/{name}: no raw runs; run `sealedeval run {name}` first")
    rubric = _rubric_hash(rows)
    items = suite.generate(cfg, suite_seed(cfg, name, rubric.removeprefix("mixed:")))
    # Suites read rows as Mappings; RawRecord is one (``grade`` is annotated with dicts, and
    # is a sealed module: changing its annotation would change golden's rubric hash).
    graded = grade(cfg, suite, items, cast(list[dict[str, Any]], rows))
    return SuiteBuild(name, items, rows, graded, suite.analyze(cfg, items, graded, rows))


@dataclass
class _Attempts:
    rows_by_engine: Counter[str]
    rubric_hashes: set[str]
    seal_commits: set[str]
    all_sealed: bool


def _attempt_summary(files: list[Path]) -> _Attempts:
    """Seal facts over every attempt row (not only the latest per key), column by column in
    Arrow, one part at a time: no per-row Python objects for a million rows."""
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


def suite_seal(cfg: Config, name: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the rows say about their seal, and the planned-vs-present request count."""
    suite = get_suite(name)
    attempts = _attempt_summary(raw_files(cfg.root, name))
    by_engine: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_engine[r["engine"]][r["status"]] += 1
    seed = suite_seed(cfg, name, _rubric_hash(rows))
    items = suite.generate(cfg, seed)
    counts = {}
    for eng, c in sorted(by_engine.items()):
        planned_missing = 0
        if eng in cfg.data["engines"]:
            model = next(r["model"] for r in rows if r["engine"] == eng)
            planned = suite.requests(cfg, items, cfg.engine(eng), model, seed)
            follow = getattr(suite, "followup_requests", None)
            if follow is not None:  # phase 2 is planned from the answers present
                mine = [r for r in rows if r["engine"] == eng]
                planned += follow(cfg, items, cfg.engine(eng), model, seed, mine)
            present = {r["request_key"] for r in rows if r["engine"] == eng}
            planned_missing = len({q.request_key for q in planned} - present)
        counts[eng] = {
            "requests": sum(c.values()),
            "ok": c["ok"],
            "error": c["error"],
            "refused": c["refused"],
            "missing": planned_missing,
            "attempt_rows": attempts.rows_by_engine.get(eng, 0),
            "complete": c["error"] == 0 and c["refused"] == 0 and planned_missing == 0,
        }
    sealed = attempts.all_sealed
    return {
        "rubric_sha256": _hash_label(attempts.rubric_hashes),
        "seal_commits": sorted(c for c in attempts.seal_commits if c),
        "pre_registered": sealed,
        "status": "pre-registered" if sealed else "not pre-registered",
        "counts": counts,
    }


def build(cfg: Config) -> tuple[str, str]:
    """(result.json text, report.md text) from raw runs, sealed inputs and config."""
    from sealedeval.publish.report_md import render_report

    suites: dict[str, Any] = {}
    identities: dict[str, Any] = {}
    for name in cfg.enabled_suites():
        if not raw_files(cfg.root, name):
            continue
        sb = build_suite(cfg, name)
        suites[name] = {"seal": suite_seal(cfg, name, sb.rows), "analysis": sb.analysis}
        for r in sb.rows:
            identities.setdefault(r["engine"], r["engine_identity"])
    if not suites:
        raise UserError("results/raw: no raw runs for any enabled suite")
    import json

    lock_doc = lock.read(cfg.root) if (cfg.root / lock.LOCK_NAME).exists() else {"sha256": ""}
    pre_registered = all(s["seal"]["pre_registered"] for s in suites.values())
    result = {
        "format": "sealedeval.result/1",
        "project": cfg.name,
        "status": "pre-registered" if pre_registered else "not pre-registered",
        "rubric_lock_sha256": lock_doc["sha256"],
        "config": {"sources": list(cfg.sources), "sha256": cfg.sha256()},
        "versions": versions(),
        "engines": {k: json.loads(v) for k, v in sorted(identities.items())},
        "manifest": manifest(cfg.root),
        "suites": suites,
    }
    text = dumps(result)
    return text, render_report(json.loads(text))
