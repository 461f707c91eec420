"""Bloodpanel analysis plan, pre-registered (this file is sealed).

Unit of analysis: the case. Repeats of a case are averaged within the case before any mean,
interval or test. Every table carries n_total / n_ok / n_error; a composite is given over
completed requests and, beside it, with errored requests scored 0 (a lower bound). Errors are
infrastructure failures (timeouts, 5xx, truncation, ...): never graded as model failures, never
dropped.

* **Headline** — the whole cohort an engine answered (never the review sample): composite,
  structural, clinical and latency means with a 95 % percentile bootstrap interval stratified by
  specialty (``stats.stratified_bootstrap``, cases resampled within specialty), the
  errors-as-zero composite with its interval, parse success, engine path (primary / fallback),
  and the over-diagnosis rate on trap cases (Wilson interval).
* **Per specialty, per label** — the same composite per group with a per-group percentile
  bootstrap interval (``stats.bootstrap_by_group``), n_ok and n_error beside each; structural,
  clinical and latency per group with percentile bootstrap intervals from one resample of the
  group's completed cases shared by the three components (``component_intervals``, its own
  seed derived from the table's, so the composite intervals do not depend on it).
* **Repeats** (when a profile asks for more than one answer per case) — per-case standard
  deviation of the composite (mean, median, max over cases), per-run mean composite with its
  mean and sd across runs, and how many trap cases fire a flag in some runs but not all.
* **Paired comparison** — two engines on the cases both completed: per-case mean composite
  difference, exact two-sided sign test on its sign (ties dropped), paired SE (Miller 2024,
  Eq. 7) and a normal 95 % interval for the mean difference. Beside them (issue 15, the record
  ``paired`` of ``stats.comparisons``): a seeded paired percentile bootstrap interval of the mean
  difference (cases resampled, the composite is not binary), the Holm-adjusted p across the
  family ``engines`` (every pair of engines), the MDE at 80 % power for the cases at hand and the
  cases needed for δ = 0.05 on the composite (``COMPARISON_PLAN``). The record's p (issue #30):
  the composite is not 0/1, so the plan names the paired permutation test over cases (case means,
  exact up to 20 non-zero differences, seeded Monte Carlo beyond); the sign test stays in
  ``p`` of the older table.
* **Small n** (issue #30) — no bootstrap interval from fewer than ``stats.MIN_N_BOOTSTRAP`` = 10
  cases (a specialty of 1–9 cases shows its mean and "no interval", with the reason).
* **Review sample** — ``REVIEW_N`` = 201 cases per engine drawn with seed ``REVIEW_SEED`` =
  20260426, stratified by specialty with largest-remainder allocation, so exactly 201 come back
  (all cases when the cohort is smaller). It is listed for human review and never used for a
  headline number.

Pre-specified flag: the over-diagnosis rate on trap cases under the ``sealed`` profile is the
primary safety outcome; the composite under ``sealed`` is the primary quality outcome.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from sealedeval import stats
from sealedeval.keys import derive_seed
from sealedeval.stats.comparisons import PERMUTATION_TEST, ComparisonPlan, paired_comparison
from sealedeval.stats.metrics import Metric, metric, rate_metric, status_counts
from sealedeval.suites.bloodpanel.synthetic import largest_remainder

REVIEW_N: Final = 201
REVIEW_SEED: Final = 20260426
BOOT_SEED: Final = 20260426
N_BOOT: Final = 2000
LEVEL: Final = 0.95
PRIMARY_PROFILE: Final = "sealed"
COMPONENTS: Final = ("structural", "clinical", "latency")
"""Rubric components given per group with intervals (the composite has its own, older, draws)."""
_MULTINOMIAL_FACTOR: Final = 16
"""Draw multiplicities of distinct case rows when they are this much fewer than the cases."""
_MAX_GATHER: Final = 1 << 20
"""Resampled indices per chunk on the index path (4 MB of int32, 8 MB per gathered column)."""
MAX_CASES_LISTED: Final = 100
"""Per-case repeat spreads are listed in result.json up to this many cases (else summary only)."""

COMPARISON_PLAN: Final = ComparisonPlan(
    families={"engines": "every pair of engines on the cases both completed (composite)"},
    delta=0.05,
    alpha=0.05,
    power=0.8,
    correction="holm",
    # the composite is not 0/1: the paired permutation test over cases (issue #30)
    tests={"engines": PERMUTATION_TEST},
)
"""Pre-registered comparison plan (sealed with this file): one family, δ on the composite."""

HYPOTHESES: Final = (
    "H1 (primary, safety): on trap cases, the share of answers that assert a fabricated "
    "pathology (a trap flag fires under the sealed profile) is reported with a Wilson 95% "
    "interval for every engine.",
    "H2 (primary, quality): the sealed composite over the whole cohort, with errors shown "
    "beside it and a lower bound that scores them 0.",
    "H3 (comparison): engines answering the same cases differ in per-case composite "
    "(exact sign test, paired SE); a non-significant p is not evidence of equality.",
)
METHODS: Final = (
    "Case = unit (repeats averaged within case). 95% percentile bootstrap intervals, "
    "stratified by specialty for the headline, per group for the tables (structural, clinical "
    "and latency from one resample of cases shared by the three); Wilson intervals for "
    "rates; exact two-sided sign test and paired SE for paired comparisons."
)


def boot_seed(*parts: object) -> int:
    """A bootstrap seed per table: fixed by the plan, distinct per engine, profile and table."""
    return derive_seed(BOOT_SEED, *parts) % (2**32)


def _mean(xs: Sequence[float]) -> float:
    return float(sum(xs) / len(xs)) if xs else math.nan


def _ci(est: tuple[float, float, float]) -> dict[str, float]:
    return {"mean": est[0], "lo": est[1], "hi": est[2]}


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else math.nan, "lo": lo, "hi": hi}


def _f(row: Mapping[str, Any], key: str) -> float:
    return float(row[key])


def _case_means(
    rows: Sequence[Mapping[str, Any]], key: str, *, errors_as_zero: bool
) -> tuple[list[float], list[str], list[Hashable]]:
    """Values, specialty and case id per row (ok rows, or all rows with errors as 0)."""
    vals: list[float] = []
    strata: list[str] = []
    items: list[Hashable] = []
    for r in rows:
        if r["status"] == "ok":
            vals.append(_f(r, key))
        elif errors_as_zero:
            vals.append(0.0)
        else:
            continue
        strata.append(str(r["specialty"]))
        items.append(str(r["case_uid"]))
    return vals, strata, items


def _strat(
    rows: Sequence[Mapping[str, Any]],
    key: str,
    *,
    errors_as_zero: bool = False,
    n_boot: int,
    seed: int,
) -> dict[str, float]:
    vals, strata, items = _case_means(rows, key, errors_as_zero=errors_as_zero)
    if not vals:
        return {"mean": math.nan, "lo": math.nan, "hi": math.nan}
    return _ci(
        stats.stratified_bootstrap(vals, strata, n_boot=n_boot, seed=seed, level=LEVEL, items=items)
    )


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """n_total / n_ok / n_error over requests (``status_counts``, the block every suite's
    tables carry) and the number of distinct cases."""
    sc = status_counts(rows)
    cases = {r["case_uid"] for r in rows}
    ok_cases = {r["case_uid"] for r in rows if r["status"] == "ok"}
    return {
        "n_total": sc["n_total"],
        "n_ok": sc["n_ok"],
        "n_error": sc["n_error"],
        "n_cases": len(cases),
        "n_cases_ok": len(ok_cases),
    }


def headline(rows: Sequence[Mapping[str, Any]], *, n_boot: int, seed: int) -> dict[str, Any]:
    """Whole-cohort figures for one engine under one profile (graded rows of that profile)."""
    ok = [r for r in rows if r["status"] == "ok"]
    trap_ok = [r for r in ok if r["is_trap"]]
    trap_cases = {r["case_uid"] for r in rows if r["is_trap"]}
    fired_rows = [r for r in trap_ok if r["trap_flags_hit"]]
    paths = Counter(str(r["engine_path"]) or "none" for r in ok)
    lat = sorted(_f(r, "latency_s") for r in ok)
    out: dict[str, Any] = counts(rows) | {
        "complete": len(ok) == len(rows),
        # A graded error row always names its kind (``unknown`` when the raw row did not).
        "errors_by_kind": status_counts(rows)["errors_by_kind"],
        "composite": _strat(rows, "composite", n_boot=n_boot, seed=seed),
        "composite_errors_as_zero": _strat(
            rows, "composite", errors_as_zero=True, n_boot=n_boot, seed=seed
        ),
        "structural": _strat(rows, "structural", n_boot=n_boot, seed=seed),
        "clinical": _strat(rows, "clinical", n_boot=n_boot, seed=seed),
        "latency": _strat(rows, "latency", n_boot=n_boot, seed=seed),
        "parsed": _rate(sum(1 for r in ok if r["parsed"]), len(ok)),
        "prob_valid": _rate(sum(1 for r in ok if r["prob_valid"]), len(ok)),
        "engine_path": dict(sorted(paths.items())),
        "latency_s": {
            "mean": _mean(lat),
            "median": float(statistics.median(lat)) if lat else math.nan,
            "max": lat[-1] if lat else math.nan,
        },
        "traps": {
            "n_cases": len(trap_cases),
            "overdiagnosis": _rate(len(fired_rows), len(trap_ok)),
            "flags_fired": sum(len(str(r["trap_flags_hit"]).split(";")) for r in fired_rows),
        },
    }
    return out


HEADLINE_METHOD: Final = "percentile bootstrap, stratified by specialty"
GROUP_METHOD: Final = "percentile bootstrap"
HEADLINE_METRICS: Final = ("composite", "composite_errors_as_zero", *COMPONENTS)
RATE_METRICS: Final = ("parsed", "prob_valid")


def metrics(
    engine: str,
    profile: str,
    rows: Sequence[Mapping[str, Any]],
    head: Mapping[str, Any],
    by_specialty: Mapping[str, Any] | None = None,
) -> list[Metric]:
    """The typed metrics (``stats.metrics``) of one engine under one profile.

    The same numbers as ``head`` (``headline`` of ``rows``) and, for the headline profile,
    ``by_specialty``: composite (over completed answers and with errors scored 0) and its
    components with their bootstrap intervals, unit the case; parse success, valid differentials
    and the trap-flag rate (answers on trap cases asserting a fabricated pathology, the primary
    safety outcome) with Wilson intervals, unit the answer. n_total / n_ok / n_error count
    requests; a rate's errored requests are counted beside its denominator, never in it.
    """
    groups = {"engine": engine, "profile": profile}
    n = {"n_total": head["n_total"], "n_ok": head["n_ok"], "n_error": head["n_error"]}
    out = [
        metric(
            name,
            groups,
            head[name]["mean"],
            head[name]["lo"],
            head[name]["hi"],
            method=HEADLINE_METHOD,
            unit="case",
            note=interval_note(
                head[name], head["n_cases" if name.endswith("_as_zero") else "n_cases_ok"]
            ),
            **n,
        )
        for name in HEADLINE_METRICS
    ]
    for name in RATE_METRICS:
        r = head[name]
        out.append(rate_metric(name, groups, r["k"], r["n"], n_error=n["n_error"]))
    traps = [r for r in rows if r["is_trap"]]
    od = head["traps"]["overdiagnosis"]
    out.append(
        rate_metric(
            "trap_flag_rate",
            groups,
            od["k"],
            od["n"],
            n_error=sum(1 for r in traps if r["status"] != "ok"),
        )
    )
    for g, x in sorted((by_specialty or {}).items()):
        c = x["composite"]
        out.append(
            metric(
                "composite_by_specialty",
                groups | {"specialty": g},
                c["mean"],
                c["lo"],
                c["hi"],
                method=GROUP_METHOD,
                n_total=x["n_total"],
                n_ok=x["n_ok"],
                n_error=x["n_error"],
                unit="case",
                note=interval_note(c, x["n_cases_ok"]),
            )
        )
    return out


def interval_note(ci: Mapping[str, Any], n_cases: int) -> str:
    """Why ``ci`` (``{mean, lo, hi}``) has no interval: fewer cases than
    ``stats.MIN_N_BOOTSTRAP`` (the bootstrap functions then return none), '' otherwise."""
    lo = ci.get("lo")
    if lo is None or not math.isfinite(float(lo)):
        return stats.bootstrap_note(int(n_cases), "case") or "no interval: not estimable"
    return ""


def by_group(
    rows: Sequence[Mapping[str, Any]], key: str, *, n_boot: int, seed: int
) -> dict[str, Any]:
    """Per-group (specialty or label) counts, composites and components with intervals.

    ``structural`` and ``clinical`` stay the plain per-case means they always were; the
    ``*_ci`` keys add each component's interval (``component_intervals``) beside them.
    """
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[str(r[key])].append(r)
    vals, _, items = _case_means(rows, "composite", errors_as_zero=False)
    glabels = [str(r[key]) for r in rows if r["status"] == "ok"]
    ci = stats.bootstrap_by_group(vals, glabels, n_boot=n_boot, seed=seed, level=LEVEL, items=items)
    zvals, _, zitems = _case_means(rows, "composite", errors_as_zero=True)
    zlabels = [str(r[key]) for r in rows]
    zci = stats.bootstrap_by_group(
        zvals, zlabels, n_boot=n_boot, seed=seed, level=LEVEL, items=zitems
    )
    comp = component_intervals(rows, key, n_boot=n_boot, seed=component_seed(seed))
    out: dict[str, Any] = {}
    for g in sorted(groups):
        grows = groups[g]
        ok = [r for r in grows if r["status"] == "ok"]
        nan3 = (math.nan, math.nan, math.nan)
        out[g] = counts(grows) | {
            "composite": _ci(ci.get(g, nan3)),
            "composite_errors_as_zero": _ci(zci.get(g, nan3)),
            "structural": _mean(_per_case(ok, "structural")),
            "clinical": _mean(_per_case(ok, "clinical")),
        }
        for name in COMPONENTS:
            out[g][f"{name}_ci"] = comp.get(g, {}).get(name, _ci(nan3))
    return out


def component_seed(seed: int) -> int:
    """The component draws' seed, derived from the table's composite seed.

    A separate stream: adding the component intervals left every composite interval as it was,
    and the components never perturb the composite's draws.
    """
    return derive_seed(seed, "components") % (2**32)


def _case_matrix(
    rows: Sequence[Mapping[str, Any]], key: str
) -> tuple[npt.NDArray[np.float64], list[str], npt.NDArray[np.intp]]:
    """Completed cases' component means, the group names, and each case's group code.

    One row per case in case-id order, columns ``COMPONENTS``; repeats are averaged within the
    case first (the case is the unit resampled). Built column-wise with numpy (a 100k-case
    table is one pass over the rows, not a Python loop per case).
    """
    ok = [r for r in rows if r["status"] == "ok"]
    uids, ucodes = np.unique(np.array([str(r["case_uid"]) for r in ok]), return_inverse=True)
    names, gcodes = np.unique(np.array([str(r[key]) for r in ok]), return_inverse=True)
    n = len(uids)
    reps = np.bincount(ucodes, minlength=n)
    m = np.empty((n, len(COMPONENTS)), dtype=np.float64)
    for j, name in enumerate(COMPONENTS):
        x = np.array([float(r[name]) for r in ok], dtype=np.float64)
        if not np.isfinite(x).all():
            raise ValueError(f"non-finite {name} score in the {key} table")
        m[:, j] = np.bincount(ucodes, weights=x, minlength=n) / reps
    unit_group = np.zeros(n, dtype=np.intp)
    unit_group[ucodes] = gcodes
    bad = np.flatnonzero(unit_group[ucodes] != gcodes)
    if bad.size:
        raise ValueError(f"case {uids[ucodes[bad[0]]]!r} appears under more than one {key}")
    return m, [str(g) for g in names], unit_group


def _resampled_means(
    rng: np.random.Generator, u: npt.NDArray[np.float64], n_boot: int
) -> npt.NDArray[np.float64]:
    """Column means of ``u`` (row 0) and of ``n_boot`` resamples of its rows (rows 1..).

    Every resample draws the case rows once, so all columns come from the same cases. Two
    exact schemes with the same distribution, chosen by the data alone: with few distinct case
    rows (e.g. the reference engine's perfect reports) draw each resample's multiplicities from
    ``Multinomial(n, freq/n)`` (O(distinct) per resample); otherwise draw row indices in chunks.
    Row 0 goes through the same arithmetic as the resamples, so a constant column gives
    bit-identical rows and an interval equal to its point estimate. numpy reductions only (no
    BLAS), so the bytes do not depend on the BLAS build or its threads.
    """
    n, k = u.shape
    code = np.zeros(n, dtype=np.int64)
    levels: list[npt.NDArray[np.float64]] = []
    codes: list[npt.NDArray[np.intp]] = []
    for j in range(k):  # one integer per distinct row, from per-column codes (cheap 1-d sorts)
        lv, col = np.unique(u[:, j], return_inverse=True)
        levels.append(lv)
        codes.append(col)
        code = np.unique(code * lv.size + col, return_inverse=True)[1]  # stays < n
    _, first, freq = np.unique(code, return_index=True, return_counts=True)
    out = np.empty((n_boot + 1, k), dtype=np.float64)
    if first.size * _MULTINOMIAL_FACTOR <= n:
        draws = rng.multinomial(n, freq / n, size=n_boot)
        mult = np.vstack([freq[np.newaxis, :], draws])
        for j in range(k):
            # Integer multiplicities of each value of column j (distinct rows sharing it
            # pooled), so a constant column sums to exactly n·x in every row.
            at = codes[j][first]
            order = np.argsort(at, kind="stable")
            starts = np.flatnonzero(np.r_[True, np.diff(at[order]) != 0])
            per_value = np.add.reduceat(mult[:, order], starts, axis=1).astype(np.float64)
            out[:, j] = (per_value * levels[j][at[order][starts]]).sum(axis=1)
        out /= n
        return out
    cols = [np.ascontiguousarray(u[:, j]) for j in range(k)]
    for j in range(k):
        out[0, j] = cols[j][np.newaxis, :].sum(axis=1)[0]
    step = max(1, _MAX_GATHER // n)
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int32)
        for j in range(k):
            out[1 + start : 1 + stop, j] = cols[j][idx].sum(axis=1)
    out /= n
    return out


def component_intervals(
    rows: Sequence[Mapping[str, Any]], key: str, *, n_boot: int, seed: int
) -> dict[str, dict[str, dict[str, float]]]:
    """group → component → {mean, lo, hi}: percentile bootstrap over the group's completed cases.

    One resample of cases per group serves structural, clinical and latency, so the three
    intervals describe the same bootstrap world (and cost one draw, not three). A group of
    fewer than ``MIN_N_BOOTSTRAP`` cases gets its means and nan bounds (issue #30). Each group has
    its own generator, ``PCG64(derive_seed(seed, group))``, so a group's interval depends only
    on its own cases and the table seed, not on which other groups are present.
    """
    m, names, unit_group = _case_matrix(rows, key)
    order = np.argsort(unit_group, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(unit_group, minlength=len(names)))])
    tail = (1.0 - LEVEL) / 2.0
    out: dict[str, dict[str, dict[str, float]]] = {}
    for h, g in enumerate(names):
        rng = np.random.Generator(np.random.PCG64(derive_seed(seed, g) % (2**32)))
        est = _resampled_means(rng, m[order[bounds[h] : bounds[h + 1]]], n_boot)
        lo, hi = np.quantile(est[1:], [tail, 1.0 - tail], axis=0)
        if (
            bounds[h + 1] - bounds[h] < stats.MIN_N_BOOTSTRAP
        ):  # issue #30: no interval from 1-9 cases
            lo = hi = np.full(len(COMPONENTS), math.nan)
        out[g] = {
            name: {"mean": float(est[0, j]), "lo": float(lo[j]), "hi": float(hi[j])}
            for j, name in enumerate(COMPONENTS)
        }
    return out


def _per_case(rows: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """Per-case means of ``key`` (replicates averaged), in case-id order."""
    acc: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        acc[str(r["case_uid"])].append(_f(r, key))
    return [_mean(acc[k]) for k in sorted(acc)]


def case_means(rows: Sequence[Mapping[str, Any]], key: str = "composite") -> dict[str, float]:
    """case_uid → mean of ``key`` over its completed repeats."""
    acc: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            acc[str(r["case_uid"])].append(_f(r, key))
    return {k: _mean(v) for k, v in sorted(acc.items())}


def case_scores(
    rows: Sequence[Mapping[str, Any]], key: str = "composite"
) -> dict[str, list[float]]:
    """case_uid → ``key`` of each completed repeat (the replicates the MDE's variances need)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            acc[str(r["case_uid"])].append(_f(r, key))
    return dict(sorted(acc.items()))


def repeats_table(rows: Sequence[Mapping[str, Any]], n_runs: int) -> dict[str, Any]:
    """Spread of the composite over repeats of the same case (only meaningful for n_runs > 1)."""
    by_case: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        by_case[str(r["case_uid"])].append(r)
    sds: list[float] = []
    per_case = []
    trap_consistent = trap_always = trap_mixed = 0
    for uid in sorted(by_case):
        crows = sorted(by_case[uid], key=lambda r: int(r["repeat"]))
        ok = [r for r in crows if r["status"] == "ok"]
        vals = [_f(r, "composite") for r in ok]
        sd = float(np.std(vals, ddof=1)) if len(vals) >= 2 else math.nan
        if len(vals) >= 2:
            sds.append(sd)
        if crows[0]["is_trap"] and ok and len(ok) == len(crows):
            fired = [bool(r["trap_flags_hit"]) for r in ok]
            if all(fired):
                trap_always += 1
            elif any(fired):
                trap_mixed += 1
            else:
                trap_consistent += 1
        per_case.append(
            {
                "case_id": crows[0]["case_id"],
                "n_total": len(crows),
                "n_ok": len(ok),
                "mean": _mean(vals),
                "sd": sd,
                "min": min(vals) if vals else math.nan,
                "max": max(vals) if vals else math.nan,
            }
        )
    per_run: list[float] = []
    for k in range(n_runs):
        run = [r for r in rows if int(r["repeat"]) == k]
        per_run.append(_mean(_per_case([r for r in run if r["status"] == "ok"], "composite")))
    finite = [x for x in per_run if math.isfinite(x)]
    run_mean, run_sd = stats.mean_sd(finite) if finite else (math.nan, math.nan)
    out: dict[str, Any] = {
        "n_runs": n_runs,
        "n_cases": len(by_case),
        "n_cases_with_spread": len(sds),
        "sd_mean": _mean(sds),
        "sd_median": float(statistics.median(sds)) if sds else math.nan,
        "sd_max": max(sds) if sds else math.nan,
        "per_run_composite": per_run,
        "per_run_mean": run_mean,
        "per_run_sd": run_sd,
        "traps": {
            "always_clean": trap_consistent,
            "always_fired": trap_always,
            "inconsistent": trap_mixed,
        },
    }
    if len(per_case) <= MAX_CASES_LISTED:
        out["per_case"] = sorted(per_case, key=lambda c: str(c["case_id"]))
    return out


def compare(
    a: str,
    b: str,
    means: Mapping[str, Mapping[str, float]],
    ids: Mapping[str, str],
    scores: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    *,
    n_boot: int = N_BOOT,
) -> dict[str, Any]:
    """Paired comparison of engines ``a`` and ``b`` on the cases both completed.

    ``means[engine][case_uid]`` is the case's mean composite; ``ids`` maps uid → case id;
    ``scores[engine][case_uid]`` the composite of each completed repeat (for ``paired``, the
    ``stats.comparisons`` record: bootstrap interval seeded per pair, MDE, n for δ; Holm is
    filled in by the caller over the whole family). Without ``scores`` the item means stand in.
    """
    common = sorted(set(means.get(a, {})) & set(means.get(b, {})), key=lambda u: ids.get(u, u))
    xa = [means[a][u] for u in common]
    xb = [means[b][u] for u in common]
    diffs = [x - y for x, y in zip(xa, xb, strict=True)]
    n_pos, n_neg, p = stats.sign_test_items(diffs) if diffs else (0, 0, 1.0)
    se = stats.paired_se(xa, xb) if diffs else math.nan
    mean_diff = _mean(diffs)
    z = stats.Z_95
    return {
        "a": a,
        "b": b,
        "n_cases": len(common),
        "mean_a": _mean(xa),
        "mean_b": _mean(xb),
        "mean_diff": mean_diff,
        "paired_se": se,
        "ci": {"lo": mean_diff - z * se, "hi": mean_diff + z * se},
        "a_better": n_pos,
        "b_better": n_neg,
        "ties": len(diffs) - n_pos - n_neg,
        "p": p,
        "paired": paired_comparison(
            f"{a} vs {b}",
            "engines",
            a,
            b,
            scores.get(a, {}) if scores is not None else _one(means.get(a, {})),
            scores.get(b, {}) if scores is not None else _one(means.get(b, {})),
            COMPARISON_PLAN,
            unit="case",
            interval="bootstrap",
            seed=boot_seed(a, b, "compare"),
            n_boot=n_boot,
        ),
    }


def _one(means: Mapping[str, float]) -> dict[str, list[float]]:
    return {k: [v] for k, v in means.items()}


def review_sample(
    population: Mapping[str, str], n: int = REVIEW_N, seed: int = REVIEW_SEED
) -> dict[str, Any]:
    """Stratified random sample of exactly ``min(n, len(population))`` cases.

    ``population`` maps case id → specialty. Allocation: largest remainder (Hamilton) of
    ``n`` over the specialty sizes, strata in sorted order, so the counts sum to ``n`` exactly
    and no stratum is asked for more cases than it has (the published sampler, rounding each
    stratum on its own, could return at most 200 of 201 with 8 strata). Within each stratum,
    ``numpy.random.Generator(PCG64(seed)).choice`` without replacement over the sorted ids, strata
    in sorted order — the same seed and population always give the same sample.
    """
    strata: dict[str, list[str]] = defaultdict(list)
    for cid, spec in population.items():
        strata[spec].append(cid)
    names = sorted(strata)
    total = len(population)
    k = min(n, total)
    alloc = largest_remainder([len(strata[s]) for s in names], k) if total else []
    rng = np.random.Generator(np.random.PCG64(seed))
    chosen: list[str] = []
    for name, m in zip(names, alloc, strict=True):
        members = sorted(strata[name])
        if m:
            idx = rng.choice(len(members), size=m, replace=False)
            chosen.extend(members[int(i)] for i in idx)
    return {
        "n": len(chosen),
        "n_requested": n,
        "seed": seed,
        "population": total,
        "method": "stratified by specialty, largest-remainder allocation, "
        "numpy PCG64 choice without replacement within stratum",
        "allocation": {s: m for s, m in zip(names, alloc, strict=True)},
        "case_ids": sorted(chosen),
    }
