"""Observed agreement and Cohen's kappa between two raters.

Reference (shared/reference/stats.md):
    Agreement with humans: p_o and Cohen's κ = (p_o − p_e)/(1 − p_e), p_e from each rater's
    marginals. Vector: 2×2 counts (judge pass∧human pass 40, pass∧fail 10, fail∧pass 5,
    fail∧fail 45) → p_o 0.85, p_e 0.50, κ 0.70.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import agreement, cohen_kappa

SETTINGS = settings(database=None, deadline=None)

JUDGE = ["pass"] * 50 + ["fail"] * 50
HUMAN = ["pass"] * 40 + ["fail"] * 10 + ["pass"] * 5 + ["fail"] * 45


def kappa_by_definition(a: Sequence[Hashable], b: Sequence[Hashable]) -> Fraction:
    n = len(a)
    p_o = Fraction(sum(x == y for x, y in zip(a, b, strict=True)), n)
    ca, cb = Counter(a), Counter(b)
    p_e = sum((Fraction(ca[k], n) * Fraction(cb[k], n) for k in set(a) | set(b)), Fraction(0))
    return (p_o - p_e) / (1 - p_e)


def test_reference_vector() -> None:
    assert agreement(JUDGE, HUMAN) == pytest.approx(0.85, abs=1e-12)
    assert cohen_kappa(JUDGE, HUMAN) == pytest.approx(0.70, abs=1e-12)


def test_multiclass_kappa_by_hand() -> None:
    a = ["x", "x", "y", "y", "z", "z"]
    b = ["x", "y", "y", "y", "z", "x"]
    # p_o = 4/6, p_e = (2·2 + 2·3 + 2·1)/36 = 1/3, κ = (2/3 − 1/3)/(2/3) = 0.5
    assert cohen_kappa(a, b) == pytest.approx(0.5, abs=1e-12)
    assert agreement(a, b) == pytest.approx(4 / 6, abs=1e-12)


def test_kappa_with_mixed_label_types() -> None:
    a = [1, 2, None, (3, 4), 1]
    b = [1, 2, None, (3, 4), 2]
    assert cohen_kappa(a, b) == pytest.approx(float(kappa_by_definition(a, b)), abs=1e-12)


def test_kappa_is_nan_when_chance_agreement_is_one() -> None:
    assert math.isnan(cohen_kappa(["pass"] * 5, ["pass"] * 5))
    assert agreement(["pass"] * 5, ["pass"] * 5) == 1.0
    assert math.isnan(cohen_kappa([], []))
    assert math.isnan(agreement([], []))


def test_kappa_can_be_negative() -> None:
    assert cohen_kappa(["a", "b", "a", "b"], ["b", "a", "b", "a"]) == pytest.approx(-1.0)


def test_malformed_input_raises() -> None:
    with pytest.raises(ValueError):
        cohen_kappa(["a", "b"], ["a"])
    with pytest.raises(ValueError):
        agreement(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        cohen_kappa([["a"], "b"], ["a", "b"])  # type: ignore[list-item]


labels = st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, max_size=60)


@SETTINGS
@given(labels)
def test_kappa_is_one_for_identical_labels(a: list[str]) -> None:
    if len(set(a)) >= 2:
        assert cohen_kappa(a, list(a)) == 1.0
    else:
        assert math.isnan(cohen_kappa(a, list(a)))
    assert agreement(a, list(a)) == 1.0


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from("ABC"), st.sampled_from("ABC")), min_size=1))
def test_kappa_matches_definition_and_is_symmetric(pairs: list[tuple[str, str]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    ca, cb = Counter(a), Counter(b)
    p_e = sum(Fraction(ca[k] * cb[k], len(a) ** 2) for k in ca)
    k = cohen_kappa(a, b)
    if p_e == 1:
        assert math.isnan(k)
    else:
        assert k == pytest.approx(float(kappa_by_definition(a, b)), abs=1e-12)
        assert k == cohen_kappa(b, a)
        assert -1.0 <= k <= 1.0
