"""The analysis on hand-made graded rows: item averaging first, sign tests, intervals, counts."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from sealedeval import stats
from sealedeval.suites.grounding.analysis import analyze_engine, compare, h3_estimate, metric_block
from sealedeval.suites.grounding.plan import PLAN

ITEMS: dict[str, dict[str, Any]] = {
    **{
        f"COMP-{n:02d}": {
            "id": f"COMP-{n:02d}",
            "track": "A",
            "family": "COMP",
            "role": "internal",
            "answerable": True,
            "concept": "active_customer",
        }
        for n in range(1, 11)
    },
    **{
        f"XORG-{n:02d}": {
            "id": f"XORG-{n:02d}",
            "track": "A",
            "family": "XORG",
            "role": "counterparty",
            "answerable": True,
            "concept": "delivered",
        }
        for n in range(1, 3)
    },
    "ABST-01": {
        "id": "ABST-01",
        "track": "A",
        "family": "ABST",
        "role": "abstain",
        "answerable": False,
        "concept": None,
    },
}


def _a(item: str, cond: str, rep: int, m1: int | None, **extra: Any) -> dict[str, Any]:
    """A graded track-A row (answerable when ``m1`` is not None)."""
    answerable = m1 is not None
    details = {
        "parse_ok": extra.pop("parse_ok", True),
        "contract_ok": True,
        "m1": m1,
        "m2": extra.pop("m2", 0) if answerable else None,
        "m7": extra.pop("m7", 0) if answerable else None,
        "m5": None if answerable else extra.pop("m5", 1),
        "unjustified_abstention": 0 if answerable else None,
    }
    status = extra.pop("status", "ok")
    return {
        "request_key": f"{item}/{cond}/{rep}",
        "engine": "e",
        "item_id": item,
        "condition": cond,
        "repeat": rep,
        "status": status,
        "grader": "grounding/track-a",
        "grader_version": "grounding-track-a/1",
        "details": json.dumps(details) if status == "ok" else "{}",
        "track": "A",
        "stage": cond,
        "model_role": "primary",
    }


def _raw(graded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "request_key": g["request_key"],
            "engine": "e",
            "model": "m",
            "status": g["status"],
            "error_kind": "" if g["status"] == "ok" else "timeout",
            "tokens_in": 1,
            "tokens_out": 1,
            "latency_s": 0.5,
        }
        for g in graded
    ]


def test_replicates_are_averaged_within_item_before_intervals() -> None:
    # item X: 2 replicates (1, 1); item Y: 1 replicate (0), the other errored.
    obs = [("X", 1.0), ("X", 1.0), ("Y", 0.0)]
    b = metric_block(obs, n_error=1)
    assert (b["k"], b["n"]) == (2, 3)  # call level: 2/3 (Wilson over calls)
    assert b["lo"] == pytest.approx(stats.wilson(2, 3)[0])
    assert b["item_mean"] == 0.5  # item level: mean of (1.0, 0.0), not 2/3
    assert b["n_items"] == 2
    assert b["item_se"] == pytest.approx(stats.item_se([1, 1, 0], ["X", "X", "Y"]))
    assert b["clustered_se"] == pytest.approx(stats.clustered_se([1, 1, 0], ["X", "X", "Y"]))
    assert b["errors_as_fail"]["n"] == 4 and b["errors_as_fail"]["k"] == 2
    assert 0.0 <= b["clustered_lo"] <= 0.5 <= b["clustered_hi"] <= 1.0


def test_sign_test_on_item_means_with_ties_dropped() -> None:
    rows = []
    # C beats A on 9 items, loses on 1 (replicates 2 each); XORG items tie.
    for n in range(1, 11):
        item = f"COMP-{n:02d}"
        c, a = ((1, 1), (0, 1)) if n <= 9 else ((0, 0), (1, 0))
        rows += [_a(item, "C", 1, c[0]), _a(item, "C", 2, c[1])]
        rows += [_a(item, "A", 1, a[0]), _a(item, "A", 2, a[1])]
    for n in (1, 2):
        item = f"XORG-{n:02d}"
        rows += [_a(item, cond, r, 1) for cond in ("C", "A") for r in (1, 2)]
    out = analyze_engine(rows, _raw(rows), ITEMS)
    p1 = next(c for c in out["roles"]["primary"]["comparisons"] if c["id"] == "P1")
    assert (p1["a"], p1["b"], p1["n_items"]) == ("C", "A", 12)
    assert (p1["a_better"], p1["b_better"], p1["ties"]) == (9, 1, 2)
    assert p1["p"] == pytest.approx(stats.sign_test(9, 1)) == pytest.approx(22 / 1024)
    # item means: C 1.0 x9, 0.0 x1, 1.0 x2; A 0.5 x9, 0.5 x1, 1.0 x2
    assert p1["mean_diff"] == pytest.approx((9 * 0.5 - 0.5) / 12)
    # P2 (E vs A) has no E rows: no items, p = 1
    p2 = next(c for c in out["roles"]["primary"]["comparisons"] if c["id"] == "P2")
    assert p2["n_items"] == 0 and p2["p"] == 1.0


def test_comparison_item_sets() -> None:
    comp = next(c for c in PLAN.comparisons if c.comparison_id == "P5")  # D vs C, governed
    means = {
        "D": {"XORG-01": 1.0, "XORG-02": 1.0, "COMP-01": 0.0},
        "C": {"XORG-01": 0.0, "XORG-02": 0.5, "COMP-01": 1.0},
    }
    out = compare(comp, means, ITEMS)
    assert out["n_items"] == 2 and out["a_better"] == 2 and out["b_better"] == 0
    assert out["p"] == pytest.approx(0.5)
    p6 = next(c for c in PLAN.comparisons if c.comparison_id == "P6")
    out6 = compare(p6, means, ITEMS)
    assert out6["n_items"] == 1 and out6["b_better"] == 1 and out6["n_missing"] == 9


def test_counts_errors_and_parse_per_condition() -> None:
    rows = [
        _a("COMP-01", "D", 1, 1),
        _a("COMP-01", "D", 2, None, status="error"),
        _a("COMP-02", "D", 1, 0, parse_ok=False),
        _a("ABST-01", "D", 1, None, m5=1),
        _a("ABST-01", "D", 2, None, m5=0),
    ]
    out = analyze_engine(rows, _raw(rows), ITEMS)
    d = out["roles"]["primary"]["track_a"]["D"]
    assert (d["n_total"], d["n_ok"], d["n_error"]) == (5, 4, 1)
    assert (d["parse"]["k"], d["parse"]["n"]) == (3, 4)
    assert (d["m1"]["k"], d["m1"]["n"]) == (1, 2)  # the errored answerable call is not a 0 ...
    assert d["m1"]["errors_as_fail"]["n"] == 3  # ... except in the lower bound
    assert (d["m5"]["k"], d["m5"]["n"], d["m5"]["item_mean"]) == (1, 2, 0.5)
    assert (out["n_total"], out["n_ok"], out["n_error"]) == (5, 4, 1)
    assert out["errors_by_kind"] == {"timeout": 1} and not out["complete"]


def test_hypotheses_carry_the_sealed_flags() -> None:
    rows = [_a("COMP-01", c, 1, 1) for c in "ABECFD"]
    out = analyze_engine(rows, _raw(rows), ITEMS)
    hs = out["roles"]["primary"]["hypotheses"]
    assert [h["id"] for h in hs] == [f"H{n}" for n in range(1, 10)]
    flags = {h["id"]: h["flag"] for h in hs}
    assert all(flags[f"H{n}"] == "pre-specified" for n in range(1, 5))
    assert all(flags[f"H{n}"] == "post hoc" for n in range(5, 10))
    h1 = hs[0]
    assert h1["evidence"]["comparisons"] == ["P1", "P2"]


def test_h3_bootstrap_is_seeded() -> None:
    items = {
        **{f"T{n}": {"family": "TEMP", "concept": "net_revenue"} for n in range(4)},
        **{f"K{n}": {"family": "COMP", "concept": "on_time"} for n in range(4)},
        "K9": {"family": "COMP", "concept": "delivered"},  # not versioned: excluded
    }
    m1 = {
        "C": {"T0": 1, "T1": 1, "T2": 1, "T3": 0.5, "K0": 1, "K1": 1, "K2": 1, "K3": 1, "K9": 1},
        "A": {"T0": 0, "T1": 0, "T2": 0.5, "T3": 0.5, "K0": 1, "K1": 0, "K2": 1, "K3": 1, "K9": 0},
    }
    a = h3_estimate(m1, items, n_boot=2000)
    assert a == h3_estimate(m1, items, n_boot=2000)
    assert a["n_temp"] == 4 and a["n_comp"] == 4
    assert a["estimate"] == pytest.approx((1 + 1 + 0.5 + 0) / 4 - 0.25)
    assert a["lo"] <= a["estimate"] <= a["hi"]
    empty = h3_estimate({}, items)
    assert math.isnan(empty["estimate"])
