"""The one comparison record every paired comparison emits: what it found and could have found.

Twenty tasks cannot rank four systems, and a report that prints only p-values never says so.
Each paired comparison therefore carries, beside its difference, interval and exact p: the
family-adjusted p (Holm across the family the suite's plan declares), the minimum detectable
effect at the plan's power for the n at hand (``mde_paired`` on variance components estimated
from the observed scores), the items needed for the plan's δ (``sample_size_items``), and for
0/1 scores on fewer than ``SMALL_N`` items the Beta(1, 1) view (posterior interval beside
Wilson, ``P(A > B)``). The suites' analyses build records with :func:`paired_comparison`, adjust
each family with :func:`adjust_families`, and store them in result.json; the tables only render.

Issue #30. The test is chosen per family by the score type and named in the sealed plan
(``ComparisonPlan.tests``): 0/1 scores → the exact McNemar (sign) test as the p, the mid-p
McNemar test (Fagerland et al. 2013) beside it; non-binary scores (judge grades, composites, F1)
→ the paired permutation test over items (Kübler et al., ICLR 2026), exact up to
``EXACT_MAX_N`` non-zero differences, seeded Monte Carlo beyond, seed and draws in the record.
Every record is ``confirmatory`` (a family the suite's sealed plan declares, Holm within it) or
``exploratory`` (a family named ``exploratory…``: pairs outside the sealed design; Benjamini–
Hochberg within it, as the reference recommends for exploratory grids).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Final, TypedDict

import numpy as np

from ._bayes import beta_interval, prob_a_better
from ._bootstrap import paired_bootstrap
from ._mcnemar import mcnemar_midp
from ._mde import discordant_split, mde_paired, sign_test_power, variance_components
from ._multiple import benjamini_hochberg, holm
from ._paired import paired_difference, sign_test, sign_test_items
from ._permutation import EXACT_MAX_N, N_DRAWS, paired_permutation
from ._power import sample_size_items
from ._proportion import Z_95, wilson
from ._small_n import MIN_N_BOOTSTRAP, bootstrap_note
from ._validate import K

DEFAULT_DELTA: Final = 0.05
"""The difference a comparison is planned to detect unless a suite's plan says otherwise."""
DEFAULT_ALPHA: Final = 0.05
DEFAULT_POWER: Final = 0.8
SMALL_N: Final = 100
"""Below this many items a 0/1 comparison also gets the Beta(1, 1) view (Bowyer et al. 2025)."""
CORRECTIONS: Final = ("holm",)
EXPLORATORY_CORRECTION: Final = "benjamini-hochberg"
"""The adjustment within an exploratory family: Benjamini–Hochberg (1995) controls the false
discovery rate, the reference's choice for exploratory grids (Holm stays for the few
confirmatory tests)."""
EXPLORATORY: Final = "exploratory"
"""A family whose name starts with this is exploratory (``seal.design.EXPLORATORY_FAMILY``
moves pairs with an engine added after the seal into ``exploratory: <family>``; a plan may
declare one too). Every other family of a sealed plan is confirmatory."""
CONFIRMATORY: Final = "confirmatory"
ROLES: Final = (CONFIRMATORY, EXPLORATORY)

BINARY_TEST: Final = "exact_mcnemar"
"""0/1 scores: the exact McNemar (sign) test is the p, the mid-p McNemar test beside it."""
PERMUTATION_TEST: Final = "paired_permutation"
"""Non-binary scores: the paired permutation test over items (item means)."""
BY_SCORE: Final = "by_score_type"
"""A family the plan does not name: chosen from the scores (0/1 → ``BINARY_TEST``, else
``PERMUTATION_TEST``); the record names the test used."""
TESTS: Final = {
    BINARY_TEST: "exact McNemar (two-sided sign test on the discordant items), mid-p McNemar "
    "beside it (Fagerland, Lydersen & Laake 2013)",
    PERMUTATION_TEST: "paired permutation test over items, replicates averaged per item "
    f"(Kübler et al. 2026): exact up to {EXACT_MAX_N} non-zero differences, else "
    f"{N_DRAWS} seeded Monte Carlo sign flips",
    BY_SCORE: f"by score type: 0/1 → {BINARY_TEST}, otherwise → {PERMUTATION_TEST}",
}
PERMUTATION_SEED: Final = 20260430
"""Base of each comparison's Monte Carlo seed (``comparison_seed``), pre-registered with the
plan; a comparison's own seed is recorded in its record."""

