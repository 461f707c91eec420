"""The metric table: every ``stats.metrics.Metric`` of an analysis as one Markdown table.

Publish's generic section uses it for a suite with no presentation of its own; a suite's own
``report_sections`` hook may add it to its tables. Fixed number formats: determinism.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sealedeval.render.figures import zero_or_undefined
from sealedeval.render.md import NOT_PRICED, num, table

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
    "role",
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
    """'[0.1, 0.5]'; '-' without an interval, or its reason when the record gives one
    (``note``, e.g. too few cases for a bootstrap interval)."""
    if m.get("lo") is None or m.get("hi") is None:
        note = m.get("note")
        return f"n/a ({note})" if note else "-"
    return f"[{num(m['lo'])}, {num(m['hi'])}]"


def role_label(m: Mapping[str, Any]) -> str:
    """``confirmatory`` or ``exploratory`` (a record from before issue #30: exploratory, as
    every metric that is not a sealed comparison's)."""
    return str(m.get("role") or "exploratory")


COST_SUFFIX = "_usd"
"""Metrics named ``*_usd`` are money (``cost_usd``, ``cost_per_solved_item_usd``)."""


def is_cost(m: Mapping[str, Any]) -> bool:
    return str(m.get("metric", "")).endswith(COST_SUFFIX)


def _unpriced(m: Mapping[str, Any], unpriced: Collection[str]) -> bool:
    return is_cost(m) and str((m.get("groups") or {}).get("engine")) in unpriced


def metric_table(
    metrics: Sequence[Mapping[str, Any]],
    unpriced: Collection[str] = (),
    added: Collection[str] = (),
) -> str:
    """Every metric as a row with its groups (``added``: engines labelled as added after the
    seal); a cost metric of an engine in ``unpriced`` (no price in the config) says
    ``not priced`` where its $0 estimate would read as "free"."""
    return table(
        list(HEADER),
        [
            [
                m["metric"],
                groups_label(m, added),
                NOT_PRICED if _unpriced(m, unpriced) else num(m["estimate"]),
                "-" if _unpriced(m, unpriced) else interval_label(m),
                m["method"],
                m["n_ok"],
                m["n_error"],
                m["n_total"],
                m["unit"],
                role_label(m),
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


def without_figure(metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    """Metric names that get no figure: zero or undefined in every group (an unpriced
    engine's cost, the error rate of a run without errors). A figure of nothing but zeros
    says less than the table's row and looks like a finding."""
    by_metric: dict[str, list[Mapping[str, Any]]] = {}
    for m in metrics:
        by_metric.setdefault(str(m["metric"]), []).append(m)
    return [k for k, ms in by_metric.items() if zero_or_undefined(ms)]


def no_figure_note(metrics: Sequence[Mapping[str, Any]]) -> str:
    """The sentence a section prints for the metrics ``without_figure`` leaves out ('' when
    none): the reader learns why a metric of the table has no figure."""
    skipped = without_figure(metrics)
    if not skipped:
        return ""
    costs = {str(m["metric"]) for m in metrics if is_cost(m)}
    why = " (cost: not priced)" if set(skipped) <= costs else ""
    names = ", ".join(f"`{k}`" for k in skipped)
    return f"No figure of {names}: zero or undefined for every engine{why}."
