"""The grounding analysis, exactly as the sealed plan (:mod:`.plan`) declares it.

The item is the unit of analysis: every estimate first averages the replicates of an item
within a condition, then works on item means. Per condition and metric the output carries

* the call-level rate with a Wilson interval (``k``, ``n``, ``rate``, ``lo``, ``hi``) and the
  same rate with errored calls counted as failures (a lower bound);
* the item-level mean with an item-level standard error (replicates averaged first) and a 95%
  interval clustered by item (cluster-robust SE on the call scores, normal approximation,
  clipped to [0, 1]);
* ``n_total`` / ``n_ok`` / ``n_error`` for the calls it covers.

Every number a table or figure shows is also listed in the typed metric schema
(:func:`metrics`, ``stats.metrics.Metric``): track A's measures per engine, model role and
condition as item means with their clustered interval, each track's parse rate and the B-track
headline rates with their Wilson interval, and H3's bootstrap estimate. ``n_total`` / ``n_ok`` /
``n_error`` of a metric count calls (requests), ``unit`` says what its interval treats as
independent.

The eight pre-declared paired comparisons are exact two-sided sign tests on item means (ties
dropped). No other comparison is tested; H3 is an estimate with a seeded bootstrap interval and
H6-H9 are descriptive, as the plan says. No multiple-comparison correction is applied, and the
output says so. Each comparison also carries its ``stats.comparisons`` record (issue 15,
``COMPARISON_PLAN``): paired difference with a normal 95% interval, the Holm-adjusted p across
the engine's pre-declared comparisons (a family-wise view beside the raw p), the MDE at 80%
power for the items at hand (variances from the replicates) and the items needed for δ = 0.05.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from sealedeval import stats
from sealedeval.stats.comparisons import adjust_families, paired_comparison
from sealedeval.stats.metrics import Metric, rate_metric, sort_metrics, status_counts
from sealedeval.stats.metrics import metric as make_metric
from sealedeval.suites.grounding.conditions import CONDITIONS
from sealedeval.suites.grounding.plan import COMPARISON_PLAN, PLAN, Comparison
from sealedeval.suites.grounding.tracks import b3_disclosure

__all__ = [
    "H3_BOOT_SEED",
    "H3_N_BOOT",
    "analyze_engine",
    "compare",
    "h3_estimate",
    "metric_block",
    "metrics",
    "plan_summary",
]

H3_BOOT_SEED = 20260906
"""Seed of the H3 bootstrap (PCG64), recorded in the output."""
H3_N_BOOT = 10_000
"""Bootstrap resamples for H3, as the plan states."""
VERSIONED = ("active_customer", "net_revenue", "on_time")
"""The three concepts with a dated version change (H3 compares TEMP with COMP on these)."""

_B1_CONDITIONS = ("schema", "prose_deficient", "records_deficient")
_B2_STAGES = ("select", "full", "own_pick", "keyword_top5")
_B3_CONDITIONS = ("no_policy", "prose_policy", "classification_records")
_OWNERSHIP = ("records", "prose")
_B4_METRICS = (
    "routing_correct",
    "owner_behaviour_correct",
    "record_well_formed",
    "effective_date_correct",
    "final_correct",
)


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else math.nan, "lo": lo, "hi": hi}


def metric_block(obs: Sequence[tuple[Hashable, float]], n_error: int = 0) -> dict[str, Any]:
    """Rates and intervals of one binary (or [0, 1]) metric from ``(item, value)`` calls.

    Args:
        obs: One ``(item id, score)`` per completed call where the metric applies.
        n_error: Errored calls where the metric would have applied (counted as failures in
            ``errors_as_fail``).
    """
    values = [float(v) for _, v in obs]
    items = [i for i, _ in obs]
    k = round(sum(values)) if all(v in (0.0, 1.0) for v in values) else None
    out: dict[str, Any] = {"n_calls": len(values), "n_error": n_error}
    if k is not None:
        out |= _rate(k, len(values))
        out["errors_as_fail"] = _rate(k, len(values) + n_error)
    else:
        out |= {"k": None, "n": len(values), "rate": float(np.mean(values)) if values else math.nan}
        out |= {"lo": None, "hi": None, "errors_as_fail": None}
    means = stats.item_means(values, items) if values else {}
    out["n_items"] = len(means)
    mean = float(np.mean(list(means.values()))) if means else math.nan
    out["item_mean"] = mean
    out["item_se"] = stats.item_se(values, items) if values else math.nan
    se = stats.clustered_se(values, items) if values else math.nan
    out["clustered_se"] = se
    if math.isfinite(se) and math.isfinite(mean):
        out["clustered_lo"] = max(0.0, mean - stats.Z_95 * se)
        out["clustered_hi"] = min(1.0, mean + stats.Z_95 * se)
    else:
        out["clustered_lo"] = out["clustered_hi"] = None
    return out


def _mean_block(obs: Sequence[tuple[Hashable, float]]) -> dict[str, Any]:
    """Item-averaged mean of a non-binary quantity (precision, context size)."""
    if not obs:
        return {"n_calls": 0, "n_items": 0, "item_mean": math.nan, "item_se": math.nan}
    values = [float(v) for _, v in obs]
    items = [i for i, _ in obs]
    means = stats.item_means(values, items)
    return {
        "n_calls": len(values),
        "n_items": len(means),
        "item_mean": float(np.mean(list(means.values()))),
        "item_se": stats.item_se(values, items),
    }


class _Calls:
    """Graded rows of one engine and role, with their parsed details."""

    def __init__(self, graded: Iterable[Mapping[str, Any]]) -> None:
        self.rows = [dict(g) | {"m": json.loads(g["details"] or "{}")} for g in graded]

    def where(self, track: str, stage: str | None = None) -> list[dict[str, Any]]:
        return [
            r for r in self.rows if r["track"] == track and (stage is None or r["stage"] == stage)
        ]


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """n_total / n_ok / n_error of graded rows (which carry no error kind: the engine's block,
    from the raw rows, has ``errors_by_kind``)."""
    c = status_counts(rows)
    return {k: c[k] for k in ("n_total", "n_ok", "n_error")}


def _obs(
    rows: Sequence[Mapping[str, Any]],
    metric: str,
    item: Callable[[Mapping[str, Any]], Hashable] = lambda r: r["item_id"],
) -> list[tuple[Hashable, float]]:
    return [
        (item(r), float(r["m"][metric]))
        for r in rows
        if r["status"] == "ok" and r["m"].get(metric) is not None
    ]


def _parse(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok"]
    return _rate(sum(1 for r in ok if r["m"].get("parse_ok")), len(ok))


def _track_a(
    rows: Sequence[Mapping[str, Any]], items: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cond in CONDITIONS:
        crows = [r for r in rows if r["stage"] == cond]
        if not crows:
            continue
        errs = [r for r in crows if r["status"] != "ok"]
        err_ans = sum(1 for r in errs if items[r["item_id"]]["answerable"])
        err_un = len(errs) - err_ans
        block: dict[str, Any] = _counts(crows)
        block["parse"] = _parse(crows)
        block["contract"] = _rate(
            sum(1 for r in crows if r["status"] == "ok" and r["m"].get("contract_ok")),
            block["n_ok"],
        )
        for metric, n_err in (
            ("m1", err_ans),
            ("m2", err_ans),
            ("m7", err_ans),
            ("unjustified_abstention", err_ans),
            ("m5", err_un),
        ):
            block[metric] = metric_block(_obs(crows, metric), n_err)
        fam: dict[str, list[tuple[Hashable, float]]] = defaultdict(list)
        for item_id, v in _obs(crows, "m1"):
            fam[str(items[str(item_id)]["family"])].append((item_id, v))
        block["m1_by_family"] = {f: _mean_block(o) for f, o in sorted(fam.items())}
        out[cond] = block
    return out


def _item_set(name: str, items: Mapping[str, Mapping[str, Any]]) -> set[str]:
    answerable = {i for i, it in items.items() if it.get("track") == "A" and it["answerable"]}
    governed = {i for i in answerable if items[i]["role"] == "counterparty"}
    if name == "answerable":
        return answerable
    if name == "xorg_governed":
        return governed
    if name == "not_xorg_governed":
        return answerable - governed
    raise ValueError(f"unknown item set {name!r}")


def _item_means_by(rows: Sequence[Mapping[str, Any]], metric: str) -> dict[str, dict[str, float]]:
    """condition → item → mean of ``metric`` over the item's completed replicates."""
    out: dict[str, dict[str, float]] = {}
    for cond in {r["stage"] for r in rows}:
        obs = _obs([r for r in rows if r["stage"] == cond], metric)
        out[cond] = (
            {
                str(k): v
                for k, v in stats.item_means([v for _, v in obs], [i for i, _ in obs]).items()
            }
            if obs
            else {}
        )
    return out


