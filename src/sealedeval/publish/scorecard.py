"""CSV scorecards: one file per engine, one row per case (and repeat), deterministic bytes.

``results/scorecards/bloodpanel-ENGINE.csv`` has the published harness's columns and ours:
case_id, label, specialty, status, composite, structural, clinical, latency, sections and
subsections hit, keywords hit, scoring systems hit, probability sum and validity, trap flags hit,
engine path — under the headline profile — plus the kantesti-v11 composite beside it. Rows are
sorted by case id and repeat; floats have a fixed format; the file ends with a newline; it is
written atomically. A pure function of the raw runs (via the suite's grading), like result.json.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from sealedeval.config import Config
from sealedeval.fsutil import write_text_atomic
from sealedeval.store.raw import raw_files

SCORECARD_DIR: Final = Path("results/scorecards")
COLUMNS: Final = (
    "case_id",
    "case_uid",
    "label",
    "specialty",
    "cohort",
    "repeat",
    "status",
    "error_kind",
    "composite",
    "structural",
    "clinical",
    "latency",
    "latency_s",
    "sections_hit",
    "subsections_hit",
    "keywords_hit",
    "scoring_systems_hit",
    "prob_sum",
    "prob_valid",
    "trap_flags_hit",
    "engine_path",
    "parsed",
    "profile",
    "composite_kantesti_v11",
)


def _f(x: Any, digits: int = 4) -> str:
    return f"{float(x):.{digits}f}"


def scorecard_rows(
    graded: Sequence[Mapping[str, Any]], engine: str, profile: str
) -> list[list[str]]:
    """Rows (as strings) of one engine's scorecard under ``profile``."""
    v11 = {
        g["request_key"]: g["composite"]
        for g in graded
        if g["engine"] == engine and g["profile"] == "kantesti-v11"
    }
    mine = [g for g in graded if g["engine"] == engine and g["profile"] == profile]
    mine.sort(key=lambda g: (str(g["case_id"]), int(g["repeat"]), str(g["request_key"])))
    out = []
    for g in mine:
        out.append(
            [
                str(g["case_id"]),
                str(g["case_uid"]),
                str(g["label"]),
                str(g["specialty"]),
                str(g["cohort"]),
                str(int(g["repeat"])),
                str(g["status"]),
                str(g["error_kind"]),
                _f(g["composite"]),
                _f(g["structural"]),
                _f(g["clinical"]),
                _f(g["latency"], 2),
                _f(g["latency_s"], 3),
                f"{g['sections_hit']}/7",
                f"{g['subsections_hit']}/16",
                f"{g['keywords_hit']}/{g['keywords_total']}",
                f"{g['scoring_hit']}/{g['scoring_total']}",
                _f(g["prob_sum"], 1),
                "true" if g["prob_valid"] else "false",
                str(g["trap_flags_hit"]),
                str(g["engine_path"]),
                "true" if g["parsed"] else "false",
                profile,
                _f(v11.get(g["request_key"], 0.0)),
            ]
        )
    return out


def render_csv(rows: Sequence[Sequence[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(rows)
    return buf.getvalue()


def write_scorecards(cfg: Config) -> list[Path]:
    """Write ``results/scorecards/bloodpanel-ENGINE.csv`` for every engine with raw runs.

    Returns the paths written (relative to the project root); nothing when the bloodpanel suite
    is disabled or has no raw runs.
    """
    name = "bloodpanel"
    if name not in cfg.enabled_suites():
        return []
    scfg = cfg.suite(name)
    profile = str(scfg.get("profile") or "sealed")
    graded: list[dict[str, Any]] = []
    if raw_files(cfg.root, name):
        from sealedeval.publish.build import build_suite

        graded = build_suite(cfg, name).graded
    # Every configured engine gets a file (header only if it has no rows), so the workflow can
    # name the outputs from the config alone.
    engines = set(scfg.get("engines", [])) | {str(g["engine"]) for g in graded}
    written = []
    for eng in sorted(engines):
        rel = SCORECARD_DIR / f"{name}-{eng}.csv"
        write_text_atomic(cfg.root / rel, render_csv(scorecard_rows(graded, eng, profile)))
        written.append(rel)
    return written
