"""The comparison record (stats.comparisons): every number from the stats functions it must come
from, Holm within the declared family, the Bayesian view only for 0/1 scores on < 100 items.

Reference vectors (shared/reference/stats.md): A=[1,1,0,1,0,1,1,0,1,1], B=[1,0,0,1,0,0,1,0,1,0]
→ diff 0.3, SE_paired 0.1527525; Holm [0.01, 0.04, 0.03, 0.005] → [0.03, 0.06, 0.06, 0.02].
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sealedeval import stats
from sealedeval.stats.comparisons import (
    SMALL_N,
    ComparisonPlan,
    adjust_families,
    comparison_seed,
    from_item_means,
    paired_comparison,
)

scipy_stats = pytest.importorskip("scipy.stats")

A = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
B = [1, 0, 0, 1, 0, 0, 1, 0, 1, 0]
PLAN = ComparisonPlan(families={"engines": "every pair of engines"})


def _scores(xs: list[int]) -> dict[str, list[float]]:
    return {f"i{j:02d}": [float(x)] for j, x in enumerate(xs)}


def test_record_of_the_reference_vector() -> None:
    c = paired_comparison("a vs b", "engines", "a", "b", _scores(A), _scores(B), PLAN)
    json.dumps(c, allow_nan=False)  # plain JSON, no NaN
    assert (c["n"], c["a_better"], c["b_better"], c["ties"]) == (10, 3, 0, 7)
    assert c["diff"] == pytest.approx(0.3)
    assert c["lo"] == pytest.approx(0.3 - stats.Z_95 * 0.1527525, abs=1e-6)
    assert c["p"] == stats.sign_test(3, 0) == 0.25
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    assert c["mde"] == pytest.approx(z * 0.1527525, rel=1e-6)  # 0.428 > 0.3
    assert c["detectable"] is False
    var_d = float(np.var(np.subtract(A, B), ddof=1))
    assert c["n_needed_for_delta"] == math.ceil(z * z * var_d / 0.05**2)
    # exact sign-test power for δ = 0.05 at 3 discordant of 10: split 0.5 + 0.05/0.6
    assert c["sign_test_power_at_delta"] == 0.0  # three pairs can never reach p <= 0.05
    bayes = c["bayes"]
    assert bayes is not None and bayes["a_rate"] is not None and bayes["b_rate"] is not None
    assert bayes["a_rate"]["k"] == 7 and bayes["b_rate"]["k"] == 4
    assert bayes["a_rate"]["beta"] == pytest.approx(
        list(scipy_stats.beta.ppf([0.025, 0.975], 8, 4))
    )
    assert bayes["a_rate"]["wilson"] == pytest.approx(list(stats.wilson(7, 10)))
    assert bayes["p_a_better"] == pytest.approx(scipy_stats.beta.sf(0.5, 4, 1))


def test_detectable_when_the_mde_is_below_the_difference() -> None:
    a = [1] * 150 + [0] * 50
    b = [1] * 100 + [0] * 100
    c = paired_comparison("x", "engines", "a", "b", _scores(a), _scores(b), PLAN)
    assert c["diff"] == pytest.approx(0.25)
    assert c["mde"] is not None and c["mde"] < 0.25 and c["detectable"] is True
    assert c["bayes"] is None  # 200 items >= SMALL_N: no second view
    assert SMALL_N == 100


def test_holm_within_each_family_only() -> None:
    plan = ComparisonPlan(families={"f": "one family", "g": "another"})
    rng = np.random.default_rng(4)
    recs = []
    for j in range(4):
        a = _scores(list(rng.integers(0, 2, 30)))
        b = _scores(list(rng.integers(0, 2, 30)))
        recs.append(paired_comparison(f"c{j}", "f", "a", "b", a, b, plan))
    lone = paired_comparison("solo", "g", "a", "b", _scores(A), _scores(B), plan)
    out = adjust_families([*recs, lone])
    ps = [r["p"] for r in recs]
    # Holm computed here independently: step-down over the sorted p-values
    order = sorted(range(4), key=lambda i: ps[i])
    want = [0.0] * 4
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (4 - rank) * ps[i]))
        want[i] = running
    assert [r["p_adj"] for r in out[:4]] == pytest.approx(want)
    assert all(r["family_size"] == 4 for r in out[:4])
    assert out[4]["p_adj"] == lone["p"] and out[4]["family_size"] == 1
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_degenerate_records() -> None:
    xs = [1, 1, 0, 1, 0, 1, 1]
    tied = paired_comparison("t", "engines", "a", "b", _scores(xs), _scores(xs), PLAN)
    assert tied["diff"] == 0.0 and tied["p"] == 1.0
    assert tied["mde"] is None and tied["n_needed_for_delta"] is None
    assert tied["detectable"] is None and "tied" in tied["mde_note"]
    assert tied["bayes"] is not None and tied["bayes"]["p_a_better"] == 0.5
    few = paired_comparison("f", "engines", "a", "b", _scores([1, 0, 1]), _scores([1, 0, 1]), PLAN)
    assert few["mde"] is None and few["detectable"] is False  # 3 items: nothing detectable
    none = paired_comparison("n", "engines", "a", "b", {"x": [1.0]}, {"y": [1.0]}, PLAN)
    assert none["n"] == 0 and none["diff"] is None and none["p"] == 1.0 and none["bayes"] is None
    assert none["mde_note"] == "no common items" and none["detectable"] is False
    one = paired_comparison("o", "engines", "a", "b", {"x": [1.0]}, {"x": [0.0]}, PLAN)
    assert one["diff"] == 1.0 and one["lo"] is None and one["mde"] is None


def test_bootstrap_interval_for_a_composite_and_replicates() -> None:
    rng = np.random.default_rng(2)
    a = {f"c{i:02d}": [float(v)] for i, v in enumerate(rng.uniform(0.4, 1.0, 40))}
    b = {f"c{i:02d}": [float(v)] for i, v in enumerate(rng.uniform(0.3, 0.9, 40))}
    c = paired_comparison("bp", "engines", "a", "b", a, b, PLAN, interval="bootstrap", seed=7)
    xa = [a[i][0] for i in sorted(a)]  # the record takes the items in sorted order
    xb = [b[i][0] for i in sorted(b)]
    want = stats.paired_bootstrap(xa, xb, seed=7)
    assert (c["diff"], c["lo"], c["hi"]) == pytest.approx(want)
    assert c["bayes"] is None and "bootstrap" in c["ci_method"]
    with pytest.raises(ValueError, match="seed"):
        paired_comparison("bp", "engines", "a", "b", a, b, PLAN, interval="bootstrap")
    # replicates: K taken from the data, σ² identified, the MDE from the components
    ra = {i: [1.0, 0.0, 1.0] for i in range(20)}
    rb = {i: [float(i % 2), 0.0, 0.0] for i in range(20)}
    r = paired_comparison("rep", "engines", "a", "b", ra, rb, PLAN)
    v = r["variance"]
    assert (v["k_a"], v["k_b"], v["sigma2_identified"]) == (3, 3, True)
    vc = stats.variance_components(ra, rb)
    assert r["mde"] == pytest.approx(
        stats.mde_paired(vc.omega2, vc.sigma2_a, vc.sigma2_b, 3, 3, 20)
    )
    assert r["bayes"] is not None and r["bayes"]["a_rate"] is None  # no single-trial rate


def test_plan_validation_and_undeclared_family() -> None:
    with pytest.raises(ValueError, match="not declared"):
        paired_comparison("x", "branches", "a", "b", _scores(A), _scores(B), PLAN)
    with pytest.raises(ValueError, match="delta"):
        ComparisonPlan(delta=0.0)
    with pytest.raises(ValueError, match="correction"):
        ComparisonPlan(correction="bonferroni")
    assert PLAN.describe()["delta"] == 0.05
    ma, mb = from_item_means({"x": 0.5}, {"x": 1.0})
    assert ma == {"x": [0.5]} and mb == {"x": [1.0]}


def test_too_few_items_for_the_sign_test_to_reject_is_never_detectable() -> None:
    """Five items, A right on all and B on none: zero variance makes the plug-in MDE 0, but the
    exact sign test's best case 5 : 0 gives p = 0.0625 > 0.05 — nothing was detectable."""
    c = paired_comparison("five", "engines", "a", "b", _scores([1] * 5), _scores([0] * 5), PLAN)
    assert c["p"] == stats.sign_test(5, 0) == 0.0625
    assert c["detectable"] is False and "cannot reach p <= 0.05" in c["mde_note"]
    six = paired_comparison("six", "engines", "a", "b", _scores([1] * 6), _scores([0] * 6), PLAN)
    assert six["p"] == 0.03125 and six["mde"] == 0.0 and six["detectable"] is True
    assert stats.sign_test_power(5, 1.0) == 0.0 < stats.sign_test_power(6, 1.0)


