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
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from sealedeval import __version__
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.seal import design, lock
from sealedeval.store.raw import part_rows, raw_files

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


def read_docs(cfg: Config) -> dict[str, dict[str, Any]]:
    """The analysis file of every published suite: the one ``sealedeval analyze`` wrote when it
    is fresh, else the stale or missing stages are derived first (``ensure_analysis``)."""
    from sealedeval.stages.pipeline import ensure_analysis

    names = published_suites(cfg)
    if not names:
        raise UserError("results/raw: no raw runs for any enabled suite")
    return {n: ensure_analysis(cfg, n) for n in names}


def assemble(
    cfg: Config,
    docs: Mapping[str, Mapping[str, Any]],
    *,
    environment: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """(result.json text, report.md text) from the suites' analysis documents.

    ``environment`` replaces the library versions of this process (the audit passes the ones a
    result recorded, so a re-derivation on another machine compares numbers, not versions)."""
    from sealedeval.publish.report_md import render_report

    if not docs:
        raise UserError("results/raw: no raw runs for any enabled suite")
    suites: dict[str, Any] = {}
    identities: dict[str, str] = {}
    lock_doc = lock.read(cfg.root) if (cfg.root / lock.LOCK_NAME).exists() else {"sha256": ""}
    for name, doc in docs.items():
        suites[name] = {
            "seal": doc["seal"],
            "design": design.result_design(cfg, lock_doc, name, doc),
            "analysis": doc["analysis"],
        }
        for eng, ident in doc["engines"].items():
            identities.setdefault(eng, ident)
    pre_registered = all(s["seal"]["pre_registered"] for s in suites.values())
    result = {
        "format": "sealedeval.result/1",
        "project": cfg.name,
        "status": "pre-registered" if pre_registered else "not pre-registered",
        "rubric_lock_sha256": lock_doc["sha256"],
        "config": {"sources": list(cfg.sources), "sha256": cfg.sha256()},
        "versions": dict(environment) if environment is not None else versions(),
        "suite_sources": {n: dict(d.get("suite") or {}) for n, d in docs.items()},
        "engines": {k: json.loads(v) for k, v in sorted(identities.items())},
        "manifest": manifest(cfg.root),
        "suites": suites,
    }
    text = dumps(result)
    return text, render_report(json.loads(text))


def build(cfg: Config) -> tuple[str, str]:
    """result.json and report.md from the analysis files on disk."""
    return assemble(cfg, read_docs(cfg))
