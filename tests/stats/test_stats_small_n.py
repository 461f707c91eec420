"""Small-n intervals (issue #30 item 4): the Clopper–Pearson interval against SciPy, and the
stated minimum n for a bootstrap interval with its reason."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats._small_n import MIN_N_BOOTSTRAP, bootstrap_note, clopper_pearson

scipy_stats = pytest.importorskip("scipy.stats")


@given(st.integers(0, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(database=None, deadline=None, max_examples=80)
def test_clopper_pearson_matches_scipy(kn: tuple[int, int]) -> None:
    k, n = kn
    if n == 0:
        assert all(math.isnan(x) for x in clopper_pearson(k, n))
        return
    ref = scipy_stats.binomtest(k, n).proportion_ci(method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_clopper_pearson_vectors_and_errors() -> None:
    assert clopper_pearson(8, 10) == pytest.approx((0.443904, 0.974789), abs=1e-6)
    assert clopper_pearson(1, 1) == pytest.approx((0.025, 1.0))
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_bootstrap_note() -> None:
    assert MIN_N_BOOTSTRAP == 10
    assert bootstrap_note(10, "case") == ""
    assert bootstrap_note(1, "case").startswith("no interval: 1 case, below the 10")
    assert "2 cases" in bootstrap_note(2, "case")
