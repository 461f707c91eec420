"""The metric record's standard error and direction (issue #27).

``se`` is the SE the analysis computed, checked against closed forms computed here
independently (the binomial SE, the item-clustered SE of Miller 2024 from the item means with
NumPy); ``direction`` follows what the metric measures; records written before either field
existed still validate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sealedeval.stats.metrics import (
    METRIC_KEYS,
    OPTIONAL_METRIC_KEYS,
    direction_of,
    mean_metric,
    metric,
    point_metric,
    rate_metric,
    validate_metrics,
)


@pytest.mark.parametrize(("k", "n"), [(7, 9), (0, 5), (5, 5), (1, 40)])
def test_a_rate_carries_its_binomial_se(k: int, n: int) -> None:
    m = rate_metric("accuracy", {"engine": "e"}, k, n, n_error=3)
    p = k / n
    assert m["se"] == pytest.approx(math.sqrt(p * (1 - p) / n), abs=1e-15)
    # the SE is the estimate's, not the Wilson half-width (Wilson has width at k = 0 or n)
    assert m["lo"] is not None and m["hi"] is not None and m["hi"] > m["lo"]
    assert rate_metric("accuracy", {}, 0, 0, n_error=2)["se"] is None


def test_a_mean_carries_the_item_clustered_se_its_interval_is_built_from() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25]
    items = ["a", "a", "b", "b", "c", "c", "d", "d"]
    m = mean_metric("mean_score", {"engine": "e"}, values, items)
    means = np.array([0.5, 1.0, 0.25, 0.625])
    want = float(np.std(means, ddof=1) / math.sqrt(means.size))
    assert m["se"] == pytest.approx(want, rel=1e-12)
    assert m["estimate"] is not None and m["hi"] is not None
    assert (m["hi"] - m["estimate"]) / m["se"] == pytest.approx(1.959963984540054)
    # one item: no SE, like no interval
    assert mean_metric("mean_score", {}, [1.0, 0.0], ["a", "a"])["se"] is None


def test_metrics_without_an_analysis_se_have_none() -> None:
    assert point_metric("kappa", {}, 0.4, 10, 0, "item")["se"] is None
    m = metric("x", {}, 0.5, 0.1, 0.9, method="bootstrap", n_total=9, n_ok=9, n_error=0, unit="i")
    assert m["se"] is None
    nan = metric("x", {}, 0.5, None, None, method="none", n_total=1, n_ok=1, n_error=0, unit="i")
    assert metric(**{**_args(nan), "se": math.nan})["se"] is None


def _args(m: dict[str, object] | object) -> dict[str, object]:
    d = dict(m)  # type: ignore[call-overload]
    return {
        "name": d.pop("metric"),
        "groups": d.pop("groups"),
        "estimate": d.pop("estimate"),
        "lo": d.pop("lo"),
        "hi": d.pop("hi"),
        **d,
    }


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("accuracy", "higher"),
        ("accuracy_errors_as_failures", "higher"),  # "errors" in an accuracy's name
        ("greedy_accuracy_errors_as_failures", "higher"),
        ("judge_pass_ppi", "higher"),
        ("pass_at_1", "higher"),
        ("harness_f1", "higher"),
        ("harness_acc_norm", "higher"),
        ("error_rate", "lower"),
        ("trap_flag_rate", "lower"),
        ("latency_per_solved", "lower"),
        ("cost_per_solved", "lower"),
        ("harness_ter", "lower"),
        ("harness_word_perplexity", "lower"),
        ("sign_test_p", ""),
        ("difference", ""),
        ("harness_stderr", ""),
        ("terrible_custom", ""),  # "ter" is a whole name, not a prefix of any word
    ],
)
def test_direction_follows_what_the_metric_measures(name: str, direction: str) -> None:
    assert direction_of(name) == direction
    m = metric(name, {}, 0.5, None, None, method="none", n_total=1, n_ok=1, n_error=0, unit="i")
    assert m["direction"] == direction


def test_an_analysis_may_declare_the_direction_and_a_bad_one_is_refused() -> None:
    m = rate_metric("overlap", {}, 3, 4, direction="lower")
    assert m["direction"] == "lower"
    with pytest.raises(ValueError, match="direction must be one of"):
        rate_metric("overlap", {}, 3, 4, direction="up")


def test_records_without_se_or_direction_still_validate_and_bad_ones_do_not() -> None:
    full = dict(rate_metric("accuracy", {"engine": "e"}, 3, 4))
    assert set(full) == {*METRIC_KEYS, *OPTIONAL_METRIC_KEYS}
    old = {k: full[k] for k in METRIC_KEYS}  # a result.json from before issues #27 and #30
    assert validate_metrics([old, full], "here") == [old, full]
    with pytest.raises(ValueError, match=r"here: metrics\[0\] has direction"):
        validate_metrics([{**full, "direction": "up"}], "here")
    with pytest.raises(ValueError, match=r"here: metrics\[0\] has se"):
        validate_metrics([{**full, "se": "0.1"}], "here")
