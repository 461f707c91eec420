"""The anytime-valid confidence sequence and its stopping rule, against the boundary written
out (Robbins' normal mixture + Ville, Howard et al. 2021) and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sealedeval.stats._sequential import (
    CONTINUE,
    EXHAUSTED,
    STOP_A,
    STOP_B,
    check_stop,
    cs_radius,
    mixture_rho,
    sequential_rule,
)


def test_radius_is_the_normal_mixture_boundary_and_rho_minimises_it_at_n_max() -> None:
    alpha, n_max = 0.05, 100
    v_max = n_max * 2.0**2 / 4  # values in [-1, 1]: variance proxy 1 per observation
    rho = mixture_rho(v_max, alpha)

    def boundary(t: int, r: float) -> float:
        v = t * 1.0
        return math.sqrt((v + r) * (math.log((v + r) / r) + 2 * math.log(1 / alpha))) / t

    for t in (1, 10, 57, 100):
        assert cs_radius(t, alpha, rho, 2.0) == pytest.approx(boundary(t, rho), rel=1e-12)
    here = boundary(n_max, rho)
    assert here < boundary(n_max, rho * 1.05) and here < boundary(n_max, rho / 1.05)
    # wider than the fixed-n Hoeffding interval at the same n (the price of looking any time)
    assert here > math.sqrt(2 * math.log(2 / alpha) / n_max)


def test_false_stops_stay_below_alpha_over_all_looks() -> None:
    """No true difference: the rule must stop for a side in at most α of the runs, however
    many looks it takes (every n here)."""
    rng = np.random.default_rng(20260101)
    runs, n = 400, 200
    d = rng.integers(-1, 2, size=(runs, n)).astype(float)  # mean 0, in [-1, 1]
    looks = list(range(1, n + 1))
    wrong = sum(sequential_rule(row, looks).decision in (STOP_A, STOP_B) for row in d)
    assert wrong / runs <= 0.05


def test_a_true_difference_stops_early_at_a_planned_look() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(400) < 0.85
    b = rng.random(400) < 0.25
    d = a.astype(float) - b.astype(float)
    looks = [50, 100, 150, 200, 300, 400]
    res = sequential_rule(d, looks)
    assert res.decision == STOP_A and res.stopped_at in looks and res.stopped_at < 400
    assert res.saved == 400 - res.stopped_at
    # independently: the first look whose mean minus the boundary is above 0
    rho = mixture_rho(400.0, 0.05)
    first = next(n for n in looks if d[:n].mean() - cs_radius(n, 0.05, rho, 2.0) > 0)
    assert res.stopped_at == first
    assert [lk.decision for lk in res.looks] == [CONTINUE] * (len(res.looks) - 1) + [STOP_A]
    flipped = sequential_rule(-d, looks)
    assert (flipped.decision, flipped.stopped_at) == (STOP_B, first)


def test_no_difference_runs_to_the_maximum() -> None:
    d = [1.0, -1.0] * 50
    res = sequential_rule(d, [20, 60, 100])
    assert (res.decision, res.stopped_at, res.saved) == (EXHAUSTED, 100, 0)


def test_the_audit_replay_catches_a_tampered_stop() -> None:
    rng = np.random.default_rng(7)
    d = (rng.random(400) < 0.85).astype(float) - (rng.random(400) < 0.25).astype(float)
    looks = [50, 100, 150, 200, 300, 400]
    stop = sequential_rule(d, looks).stopped_at
    assert check_stop(d, looks, stop) is None
    late = looks[looks.index(stop) + 1]
    assert "went on to n = " in str(check_stop(d, looks, late))
    early = [n for n in looks if n < stop]
    if early:
        assert "where the rule says continue" in str(check_stop(d, looks, early[-1]))
    assert "where the rule says continue" in str(check_stop(d, looks, stop - 1))


def test_bad_plans_are_refused() -> None:
    with pytest.raises(ValueError, match="strictly increasing"):
        sequential_rule([0.0], [10, 10])
    with pytest.raises(ValueError, match="strictly increasing"):
        sequential_rule([0.0], [])
    with pytest.raises(ValueError, match="lie in"):
        sequential_rule([2.0], [1])
