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
OPTIONAL_METRIC_KEYS = ("note", "role", "se", "direction")
"""Keys ``metric`` always writes, absent from older result.json files: since issue #30
``note`` — why a number or its interval is not given (e.g. ``stats._small_n.bootstrap_note``)
— and ``role`` — ``confirmatory`` or ``exploratory`` (``ROLES``); since issue #27 ``se`` — the
standard error the analysis computed (None where it computes none) — and ``direction`` —
``higher`` or ``lower`` is better, ``""`` where neither applies (a p-value, a difference)."""
CONFIRMATORY = "confirmatory"
EXPLORATORY = "exploratory"
ROLES = (CONFIRMATORY, EXPLORATORY)
HIGHER = "higher"
LOWER = "lower"
DIRECTIONS = (HIGHER, LOWER, "")
"""``direction`` values: a larger number is better, a smaller one, or not a score at all."""

_HIGHER_NAMES = (
    "accuracy",
    "acc",
    "acc_norm",
    "greedy_accuracy",
    "pass",
    "pass_rate",
    "pass_at",
    "pass_hat",
    "judge_pass",
    "judge_human_agreement",
    "judge_human_kappa",
    "judge_order_consistent",
    "kappa",
    "mean_score",
    "composite",
    "parse_success",
    "f1",
    "bleu",
    "chrf",
    "exact_match",
    "mcc",
    "matthews_corrcoef",
    "detector_precision",
    "detector_recall",
)
_LOWER_NAMES = (
    "error_rate",
    "trap_flag_rate",
    "overdiagnosis",
    "cost_per_solved",
    "latency_per_solved",
    "perplexity",
    "word_perplexity",
    "byte_perplexity",
    "weighted_perplexity",
    "bits_per_byte",
    "ter",
    "brier_score",
)


def direction_of(name: str) -> str:
    """Whether a larger value of the metric ``name`` is better (``higher``), a smaller one
    (``lower``), or neither applies (``""``: p-values, differences, spreads, anything unknown).

    Decided from what the metric measures, by its name (a harness's ``harness_<m>`` as ``m``):
    a name that is, or starts with ``<known>_``, one of the known scores. A name not known is
    left undeclared rather than guessed — a reader of EEE's ``lower_is_better`` then sees
    ``direction_declared: no``.
    """
    base = name.removeprefix("harness_")

    def known(names: Sequence[str]) -> bool:
        return any(base == n or base.startswith(n + "_") for n in names)

    if known(_LOWER_NAMES):
        return LOWER
    if known(_HIGHER_NAMES):
        return HIGHER
    return ""


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
    ``se`` is the estimate's standard error where the analysis computes one (a rate's binomial
    SE, a mean's item-clustered SE), None elsewhere — never reconstructed from the interval;
    ``direction`` is ``direction_of`` the metric unless its analysis says otherwise.
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
    se: float | None
    direction: str


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
    se: float | None = None,
    direction: str | None = None,
) -> Metric:
    """A ``Metric`` with plain JSON types (non-finite numbers become None); ``direction``
    defaults to ``direction_of(name)``.

    Raises:
        ValueError: ``role`` is not one of ``ROLES``, or ``direction`` not one of
            ``DIRECTIONS``.
    """
    if role not in ROLES:
        raise ValueError(f"metric {name!r}: role must be one of {ROLES}, got {role!r}")
    if direction is None:
        direction = direction_of(name)
    if direction not in DIRECTIONS:
        raise ValueError(
            f"metric {name!r}: direction must be one of {DIRECTIONS}, got {direction!r}"
        )
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
        se=_num(se),
        direction=direction,
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
    direction: str | None = None,
) -> Metric:
    """A ``Metric`` without an interval (κ, agreement, pass@k, a p-value, a cost) nor SE."""
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
        direction=direction,
    )


def binomial_se(k: int, n: int) -> float | None:
    """The analytic binomial SE ``sqrt(p (1 - p) / n)`` of ``p = k/n``; None without data.

    The SE of the estimate itself (what EEE's ``standard_error`` and a meta-analysis take), not
    a half-width of the Wilson interval: Wilson is the interval, this the spread of p̂. It is 0
    at k = 0 or k = n, where the Wilson interval still has width.
    """
    if n <= 0:
        return None
    p = k / n
    return math.sqrt(p * (1 - p) / n)


