"""The analyze stage: graded rows (+ items and raw rows) → the suite's analysis.

The suite computes its numbers under its sealed analysis plan; this stage checks that the
analysis lists them in the one metric schema (``stats.metrics``) publish renders for any suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.config import Config
from sealedeval.plugins import AnalyzeContext, RowChunks, Suite
from sealedeval.stats.metrics import sort_metrics, validate_metrics


def analyze(
    cfg: Config,
    suite: Suite,
    items: Sequence[Mapping[str, Any]],
    graded: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    chunks: RowChunks | None = None,
) -> dict[str, Any]:
    """The suite's analysis, its metrics checked and sorted. ``chunks``: the rows read a
    stretch at a time (``rows`` and ``graded`` empty; ``AnalyzeContext``)."""
    ctx = AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows, chunks=chunks)
    analysis = dict(suite.analyze(ctx))
    metrics = validate_metrics(analysis.get("metrics"), f"suite {suite.name}")
    analysis["metrics"] = sort_metrics(metrics)
    return analysis
