"""Issue 15 in bloodpanel: the paired engine comparison carries its stats.comparisons record —
a seeded paired bootstrap interval (the composite is not binary), exact and Holm-adjusted p over
the family of every engine pair, MDE at 80% power and cases needed for δ — computed from a tiny
in-memory run (reference answers, one engine degraded on a few cases, two repeats), and the
report's table and figure show them; the numbers bloodpanel always reported do not change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sealedeval import stats
from sealedeval.canonical import dumps
from sealedeval.config import Config, load_config
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext, RequestContext
from sealedeval.render.comparisons import HEADER
from sealedeval.render.figures import render_bytes
from sealedeval.suites.bloodpanel import plan
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite

ROOT = Path(__file__).resolve().parents[2]
SEED = 987654321
BAD = {"BT-001-IDA", "BT-003-T2DM", "BT-007-HYPOTHYROID"}


def _cfg() -> Config:
    block = {
        "engines": ["local", "reference"],
        "cohorts": {"local": "curated", "reference": "curated"},
        "synthetic_n": 0,
        "n_boot": 300,
        "repeats": 2,
        "temperature": 0.7,
        "review_n": 5,
    }
    return load_config(ROOT, [], overrides={"suites": {"bloodpanel": block}})


@pytest.fixture(scope="module")
def section() -> dict[str, Any]:
    suite = BloodpanelSuite()
    c = _cfg()
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    rows = []
    for eng in ("local", "reference"):
        for q in suite.requests(
            RequestContext(cfg=c, items=items, engine=c.engine(eng), model="m", seed=SEED)
        ):
            text = suite.reference_answer(q)
            if eng == "local" and q.item["case_id"] in BAD and q.repeat == 1:
                text = "The patient is fine."  # free text: structure 0 on one repeat
            rows.append(
                {
                    "request_key": q.request_key,
                    "engine": eng,
                    "model": "m",
                    "item_id": q.item_id,
                    "condition": q.condition,
                    "repeat": q.repeat,
                    "status": "ok",
                    "output_text": text,
                    "latency_s": 1.0,
                    "engine_path": "primary",
                    "error_kind": "",
                    "finished_at": f"t{q.request_key}",
                }
            )
    graded = suite.grade(GradeContext(cfg=c, items=items, rows=rows))
    a = suite.analyze(AnalyzeContext(cfg=c, items=items, graded=graded, rows=rows))
    scores = {
        eng: plan.case_scores(
            [g for g in graded if g["engine"] == eng and g["profile"] == "sealed"]
        )
        for eng in ("local", "reference")
    }
    return {"analysis": json.loads(dumps(a)), "scores": scores}


def test_the_record_comes_from_the_stats_and_old_numbers_stay(section: dict[str, Any]) -> None:
    a = section["analysis"]
    assert a["comparison_plan"] == plan.COMPARISON_PLAN.describe()
    [c] = a["comparisons"]
    r = c["paired"]
    sa, sb = section["scores"][c["a"]], section["scores"][c["b"]]
    common = sorted(set(sa) & set(sb))
    xa = [sum(sa[u]) / len(sa[u]) for u in common]
    xb = [sum(sb[u]) / len(sb[u]) for u in common]
    # the numbers bloodpanel always reported, beside the record
    assert c["mean_diff"] == pytest.approx(r["diff"])
    assert c["p"] == r["p"] and (c["a_better"], c["b_better"]) == (r["a_better"], r["b_better"])
    se = stats.paired_se(xa, xb)
    assert c["ci"]["lo"] == pytest.approx(c["mean_diff"] - stats.Z_95 * se)
    # the record: bootstrap interval seeded per pair, MDE from the replicate variances
    boot = stats.paired_bootstrap(
        xa, xb, n_boot=300, seed=plan.boot_seed(c["a"], c["b"], "compare")
    )
    assert (r["diff"], r["lo"], r["hi"]) == pytest.approx(boot)
    assert "bootstrap" in r["ci_method"] and r["unit"] == "case" and r["n"] == 15
    vc = stats.variance_components(sa, sb)
    assert (vc.k_a, vc.k_b, vc.sigma2_identified) == (2, 2, True)
    args = (vc.omega2, vc.sigma2_a, vc.sigma2_b, vc.k_a, vc.k_b)
    assert r["mde"] == pytest.approx(stats.mde_paired(*args, 15))
    assert r["n_needed_for_delta"] == stats.sample_size_items(*args, 0.05)
    assert r["p_adj"] == r["p"] and r["family_size"] == 1
    assert r["bayes"] is None  # a composite is not a rate: no Beta view
    assert r["detectable"] is (r["mde"] <= abs(r["diff"]))


def test_report_and_figure_show_the_columns(section: dict[str, Any]) -> None:
    from sealedeval.suites.bloodpanel.present import figures, report

    md = report.render(section)
    assert "| " + " | ".join(HEADER) + " |" in md
    [c] = section["analysis"]["comparisons"]
    row = next(line for line in md.splitlines() if line.startswith(f"| {c['a']} vs {c['b']} |"))
    cells = [x.strip() for x in row.strip("|").split("|")]
    col = HEADER.index
    assert cells[col("family")] == "engines" and cells[col("n")] == "15"
    assert cells[col("p adjusted")].endswith("(Holm, of 1)") and cells[
        HEADER.index("MDE (power)")
    ].endswith("(80%)")
    assert cells[col("n for δ")].endswith("(δ = 0.05)")
    words = "could not have detected" if not c["paired"]["detectable"] else "yes: MDE"
    assert words in cells[col("could it detect the difference?")]
    assert "A − B [normal 95% CI]" in md  # the normal interval is still shown beside
    specs = {s.name: s for s in figures.figure_specs(section)}
    assert "MDE" in specs["comparisons"].caption
    assert render_bytes(specs["comparisons"].draw(), "png").startswith(b"\x89PNG")