NORMAL: Final = "paired normal (Miller 2024 Eq. 7)"
BOOTSTRAP: Final = "paired percentile bootstrap"
SIGN_TEST: Final = "exact two-sided sign test on item differences (ties dropped)"
MIDP_METHOD: Final = "mid-p McNemar (Fagerland et al. 2013) on the same discordant items"
BAYES_METHOD: Final = (
    "Beta(1,1) posteriors: equal-tailed 95% interval per rate; P(A > B) from the discordant split"
)


@dataclass(frozen=True)
class ComparisonPlan:
    """What a suite pre-registers about its comparisons (declared in its sealed plan).

    Attributes:
        families: Family name → which comparisons it holds. Holm adjusts within a family;
            every pairwise branch or engine comparison of a suite is in one.
        delta: The difference each comparison is planned to detect ("n needed for δ").
        alpha: Two-sided level of each test and of the MDE.
        power: Power the MDE and the sample size are computed at.
        correction: The family-wise adjustment of confirmatory families (``holm``);
            exploratory families get ``EXPLORATORY_CORRECTION``.
        tests: Family → the test its comparisons use (a key of ``TESTS``): the plan names it
            from the family's score type; a family not listed is ``BY_SCORE``.
        permutation_seed: Base of the Monte Carlo seeds of permutation tests beyond
            ``EXACT_MAX_N`` (each comparison's seed: ``comparison_seed``).
    """

    families: Mapping[str, str] = field(default_factory=dict)
    delta: float = DEFAULT_DELTA
    alpha: float = DEFAULT_ALPHA
    power: float = DEFAULT_POWER
    correction: str = "holm"
    tests: Mapping[str, str] = field(default_factory=dict)
    permutation_seed: int = PERMUTATION_SEED

    def __post_init__(self) -> None:
        if not (math.isfinite(self.delta) and self.delta > 0):
            raise ValueError(f"delta must be a finite positive difference, got {self.delta!r}")
        for name, v in (("alpha", self.alpha), ("power", self.power)):
            if not 0.0 < v < 1.0:
                raise ValueError(f"{name} must be strictly between 0 and 1, got {v!r}")
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {CORRECTIONS}, got {self.correction!r}")
        for fam, test in self.tests.items():
            if fam not in self.families:
                raise ValueError(f"tests names family {fam!r}, which the plan does not declare")
            if test not in TESTS:
                raise ValueError(
                    f"family {fam!r}: test must be one of {sorted(TESTS)}, got {test!r}"
                )

    def test_of(self, family: str) -> str:
        """The test the plan names for ``family`` (``BY_SCORE`` when it names none)."""
        return self.tests.get(family, BY_SCORE)

    @staticmethod
    def role_of(family: str) -> str:
        """``exploratory`` for a family named ``exploratory…``, else ``confirmatory``."""
        return EXPLORATORY if str(family).startswith(EXPLORATORY) else CONFIRMATORY

    def describe(self) -> dict[str, Any]:
        """The plan as plain JSON (result.json prints what the numbers were computed with)."""
        return {
            "families": dict(sorted(self.families.items())),
            "delta": self.delta,
            "alpha": self.alpha,
            "power": self.power,
            "correction": self.correction,
            "exploratory_correction": EXPLORATORY_CORRECTION,
            "roles": {f: self.role_of(f) for f in sorted(self.families)},
            "tests": {f: self.test_of(f) for f in sorted(self.families)},
            "test_descriptions": {
                t: TESTS[t] for t in sorted({self.test_of(f) for f in self.families})
            },
            "permutation": {
                "exact_max_n": EXACT_MAX_N,
                "n_draws": N_DRAWS,
                "seed": self.permutation_seed,
            },
            "small_n_bayes_below": SMALL_N,
            "bootstrap_min_n": MIN_N_BOOTSTRAP,
        }


