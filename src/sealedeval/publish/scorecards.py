"""CSV scorecards under results/scorecards/, one set per suite, deterministic bytes.

A suite's ``scorecards(graded, section)`` hook decides its files (bloodpanel: one per engine with
the published harness's columns); a suite without one gets ``<suite>.csv`` of its graded rows.
Both read the graded file the grade stage wrote, never the raw store. Stale CSVs from earlier
builds are removed, so the directory is exactly what this build produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sealedeval.fsutil import atomic_path
from sealedeval.plugins import ScorecardContext, presentation_hook
from sealedeval.publish import generic
from sealedeval.stages import artifacts

SCORECARD_DIR = Path("results/scorecards")


def build_scorecards(root: Path, result: Mapping[str, Any]) -> dict[str, str | Iterable[str]]:
    """Each scorecard file's text: a suite's hook gives strings; the generic scorecard is its
    text a few thousand rows at a time, made while it is written (``write_scorecards``)."""
    out: dict[str, str | Iterable[str]] = {}
    for name, section in result.get("suites", {}).items():
        graded = artifacts.read_graded(artifacts.graded_path(root, name))
        fn = presentation_hook(name, "scorecards")
        files: Mapping[str, str | Iterable[str]] = (
            fn(ScorecardContext(graded=graded, section=section))
            if fn is not None
            else {f"{name}.csv": generic.scorecard_text(graded)}
        )
        for fname, text in files.items():
            if fname in out or "/" in fname:
                raise ValueError(f"suite {name}: scorecard file name {fname!r} is not unique")
            out[fname] = text
    return out


def write_scorecards(root: Path, result: Mapping[str, Any]) -> list[Path]:
    files = build_scorecards(root, result)
    out_dir = root / SCORECARD_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():
        if old.is_file() and old.suffix == ".csv" and old.name not in files:
            old.unlink()
    paths = []
    for fname, text in sorted(files.items()):
        with atomic_path(out_dir / fname) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines([text] if isinstance(text, str) else text)
        paths.append(SCORECARD_DIR / fname)
    return paths
