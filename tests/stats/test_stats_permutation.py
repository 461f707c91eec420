"""Paired permutation (sign-flip) test over items (Kübler et al., ICLR 2026).

References, independent of the implementation: SciPy's ``permutation_test`` with
``permutation_type='samples'`` (every within-pair swap, exact for small n) and a brute force
that loops over every sign vector in plain Python with exact fractions.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import PermutationTest, paired_permutation
from sealedeval.stats._permutation import EXACT_MAX_N, N_DRAWS

SETTINGS = settings(database=None, deadline=None, max_examples=60)

try:
    from scipy.stats import permutation_test
except ImportError:  # pragma: no cover - depends on the environment
    permutation_test = None

needs_scipy = pytest.mark.skipif(permutation_test is None, reason="scipy not installed")


def brute(a: list[Fraction], b: list[Fraction]) -> Fraction:
    """Exact p over all 2^n sign flips (zeros included), in rational arithmetic."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    obs = abs(sum(d, Fraction(0)))
    flips = list(itertools.product((1, -1), repeat=len(d)))
    hits = 0
    for s in flips:
        t = sum((si * di for si, di in zip(s, d, strict=True)), Fraction(0))
        hits += abs(t) >= obs
    return Fraction(hits, len(flips))


grades = st.lists(st.integers(0, 10), min_size=1, max_size=9)


@given(st.data())
@SETTINGS
def test_matches_brute_force(data: st.DataObject) -> None:
    ga = data.draw(grades)
    gb = data.draw(st.lists(st.integers(0, 10), min_size=len(ga), max_size=len(ga)))
    # judge grades on a 0..10 scale averaged over 3 repeats: thirds, which floats cannot hold
    a = [Fraction(x, 3) for x in ga]
    b = [Fraction(x, 3) for x in gb]
    r = paired_permutation([float(x) for x in a], [float(x) for x in b])
    assert r.exact
    assert r.p == float(brute(a, b))


@needs_scipy
@given(st.data())
@SETTINGS
def test_matches_scipy_permutation_test(data: st.DataObject) -> None:
    n = data.draw(st.integers(2, 10))
    a = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))).round(3)
    b = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))).round(3)
    ref = permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
        alternative="two-sided",
    )
    r = paired_permutation(a, b)
    assert r.p == pytest.approx(ref.pvalue, abs=1e-12)
    assert r.difference == pytest.approx(float(np.mean(a - b)))


def test_known_vector() -> None:
    # d = [0.5, 0.25, 0, −0.25, 1, 0.75, 0, 0.5]: 6 non-zero, |T| = 2.75; only the sign
    # vectors flipping {0.25} or {−0.25} or nothing keep |T| >= 2.75, doubled by symmetry:
    # brute force gives 6/64.
    d = [0.5, 0.25, 0.0, -0.25, 1.0, 0.75, 0.0, 0.5]
    r = paired_permutation(d, [0.0] * len(d))
    assert r.p == float(brute([Fraction(x) for x in d], [Fraction(0)] * len(d)))
    assert r.p == 6 / 64
    assert (r.n, r.n_nonzero, r.n_permutations, r.seed) == (8, 6, 64, None)


def test_degenerate_no_pairs() -> None:
    r = paired_permutation([], [])
    assert r.p == 1.0 and r.exact and r.n == 0 and r.difference != r.difference


def test_degenerate_all_ties() -> None:
    r = paired_permutation([0.5, 1.0, 0.0], [0.5, 1.0, 0.0])
    assert (r.p, r.difference, r.n_nonzero, r.n_permutations) == (1.0, 0.0, 0, 1)


def test_degenerate_one_pair() -> None:
    r = paired_permutation([1.0], [0.2])
    assert r.p == 1.0  # both flips are as extreme: one item never rejects
    assert r.n_permutations == 2


def test_monte_carlo_records_seed_and_draws_and_is_reproducible() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(EXACT_MAX_N + 5)
    b = a - 0.1 + rng.normal(0, 0.2, a.size)
    r1 = paired_permutation(a, b, seed=123)
    r2 = paired_permutation(a, b, seed=123)
    assert r1 == r2
    assert isinstance(r1, PermutationTest)
    assert not r1.exact and r1.seed == 123 and r1.n_permutations == N_DRAWS
    assert r1.p * (1 + N_DRAWS) == pytest.approx(round(r1.p * (1 + N_DRAWS)))
    assert r1.p > 0  # Phipson & Smyth: never zero


def test_monte_carlo_agrees_with_exact() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(16).round(2)
    b = (a - 0.15 + rng.normal(0, 0.3, 16)).round(2)
    exact = paired_permutation(a, b)
    mc = paired_permutation(a, b, exact_max_n=4, n_draws=40_000, seed=5)
    assert exact.exact and not mc.exact
    se = (exact.p * (1 - exact.p) / 40_000) ** 0.5
    assert abs(mc.p - exact.p) < 5 * se + 1e-4


def test_monte_carlo_needs_a_seed() -> None:
    with pytest.raises(ValueError, match="needs a seed"):
        paired_permutation([0.1] * 30, [0.0] * 30)


def test_uses_magnitudes_unlike_the_sign_test() -> None:
    # 5 small positive differences, one large negative: the sign test leans to A, the
    # permutation test sees the mean is about 0.
    a = [0.1, 0.1, 0.1, 0.1, 0.1, 0.0]
    b = [0.0, 0.0, 0.0, 0.0, 0.0, 0.5]
    assert paired_permutation(a, b).p == 1.0


@pytest.mark.parametrize(
    ("kwargs", "err"),
    [({"exact_max_n": 31}, ValueError), ({"n_draws": 0}, ValueError), ({"seed": 1.5}, TypeError)],
)
def test_rejects_bad_arguments(kwargs: dict[str, object], err: type[Exception]) -> None:
    with pytest.raises(err):
        paired_permutation([0.0] * 40, [1.0] * 40, **kwargs)  # type: ignore[arg-type]