# --- issue #30: the test chosen by score type and named in the plan; roles and BH ------------


def test_binary_family_gets_exact_mcnemar_with_midp_beside() -> None:
    plan = ComparisonPlan(families={"engines": "pairs"}, tests={"engines": "exact_mcnemar"})
    c = paired_comparison("a vs b", "engines", "a", "b", _scores(A), _scores(B), plan)
    assert c["test"] == "exact_mcnemar" and c["permutation"] is None
    b_, c_ = c["a_better"], c["b_better"]
    assert c["p"] == scipy_stats.binomtest(b_, b_ + c_).pvalue
    assert c["p_midp"] == pytest.approx(
        scipy_stats.binomtest(b_, b_ + c_).pvalue - scipy_stats.binom.pmf(c_, b_ + c_, 0.5)
    )
    assert plan.describe()["tests"] == {"engines": "exact_mcnemar"}


def test_non_binary_family_gets_the_paired_permutation_test() -> None:
    plan = ComparisonPlan(families={"engines": "pairs"}, tests={"engines": "paired_permutation"})
    rng = np.random.default_rng(2)
    xa = rng.random(9).round(2)
    xb = (xa - 0.2 + rng.normal(0, 0.1, 9)).clip(0, 1).round(2)
    # two replicates per item whose mean is the item score: the test runs on item means
    a = {f"i{j}": [float(x) - 0.05, float(x) + 0.05] for j, x in enumerate(xa)}
    b = {f"i{j}": [float(x)] for j, x in enumerate(xb)}
    c = paired_comparison("a vs b", "engines", "a", "b", a, b, plan)
    ref = scipy_stats.permutation_test(
        (xa, xb),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert c["test"] == "paired_permutation" and c["p_midp"] is None
    assert c["p"] == pytest.approx(ref.pvalue, abs=1e-12)
    assert c["permutation"] == {
        "exact": True,
        "n_nonzero": 9,
        "n_permutations": 512,
        "seed": None,
        "exact_max_n": 20,
    }


def test_monte_carlo_permutation_records_its_seed() -> None:
    plan = ComparisonPlan(families={"engines": "pairs"}, tests={"engines": "paired_permutation"})
    rng = np.random.default_rng(5)
    a = {f"i{j}": [float(x)] for j, x in enumerate(rng.random(40))}
    b = {f"i{j}": [float(x)] for j, x in enumerate(rng.random(40))}
    c1 = paired_comparison("a vs b", "engines", "a", "b", a, b, plan)
    c2 = paired_comparison("a vs b", "engines", "a", "b", a, b, plan)
    perm = c1["permutation"]
    assert perm is not None and perm["exact"] is False and perm["n_permutations"] == 10_000
    assert perm["seed"] == comparison_seed(plan.permutation_seed, "a vs b")
    assert c1 == c2


def test_undeclared_test_is_chosen_by_score_type() -> None:
    plan = ComparisonPlan(families={"engines": "pairs"})
    binary = paired_comparison("x", "engines", "a", "b", _scores(A), _scores(B), plan)
    graded = paired_comparison(
        "y", "engines", "a", "b", {"i": [0.5], "j": [0.2]}, {"i": [0.1], "j": [0.2]}, plan
    )
    assert binary["test"] == "exact_mcnemar" and graded["test"] == "paired_permutation"
    assert plan.describe()["tests"] == {"engines": "by_score_type"}


def test_the_plan_governs_even_when_scores_are_not_binary() -> None:
    plan = ComparisonPlan(families={"engines": "pairs"}, tests={"engines": "exact_mcnemar"})
    c = paired_comparison(
        "x", "engines", "a", "b", {"i": [0.5], "j": [0.75]}, {"i": [0.0], "j": [0.5]}, plan
    )
    assert c["test"] == "exact_mcnemar" and c["p"] == stats.sign_test(2, 0)
    with pytest.raises(ValueError, match="does not declare"):
        ComparisonPlan(families={"engines": "pairs"}, tests={"other": "exact_mcnemar"})
    with pytest.raises(ValueError, match="test must be one of"):
        ComparisonPlan(families={"engines": "pairs"}, tests={"engines": "t-test"})


def test_exploratory_families_get_benjamini_hochberg_confirmatory_holm() -> None:
    plan = ComparisonPlan(families={"engines": "pairs", "exploratory": "added after the seal"})
    rng = np.random.default_rng(8)
    recs = []
    for j in range(5):
        fam = "engines" if j < 2 else "exploratory"
        a = _scores([1] * (20 + 3 * j) + [0] * (20 - 3 * j))
        b = _scores(list(rng.integers(0, 2, 40)))
        recs.append(paired_comparison(f"c{j}", fam, "a", "b", a, b, plan))
    adjust_families(recs)
    conf, expl = recs[:2], recs[2:]
    assert [r["role"] for r in recs] == ["confirmatory"] * 2 + ["exploratory"] * 3
    assert [r["p_adj"] for r in conf] == pytest.approx(stats.holm([r["p"] for r in conf]))
    ref = scipy_stats.false_discovery_control([r["p"] for r in expl], method="bh")
    assert [r["p_adj"] for r in expl] == pytest.approx(list(ref))
    assert {r["correction"] for r in conf} == {"holm"}
    assert {r["correction"] for r in expl} == {"benjamini-hochberg"}
    assert plan.describe()["roles"] == {"engines": "confirmatory", "exploratory": "exploratory"}


def test_small_n_bootstrap_comparison_has_no_interval_and_says_why() -> None:
    a = {"i1": [0.9], "i2": [0.4], "i3": [0.7]}
    b = {"i1": [0.5], "i2": [0.4], "i3": [0.1]}
    c = paired_comparison("x", "engines", "a", "b", a, b, PLAN, interval="bootstrap", seed=1)
    assert c["diff"] == pytest.approx(1.0 / 3) and c["lo"] is None and c["hi"] is None
    assert "3 items, below the 10" in c["ci_note"]