def _item_scores_by(
    rows: Sequence[Mapping[str, Any]], metric: str
) -> dict[str, dict[str, list[float]]]:
    """condition → item → ``metric`` of each completed replicate (what the MDE's variances
    are estimated from; their means are ``_item_means_by``)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["status"] == "ok" and r["m"].get(metric) is not None:
            out[r["stage"]][str(r["item_id"])].append(float(r["m"][metric]))
    return {c: dict(v) for c, v in out.items()}


def compare(
    comparison: Comparison,
    means: Mapping[str, Mapping[str, float]],
    items: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
) -> dict[str, Any]:
    """One pre-declared comparison: exact two-sided sign test on item means (ties dropped).

    Only items with a completed call under both conditions enter (an item errored in one
    condition is reported in ``n_missing``, never imputed). ``paired`` is the
    ``stats.comparisons`` record, from the replicate ``scores`` when given (else the means);
    the caller fills in Holm over the engine's pre-declared family.
    """
    wanted = _item_set(comparison.item_set, items)
    a = means.get(comparison.condition_a, {})
    b = means.get(comparison.condition_b, {})
    common = sorted(wanted & set(a) & set(b))
    diffs = [a[i] - b[i] for i in common]
    n_pos, n_neg, p = stats.sign_test_items(diffs) if diffs else (0, 0, 1.0)
    return {
        "id": comparison.comparison_id,
        "hypothesis": comparison.hypothesis,
        "metric": comparison.metric,
        "a": comparison.condition_a,
        "b": comparison.condition_b,
        "item_set": comparison.item_set,
        "direction": comparison.direction,
        "test": comparison.test,
        "n_items": len(common),
        "n_missing": len(wanted) - len(common),
        "a_better": n_pos,
        "b_better": n_neg,
        "ties": len(common) - n_pos - n_neg,
        "mean_a": float(np.mean([a[i] for i in common])) if common else math.nan,
        "mean_b": float(np.mean([b[i] for i in common])) if common else math.nan,
        "mean_diff": float(np.mean(diffs)) if diffs else math.nan,
        "paired_se": stats.paired_se([a[i] for i in common], [b[i] for i in common])
        if len(common) >= 2
        else math.nan,
        "p": p,
        "paired": paired_comparison(
            f"{comparison.comparison_id}: {comparison.condition_a} vs {comparison.condition_b}",
            "pre-declared",
            comparison.condition_a,
            comparison.condition_b,
            _replicates(scores, comparison.condition_a, a, common),
            _replicates(scores, comparison.condition_b, b, common),
            COMPARISON_PLAN,
        ),
    }


def _replicates(
    scores: Mapping[str, Mapping[str, Sequence[float]]] | None,
    condition: str,
    means: Mapping[str, float],
    common: Sequence[str],
) -> dict[str, list[float]]:
    """The common items' replicate scores under ``condition`` (their means without ``scores``)."""
    got = (scores or {}).get(condition, {})
    return {i: list(got[i]) if got.get(i) else [means[i]] for i in common}


