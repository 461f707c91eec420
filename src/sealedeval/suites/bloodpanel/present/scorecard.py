"""CSV scorecards: one file per engine, one row per case (and repeat), deterministic bytes.

``results/scorecards/bloodpanel-ENGINE.csv`` has the published harness's columns and ours:
case_id, label, specialty, status, composite, structural, clinical, latency, sections and
subsections hit, keywords hit, scoring systems hit, probability sum and validity, trap flags hit,
engine path — under the headline profile — plus the kantesti-v11 composite beside it. Rows are
sorted by case id and repeat; floats have a fixed format; the text ends with a newline.

A pure function of the graded rows and the suite's result.json section (``scorecards``, the
suite's ``scorecards`` hook): publish grades once and writes what this returns.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any, Final

SUITE: Final = "bloodpanel"
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


def file_name(engine: str) -> str:
    return f"{SUITE}-{engine}.csv"


def scorecards(graded: Sequence[Mapping[str, Any]], section: Mapping[str, Any]) -> dict[str, str]:
    """``{"bloodpanel-ENGINE.csv": text}`` under the analysis's headline profile.

    Every engine gets a file (header only if it has no graded rows): those in the graded rows,
    in the seal's counts and among the configured engines the analysis records
    (``design.cohorts``), so a configured engine with no runs yet still has its file.
    """
    a = section.get("analysis") or {}
    profile = str(a.get("profile") or "sealed")
    engines = {str(g["engine"]) for g in graded}
    engines |= {str(e) for e in (section.get("seal") or {}).get("counts", {})}
    engines |= {str(e) for e in (a.get("design") or {}).get("cohorts", {})}
    return {
        file_name(eng): render_csv(scorecard_rows(graded, eng, profile)) for eng in sorted(engines)
    }
