"""Exact sign test (= exact McNemar) and paired / unpaired standard errors.

Reference (shared/reference/stats.md):
    b = items A right & B wrong, c = A wrong & B right; p = min(1, 2·P(X ≤ min(b,c))),
    X ~ Bin(b+c, ½). Vectors: b=10, c=2 → 0.038574 (=158/4096); b=6, c=6 → 1.0.
    For item means (replicates), count items with positive vs negative mean difference, drop
    zeros: d = [0.5, 0.25, 0, −0.25, 1, 0.75, 0, 0.5] → 5 vs 1 → p = 0.21875.
    Paired SE (Miller 2024 Eq. 7): sd(d_i)/sqrt(n). A=[1,1,0,1,0,1,1,0,1,1],
    B=[1,0,0,1,0,0,1,0,1,0] → diff 0.3, SE_unpaired 0.2236068, SE_paired 0.1527525.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import paired_se, sign_test, sign_test_items, unpaired_se

SETTINGS = settings(database=None, deadline=None)

try:
    from scipy.stats import binomtest
except ImportError:  # pragma: no cover - depends on the environment
    binomtest = None

needs_scipy = pytest.mark.skipif(binomtest is None, reason="scipy not installed")

A = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
B = [1, 0, 0, 1, 0, 0, 1, 0, 1, 0]


def test_sign_test_reference_vectors() -> None:
    assert sign_test(10, 2) == 158 / 4096
    assert sign_test(10, 2) == pytest.approx(0.038574, abs=1e-6)
    assert sign_test(6, 6) == 1.0


def test_sign_test_small_cases_by_hand() -> None:
    assert sign_test(0, 0) == 1.0  # no discordant pairs
    assert sign_test(1, 0) == 1.0  # 2 · 1/2
    assert sign_test(5, 0) == 2 / 32
    assert sign_test(0, 5) == 2 / 32
    assert sign_test(4, 1) == 2 * (1 + 5) / 32


def test_sign_test_large_counts_are_accurate() -> None:
    b, c = 600, 520
    n = b + c
    tail = sum(math.comb(n, i) for i in range(c + 1))
    assert sign_test(b, c) == float(Fraction(2 * tail, 2**n))
    assert 0.0 < sign_test(b, c) < 0.05
    assert 0.0 < sign_test(50_000, 49_000) < 0.01  # exact arithmetic, no underflow/overflow


def test_sign_test_rejects_malformed_input() -> None:
    with pytest.raises(ValueError):
        sign_test(-1, 3)
    with pytest.raises(TypeError):
        sign_test(2.5, 3)  # type: ignore[arg-type]


@SETTINGS
@given(st.integers(0, 400), st.integers(0, 400))
def test_sign_test_symmetric_and_in_unit_interval(b: int, c: int) -> None:
    p = sign_test(b, c)
    assert p == sign_test(c, b)
    assert 0.0 < p <= 1.0
    if b == c:
        assert p == 1.0


@SETTINGS
@given(st.integers(0, 200), st.integers(0, 200))
def test_sign_test_decreases_as_imbalance_grows(b: int, c: int) -> None:
    assert sign_test(b + 1, c) <= sign_test(b, c) or b < c


@needs_scipy
@SETTINGS
@given(st.integers(0, 300), st.integers(0, 300))
def test_sign_test_matches_scipy_binomtest(b: int, c: int) -> None:
    assert binomtest is not None
    if b + c == 0:
        assert sign_test(b, c) == 1.0
        return
    expected = binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert sign_test(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_sign_test_items_reference_vector() -> None:
    d = [0.5, 0.25, 0, -0.25, 1, 0.75, 0, 0.5]
    n_pos, n_neg, p = sign_test_items(d)
    assert (n_pos, n_neg) == (5, 1)
    assert p == pytest.approx(0.21875, abs=1e-12)


def test_sign_test_items_degenerate_and_malformed() -> None:
    assert sign_test_items([]) == (0, 0, 1.0)
    assert sign_test_items([0.0, 0.0]) == (0, 0, 1.0)
    assert sign_test_items([-1.0, -0.5, -2.0]) == (0, 3, sign_test(0, 3))
    with pytest.raises(ValueError):
        sign_test_items([0.5, math.nan])


def test_paired_and_unpaired_se_reference_vectors() -> None:
    assert sum(A) / len(A) - sum(B) / len(B) == pytest.approx(0.3)
    assert paired_se(A, B) == pytest.approx(0.1527525, abs=1e-7)
    assert unpaired_se(A, B) == pytest.approx(0.2236068, abs=1e-7)


def test_paired_se_is_unaffected_by_shared_item_difficulty() -> None:
    """Adding the same per-item offset to both engines leaves the paired SE unchanged."""
    offsets = [0.0, 5.0, -3.0, 10.0, 2.0, 7.0, -1.0, 4.0, 0.5, 9.0]
    a2 = [x + o for x, o in zip(A, offsets, strict=True)]
    b2 = [x + o for x, o in zip(B, offsets, strict=True)]
    assert paired_se(a2, b2) == pytest.approx(paired_se(A, B), abs=1e-12)
    assert unpaired_se(a2, b2) > 5 * unpaired_se(A, B)


def test_se_degenerate_cases() -> None:
    assert math.isnan(paired_se([1.0], [0.0]))
    assert math.isnan(paired_se([], []))
    assert math.isnan(unpaired_se([1.0], [0.0, 1.0]))
    assert paired_se([1, 1, 1], [0, 0, 0]) == 0.0  # constant difference: defined, zero


def test_se_rejects_malformed_input() -> None:
    with pytest.raises(ValueError):
        paired_se([1, 0], [1, 0, 1])
    with pytest.raises(ValueError):
        paired_se([1, math.nan], [1, 0])
    with pytest.raises(ValueError):
        unpaired_se([1, math.inf], [1, 0])
