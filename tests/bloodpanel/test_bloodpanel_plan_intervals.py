"""Per-group intervals for structural, clinical and latency (spec: every component, with intervals).

The composite intervals predate these and must not move: they are pinned by a digest taken from
the plan before the component intervals existed, and compared with a direct call of the stats
routine the plan has always used.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import pytest

from sealedeval.canonical import dumps
from sealedeval.stats import bootstrap_by_group
from sealedeval.suites.bloodpanel import plan

PARTIAL = 0.4 * 6 / 7 + 0.6 * 13 / 16  # structural of a report missing 1 section, 3 subsections


def synth_rows(n_cases: int, seed: int = 7, repeats: int = 2) -> list[dict[str, Any]]:
    """Graded rows: 3 specialties, 5 labels, 2 repeats, one errored repeat in 11 cases."""
    rng = np.random.Generator(np.random.PCG64(seed))
    groups = ("a", "b", "c")
    rows = []
    for i in range(n_cases):
        g = groups[i % len(groups)]
        base_s = float(rng.choice([1.0, PARTIAL, 0.0], p=[0.7, 0.2, 0.1]))
        for k in range(repeats):
            ok = not (i % 11 == 3 and k == 0)
            c = round(float(rng.uniform(0.2, 1.0)), 3)
            lat = float(rng.choice([0.1, 0.05, 0.0], p=[0.6, 0.3, 0.1]))
            rows.append(
                {
                    "case_uid": f"u{i:04d}",
                    "specialty": g,
                    "label": f"L{i % 5}",
                    "status": "ok" if ok else "error",
                    "repeat": k,
                    "structural": base_s,
                    "clinical": c,
                    "latency": lat,
                    "composite": 0.35 * base_s + 0.55 * c + lat,
                }
            )
    return rows


def _tables(rows: list[dict[str, Any]], n_boot: int = 300) -> dict[str, dict[str, Any]]:
    return {
        key: plan.by_group(rows, key, n_boot=n_boot, seed=plan.boot_seed("e", "sealed", key))
        for key in ("specialty", "label")
    }


def test_composite_intervals_unchanged_by_the_component_intervals() -> None:
    rows = synth_rows(90)
    tables = _tables(rows)
    pinned = {
        key: {g: [v["composite"], v["composite_errors_as_zero"]] for g, v in t.items()}
        for key, t in tables.items()
    }
    # Digest of the same tables computed by the plan before component intervals were added.
    assert hashlib.sha256(dumps(pinned).encode()).hexdigest() == (
        "9ba94b54c503a466f51792f5b1bf05d0338f0a91974b0befb5421b7e2dbbcf2e"
    )
    ok = [r for r in rows if r["status"] == "ok"]
    for key, t in tables.items():
        direct = bootstrap_by_group(
            [r["composite"] for r in ok],
            [r[key] for r in ok],
            n_boot=300,
            seed=plan.boot_seed("e", "sealed", key),
            level=plan.LEVEL,
            items=[r["case_uid"] for r in ok],
        )
        for g, (m, lo, hi) in direct.items():
            assert t[g]["composite"] == {"mean": m, "lo": lo, "hi": hi}


def test_each_component_interval_contains_its_estimate_and_matches_the_plain_mean() -> None:
    rows = synth_rows(90)
    for key, t in _tables(rows).items():
        assert set(t) == {str(r[key]) for r in rows}
        for g, v in t.items():
            ok = [r for r in rows if r[key] == g and r["status"] == "ok"]
            by_case: dict[str, list[float]] = {}
            for r in ok:
                by_case.setdefault(r["case_uid"], []).append(r["latency"])
            latency = sum(sum(x) / len(x) for x in by_case.values()) / len(by_case)
            expect = {"structural": v["structural"], "clinical": v["clinical"], "latency": latency}
            for name in plan.COMPONENTS:
                ci = v[f"{name}_ci"]
                assert ci["lo"] <= ci["mean"] <= ci["hi"], (key, g, name, ci)
                assert ci["mean"] == pytest.approx(expect[name], rel=1e-12, abs=1e-15)
                assert ci["lo"] < ci["hi"], (key, g, name)  # every component varies here


def test_component_intervals_shrink_with_n() -> None:
    small = plan.by_group(synth_rows(60), "specialty", n_boot=1000, seed=11)
    large = plan.by_group(synth_rows(600), "specialty", n_boot=1000, seed=11)
    for g in small:
        for name in plan.COMPONENTS:
            w_small = small[g][f"{name}_ci"]["hi"] - small[g][f"{name}_ci"]["lo"]
            w_large = large[g][f"{name}_ci"]["hi"] - large[g][f"{name}_ci"]["lo"]
            assert w_large < 0.6 * w_small, (g, name, w_small, w_large)


def test_width_matches_the_normal_approximation() -> None:
    # 400 cases of a continuous clinical score: the percentile interval is close to ±1.96·SE.
    rng = np.random.Generator(np.random.PCG64(3))
    clinical = rng.uniform(0.0, 1.0, 400)
    rows = [
        {
            "case_uid": f"c{i}",
            "g": "x",
            "status": "ok",
            "structural": 1.0,
            "clinical": float(x),
            "latency": 0.1,
        }
        for i, x in enumerate(clinical)
    ]
    ci = plan.component_intervals(rows, "g", n_boot=4000, seed=5)["x"]["clinical"]
    se = float(np.std(clinical)) / math.sqrt(clinical.size)
    assert ci["hi"] - ci["lo"] == pytest.approx(2 * 1.959964 * se, rel=0.08)


@pytest.mark.parametrize("factor", [1, 10**9], ids=["multinomial", "index"])
def test_one_resample_serves_every_component_on_both_draw_paths(
    monkeypatch: pytest.MonkeyPatch, factor: int
) -> None:
    # factor 1 forces multiplicities of distinct rows, 10**9 forces index draws.
    monkeypatch.setattr(plan, "_MULTINOMIAL_FACTOR", factor)
    rng = np.random.Generator(np.random.PCG64(9))
    x = rng.choice([0.0, 0.25, 0.5, 1.0], 300)
    rows = [
        {
            "case_uid": f"c{i}",
            "g": "x",
            "status": "ok",
            "structural": float(v),
            "clinical": float(v),
            "latency": 0.1,
        }
        for i, v in enumerate(x)
    ]
    got = plan.component_intervals(rows, "g", n_boot=2000, seed=5)["x"]
    # The same cases in every resample: identical columns give identical intervals.
    assert got["structural"] == got["clinical"]
    # A constant component gives a zero-width interval at exactly its value.
    assert got["latency"]["lo"] == got["latency"]["mean"] == got["latency"]["hi"]
    assert got["latency"]["mean"] == pytest.approx(0.1)
    # Both paths sample the same distribution: the interval is near ±1.96·SE either way.
    se = float(np.std(x)) / math.sqrt(x.size)
    assert got["structural"]["lo"] == pytest.approx(float(x.mean()) - 1.96 * se, abs=0.012)
    assert got["structural"]["hi"] == pytest.approx(float(x.mean()) + 1.96 * se, abs=0.012)


def test_component_intervals_seeded_separately_from_the_composite() -> None:
    rows = synth_rows(60)
    a = plan.by_group(rows, "label", n_boot=300, seed=1)
    b = plan.by_group(rows, "label", n_boot=300, seed=1)
    c = plan.by_group(rows, "label", n_boot=300, seed=2)
    assert dumps(a) == dumps(b)
    assert any(a[g]["clinical_ci"] != c[g]["clinical_ci"] for g in a)
    # A group's component interval depends on its own cases only, not on the other groups.
    only_l0 = plan.by_group([r for r in rows if r["label"] == "L0"], "label", n_boot=300, seed=1)
    for name in plan.COMPONENTS:
        assert only_l0["L0"][f"{name}_ci"] == a["L0"][f"{name}_ci"]


def test_a_case_under_two_groups_is_refused() -> None:
    rows = synth_rows(6)
    rows[1] = rows[1] | {"label": "other"}
    with pytest.raises(ValueError, match=r"u0000.*more than one label"):
        plan.component_intervals(rows, "label", n_boot=10, seed=1)


def test_group_without_completed_cases_has_nan_intervals() -> None:
    errored = {
        "case_uid": "e1",
        "specialty": "z",
        "label": "Lz",
        "status": "error",
        "repeat": 0,
        "structural": 0.0,
        "clinical": 0.0,
        "latency": 0.0,
        "composite": 0.0,
    }
    rows = [*synth_rows(6), errored]
    t = plan.by_group(rows, "specialty", n_boot=50, seed=1)
    assert t["z"]["n_error"] == 1
    assert all(math.isnan(t["z"][f"{n}_ci"]["mean"]) for n in plan.COMPONENTS)
    assert all(not math.isnan(t["a"][f"{n}_ci"]["mean"]) for n in plan.COMPONENTS)
