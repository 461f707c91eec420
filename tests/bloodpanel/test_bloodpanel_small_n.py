"""Issue #30 item 4: bloodpanel's per-specialty intervals at small n.

No bootstrap interval from fewer than ``stats.MIN_N_BOOTSTRAP`` cases: the analysis gives the
mean without bounds (it used to give a zero-width interval at n = 1 and a percentile interval of
a handful of values at n = 2-3), the report says "no CI" and why, and the figure draws no
whisker for such a group.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sealedeval import stats
from sealedeval.suites.bloodpanel import plan
from sealedeval.suites.bloodpanel.present import figures as bp_figures
from sealedeval.suites.bloodpanel.present import report as bp_report


def _rows(sizes: dict[str, int]) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    rows = []
    for spec, n in sizes.items():
        for j in range(n):
            v = float(rng.random())
            rows.append(
                {
                    "status": "ok",
                    "specialty": spec,
                    "case_uid": f"{spec}-{j}",
                    "composite": v,
                    "structural": v,
                    "clinical": v,
                    "latency": 1.0,
                }
            )
    return rows


def test_by_group_gives_no_interval_below_the_minimum() -> None:
    sizes = {"one": 1, "two": 2, "three": 3, "ten": stats.MIN_N_BOOTSTRAP}
    table = plan.by_group(_rows(sizes), "specialty", n_boot=200, seed=3)
    for g in ("one", "two", "three"):
        c = table[g]["composite"]
        assert math.isfinite(c["mean"]) and math.isnan(c["lo"]) and math.isnan(c["hi"])
        for name in plan.COMPONENTS:
            ci = table[g][f"{name}_ci"]
            assert math.isnan(ci["lo"]) and math.isnan(ci["hi"])
    ten = table["ten"]["composite"]
    assert ten["lo"] < ten["mean"] < ten["hi"]
    assert plan.interval_note(table["one"]["composite"], 1).startswith(
        "no interval: 1 case, below the 10"
    )
    assert plan.interval_note(ten, 10) == ""


def _analysis() -> dict[str, Any]:
    spec = {
        "solo": {"n_cases": 1, "composite": {"mean": 0.5, "lo": None, "hi": None}},
        "big": {"n_cases": 12, "composite": {"mean": 0.6, "lo": 0.5, "hi": 0.7}},
    }
    prof = {"by_specialty": spec, "by_label": {}}
    return {"profile": "sealed", "engines": {"local": {"profiles": {"sealed": prof}}}}


def test_specialty_figure_draws_no_interval_at_n_1() -> None:
    fig = bp_figures._groups(
        _analysis(), lambda e: e, "by_specialty", ["solo", "big"], "per specialty"
    )
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert texts.count(bp_figures.NO_CI) == 1
    (bars,) = [c for c in ax.containers if hasattr(c, "errorbar")]
    segments = bars.errorbar.lines[2][0].get_segments()
    widths = [abs(s[1][0] - s[0][0]) for s in segments]
    # bar order: solo, big — solo has no whisker, big its interval 0.5..0.7
    assert widths[0] == 0.0 and abs(widths[1] - 0.2) < 1e-12


def test_report_cell_says_no_ci() -> None:
    assert bp_report._ci({"mean": 0.5, "lo": None, "hi": None}) == "0.5000 (no CI)"
    assert "fewer than 10 completed cases" in bp_report.SMALL_N_NOTE