def h3_estimate(
    m1: Mapping[str, Mapping[str, float]],
    items: Mapping[str, Mapping[str, Any]],
    *,
    seed: int = H3_BOOT_SEED,
    n_boot: int = H3_N_BOOT,
) -> dict[str, Any]:
    """H3: mean advantage (C − A on M1) on TEMP items minus that on COMP items of the three
    versioned concepts, with a percentile bootstrap interval resampling items within each
    family (seeded PCG64)."""
    c, a = m1.get("C", {}), m1.get("A", {})

    def adv(family: str) -> list[float]:
        return [
            c[i] - a[i]
            for i in sorted(set(c) & set(a))
            if items[i]["family"] == family and items[i]["concept"] in VERSIONED
        ]

    temp, comp = adv("TEMP"), adv("COMP")
    out: dict[str, Any] = {
        "estimand": "mean(C - A on M1 | TEMP) - mean(C - A on M1 | COMP), versioned concepts",
        "n_temp": len(temp),
        "n_comp": len(comp),
        "seed": seed,
        "n_boot": n_boot,
    }
    if not temp or not comp:
        return out | {"estimate": math.nan, "lo": math.nan, "hi": math.nan}
    est = float(np.mean(temp) - np.mean(comp))
    rng = np.random.Generator(np.random.PCG64(seed))
    t = np.asarray(temp)
    k = np.asarray(comp)
    bt = t[rng.integers(0, t.size, size=(n_boot, t.size))].mean(axis=1)
    bk = k[rng.integers(0, k.size, size=(n_boot, k.size))].mean(axis=1)
    lo, hi = np.percentile(bt - bk, [2.5, 97.5])
    return out | {"estimate": est, "lo": float(lo), "hi": float(hi)}


