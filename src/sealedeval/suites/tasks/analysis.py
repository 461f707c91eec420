"""The analysis plan of every ``tasks`` suite (sealed with it; the config's ``analysis`` block
chooses among its options and is sealed too).

Unit of analysis: the item. An engine's answers to an item (``repeats`` of them) are reduced to
one verdict (``analysis.reduce``: ``majority`` — more than half of its completed repeats pass —,
``any``, ``all`` or ``first``) and the headline accuracy is that verdict's rate over the items
with at least one completed answer, with a Wilson 95% interval; errored calls are counted
(``n_error``), never graded as failures, and the rate with errors counted as failures is given
beside it. The primary grader decides the verdict (``analysis.primary``); every grader's pass
rate is reported the same way.

With repeats: the mean over every completed answer with an item-clustered normal interval
(Miller 2024), the accuracy of each repeat and their spread (mean, sd), and pass@k / pass^k for
k up to the fewest completed repeats of an item (unbiased estimators). With ``cluster_by``: the
headline accuracy with a cluster-robust interval over that column.

Engines are compared on the items both completed: the mean difference of the item scores (the
share of an item's repeats that pass) with its paired standard error and normal 95% interval,
and the exact sign test on the items where they differ; every comparison also carries its
``stats.comparisons`` record (issue 15): the Holm-adjusted p across the family ``engines`` (all
the suite's engine pairs), the MDE at ``analysis.power`` (default 0.8) for the items at hand, the
items needed for ``analysis.delta`` (default 0.05) at ``analysis.alpha``, and for 0/1 verdicts on
fewer than 100 items the Beta(1,1) view. Pre-registered hypotheses (``a`` better
than ``b``, worse, or different) are tested with the exact sign test (one-sided where a
direction is given) at their ``alpha``, Holm-adjusted across the hypotheses unless
``correction: none``.

Abstention (``abstention: category``): on answerable items, the abstention rate, the accuracy
among the answers that did not abstain, and the abstention-aware score at thresholds 0, 0.5,
0.75, 0.9 (Kalai et al. 2025). Judges: each answering engine's judge pass rate, how often the
two orders agree (``swap``), the judge's agreement and κ with the primary grader, and, with a
labels file, agreement and κ with the human labels (as golden reports its judge).

Cost and latency: the engine's spend on its answers (``cost_usd`` of the raw rows), per item
and per solved item, the judge's spend on grading them, and the answer latency per solved item.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from sealedeval import stats
from sealedeval.graders import judge as jg
from sealedeval.graders.kinds import verdict as jv
from sealedeval.seal.design import EXPLORATORY_FAMILY
from sealedeval.stages.artifacts import GradedRows, graded_column
from sealedeval.stats.comparisons import (
    BINARY_TEST,
    DEFAULT_DELTA,
    DEFAULT_POWER,
    ComparisonPlan,
    adjust_families,
    paired_comparison,
)
from sealedeval.stats.metrics import (
    CONFIRMATORY,
    Metric,
    binomial_se,
    mean_metric,
    metric,
    point_metric,
    rate_metric,
    sort_metrics,
    status_counts,
)
from sealedeval.store.raw import RowsAt
from sealedeval.suites.tasks.data import AuditLabel, Data, answerable
from sealedeval.suites.tasks.grading import ABSTAINED, CORRECT, ERROR, WRONG
from sealedeval.suites.tasks.plan import ANSWER, audit_items, parse_judge_condition
from sealedeval.suites.tasks.spec import Hypothesis

THRESHOLDS = (0.0, 0.5, 0.75, 0.9)
INTERVALS = (
    "Wilson 95% score interval for rates over items (repeats reduced per item); item-clustered "
    "normal interval for means over repeats; cluster-robust normal interval with cluster_by; "
    "paired normal interval for differences; exact sign test for paired comparisons"
)

Row = Mapping[str, Any]


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {
        "k": k,
        "n": n,
        "rate": k / n if n else None,
        "lo": lo if n else None,
        "hi": hi if n else None,
    }


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def reduce_outcomes(outcomes: Sequence[bool], how: str) -> bool:
    """One verdict from an item's completed repeats (in repeat order)."""
    if how == "any":
        return any(outcomes)
    if how == "all":
        return bool(outcomes) and all(outcomes)
    if how == "first":
        return bool(outcomes) and bool(outcomes[0])
    return sum(outcomes) * 2 > len(outcomes)