def rate_metric(
    name: str,
    groups: Mapping[str, Any],
    k: int,
    n: int,
    *,
    n_error: int = 0,
    unit: str = "request",
    z: float = Z_95,
    direction: str | None = None,
) -> Metric:
    """A proportion k/n over completed units with its Wilson interval and binomial SE
    (``binomial_se``); ``n_error`` more units were planned but errored (they are counted, not
    in the denominator)."""
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
            direction=direction,
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
        se=binomial_se(k, n),
        direction=direction,
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
    direction: str | None = None,
) -> Metric:
    """A mean over items (replicates averaged within item first) with an item-clustered normal
    interval (Miller 2024, Eq. 4) and that SE; one item gives neither."""
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
            direction=direction,
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
        se=se,
        direction=direction,
    )


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The block every table carries: n_total, n_ok, n_error (and errors by kind).

    ``refused`` rows (the engine declined) count as errors here, like any other row that did not
    produce a gradable answer; ``errors_by_kind`` says which.
    """
    counts = StatusCounts()
    for r in rows:
        counts.add(r.get("status"), r.get("error_kind"))
    return counts.counts()


class StatusCounts:
    """``status_counts`` taken a row or a column at a time (an analysis that reads rows a
    stretch at a time counts each stretch's status and error-kind columns): the one place
    that says a row is ok when its status is ``ok`` and else counts under its error kind,
    or its status."""

    __slots__ = ("kinds", "n", "ok")

    def __init__(self) -> None:
        self.n = self.ok = 0
        self.kinds: Counter[str] = Counter()

    def add(self, status: Any, error_kind: Any) -> None:
        """Count one row."""
        self.n += 1
        if status == "ok":
            self.ok += 1
        else:
            self.kinds[str(error_kind or status or "error")] += 1

    def add_columns(self, statuses: Iterable[Any], error_kinds: Iterable[Any]) -> None:
        """Count the rows of a status column and its error-kind column (aligned)."""
        for status, kind in zip(statuses, error_kinds, strict=True):
            self.add(status, kind)

    def counts(self) -> dict[str, Any]:
        """The block: n_total, n_ok, n_error, errors_by_kind (sorted by kind)."""
        return {
            "n_total": self.n,
            "n_ok": self.ok,
            "n_error": self.n - self.ok,
            "errors_by_kind": dict(sorted(self.kinds.items())),
        }


def sort_metrics(metrics: Iterable[Metric]) -> list[Metric]:
    """Metrics in a canonical order (name, then groups), so result.json bytes are stable."""
    return sorted(metrics, key=lambda m: (m["metric"], sorted(m["groups"].items())))


def validate_metrics(metrics: Any, where: str) -> list[Metric]:
    """Check an analysis's ``metrics`` against the schema; a suite bug is a ValueError naming it.

    Every key of ``METRIC_KEYS`` is required; ``OPTIONAL_METRIC_KEYS`` may be present (a
    suite built before issue #30 writes none of them), no other key; ``role`` one of ``ROLES``,
    ``direction`` one of ``DIRECTIONS``, ``se`` a number or None.
    """
    if not isinstance(metrics, list):
        raise ValueError(f"{where}: analysis has no 'metrics' list")
    allowed = {*METRIC_KEYS, *OPTIONAL_METRIC_KEYS}
    for i, m in enumerate(metrics):
        if not isinstance(m, Mapping) or not set(METRIC_KEYS) <= set(m) <= allowed:
            raise ValueError(f"{where}: metrics[{i}] does not follow stats.metrics.Metric")
        if m.get("role", EXPLORATORY) not in ROLES:
            raise ValueError(f"{where}: metrics[{i}] has role {m.get('role')!r}, not {ROLES}")
        if m.get("direction", "") not in DIRECTIONS:
            raise ValueError(
                f"{where}: metrics[{i}] has direction {m.get('direction')!r}, not {DIRECTIONS}"
            )
        se = m.get("se")
        if se is not None and (isinstance(se, bool) or not isinstance(se, int | float)):
            raise ValueError(f"{where}: metrics[{i}] has se {se!r}, not a number or None")
    return list(metrics)