def _b1(calls: _Calls) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cond in _B1_CONDITIONS:
        rows = calls.where("B1", cond)
        if not rows:
            continue
        # Probe ids say what they are (B1-G*: a gap, B1-K*: a control), so an errored call
        # is counted on the right side without its (missing) scores.
        gap_rows = [r for r in rows if not r["item_id"].startswith("B1-K")]
        ctl_rows = [r for r in rows if r["item_id"].startswith("B1-K")]
        gap_err = sum(1 for r in gap_rows if r["status"] != "ok")
        ctl_err = sum(1 for r in ctl_rows if r["status"] != "ok")
        out[cond] = _counts(rows) | {
            "parse": _parse(rows),
            "gap_detected": metric_block(_obs(gap_rows, "gap_detected"), gap_err),
            "field_named": metric_block(_obs(gap_rows, "field_named"), gap_err),
            "owner_named": metric_block(_obs(gap_rows, "owner_named"), gap_err),
            "false_alarm": metric_block(_obs(ctl_rows, "false_alarm"), 0),
            "control_correct": metric_block(_obs(ctl_rows, "control_correct"), ctl_err),
        }
    return out


def _b2(calls: _Calls) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stage in _B2_STAGES:
        rows = calls.where("B2", stage)
        if not rows:
            continue
        n_err = sum(1 for r in rows if r["status"] != "ok")
        block = _counts(rows) | {"parse": _parse(rows)}
        if stage == "select":
            block |= {
                "precision": _mean_block(_obs(rows, "precision")),
                "recall": _mean_block(_obs(rows, "recall")),
                "exact": metric_block(_obs(rows, "exact"), n_err),
                "n_selected": _mean_block(_obs(rows, "n_selected")),
            }
        else:
            block |= {
                "correct": metric_block(_obs(rows, "correct"), n_err),
                "context_chars": _mean_block(_obs(rows, "context_chars")),
            }
        out[stage] = block
    return out