def comparison_seed(base: int, name: str) -> int:
    """A comparison's Monte Carlo seed: the first 4 bytes of ``sha256(base, name)`` (stable
    across Python versions and runs; distinct per comparison name)."""
    digest = hashlib.sha256(f"{base}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class Rate(TypedDict):
    k: int
    n: int
    rate: float | None
    wilson: list[float | None]
    beta: list[float | None]


class BayesView(TypedDict):
    """The labelled second view for 0/1 scores on fewer than ``SMALL_N`` items."""

    method: str
    a_rate: Rate | None
    b_rate: Rate | None
    p_a_better: float


class Comparison(TypedDict):
    """One paired comparison. None wherever a number is not estimable (never a spurious 0).

    ``detectable`` is ``mde <= |diff|``; False means the comparison could not have detected a
    difference of the size observed (at the plan's power) — or, whatever the MDE, that on so few
    items the exact sign test cannot reject at all (``mde_note`` says so) —, None that the MDE
    is not estimable (``mde_note`` says why). ``variance`` holds the estimated components the
    MDE used.
    """

    name: str
    family: str
    a: str
    b: str
    n: int
    unit: str
    diff: float | None
    lo: float | None
    hi: float | None
    ci_method: str
    ci_note: str
    a_better: int
    b_better: int
    ties: int
    p: float
    p_method: str
    test: str
    p_midp: float | None
    permutation: dict[str, Any] | None
    role: str
    p_adj: float | None
    family_size: int | None
    correction: str
    delta: float
    alpha: float
    power: float
    mde: float | None
    mde_note: str
    n_needed_for_delta: int | None
    sign_test_power_at_delta: float | None
    detectable: bool | None
    variance: dict[str, Any]
    bayes: BayesView | None


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _rate(k: int, n: int) -> Rate:
    w = wilson(k, n)
    b = beta_interval(k, n)
    return Rate(
        k=k,
        n=n,
        rate=k / n if n else None,
        wilson=[_num(w[0]), _num(w[1])],
        beta=[_num(b[0]), _num(b[1])],
    )


def _binary(groups: Sequence[Sequence[float]]) -> bool:
    x = np.fromiter(chain.from_iterable(groups), dtype=np.float64)
    return bool(np.all((x == 0.0) | (x == 1.0)))


def paired_comparison(
    name: str,
    family: str,
    a: str,
    b: str,
    scores_a: Mapping[K, Sequence[float]],
    scores_b: Mapping[K, Sequence[float]],
    plan: ComparisonPlan,
    *,
    unit: str = "item",
    interval: str = "normal",
    seed: int | None = None,
    n_boot: int = 2000,
) -> Comparison:
    """The record of one paired comparison of ``a`` and ``b`` on the items both scored.

    ``scores_X[item]`` holds engine X's replicate scores on the item (one value without
    replicates); items only one engine scored do not enter. Replicates are averaged within item,
    the difference of item means is the unit: its mean with a 95% interval (``interval``:
    ``normal`` — ``paired_difference`` — or ``bootstrap`` — ``paired_bootstrap`` with ``seed``),
    the test the plan names for ``family`` (``ComparisonPlan.test_of``; issue #30): for 0/1
    scores the exact sign test on the sign (= exact McNemar) with the mid-p McNemar beside it,
    for non-binary scores the paired permutation test on the item means (exact to
    ``EXACT_MAX_N`` non-zero differences, else ``N_DRAWS`` Monte Carlo flips seeded with
    ``comparison_seed(plan.permutation_seed, name)``, recorded under ``permutation``), and the
    MDE / n needed from ``variance_components``. The family-adjusted p (Holm, or
    Benjamini–Hochberg in an exploratory family) is filled in by :func:`adjust_families`.
    A bootstrap interval is not given below ``MIN_N_BOOTSTRAP`` items (``ci_note`` says why).

    Degenerate cases: no common item → every number None, ``p = 1.0``, ``detectable`` False;
    every item tied → MDE
    and n needed None (no variance to estimate them from; ``mde_note`` says so), ``detectable``
    None; fewer items than the exact sign test needs to reject at α (6 at α = 0.05) →
    ``detectable`` False with the reason in ``mde_note``.

    Raises:
        ValueError: ``family`` is not declared by ``plan``, ``interval`` unknown, a bootstrap
            without a seed, or a score that is not finite.

    The plan governs: a family it tests with ``BINARY_TEST`` keeps the sign test on the item
    means even if its scores turn out not to be 0/1 (the sign test is valid for any paired
    scores, only less powerful); the test is pre-registered, not picked after the data.
    """
    if family not in plan.families:
        raise ValueError(f"comparison {name!r}: family {family!r} is not declared by the plan")
    if interval not in ("normal", "bootstrap"):
        raise ValueError(f"interval must be 'normal' or 'bootstrap', got {interval!r}")
    common = sorted(set(scores_a) & set(scores_b), key=repr)
    ra = [list(scores_a[i]) for i in common]
    rb = [list(scores_b[i]) for i in common]
    for r in (*ra, *rb):
        if not r:
            raise ValueError(f"comparison {name!r}: an item without scores")
    xa = [sum(r) / len(r) for r in ra]
    xb = [sum(r) / len(r) for r in rb]
    diffs = [x - y for x, y in zip(xa, xb, strict=True)]
    n_pos, n_neg, p = sign_test_items(diffs)
    binary = bool(common) and _binary([*ra, *rb])
    test = plan.test_of(family)
    if test == BY_SCORE:
        test = BINARY_TEST if binary or not common else PERMUTATION_TEST
    p_midp: float | None = None
    permutation: dict[str, Any] | None = None
    if test == BINARY_TEST:
        p_method = SIGN_TEST
        p_midp = mcnemar_midp(n_pos, n_neg)
    else:
        perm = paired_permutation(
            xa, xb, seed=comparison_seed(plan.permutation_seed, name), n_draws=N_DRAWS
        )
        p = perm.p
        p_method = perm.method
        permutation = {
            "exact": perm.exact,
            "n_nonzero": perm.n_nonzero,
            "n_permutations": perm.n_permutations,
            "seed": perm.seed,
            "exact_max_n": EXACT_MAX_N,
        }
    ci_note = ""
    if interval == "bootstrap":
        if seed is None:
            raise ValueError(f"comparison {name!r}: a bootstrap interval needs a seed")
        est = paired_bootstrap(xa, xb, n_boot=n_boot, seed=seed)
        ci_method = f"{BOOTSTRAP} ({n_boot} resamples, seed {seed})"
        if common:
            ci_note = bootstrap_note(len(common), unit)
    else:
        est = paired_difference(xa, xb, Z_95)
        ci_method = NORMAL
    vc = variance_components(
        {i: r for i, r in zip(common, ra, strict=True)},
        {i: r for i, r in zip(common, rb, strict=True)},
    )
    total = vc.omega2 + vc.sigma2_a / vc.k_a + vc.sigma2_b / vc.k_b
    mde = needed = None
    note = ""
    if not common:
        note = "no common items"
    elif len(common) < 2:
        note = "one common item: no variance to estimate the MDE from"
    elif all(d == 0 for d in diffs):
        note = "every item tied: no variance to estimate the MDE from"
    elif not math.isfinite(total):
        note = "variance not estimable"
    else:
        args = (vc.omega2, vc.sigma2_a, vc.sigma2_b, vc.k_a, vc.k_b)
        mde = mde_paired(*args, vc.n, plan.alpha, plan.power)
        needed = sample_size_items(*args, plan.delta, plan.alpha, plan.power)
    diff = _num(est[0])
    detectable = None if mde is None or diff is None else bool(mde <= abs(diff))
    # The exact sign test on n items cannot reject at all when even n : 0 gives p > α (n < 6
    # at α = 0.05): then nothing was detectable, whatever a normal-approximation MDE says.
    can_reject = bool(common) and sign_test(len(common), 0) <= plan.alpha
    if common and not can_reject:
        detectable = False
        units = unit if len(common) == 1 else f"{unit}s"
        note = (
            f"{len(common)} {units}: the exact sign test cannot reach p <= {plan.alpha:g} even "
            f"if every {unit} favoured one side"
        )
    elif not common:
        detectable = False  # no common items: nothing could have been detected
    single = binary and all(len(r) == 1 for r in (*ra, *rb))
    power_at_delta = None
    if single and common and (n_pos + n_neg) > 0:
        split = discordant_split(plan.delta, (n_pos + n_neg) / len(common))
        power_at_delta = sign_test_power(n_pos + n_neg, split, plan.alpha)
    bayes: BayesView | None = None
    if binary and 0 < len(common) < SMALL_N:
        ka = int(sum(xa)) if single else None
        kb = int(sum(xb)) if single else None
        bayes = BayesView(
            method=BAYES_METHOD,
            a_rate=_rate(ka, len(common)) if ka is not None else None,
            b_rate=_rate(kb, len(common)) if kb is not None else None,
            p_a_better=prob_a_better(n_pos, n_neg),
        )
    return Comparison(
        name=name,
        family=family,
        a=a,
        b=b,
        n=len(common),
        unit=unit,
        diff=diff,
        lo=_num(est[1]),
        hi=_num(est[2]),
        ci_method=ci_method,
        ci_note=ci_note,
        a_better=n_pos,
        b_better=n_neg,
        ties=len(common) - n_pos - n_neg,
        p=p,
        p_method=p_method,
        test=test,
        p_midp=p_midp,
        permutation=permutation,
        role=plan.role_of(family),
        p_adj=None,
        family_size=None,
        correction=plan.correction,
        delta=plan.delta,
        alpha=plan.alpha,
        power=plan.power,
        mde=_num(mde),
        mde_note=note,
        n_needed_for_delta=needed,
        sign_test_power_at_delta=power_at_delta,
        detectable=detectable,
        variance={
            "omega2": _num(vc.omega2),
            "sigma2_a": _num(vc.sigma2_a),
            "sigma2_b": _num(vc.sigma2_b),
            "k_a": vc.k_a,
            "k_b": vc.k_b,
            "var_diff": _num(vc.var_diff),
            "sigma2_identified": vc.sigma2_identified,
        },
        bayes=bayes,
    )


def adjust_families(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Family-adjusted p-values within each family, in place and returned (same order).

    The family is every record with the same ``family`` in ``comparisons``: pass all of a
    suite's comparisons at once (every engine's branch comparisons, the engine comparisons), so
    the adjustment covers the whole family the plan declares, not a slice of it. A confirmatory
    family is Holm-adjusted (family-wise error rate); an exploratory one (``EXPLORATORY…``,
    e.g. pairs with an engine added after the seal) Benjamini–Hochberg-adjusted (false
    discovery rate): each record's ``role`` and ``correction`` say which.

    Degenerate cases: an empty list → empty list; a family of one → ``p_adj == p``.
    """
    by_family: dict[str, list[int]] = {}
    for i, c in enumerate(comparisons):
        by_family.setdefault(c["family"], []).append(i)
    for fam, idx in by_family.items():
        role = ComparisonPlan.role_of(fam)
        ps = [comparisons[i]["p"] for i in idx]
        adjusted = benjamini_hochberg(ps) if role == EXPLORATORY else holm(ps)
        for i, q in zip(idx, adjusted, strict=True):
            comparisons[i]["p_adj"] = q
            comparisons[i]["family_size"] = len(idx)
            comparisons[i]["role"] = role
            if role == EXPLORATORY:
                comparisons[i]["correction"] = EXPLORATORY_CORRECTION
    return list(comparisons)


def from_item_means(
    means_a: Mapping[K, float], means_b: Mapping[K, float]
) -> tuple[dict[K, list[float]], dict[K, list[float]]]:
    """Per-item means as one-score lists (a suite that keeps only item means: K taken as 1, so
    the within-item variance is folded into ω², see ``VarianceComponents``)."""
    return (
        {i: [float(v)] for i, v in means_a.items()},
        {i: [float(v)] for i, v in means_b.items()},
    )
