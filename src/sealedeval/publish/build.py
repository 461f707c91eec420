"""Assemble result.json and report.md from the analysis files and the raw-run manifest.

``assemble`` is a pure function of the per-suite analysis documents (``results/analysis/S.json``,
written by the analyze stage), the manifest of raw files, the lock and the config; it imports
no suite. ``sealedeval publish`` reads the analysis files; ``sealedeval audit`` derives the same
documents in memory and calls ``assemble`` again, so the published bytes are re-derived by the
code that wrote them. Nothing here reads a clock.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from sealedeval._version import __version__
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.plugins import get_suite, presenting
from sealedeval.publish.report_md import render_report
from sealedeval.publish.summary import headline_metrics
from sealedeval.seal import design, lock, standing
from sealedeval.stages import merge
from sealedeval.stages.pipeline import (
    analysis_doc,
    ensure_analysis,
    generate_items,
    graded_rows,
    rows_rubric,
)
from sealedeval.store.raw import latest_records, part_rows, raw_files, read_columns

RESULT = Path("results/result.json")
REPORT_MD = Path("results/report.md")
_VERSIONED = ("numpy", "pyarrow", "httpx")


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


def published_suites(cfg: Config) -> list[str]:
    """Enabled suites with raw runs: the ones result.json reports."""
    return [n for n in cfg.enabled_suites() if raw_files(cfg.root, n)]


def check_inputs(cfg: Config, names: list[str]) -> None:
    """Stop (``UserError``) when a published suite with sealed rows has a sealed input that
    differs from ``rubric.lock``: its numbers would come from code or data the seal does not
    cover. Rows run with ``--unsealed`` are published as "not pre-registered" whatever the lock."""
    import pyarrow.compute as pc

    if not (cfg.root / lock.LOCK_NAME).exists():
        return
    doc = lock.read(cfg.root)
    for name in names:
        if name not in doc["suites"]:
            continue
        sealed = read_columns(raw_files(cfg.root, name), ["sealed"]).column("sealed")
        if not pc.any(sealed, min_count=0).as_py():
            continue  # every row unsealed
        bad = standing.input_changes(cfg.root, doc, name, get_suite(name, cfg).rubric_inputs())
        if bad:
            raise UserError(
                f"{lock.LOCK_NAME}: {bad[0]} changed after the seal (suite {name}); nothing "
                "published: restore it, or re-seal, commit and run again"
            )


def read_docs(cfg: Config) -> dict[str, dict[str, Any]]:
    """The analysis file of every published suite: the one ``sealedeval analyze`` wrote when it
    is fresh, else the stale or missing stages are derived first (``ensure_analysis``). A
    changed sealed input stops it first (``check_inputs``), before anything is written."""

    names = published_suites(cfg)
    if not names:
        raise UserError("results/raw: no raw runs for any enabled suite")
    check_inputs(cfg, names)
    return {n: ensure_analysis(cfg, n) for n in names}


def earlier_headline(cfg: Config, name: str, parts: Sequence[str]) -> list[dict[str, Any]]:
    """The headline the rows of an earlier seal give, derived from those parts alone by the
    stage functions (``stages.pipeline``) and the summary's choice of headline: the metric
    records, as result.json holds them."""

    rows = latest_records([cfg.root / p for p in parts])
    if not rows:
        return []
    items = generate_items(cfg, name, rows_rubric(rows))
    graded = graded_rows(cfg, name, items, rows)
    doc = analysis_doc(cfg, name, items, graded, rows, "")
    return headline_metrics(name, {"seal": doc["seal"], "analysis": doc["analysis"]})


def seal_history(
    cfg: Config, lock_doc: Mapping[str, Any], name: str, seal: Mapping[str, Any]
) -> dict[str, Any]:
    """result.json's ``seal_history`` of one suite (``seal.standing.history``), with the
    headline of each earlier seal whose rows are all still present and whose sealed files are
    today's (re-grading its answers under other files would not be the headline it gave)."""
    status, earlier = standing.history(cfg, lock_doc, name, seal)
    out = []
    for e in earlier:
        entry = e.as_json()
        if not e.rows_present:
            entry["headline"] = None
            entry["headline_note"] = (
                f"rows not all present ({len(e.parts_present)} of {len(e.parts)} parts)"
                if e.parts_present
                else "rows not present"
            )
        elif [c for c in e.changed if c != standing.DESIGN_CHANGED]:
            entry["headline"] = None
            entry["headline_note"] = (
                "rows present, not re-derived: its sealed files differ from today's"
            )
        else:
            entry["headline"] = earlier_headline(cfg, name, e.parts)
            entry["headline_note"] = ""
        out.append(entry)
    return {"status": status, "earlier": out}


def assemble(
    cfg: Config,
    docs: Mapping[str, Mapping[str, Any]],
    *,
    environment: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """(result.json text, report.md text) from the suites' analysis documents.

    ``environment`` replaces the library versions of this process (the audit passes the ones a
    result recorded, so a re-derivation on another machine compares numbers, not versions)."""

    if not docs:
        raise UserError("results/raw: no raw runs for any enabled suite")
    suites: dict[str, Any] = {}
    identities: dict[str, str] = {}
    lock_doc = lock.read(cfg.root) if (cfg.root / lock.LOCK_NAME).exists() else {"sha256": ""}
    parts = manifest(cfg.root)
    by_part = standing.part_deviations(cfg.root, lock_doc, {m["path"]: m["sha256"] for m in parts})
    deviations: list[str] = []
    for name, doc in docs.items():
        d = design.result_design(cfg, lock_doc, name, doc)
        hist = seal_history(cfg, lock_doc, name, doc["seal"])
        mine = standing.design_deviations(name, d) + standing.rows_deviations(
            name, lock_doc, doc["seal"]
        )
        mine += [what for suite, what in by_part if suite == name]
        # a sharded suite: every planned shard merged exactly once (stages/merge.py)
        sharded, merge_problems = merge.merge_suite(cfg, name, doc["seal"].get("counts") or {})
        mine += merge_problems
        deviations += mine
        suites[name] = {
            "seal": dict(doc["seal"]) | {"status": hist["status"]},
            "seal_history": hist,
            "as_sealed": {"ok": not mine, "deviations": mine},
            "design": d,
            "analysis": doc["analysis"],
            **({"shards": sharded} if sharded is not None else {}),
        }
        for eng, ident in doc["engines"].items():
            identities.setdefault(eng, ident)
    # a suite whose every raw part is gone is not published: its ledgered parts still count
    deviations += [what for suite, what in by_part if suite not in docs]
    status = standing.overall_status([s["seal"]["status"] for s in suites.values()], deviations)
    result = {
        "format": "sealedeval.result/1",
        "project": cfg.name,
        "status": status,
        "as_sealed": {"ok": not deviations, "deviations": deviations},
        "rubric_lock_sha256": lock_doc["sha256"],
        "config": {"sources": list(cfg.sources), "sha256": cfg.sha256()},
        "versions": dict(environment) if environment is not None else versions(),
        "suite_sources": {n: dict(d.get("suite") or {}) for n, d in docs.items()},
        "engines": {k: json.loads(v) for k, v in sorted(identities.items())},
        "manifest": parts,
        "suites": suites,
    }
    text = dumps(result)
    with presenting(cfg):
        return text, render_report(json.loads(text))


def build(cfg: Config) -> tuple[str, str]:
    """result.json and report.md from the analysis files on disk."""
    return assemble(cfg, read_docs(cfg))