def _b3(calls: _Calls) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cond in _B3_CONDITIONS:
        rows = calls.where("B3", cond)
        if not rows:
            continue
        ok = [r["m"] for r in rows if r["status"] == "ok"]
        tp = sum(m["true_release"] for m in ok)
        fp = sum(m["false_release"] for m in ok)
        fn = sum(m["false_withhold"] for m in ok)
        correct = sum(m["correct"] for m in ok)
        decisions = sum(m["decisions"] for m in ok)
        critical = sum(m["critical_errors"] for m in ok)
        chances = sum(
            sum(1 for f in b3_disclosure.FACTS if b3_disclosure.is_critical(f, m["requester"]))
            for m in ok
        )
        out[cond] = _counts(rows) | {
            "parse": _parse(rows),
            "precision": _rate(tp, tp + fp),
            "recall": _rate(tp, tp + fn),
            "accuracy": _rate(correct, decisions),
            "critical_errors": critical,
            "critical_rate": _rate(critical, chances),
            "releases": tp + fp,
            "decisions": decisions,
        }
    return out


def _b4(calls: _Calls) -> dict[str, Any]:
    rows = calls.where("B4")
    out: dict[str, Any] = {}
    for own in _OWNERSHIP:
        orows = [r for r in rows if _ownership(r["item_id"]) == own]
        if not orows:
            continue
        n_err = sum(1 for r in orows if r["status"] != "ok")
        block = _counts(orows) | {"parse": _parse(orows)}
        for rnd in ("round1", "round2", "round3"):
            ok = [r for r in orows if r["status"] == "ok"]
            block[f"parse_{rnd}"] = _rate(
                sum(1 for r in ok if r["m"].get(f"parse_ok_{rnd}")), len(ok)
            )
        for metric in _B4_METRICS:
            block[metric] = metric_block(
                _obs(orows, metric, item=lambda r: r["m"].get("scenario_id", r["item_id"])), n_err
            )
        block["step_limit"] = sum(
            1 for r in orows if r["status"] == "ok" and r["m"].get("step_limit")
        )
        out[own] = block
    return out


def _ownership(chain_id: str) -> str:
    return "records" if chain_id.startswith("B4-R") else "prose"


def _hypotheses(role: Mapping[str, Any]) -> list[dict[str, Any]]:
    comps = {c["id"]: c for c in role.get("comparisons", [])}
    a = role.get("track_a", {})
    out = []
    for h in PLAN.hypotheses:
        ev: dict[str, Any] = {}
        if h.hypothesis_id in ("H1", "H2", "H4", "H5"):
            ev["comparisons"] = [
                cid for cid, c in comps.items() if c["hypothesis"] == h.hypothesis_id
            ]
        elif h.hypothesis_id == "H3":
            ev["estimate"] = role.get("h3")
        elif h.hypothesis_id == "H6":
            ev["m2"] = {c: a[c]["m2"]["rate"] for c in a}
        elif h.hypothesis_id == "H7":
            b1 = role.get("b1", {})
            ev["b1"] = {
                c: {
                    k: b1[c][k]["rate"]
                    for k in ("gap_detected", "field_named", "owner_named", "false_alarm")
                }
                for c in b1
            }
        elif h.hypothesis_id == "H8":
            b3 = role.get("b3", {})
            ev["critical_errors"] = {c: b3[c]["critical_errors"] for c in b3}
        elif h.hypothesis_id == "H9":
            b4 = role.get("b4", {})
            ev["routing_correct"] = {o: b4[o]["routing_correct"]["rate"] for o in b4}
        out.append(
            {
                "id": h.hypothesis_id,
                "statement": h.statement,
                "pre_specified": h.pre_specified,
                "flag": "pre-specified" if h.pre_specified else "post hoc",
                "origin": h.origin,
                "evaluation": h.evaluation,
                "evidence": ev,
            }
        )
    return out


