"""The grade stage: latest raw row per key (+ items) → graded rows.

A pure function of the raw rows and the sealed rubric. Every graded row names the suite and its
version beside the grader and its version, so a graded file says what produced each verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sealedeval.config import Config
from sealedeval.plugins import GradeContext, Suite, hook, suite_info
from sealedeval.stages.artifacts import GradedRows

BASE_COLUMNS = (
    "request_key",
    "engine",
    "item_id",
    "condition",
    "repeat",
    "status",
    "grader",
    "grader_version",
    "score",
    "passed",
    "category",
    "details",
)
"""What every suite's graded row carries; suites add scalar columns of their own."""

PROVENANCE_COLUMNS = ("suite", "suite_version")
_BASE = frozenset(BASE_COLUMNS)


def graded_row(
    raw: Mapping[str, Any],
    *,
    grader: str,
    grader_version: str,
    score: float | None,
    passed: bool,
    category: str,
    details: str | Mapping[str, Any],
    condition: str | None = None,
    status: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One graded row: the raw row's identity (key, engine, item, condition, repeat, status),
    the verdict, then the suite's own scalar columns (``extra``), in ``BASE_COLUMNS`` order.

    Every suite builds its rows here, so a graded file's first columns are the same for all
    suites and a new base column is added in one place. ``condition`` and ``status`` override
    the raw row's (a call graded as several stages; a score missing from an ok row)."""
    return {
        "request_key": raw["request_key"],
        "engine": raw["engine"],
        "item_id": raw["item_id"],
        "condition": raw["condition"] if condition is None else condition,
        "repeat": int(raw["repeat"]),
        "status": raw["status"] if status is None else status,
        "grader": grader,
        "grader_version": grader_version,
        "score": score,
        "passed": passed,
        "category": category,
        "details": details,
        **extra,
    }


ORDER = ("engine", "request_key", "grader")
"""The canonical order of graded rows (a stable sort: a suite's order within a key stays)."""


def grade(
    cfg: Config,
    suite: Suite,
    items: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
) -> GradedRows:
    """Graded rows in a canonical order (engine, request key, grader).

    The suite may return a list or yield its rows one at a time; they are taken into columns
    as they come (``GradedRows``), so a million raw rows never exist as millions of dicts."""
    version = str(suite_info(suite.name, cfg)["version"])

    def checked() -> Iterator[Mapping[str, Any]]:
        ctx = GradeContext(cfg=cfg, items=items, rows=rows)
        for g in (hook(suite, "iter_grade") or suite.grade)(ctx):
            if not g.keys() >= _BASE:
                missing = [c for c in BASE_COLUMNS if c not in g]
                raise ValueError(f"suite {suite.name}: graded row lacks {missing[0]!r}")
            yield g

    out = GradedRows.from_rows(checked(), {"suite": suite.name, "suite_version": version})
    return out.sorted_by(ORDER)
