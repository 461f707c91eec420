"""The metric table: every ``stats.metrics.Metric`` of an analysis as one Markdown table.

Publish's generic section uses it for a suite with no presentation of its own; a suite's own
``report_sections`` hook may add it to its tables. Fixed number formats: determinism.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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


ADDED_LABEL = "added after the seal"
"""How an engine the sealed design does not name is labelled wherever a report names it."""
ENGINE_KEYS = frozenset({"engine", "a", "b"})
"""Group keys whose value is an engine name (a comparison's two sides included)."""


def engine_label(engine: str, added: bool) -> str:
    """``local2 (added after the seal)`` for an engine added after the seal, else the name."""
    return f"{engine} ({ADDED_LABEL})" if added else engine


def added_engines(section: Mapping[str, Any]) -> frozenset[str]:
    """A result.json suite section's engines added after the seal (``design.added_after_seal``);
    none when no design was sealed for the profile (then nothing was, and the status says so)."""
    d = section.get("design") or {}
    if d.get("status") == "design not sealed":
        return frozenset()
    return frozenset(str(e) for e in d.get("added_after_seal") or ())


def added_in_any(result: Mapping[str, Any]) -> frozenset[str]:
    """The engines added after the seal of any suite of a result (for its engines table)."""
    return frozenset(e for sec in (result.get("suites") or {}).values() for e in added_engines(sec))


def groups_label(m: Mapping[str, Any], added: Collection[str] = ()) -> str:
    g = m.get("groups") or {}
    return (
        ", ".join(
            f"{k}={engine_label(str(v), k in ENGINE_KEYS and str(v) in added)}"
            for k, v in g.items()
        )
        or "(all)"
    )


def interval_label(m: Mapping[str, Any]) -> str:
    if m.get("lo") is None or m.get("hi") is None:
        return "-"
    return f"[{num(m['lo'])}, {num(m['hi'])}]"


def metric_table(metrics: Sequence[Mapping[str, Any]], added: Collection[str] = ()) -> str:
    """Every metric with its groups (``added``: engines labelled as added after the seal)."""
    return table(
        list(HEADER),
        [
            [
                m["metric"],
                groups_label(m, added),
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


def completeness_table(counts: Mapping[str, Mapping[str, Any]], added: Collection[str] = ()) -> str:
    """Per engine: requests, ok, error, missing and whether the run is complete."""
    return table(
        ["engine", "requests", "ok", "error", "missing", "state"],
        [
            [
                engine_label(e, e in added),
                c["requests"],
                c["ok"],
                c["error"],
                c["missing"],
                "complete" if c["complete"] else "INCOMPLETE",
            ]
            for e, c in counts.items()
        ],
    )
