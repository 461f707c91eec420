"""The metric table: every ``stats.metrics.Metric`` of an analysis as one Markdown table.

Publish's generic section uses it for a suite with no presentation of its own; a suite's own
``report_sections`` hook may add it to its tables. Fixed number formats: determinism.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.render.md import num, table

HEADER = (
    "metric",
    "groups",
    "estimate",
    "95% interval",
    "method",
    "n ok",
    "n error",
    "n total",
    "unit",
)


def groups_label(m: Mapping[str, Any]) -> str:
    g = m.get("groups") or {}
    return ", ".join(f"{k}={v}" for k, v in g.items()) or "(all)"


def interval_label(m: Mapping[str, Any]) -> str:
    if m.get("lo") is None or m.get("hi") is None:
        return "-"
    return f"[{num(m['lo'])}, {num(m['hi'])}]"


def metric_table(metrics: Sequence[Mapping[str, Any]]) -> str:
    return table(
        list(HEADER),
        [
            [
                m["metric"],
                groups_label(m),
                num(m["estimate"]),
                interval_label(m),
                m["method"],
                m["n_ok"],
                m["n_error"],
                m["n_total"],
                m["unit"],
            ]
            for m in metrics
        ],
    )


def completeness_table(counts: Mapping[str, Mapping[str, Any]]) -> str:
    """Per engine: requests, ok, error, missing and whether the run is complete."""
    return table(
        ["engine", "requests", "ok", "error", "missing", "state"],
        [
            [
                e,
                c["requests"],
                c["ok"],
                c["error"],
                c["missing"],
                "complete" if c["complete"] else "INCOMPLETE",
            ]
            for e, c in counts.items()
        ],
    )
