"""The one metric schema every analysis emits, and the error-count block every table carries.

A suite's analysis may hold any JSON it likes for its own presentation, but it must also list
its numbers as ``metrics``: one ``Metric`` per (metric, groups). Publish renders any suite from
these alone (a table, a figure per metric, result.json), so a suite with no presentation code
still gets a full report section, and an auditor can compare numbers across suites without
knowing any of them. Like Inspect AI's ``EvalMetric`` (name, value, params) but with the interval,
its method and the denominators every published rate carries (README, "Honest numbers").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, TypedDict

from ._proportion import Z_95, wilson
from ._se import item_means, item_se

METRIC_KEYS = (
    "metric",
    "groups",
    "estimate",
    "lo",
    "hi",
    "method",
    "n_total",
    "n_ok",
    "n_error",
    "unit",
)
"""The keys every metric has (readers that predate issue #30 read exactly these)."""
OPTIONAL_METRIC_KEYS = ("note", "role")
"""Keys ``metric`` always writes since issue #30, absent from older result.json files:
``note`` — why a number or its interval is not given (e.g. ``stats._small_n.bootstrap_note``)
— and ``role`` — ``confirmatory`` or ``exploratory`` (``ROLES``)."""
CONFIRMATORY = "confirmatory"
EXPLORATORY = "exploratory"
ROLES = (CONFIRMATORY, EXPLORATORY)


class Metric(TypedDict):
    """One number with its interval and denominators.

    ``groups`` names the cell (e.g. ``{"engine": "local", "condition": "A"}``); ``method`` the
    interval (``wilson``, ``item-clustered normal``, ``bootstrap``, ``none``); ``unit`` the unit
    of analysis the interval treats as independent (``item``, ``request``, ``case``...).
    ``estimate``/``lo``/``hi`` are None where nothing is estimable (never a spurious 0), and
    ``note`` then says why ("no interval: 2 cases, below the 10 a bootstrap interval needs").
    ``role`` is ``confirmatory`` for a number of the sealed, pre-registered comparison family
    (a comparison's p in a confirmatory family) and ``exploratory`` for everything else —
    descriptive estimates included: they were not pre-registered as tests (issue #30 item 5).
    """

    metric: str
    groups: dict[str, str]
    estimate: float | None
    lo: float | None
    hi: float | None
    method: str
    n_total: int
    n_ok: int
    n_error: int
    unit: str
    note: str
    role: str


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def metric(
    name: str,
    groups: Mapping[str, Any],
    estimate: float | None,
    lo: float | None,
    hi: float | None,
    *,
    method: str,
    n_total: int,
    n_ok: int,
    n_error: int,
    unit: str,
    note: str = "",
    role: str = EXPLORATORY,
) -> Metric:
    """A ``Metric`` with plain JSON types (non-finite numbers become None).

    Raises:
        ValueError: ``role`` is not one of ``ROLES``.
    """
    if role not in ROLES:
        raise ValueError(f"metric {name!r}: role must be one of {ROLES}, got {role!r}")
    return Metric(
        metric=name,
        groups={str(k): str(v) for k, v in sorted(groups.items())},
        estimate=_num(estimate),
        lo=_num(lo),
        hi=_num(hi),
        method=method,
        n_total=int(n_total),
        n_ok=int(n_ok),
        n_error=int(n_error),
        unit=unit,
        note=note,
        role=role,
    )


def point_metric(
    name: str,
    groups: Mapping[str, Any],
    value: float | None,
    n_ok: int,
    n_error: int,
    unit: str,
    *,
    method: str = "none",
    note: str = "",
    role: str = EXPLORATORY,
) -> Metric:
    """A ``Metric`` without an interval (κ, agreement, pass@k, a p-value, a cost)."""
    return metric(
        name,
        groups,
        value,
        None,
        None,
        method=method,
        n_total=n_ok + n_error,
        n_ok=n_ok,
        n_error=n_error,
        unit=unit,
        note=note,
        role=role,
    )


def rate_metric(
    name: str,
    groups: Mapping[str, Any],
    k: int,
    n: int,
    *,
    n_error: int = 0,
    unit: str = "request",
    z: float = Z_95,
) -> Metric:
    """A proportion k/n over completed units with its Wilson interval; ``n_error`` more units
    were planned but errored (they are counted, not in the denominator)."""
    if n <= 0:
        return metric(
            name,
            groups,
            None,
            None,
            None,
            method="wilson",
            n_total=n_error,
            n_ok=0,
            n_error=n_error,
            unit=unit,
        )
    lo, hi = wilson(k, n, z)
    return metric(
        name,
        groups,
        k / n,
        lo,
        hi,
        method="wilson",
        n_total=n + n_error,
        n_ok=n,
        n_error=n_error,
        unit=unit,
    )


def mean_metric(
    name: str,
    groups: Mapping[str, Any],
    values: Sequence[float],
    items: Sequence[Hashable],
    *,
    n_error: int = 0,
    unit: str = "item",
    z: float = Z_95,
) -> Metric:
    """A mean over items (replicates averaged within item first) with an item-clustered normal
    interval (Miller 2024, Eq. 4); one item gives no interval."""
    if not values:
        return metric(
            name,
            groups,
            None,
            None,
            None,
            method="item-clustered normal",
            n_total=n_error,
            n_ok=0,
            n_error=n_error,
            unit=unit,
        )
    means = item_means(values, items)
    est = sum(means.values()) / len(means)
    se = item_se(values, items)
    lo, hi = (est - z * se, est + z * se) if math.isfinite(se) else (None, None)
    return metric(
        name,
        groups,
        est,
        lo,
        hi,
        method="item-clustered normal",
        n_total=len(values) + n_error,
        n_ok=len(values),
        n_error=n_error,
        unit=unit,
    )


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The block every table carries: n_total, n_ok, n_error (and errors by kind).

    ``refused`` rows (the engine declined) count as errors here, like any other row that did not
    produce a gradable answer; ``errors_by_kind`` says which.
    """
    n = ok = 0
    kinds: Counter[str] = Counter()
    for r in rows:
        n += 1
        if r.get("status") == "ok":
            ok += 1
        else:
            kinds[str(r.get("error_kind") or r.get("status") or "error")] += 1
    return {
        "n_total": n,
        "n_ok": ok,
        "n_error": n - ok,
        "errors_by_kind": dict(sorted(kinds.items())),
    }


def sort_metrics(metrics: Iterable[Metric]) -> list[Metric]:
    """Metrics in a canonical order (name, then groups), so result.json bytes are stable."""
    return sorted(metrics, key=lambda m: (m["metric"], sorted(m["groups"].items())))


def validate_metrics(metrics: Any, where: str) -> list[Metric]:
    """Check an analysis's ``metrics`` against the schema; a suite bug is a ValueError naming it.

    Every key of ``METRIC_KEYS`` is required; ``OPTIONAL_METRIC_KEYS`` may be present (a
    suite built before issue #30 writes none of them), no other key; ``role`` one of ``ROLES``.
    """
    if not isinstance(metrics, list):
        raise ValueError(f"{where}: analysis has no 'metrics' list")
    allowed = {*METRIC_KEYS, *OPTIONAL_METRIC_KEYS}
    for i, m in enumerate(metrics):
        if not isinstance(m, Mapping) or not set(METRIC_KEYS) <= set(m) <= allowed:
            raise ValueError(f"{where}: metrics[{i}] does not follow stats.metrics.Metric")
        if m.get("role", EXPLORATORY) not in ROLES:
            raise ValueError(f"{where}: metrics[{i}] has role {m.get('role')!r}, not {ROLES}")
    return list(metrics)