def _role(
    graded: Sequence[Mapping[str, Any]], items: Mapping[str, Mapping[str, Any]], role: str
) -> dict[str, Any]:
    calls = _Calls(graded)
    a_rows = calls.where("A")
    out: dict[str, Any] = {"calls": _counts(calls.rows)}
    if a_rows:
        out["track_a"] = _track_a(a_rows, items)
        m1 = _item_means_by(a_rows, "m1")
        m7 = _item_means_by(a_rows, "m7")
        s1 = _item_scores_by(a_rows, "m1")
        s7 = _item_scores_by(a_rows, "m7")
        comps = []
        for comp in PLAN.comparisons:
            if role == "secondary" and comp.comparison_id != "P8":
                continue  # the secondary model runs only the H5 pair (E, C)
            source, reps = (m7, s7) if comp.metric == "M7" else (m1, s1)
            comps.append(compare(comp, source, items, reps))
        adjust_families([c["paired"] for c in comps])
        out["comparisons"] = comps
        if role == "primary":
            out["h3"] = h3_estimate(m1, items)
    if role == "primary":
        for name, fn in (("b1", _b1), ("b2", _b2), ("b3", _b3), ("b4", _b4)):
            block = fn(calls)
            if block:
                out[name] = block
        out["hypotheses"] = _hypotheses(out)
    return out