def one_sided_p(k: int, n: int) -> float:
    """P(X >= k) for X ~ Bin(n, 1/2), exactly (1.0 when n = 0)."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k, n + 1))
    return float(Fraction(tail, 2**n))


class _Engine:
    """One answering engine's answers, graded: outcomes per grader per item."""

    def __init__(self, data: Data, name: str, rows: Sequence[Row], graded: Sequence[Row]) -> None:
        self.name = name
        self.rows = rows
        keys = {r["request_key"] for r in rows}
        # Column by column over this engine's positions: a graded row read field by field,
        # and the primary outcomes scanned again by each of their five readers, were most of
        # the analysis at a million answers (``benchmarks/scale.py --suite tasks``).
        gkey = graded_column(graded, "request_key")
        at = [j for j, k in enumerate(gkey) if k in keys]
        self.graded: Sequence[Row] = RowsAt(graded, at)
        gids, cats, items, reps, passed, statuses, graders, details = (
            _column(graded, c)
            for c in (
                "grader_id",
                "category",
                "item_id",
                "repeat",
                "passed",
                "status",
                "grader",
                "details",
            )
        )
        self.primary = data.spec.primary
        # grader id -> item -> [(repeat, passed)] over the answers that grader could grade
        self.outcomes: dict[str, dict[str, list[tuple[int, bool]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.categories: dict[str, str] = {}
        # item -> [(repeat, correct)] over the primary grader's completed answers
        self._primary: dict[str, list[tuple[int, bool]]] = defaultdict(list)
        for j in at:
            gid, cat = str(gids[j]), cats[j]
            if gid == self.primary:
                self.categories[str(gkey[j])] = str(cat)
                if cat != ERROR:
                    self._primary[str(items[j])].append((int(reps[j]), cat == CORRECT))
                gradable = bool(cat != ERROR)
            else:
                gradable = _gradable_fields(statuses[j], graders[j], details[j])
            if gradable:
                self.outcomes[gid][str(items[j])].append((int(reps[j]), bool(passed[j])))
        for per_item in self.outcomes.values():
            for v in per_item.values():
                v.sort()

    def item_outcomes(self, gid: str) -> dict[str, list[bool]]:
        return {i: [p for _, p in v] for i, v in sorted(self.outcomes[gid].items())}

    def primary_outcomes(self) -> dict[str, list[bool]]:
        """The primary verdict: correct (not merely passed) per completed answer."""
        return {i: [p for _, p in sorted(v)] for i, v in sorted(self._primary.items())}


def _column(graded: Sequence[Row], name: str) -> Sequence[Any]:
    """A graded column (``None`` where a hand-made row lacks it)."""
    if isinstance(graded, GradedRows):
        return graded_column(graded, name)
    return [g.get(name) for g in graded]


def _gradable_fields(status: Any, grader: Any, details: Any) -> bool:
    """``_gradable`` of a row that is not the primary grader's, from its fields."""
    if status != "ok":
        return False
    d = details or {}
    return not (grader == "judge" and jv.MISSING in (d.get("verdicts") or []))


def _gradable(g: Row, primary: bool) -> bool:
    if primary:
        return bool(g["category"] != ERROR)
    return _gradable_fields(g["status"], g["grader"], g.get("details"))


def _share(
    name: str,
    groups: Mapping[str, Any],
    by_item: Mapping[str, Sequence[float]],
    n_error: int,
    unit: str,
) -> Metric:
    """A proportion over items: Wilson when each item has one value, else the item-clustered
    mean (replicates are not independent)."""
    values = [v for vs in by_item.values() for v in vs]
    ids = [i for i, vs in by_item.items() for _ in vs]
    if all(len(vs) == 1 for vs in by_item.values()):
        k = int(sum(values))
        return rate_metric(name, groups, k, len(values), n_error=n_error, unit=unit)
    return mean_metric(name, groups, values, ids, n_error=n_error, unit=unit)


_plain = point_metric


def _engine_entry(
    data: Data, e: _Engine, item_ids: Sequence[str], judge_rows: Sequence[Row]
) -> tuple[dict[str, Any], list[Metric]]:
    spec = data.spec
    how = spec.reduce
    counts = status_counts(e.rows)
    g: dict[str, Any] = {"engine": e.name}
    metrics: list[Metric] = []
    prim = e.primary_outcomes()
    reduced = {i: reduce_outcomes(v, how) for i, v in prim.items() if v}
    n_items = len(item_ids)
    n_ok_items = len(reduced)
    k = sum(reduced.values())
    acc = rate(k, n_ok_items)
    metrics.append(
        rate_metric("accuracy", g, k, n_ok_items, n_error=n_items - n_ok_items, unit="item")
    )
    lower = rate(k, n_items)
    metrics.append(
        metric(
            "accuracy_errors_as_failures",
            g,
            lower["rate"],
            lower["lo"],
            lower["hi"],
            method="wilson",
            n_total=n_items,
            n_ok=n_ok_items,
            n_error=n_items - n_ok_items,
            unit="item",
            se=binomial_se(k, n_items),
        )
    )
    entry: dict[str, Any] = {
        "model": str(e.rows[0]["model"]) if e.rows else "",
        **counts,
        "complete": counts["n_error"] == 0,
        "n_items": n_items,
        "n_items_ok": n_ok_items,
        "n_items_error": n_items - n_ok_items,
        "accuracy": acc,
        "accuracy_errors_as_failures": lower,
    }
    cats = Counter(e.categories.get(str(r["request_key"]), ERROR) for r in e.rows)
    entry["categories"] = {c: cats.get(c, 0) for c in (CORRECT, WRONG, ABSTAINED, ERROR)}
    entry["truncated_answers"] = sum(
        1 for r in e.rows if r["status"] == "ok" and r.get("finish_reason") == "length"
    )
    # repeats: mean over answers, per-repeat accuracy and spread, pass@k / pass^k
    repeats = int(spec.get("repeats", 1))
    n_answers_ok = sum(len(v) for v in prim.values())
    n_answers_err = len(e.rows) - n_answers_ok
    if repeats > 1:
        values = [float(x) for v in prim.values() for x in v]
        ids = [i for i, v in prim.items() for _ in v]
        mean_m = mean_metric("accuracy_mean", g, values, ids, n_error=n_answers_err, unit="item")
        metrics.append(mean_m)
        per_rep: dict[int, list[bool]] = defaultdict(list)
        for gr in e.graded:
            if str(gr["grader_id"]) == spec.primary and gr["category"] != ERROR:
                per_rep[int(gr["repeat"])].append(gr["category"] == CORRECT)
        per_repeat = []
        for rep in range(repeats):
            outs = per_rep.get(rep, [])
            n_err = n_items - len(outs)
            per_repeat.append(rate(sum(outs), len(outs)) | {"repeat": rep, "n_error": n_err})
            metrics.append(
                rate_metric(
                    "accuracy_by_repeat",
                    g | {"repeat": rep},
                    sum(outs),
                    len(outs),
                    n_error=n_err,
                    unit="item",
                )
            )
        rates = [float(p["rate"]) for p in per_repeat if p["rate"] is not None]
        mean, sd = stats.mean_sd(rates) if rates else (math.nan, math.nan)
        k_max = min((len(v) for v in prim.values()), default=0)
        at: list[float] = []
        hat: list[float] = []
        if k_max >= 1:
            at, hat = stats.mean_pass_k_curves(dict(prim), k_max)
        entry["repeats"] = {
            "n_runs": repeats,
            "per_repeat": per_repeat,
            "mean": mean,
            "sd": sd,
            "mean_over_answers": {
                "estimate": mean_m["estimate"],
                "lo": mean_m["lo"],
                "hi": mean_m["hi"],
            },
            "pass_at_k": {str(i): v for i, v in enumerate(at, 1)},
            "pass_hat_k": {str(i): v for i, v in enumerate(hat, 1)},
        }
        metrics.append(
            _plain("accuracy_repeat_sd", g, sd, len(rates), repeats - len(rates), "repeat")
        )
        if k_max >= 1:
            for key, curve in (("pass_at_k", at), ("pass_hat_k", hat)):
                metrics.append(
                    _plain(
                        key,
                        g | {"k": k_max},
                        curve[-1],
                        n_answers_ok,
                        n_answers_err,
                        "item",
                        method="unbiased estimator",
                    )
                )
    # cluster_by: the headline accuracy with a cluster-robust interval
    if spec.cluster_by is not None:
        cl = {str(i["id"]): str(i.get(spec.cluster_by)) for i in data.items}
        ids = sorted(reduced)
        vals = [1.0 if reduced[i] else 0.0 for i in ids]
        est = sum(vals) / len(vals) if vals else None
        se = stats.clustered_se(vals, [cl[i] for i in ids]) if vals else math.nan
        lo = hi = None
        if est is not None and math.isfinite(se):
            lo, hi = max(0.0, est - stats.Z_95 * se), min(1.0, est + stats.Z_95 * se)
        n_clusters = len({cl[i] for i in ids})
        entry["clustered"] = {
            "by": spec.cluster_by,
            "n_clusters": n_clusters,
            "estimate": est,
            "se": se,
            "lo": lo,
            "hi": hi,
        }
        metrics.append(
            metric(
                "accuracy_clustered",
                g | {"cluster_by": spec.cluster_by},
                est,
                lo,
                hi,
                method="cluster-robust normal",
                n_total=n_items,
                n_ok=n_ok_items,
                n_error=n_items - n_ok_items,
                unit=f"item (clusters: {spec.cluster_by})",
                se=se,
            )
        )
    # every grader's pass rate, reduced the same way
    graders: dict[str, Any] = {}
    for ge in spec.graders:
        per_item = e.item_outcomes(ge.id)
        red = [reduce_outcomes(v, how) for v in per_item.values() if v]
        graders[ge.id] = {"name": ge.name, "version": ge.version, "pass": rate(sum(red), len(red))}
        metrics.append(
            rate_metric(
                "pass_rate",
                g | {"grader": ge.id},
                sum(red),
                len(red),
                n_error=n_items - len(red),
                unit="item",
            )
        )
    entry["graders"] = graders
    if spec.abstention == "category":
        entry["abstention"], more = _abstention(data, e, g)
        metrics += more
    entry["cost"], more = _cost(e, judge_rows, sum(reduced.values()), n_items, g)
    metrics += more
    return entry, metrics


def _abstention(data: Data, e: _Engine, g: dict[str, Any]) -> tuple[dict[str, Any], list[Metric]]:
    answerable_ids = {str(i["id"]) for i in data.items if answerable(i)}
    by_item: dict[str, list[str]] = defaultdict(list)
    for gr in e.graded:
        if (
            str(gr["grader_id"]) == e.primary
            and gr["category"] != ERROR
            and str(gr["item_id"]) in answerable_ids
        ):
            by_item[str(gr["item_id"])].append(str(gr["category"]))
    cats = Counter(c for v in by_item.values() for c in v)
    c, w, a = cats[CORRECT], cats[WRONG], cats[ABSTAINED]
    n_err = sum(1 for r in e.rows if r["status"] != "ok" and str(r["item_id"]) in answerable_ids)
    abst = {i: [1.0 if x == ABSTAINED else 0.0 for x in v] for i, v in by_item.items()}
    answered = {
        i: [1.0 if x == CORRECT else 0.0 for x in v if x != ABSTAINED] for i, v in by_item.items()
    }
    answered = {i: v for i, v in answered.items() if v}
    metrics = [
        _share("abstention_rate", g, abst, n_err, "item"),
        _share("selective_accuracy", g, answered, n_err, "item"),
    ]
    n = c + w + a
    scores = {str(t): stats.abstention_score(c, w, a, t) if n else math.nan for t in THRESHOLDS}
    for t, s in scores.items():
        metrics.append(_plain("abstention_score", g | {"t": t}, s, n, n_err, "answer"))
    return {
        "n_answerable_answers": n,
        "correct": c,
        "wrong": w,
        "abstained": a,
        "abstention_rate": _ratio(a, n),
        "selective_accuracy": _ratio(c, c + w),
        "score": scores,
    }, metrics


def _cost(
    e: _Engine, judge_rows: Sequence[Row], solved: int, n_items: int, g: dict[str, Any]
) -> tuple[dict[str, Any], list[Metric]]:
    cost = math.fsum(float(r["cost_usd"] or 0.0) for r in e.rows)
    ok = [r for r in e.rows if r["status"] == "ok"]
    latency = math.fsum(float(r["latency_s"] or 0.0) for r in ok)
    mine = []
    for r in judge_rows:
        parsed = parse_judge_condition(str(r["condition"]))
        if parsed is not None and parsed[1] == "answers" and parsed[2] == e.name:
            mine.append(r)
    judging = math.fsum(float(r["cost_usd"] or 0.0) for r in mine)
    n_err = len(e.rows) - len(ok)
    out = {
        "cost_usd": cost,
        "tokens_in": sum(int(r["tokens_in"] or 0) for r in e.rows),
        "tokens_out": sum(int(r["tokens_out"] or 0) for r in e.rows),
        "cost_per_item_usd": _ratio(cost, n_items),
        "cost_per_solved_item_usd": _ratio(cost, solved),
        "judging_cost_usd": judging,
        "cost_per_solved_item_with_judging_usd": _ratio(cost + judging, solved),
        "latency_s": latency,
        "latency_per_answer_s": _ratio(latency, len(ok)),
        "latency_per_solved_item_s": _ratio(latency, solved),
        "solved_items": solved,
    }
    metrics = [
        _plain("cost_usd", g, cost, len(ok), n_err, "request"),
        _plain(
            "cost_per_solved_item_usd", g, out["cost_per_solved_item_usd"], solved, n_err, "item"
        ),
        _plain(
            "latency_per_solved_item_s", g, out["latency_per_solved_item_s"], solved, n_err, "item"
        ),
    ]
    return out, metrics


def item_mean_comparison(
    a: str,
    b: str,
    outcomes_a: Mapping[str, Sequence[bool]],
    outcomes_b: Mapping[str, Sequence[bool]],
    how: str,
    *,
    unit: str = "item",
) -> dict[str, Any]:
    """Two engines compared on the items both answered: each item's mean verdict over its
    repeats, the mean difference with a paired normal interval, and the exact sign test on the
    differences; each side's accuracy after ``how`` reduces the repeats. One function for every
    suite that compares verdict lists (tasks, imported): the same pair gives the same numbers
    whichever suite reports it. ``se`` is None where it is undefined (fewer than two items)."""
    ma = {i: sum(v) / len(v) for i, v in outcomes_a.items() if v}
    mb = {i: sum(v) / len(v) for i, v in outcomes_b.items() if v}
    common = sorted(set(ma) & set(mb))
    xa = [ma[i] for i in common]
    xb = [mb[i] for i in common]
    diffs = [x - y for x, y in zip(xa, xb, strict=True)]
    n_pos, n_neg, p = stats.sign_test_items(diffs) if diffs else (0, 0, 1.0)
    d = sum(diffs) / len(diffs) if diffs else None
    se = stats.paired_se(xa, xb) if len(diffs) >= 2 else math.nan
    lo = hi = None
    if d is not None and math.isfinite(se):
        lo, hi = d - stats.Z_95 * se, d + stats.Z_95 * se
    ra = sum(reduce_outcomes(outcomes_a[i], how) for i in common)
    rb = sum(reduce_outcomes(outcomes_b[i], how) for i in common)
    return {
        "a": a,
        "b": b,
        "n_items": len(common),
        "a_accuracy": rate(ra, len(common)),
        "b_accuracy": rate(rb, len(common)),
        "a_better": n_pos,
        "b_better": n_neg,
        "ties": len(common) - n_pos - n_neg,
        "difference": d,
        "se": se if math.isfinite(se) else None,
        "lo": lo,
        "hi": hi,
        "p": p,
        "test": f"exact two-sided sign test on the {unit}s' score differences",
    }


def _paired(a: _Engine, b: _Engine, how: str) -> dict[str, Any]:
    return item_mean_comparison(a.name, b.name, a.primary_outcomes(), b.primary_outcomes(), how)


Pairs = frozenset[tuple[str, str]]


def confirmatory(a: str, b: str, sealed: Pairs | None) -> bool:
    """Whether the pair is in the sealed design's comparisons (every pair is when no design
    was sealed: then none is pre-registered, and the status says so)."""
    return sealed is None or (min(a, b), max(a, b)) in sealed


def comparison_plan(data: Data, *, exploratory: bool = False) -> ComparisonPlan:
    """The suite's comparison plan from its sealed ``analysis`` block (δ, α, power; the family
    ``engines`` holding the engine pairs of the sealed design, and, when an engine was added
    after the seal, ``exploratory`` holding the pairs with it, Benjamini–Hochberg-adjusted on
    their own)."""
    an = data.spec.analysis
    families = {"engines": "every pair of engines the suite compares, on the items both did"}
    if exploratory:
        families[EXPLORATORY_FAMILY] = (
            "the pairs with an engine added after the seal (not pre-registered)"
        )
    return ComparisonPlan(
        families=families,
        delta=float(an.get("delta", DEFAULT_DELTA)),
        alpha=float(an.get("alpha", 0.05)),
        power=float(an.get("power", DEFAULT_POWER)),
        correction="holm",
        # the primary verdict is 0/1 (correct or not): exact McNemar, mid-p beside (issue #30)
        tests=dict.fromkeys(families, BINARY_TEST),
    )


def _pairs(data: Data, engines: Mapping[str, _Engine]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in data.spec.comparisons if a in engines and b in engines]


def _comparisons(
    data: Data, engines: Mapping[str, _Engine], n_items: int, sealed: Pairs | None
) -> tuple[list[dict[str, Any]], list[Metric]]:
    out, metrics = [], []
    pairs = _pairs(data, engines)
    cplan = comparison_plan(data, exploratory=any(not confirmatory(a, b, sealed) for a, b in pairs))
    for a, b in pairs:
        c = _paired(engines[a], engines[b], data.spec.reduce)
        c["paired"] = paired_comparison(
            f"{a} vs {b}",
            "engines" if confirmatory(a, b, sealed) else EXPLORATORY_FAMILY,
            a,
            b,
            {i: [float(x) for x in v] for i, v in engines[a].primary_outcomes().items() if v},
            {i: [float(x) for x in v] for i, v in engines[b].primary_outcomes().items() if v},
            cplan,
        )
        out.append(c)
        g = {"a": a, "b": b}
        n = int(c["n_items"])
        role = c["paired"]["role"]  # confirmatory: a pair of the sealed design's family
        metrics.append(
            metric(
                "difference",
                g,
                c["difference"],
                c["lo"],
                c["hi"],
                method="paired normal",
                n_total=n_items,
                n_ok=n,
                n_error=n_items - n,
                unit="item",
                role=role,
                se=c["se"],
            )
        )
        metrics.append(
            _plain(
                "sign_test_p",
                g,
                c["p"],
                n,
                n_items - n,
                "item",
                method="exact sign test",
                role=role,
            )
        )
        metrics.append(
            _plain(
                "mcnemar_midp",
                g,
                c["paired"]["p_midp"],
                n,
                n_items - n,
                "item",
                method="mid-p McNemar (Fagerland et al. 2013)",
                role=role,
            )
        )
    adjust_families([c["paired"] for c in out])
    return out, metrics


def _hypotheses(
    data: Data, engines: Mapping[str, _Engine], n_items: int
) -> tuple[list[dict[str, Any]], list[Metric]]:
    hs: list[Hypothesis] = [h for h in data.spec.hypotheses if h.a in engines and h.b in engines]
    rows = []
    for h in hs:
        c = _paired(engines[h.a], engines[h.b], data.spec.reduce)
        pos, neg = int(c["a_better"]), int(c["b_better"])
        if h.direction == "greater":
            p = one_sided_p(pos, pos + neg)
        elif h.direction == "less":
            p = one_sided_p(neg, pos + neg)
        else:
            p = stats.sign_test(pos, neg)
        rows.append((h, c, p))
    correction = str(data.spec.analysis.get("correction", "holm"))
    raw = [p for _, _, p in rows]
    adjusted = stats.holm(raw) if correction == "holm" and raw else raw
    out, metrics = [], []
    for (h, c, p), adj in zip(rows, adjusted, strict=True):
        rejected = adj <= h.alpha
        out.append(
            {
                "id": h.id,
                "a": h.a,
                "b": h.b,
                "direction": h.direction,
                "alpha": h.alpha,
                "correction": correction,
                "n_items": c["n_items"],
                "a_better": c["a_better"],
                "b_better": c["b_better"],
                "difference": c["difference"],
                "lo": c["lo"],
                "hi": c["hi"],
                "p": p,
                "p_adjusted": adj,
                "rejected": rejected,
                "test": "exact sign test" + ("" if h.direction == "two-sided" else ", one-sided"),
            }
        )
        g = {"hypothesis": h.id, "a": h.a, "b": h.b, "direction": h.direction}
        n = int(c["n_items"])
        metrics.append(
            _plain(
                "hypothesis_p",
                g,
                p,
                n,
                n_items - n,
                "item",
                method="exact sign test",
                role=CONFIRMATORY,  # a hypothesis the sealed spec declares
            )
        )
        metrics.append(
            _plain(
                "hypothesis_p_adjusted",
                g,
                adj,
                n,
                n_items - n,
                "item",
                method=f"exact sign test, {correction}",
                role=CONFIRMATORY,
            )
        )
    return out, metrics


def _judges(
    data: Data, engines: Mapping[str, _Engine], rows: Sequence[Row]
) -> tuple[dict[str, Any], list[Metric]]:
    out: dict[str, Any] = {}
    metrics: list[Metric] = []
    spec = data.spec
    for gr in spec.judges():
        judge = str(gr.params["engine"])
        orders = list(jv.orders(gr.params))
        jrows = [
            r
            for r in rows
            if r["engine"] == judge
            and (parse_judge_condition(str(r["condition"])) or ("",))[0] == gr.id
        ]
        entry: dict[str, Any] = {
            "engine": judge,
            "orders": orders,
            **status_counts(jrows),
            "answers": {},
        }
        for name, e in sorted(engines.items()):
            g = {"grader": gr.id, "judge": judge, "engine": name}
            per = [x for x in e.graded if str(x["grader_id"]) == gr.id and x["status"] == "ok"]
            judged = [x for x in per if _gradable(x, False)]
            missing = len(per) - len(judged)
            n_pass = sum(1 for x in judged if x["passed"])
            sub: dict[str, Any] = {
                "n_answers": len(per),
                "n_judged": len(judged),
                "n_missing": missing,
                "pass": rate(n_pass, len(judged)),
            }
            metrics.append(
                rate_metric("judge_pass", g, n_pass, len(judged), n_error=missing, unit="answer")
            )
            if len(orders) > 1:
                cons = [(x.get("details") or {}).get("consistent") for x in judged]
                known = [bool(c) for c in cons if c is not None]
                sub["order_consistent"] = rate(sum(known), len(known))
                metrics.append(
                    rate_metric(
                        "judge_order_consistent",
                        g,
                        sum(known),
                        len(known),
                        n_error=len(per) - len(known),
                        unit="answer",
                    )
                )
            if gr.id != spec.primary:
                prim = {
                    str(x["request_key"]): x["category"] == CORRECT
                    for x in e.graded
                    if str(x["grader_id"]) == spec.primary and x["category"] != ERROR
                }
                pairs = [
                    (bool(x["passed"]), prim[str(x["request_key"])])
                    for x in judged
                    if str(x["request_key"]) in prim
                ]
                jj = [p for p, _ in pairs]
                pp = [q for _, q in pairs]
                sub["agreement_with_primary"] = stats.agreement(jj, pp) if pairs else None
                sub["kappa_with_primary"] = stats.cohen_kappa(jj, pp) if pairs else None
                for key, val in (
                    ("judge_primary_agreement", sub["agreement_with_primary"]),
                    ("judge_primary_kappa", sub["kappa_with_primary"]),
                ):
                    metrics.append(_plain(key, g, val, len(pairs), len(per) - len(pairs), "answer"))
            entry["answers"][name] = sub
        labels = data.labels.get(gr.id)
        if labels:
            entry["calibration"], more = _calibration(gr.id, judge, orders, labels, jrows)
            metrics += more
        out[gr.id] = entry
    return out, metrics


def _calibration(
    gid: str, judge: str, orders: Sequence[str], labels: Sequence[Any], jrows: Sequence[Row]
) -> tuple[dict[str, Any], list[Metric]]:
    replies: dict[tuple[str, str], str] = {}
    for r in jrows:
        parsed = parse_judge_condition(str(r["condition"]))
        if parsed is not None and parsed[1] == "calibration" and r["status"] == "ok":
            replies[(str(r["item_id"]), parsed[3])] = str(r["output_text"] or "")
    human = {lab.id: lab.label for lab in labels}
    verdicts: dict[str, dict[str, str]] = {
        o: {lid: jg.parse_verdict(replies[(lid, o)]) for lid in human if (lid, o) in replies}
        for o in orders
    }
    combined = {
        lid: (jg.PASS if all(verdicts[o].get(lid) == jg.PASS for o in orders) else jg.FAIL)
        for lid in human
        if all(lid in verdicts[o] for o in orders)
    }
    views = {o: verdicts[o] for o in orders}
    if len(orders) > 1:
        views["swap_and_agree"] = combined
    out: dict[str, Any] = {"n_labels": len(human), "variants": {}}
    metrics: list[Metric] = []
    for name, vd in views.items():
        ids = sorted(vd)
        cal = jg.calibration([vd[i] for i in ids], [human[i] for i in ids])
        out["variants"][name] = cal
        g = {"grader": gid, "judge": judge, "variant": name}
        t = cal["table"]
        agree = int(t["judge_pass_human_pass"]) + int(t["judge_fail_human_fail"])
        missing = len(human) - len(ids)
        metrics.append(
            rate_metric("judge_human_agreement", g, agree, len(ids), n_error=missing, unit="answer")
        )
        metrics.append(_plain("judge_human_kappa", g, cal["kappa"], len(ids), missing, "answer"))
    return out, metrics


def _human_audit(
    data: Data,
    engines: Mapping[str, _Engine],
    subset: Sequence[str],
    labels: Sequence[AuditLabel] | None,
) -> tuple[dict[str, Any], list[Metric]]:
    """``analysis.human_audit``: per answering engine, the judge's PASS rate on all its
    answers, the human PASS rate on the labelled answers of the sealed subset, and the judge's
    rate corrected by prediction-powered inference (PPI++ with the tuned λ, Angelopoulos, Duchi
    & Zrnic 2024: ``stats.ppi_mean``), with the power gain (effective n of the labels, interval
    width over the human-only one). The labelled set is the answers of the subset's items;
    the unlabelled set is the judge's verdicts on every other item's answers. The unit is the
    answer (repeats of an item count as answers, as the judge's PASS rate does)."""
    ha = data.spec.human_audit
    if ha is None:
        return {}, []
    out: dict[str, Any] = {
        "grader": ha.grader,
        "judge": str(data.spec.grader(ha.grader).params["engine"]),
        "n": ha.n,
        "labels": ha.labels,
        "items": list(subset),
        "status": "awaiting labels" if labels is None else "labelled",
        "engines": {},
    }
    metrics: list[Metric] = []
    inside = set(subset)
    human = {(lab.engine, lab.item, lab.repeat): lab.label == jg.PASS for lab in labels or []}
    for name, e in sorted(engines.items()):
        judged = {(i, rep): p for i, v in e.outcomes.get(ha.grader, {}).items() for rep, p in v}
        pairs = [
            (human[(name, i, r)], p)
            for (i, r), p in sorted(judged.items())
            if (name, i, r) in human
        ]
        rest = [float(p) for (i, _), p in sorted(judged.items()) if i not in inside]
        planned = sum(1 for (i, _) in judged if i in inside)
        k_all = sum(judged.values())
        sub: dict[str, Any] = {
            "judge_pass": rate(k_all, len(judged)),
            "n_subset_answers": planned,
            "n_labelled": len(pairs),
            "n_unlabelled": len(rest),
        }
        g = {"grader": ha.grader, "engine": name}
        if len(pairs) >= stats.MIN_LABELLED and len(rest) >= stats.MIN_UNLABELLED:
            y = [float(h) for h, _ in pairs]
            f = [float(p) for _, p in pairs]
            r = stats.ppi_mean(y, f, rest)
            sub["ppi"] = r.as_dict()
            for mname, iv, method in (
                ("human_audit_pass", r.classical, "normal"),
                ("judge_pass_ppi", r.ppi_pp, "PPI++ normal"),
            ):
                metrics.append(
                    metric(
                        mname,
                        g,
                        iv.estimate,
                        iv.lo,
                        iv.hi,
                        method=method,
                        n_total=planned,
                        n_ok=len(pairs),
                        n_error=planned - len(pairs),
                        unit="answer",
                    )
                )
        out["engines"][name] = sub
    return out, metrics


def _items_table(
    data: Data, engines: Mapping[str, _Engine], item_ids: Sequence[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    outs = {name: e.primary_outcomes() for name, e in engines.items()}
    for i in item_ids:
        row: dict[str, Any] = {}
        for name in sorted(engines):
            v = outs[name].get(i) or []
            row[name] = {
                "n": len(v),
                "mean": sum(v) / len(v) if v else None,
                "passed": reduce_outcomes(v, data.spec.reduce) if v else None,
            }
        out[i] = row
    return out


def _sequential(data: Data, items: Sequence[Row], engines: Mapping[str, _Engine]) -> dict[str, Any]:
    """The sealed sequential rule replayed on the rows present (``analysis.sequential``).

    The values are the paired item scores a − b (an item's score: the share of its completed
    answers the primary grader calls correct; an answer in error scores 0) over the items in
    the sealed item order (``items`` as generated), as far as both engines answered. ``n_used``
    counts the items either engine answered: a run that stopped where the rule did not say so,
    or went on after it said stop, or answered items out of order, gets a ``violation`` (the
    audit FAILs it); the looks, the stop and the calls not made follow from the replay alone,
    so the run stage and the audit read the same numbers."""
    sp = data.spec.sequential
    assert sp is not None
    a, b = sp.compare
    order = [str(i["id"]) for i in items]
    answered = {
        e: {str(r["item_id"]) for r in engines[e].rows} if e in engines else set() for e in (a, b)
    }
    score = {
        e: {i: (sum(v) / len(v) if v else 0.0) for i, v in engines[e].primary_outcomes().items()}
        if e in engines
        else {}
        for e in (a, b)
    }
    used = answered[a] | answered[b]
    values: list[float] = []
    for i in order:
        if i not in answered[a] or i not in answered[b]:
            break
        values.append(score[a].get(i, 0.0) - score[b].get(i, 0.0))
    res = stats.sequential_rule(values, sp.looks, alpha=sp.alpha)
    violation = None
    if set(order[: len(used)]) != used:
        violation = "items answered outside the sealed item order"
    elif used:
        violation = stats.check_stop(values, sp.looks, len(used), alpha=sp.alpha)
    calls = sum(len(engines[e].rows) for e in (a, b) if e in engines)
    per_item = calls / len(used) if used else 0.0
    stopped = res.stopped_at if res.decision != "continue" else len(used)
    return {
        "compare": [a, b],
        "planned_looks": list(sp.looks),
        "max_n": sp.max_n,
        "alpha": sp.alpha,
        "method": res.method,
        "rho": res.rho,
        "bounds": [-1.0, 1.0],
        "looks": [
            {"n": lk.n, "mean": lk.mean, "lo": lk.lo, "hi": lk.hi, "decision": lk.decision}
            for lk in res.looks
        ],
        "n_used": len(used),
        "n_paired": len(values),
        "stopped_at": stopped,
        "decision": res.decision,
        "items_saved": sp.max_n - stopped,
        "calls_made": calls,
        "calls_at_max_n": round(per_item * sp.max_n),
        "calls_saved": round(per_item * sp.max_n) - calls,
        "violation": violation,
    }


def analyze(
    data: Data,
    items: Sequence[Row],
    graded: Sequence[Row],
    rows: Sequence[Row],
    *,
    sealed: Pairs | None = None,
    audit_labels: Sequence[AuditLabel] | None = None,
) -> dict[str, Any]:
    """The suite's analysis; ``sealed``: the engine pairs of the sealed design (the
    confirmatory family; ``seal.design.sealed_pairs``), None when no design was sealed;
    ``audit_labels``: the human-audit labels (``data.load_audit_labels``), None while none
    were given."""
    spec = data.spec
    item_ids = sorted(str(i["id"]) for i in items)
    answers = [r for r in rows if r["condition"] == ANSWER]
    judge_rows = [r for r in rows if str(r["condition"]).startswith("judge/")]
    names = sorted({str(r["engine"]) for r in answers})
    engines = {n: _Engine(data, n, [r for r in answers if r["engine"] == n], graded) for n in names}
    out_engines: dict[str, Any] = {}
    metrics: list[Metric] = []
    for n, e in engines.items():
        entry, more = _engine_entry(data, e, item_ids, judge_rows)
        out_engines[n] = entry
        metrics += more
    comparisons, more = _comparisons(data, engines, len(item_ids), sealed)
    metrics += more
    hypotheses, more = _hypotheses(data, engines, len(item_ids))
    metrics += more
    judges, more = _judges(data, engines, rows)
    metrics += more
    human_audit: dict[str, Any] = {}
    if spec.human_audit is not None:
        subset = audit_items(items, spec.human_audit.n)
        human_audit, more = _human_audit(data, engines, subset, audit_labels)
        metrics += more
    for j in spec.judge_engines():
        mine = [r for r in judge_rows if r["engine"] == j]
        if mine:
            out_engines.setdefault(j, {"model": str(mine[0]["model"])})
            out_engines[j]["judging"] = status_counts(mine) | {
                "cost_usd": math.fsum(float(r["cost_usd"] or 0.0) for r in mine),
            }
    out: dict[str, Any] = {
        "suite": spec.suite,
        "kind": "tasks",
        "n_items": len(item_ids),
        "design": {
            "primary": spec.primary,
            "reduce": spec.reduce,
            "graders": [g.describe() for g in spec.graders],
            "solver": spec.solver,
            "samples": spec.samples,
            "repeats": int(spec.get("repeats", 1)),
            "temperature": float(spec.get("temperature", 0.0)),
            "max_tokens": int(spec.get("max_tokens", 256)),
            "abstention": spec.abstention,
            "cluster_by": spec.cluster_by,
            "comparisons": [list(p) for p in spec.comparisons],
        },
        "engines": out_engines,
        "comparisons": comparisons,
        "comparison_plan": comparison_plan(
            data, exploratory=any(not confirmatory(a, b, sealed) for a, b in _pairs(data, engines))
        ).describe(),
        "hypotheses": hypotheses,
        "judges": judges,
        "items": _items_table(data, engines, item_ids),
        "methods": INTERVALS,
        "metrics": sort_metrics(metrics),
    }
    if human_audit:
        out["human_audit"] = human_audit
    if spec.sequential is not None:
        out["sequential"] = _sequential(data, items, engines)
    return out
