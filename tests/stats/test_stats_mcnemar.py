"""Mid-p McNemar test (Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91).

References, independent of the implementation: SciPy's ``binomtest`` (the exact conditional
p) minus ``binom.pmf`` (the point probability of the observed split) — the two building blocks
of Fagerland's Eq. 3 —, a brute force over every outcome of ``Bin(b + c, ½)`` in exact
fractions, and the paper's worked example (b = 1, c = 7: exact 0.070, mid-p 0.039).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import mcnemar_midp, sign_test

SETTINGS = settings(database=None, deadline=None)

try:
    from scipy.stats import binom, binomtest
except ImportError:  # pragma: no cover - depends on the environment
    binom = binomtest = None

needs_scipy = pytest.mark.skipif(binomtest is None, reason="scipy not installed")


def brute_midp(b: int, c: int) -> Fraction:
    """Doubled one-sided mid-p by enumerating every split x of the n discordant pairs (exact
    fractions): 2·(P(X < m) + ½·P(X = m)), m = min(b, c) (Fagerland et al. 2013, Eq. 3)."""
    n, m = b + c, min(b, c)
    total = Fraction(0)
    for x in range(n + 1):
        p = Fraction(math.comb(n, x), 2**n)
        if x < m:
            total += p
        elif x == m:
            total += p / 2
    return 2 * total


def test_paper_worked_example() -> None:
    # Fagerland et al. 2013, their example: 1 vs 7 discordant pairs.
    assert sign_test(1, 7) == pytest.approx(18 / 256)
    assert mcnemar_midp(1, 7) == 10 / 256
    assert round(mcnemar_midp(1, 7), 3) == 0.039


def test_reference_vector() -> None:
    assert mcnemar_midp(10, 2) == 92 / 4096
    assert mcnemar_midp(2, 10) == 92 / 4096


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no discordant pairs: no evidence, and mid-p is not above 1
        (1, 0, 0.5),  # n = 1: one split, half of it counted
        (6, 6, 1.0),  # b = c: the observed split is the mode
        (3, 3, 1.0),
    ],
)
def test_degenerate_cases(b: int, c: int, expected: float) -> None:
    assert mcnemar_midp(b, c) == expected


@given(st.integers(0, 60), st.integers(0, 60))
@SETTINGS
def test_matches_brute_force(b: int, c: int) -> None:
    assert mcnemar_midp(b, c) == float(brute_midp(b, c))


@given(st.integers(0, 300), st.integers(0, 300))
@SETTINGS
def test_below_exact_and_in_unit_interval(b: int, c: int) -> None:
    mid, exact = mcnemar_midp(b, c), sign_test(b, c)
    assert 0.0 < mid <= 1.0
    assert mid == mcnemar_midp(c, b)
    if b != c:
        assert mid < exact


@needs_scipy
@given(st.integers(0, 200), st.integers(0, 200))
@SETTINGS
def test_matches_scipy_building_blocks(b: int, c: int) -> None:
    n = b + c
    if n == 0:
        assert mcnemar_midp(b, c) == 1.0
        return
    exact = binomtest(b, n, 0.5).pvalue
    expected = exact - binom.pmf(min(b, c), n, 0.5) if b != c else 1.0
    assert mcnemar_midp(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_thousands_of_pairs_do_not_underflow() -> None:
    p = mcnemar_midp(1500, 1700)
    assert 0.0 < p < sign_test(1500, 1700)


@pytest.mark.parametrize("bad", [-1, 2.0, "3"])
def test_rejects_non_counts(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        mcnemar_midp(bad, 1)  # type: ignore[arg-type]