def analyze_engine(
    graded: Sequence[Mapping[str, Any]],
    raw: Sequence[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Everything the plan asks for, for one engine's graded rows and raw rows."""
    counts = status_counts(raw)
    roles: dict[str, Any] = {}
    for role in ("primary", "secondary"):
        rg = [g for g in graded if g["model_role"] == role]
        if rg:
            roles[role] = _role(rg, items, role)
    ok = [r for r in raw if r["status"] == "ok"]
    return {
        "model": raw[0]["model"] if raw else "",
        **counts,
        "complete": counts["n_error"] == 0,
        "tokens_in": sum(int(r["tokens_in"] or 0) for r in raw),
        "tokens_out": sum(int(r["tokens_out"] or 0) for r in raw),
        "latency_s": sum(float(r["latency_s"] or 0.0) for r in ok),
        "roles": roles,
    }


_A_MEASURES = ("m1", "m2", "m7", "m5", "unjustified_abstention")
_B_HEADLINES: dict[str, tuple[str, ...]] = {
    "b1": ("gap_detected", "field_named", "owner_named", "false_alarm", "control_correct"),
    "b2": ("exact", "correct"),
    "b3": ("precision", "recall", "accuracy", "critical_rate"),
    "b4": _B4_METRICS,
}
_B3_UNITS = {
    "precision": "released fact",
    "recall": "releasable fact",
    "accuracy": "fact decision",
    "critical_rate": "critical fact",
}


def _finite(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _item_metric(name: str, groups: Mapping[str, str], b: Mapping[str, Any]) -> Metric:
    """A ``metric_block``'s item mean with its 95% interval clustered by item."""
    n_ok, n_err = int(b["n_calls"]), int(b["n_error"])
    return make_metric(
        name,
        groups,
        _finite(b["item_mean"]) if b["n_items"] else None,
        b["clustered_lo"],
        b["clustered_hi"],
        method="item-clustered normal",
        n_total=n_ok + n_err,
        n_ok=n_ok,
        n_error=n_err,
        unit="item",
    )


def _call_metric(
    name: str, groups: Mapping[str, str], b: Mapping[str, Any], calls: Mapping[str, Any]
) -> Metric:
    """A call-level rate: a ``metric_block`` (its k of n completed calls, ``n_error`` errored
    calls where it applies) or a ``_rate`` over the completed calls of ``calls``' block."""
    if "n_calls" in b:
        if b["k"] is None:  # a [0, 1] score, not a rate: the call mean, no interval
            n_ok, n_err = int(b["n_calls"]), int(b["n_error"])
            return make_metric(
                name,
                groups,
                _finite(b["rate"]),
                None,
                None,
                method="none",
                n_total=n_ok + n_err,
                n_ok=n_ok,
                n_error=n_err,
                unit="request",
            )
        return rate_metric(name, groups, int(b["k"]), int(b["n"]), n_error=int(b["n_error"]))
    return rate_metric(name, groups, int(b["k"]), int(b["n"]), n_error=int(calls["n_error"]))


def _b3_metric(
    name: str, groups: Mapping[str, str], b: Mapping[str, Any], calls: Mapping[str, Any]
) -> Metric:
    """A B3 rate over facts or decisions (Wilson); n_* count the calls they come from."""
    n = int(b["n"])
    return make_metric(
        name,
        groups,
        _finite(b["rate"]) if n else None,
        b["lo"] if n else None,
        b["hi"] if n else None,
        method="wilson",
        n_total=int(calls["n_total"]),
        n_ok=int(calls["n_ok"]),
        n_error=int(calls["n_error"]),
        unit=_B3_UNITS[name.rsplit(".", 1)[-1]],
    )


def metrics(engines: Mapping[str, Mapping[str, Any]]) -> list[Metric]:
    """The analysis' numbers in the typed metric schema, from the per-engine results.

    Per engine, model role and condition (track A) or condition, assembly stage or ownership
    (tracks B1-B4, primary role): track A's M1, M2, M7, M5 and unjustified abstention as item
    means with the item-clustered 95% interval (answerable items; unanswerable for M5), each
    track's parse rate and the B-track headline rates with Wilson 95% intervals over completed
    calls, and H3's seeded bootstrap estimate. Metric names are ``<track>.<measure>``.
    """
    out: list[Metric] = []
    for eng, e in engines.items():
        for role, r in e["roles"].items():
            for cond, b in r.get("track_a", {}).items():
                g = {"engine": eng, "role": role, "condition": cond}
                out.append(_call_metric("track_a.parse", g, b["parse"], b))
                out += [_item_metric(f"track_a.{m}", g, b[m]) for m in _A_MEASURES]
            h3 = r.get("h3")
            if h3 is not None:
                n = int(h3["n_temp"]) + int(h3["n_comp"])
                out.append(
                    make_metric(
                        "h3.temp_minus_comp",
                        {"engine": eng, "role": role},
                        h3["estimate"],
                        h3["lo"],
                        h3["hi"],
                        method="bootstrap",
                        n_total=n,
                        n_ok=n,
                        n_error=0,
                        unit="item",
                    )
                )
            for track, names in _B_HEADLINES.items():
                for cond, b in r.get(track, {}).items():
                    g = {"engine": eng, "role": role, "condition": cond}
                    out.append(_call_metric(f"{track}.parse", g, b["parse"], b))
                    for m in names:
                        if m not in b:
                            continue
                        if track == "b3":
                            out.append(_b3_metric(f"b3.{m}", g, b[m], b))
                        else:
                            out.append(_call_metric(f"{track}.{m}", g, b[m], b))
    return sort_metrics(out)


def plan_summary() -> dict[str, Any]:
    """The parts of the sealed plan the report prints verbatim."""
    return {
        "version": PLAN.version,
        "unit_of_analysis": PLAN.unit_of_analysis,
        "replicate_handling": PLAN.replicate_handling,
        "intervals": PLAN.intervals,
        "parse_failures": PLAN.parse_failures,
        "errors": PLAN.errors,
        "correction": {
            "applied": PLAN.multiple_comparison_correction is not None,
            "method": PLAN.multiple_comparison_correction,
            "statement": PLAN.correction_statement,
        },
        "metric_caveats": list(PLAN.metric_caveats),
        "threats_to_validity": dict(PLAN.threats_to_validity),
        "hypotheses": [
            {
                "id": h.hypothesis_id,
                "statement": h.statement,
                "pre_specified": h.pre_specified,
                "origin": h.origin,
                "evaluation": h.evaluation,
            }
            for h in PLAN.hypotheses
        ],
        "comparisons": [
            {
                "id": c.comparison_id,
                "hypothesis": c.hypothesis,
                "metric": c.metric,
                "a": c.condition_a,
                "b": c.condition_b,
                "item_set": c.item_set,
                "direction": c.direction,
                "test": c.test,
            }
            for c in PLAN.comparisons
        ],
    }
