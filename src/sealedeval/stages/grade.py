"""The grade stage: latest raw row per key (+ items) → graded rows.

A pure function of the raw rows and the sealed rubric. Every graded row names the suite and its
version beside the grader and its version, so a graded file says what produced each verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.config import Config
from sealedeval.plugins import Suite, suite_info

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


def grade(
    cfg: Config,
    suite: Suite,
    items: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Graded rows in a canonical order (engine, request key, grader)."""
    graded = suite.grade(cfg, items, rows)
    version = str(suite_info(suite.name)["version"])
    out = []
    for g in graded:
        missing = [c for c in BASE_COLUMNS if c not in g]
        if missing:
            raise ValueError(f"suite {suite.name}: graded row lacks {missing[0]!r}")
        out.append({**g, "suite": suite.name, "suite_version": version})
    return sorted(out, key=lambda g: (g["engine"], g["request_key"], g["grader"]))
