"""Issue 15 in the tasks suite: each engine comparison carries its stats.comparisons record
(Holm across all the suite's engine pairs, MDE at the plan's power, n for its δ — both settable
in the sealed ``analysis`` block — and the Beta view on < 100 items), rendered in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.tasks._support import ARITH, write_jsonl

from sealedeval import stats
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext
from sealedeval.render.comparisons import HEADER
from sealedeval.stats.comparisons import ComparisonPlan
from sealedeval.suites.tasks import TasksSuite

OK = {
    "a": [1] * 10 + [0, 1],
    "b": [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1],
    "c": [1] * 12,
}


def _run(root: Path, **analysis: Any) -> tuple[TasksSuite, dict[str, Any]]:
    write_jsonl(root / "data/items.jsonl", ARITH)
    section = {
        "kind": "tasks",
        "items": "data/items.jsonl",
        "prompt": "{input}",
        "graders": [{"name": "exact"}],
        "engines": ["a", "b", "c"],
        "analysis": analysis,
    }
    suite = TasksSuite("arith", section, root=root)
    cfg = Config(root=root, data={"project": {"seed": 1}}, sources=())
    items = suite.generate(GenerateContext(cfg=cfg, seed=5))
    rows = []
    for eng, oks in OK.items():
        for it, ok in zip(items, oks, strict=True):
            rows.append(
                {
                    "request_key": f"{eng}-{it['id']}",
                    "engine": eng,
                    "item_id": it["id"],
                    "condition": "answer",
                    "repeat": 0,
                    "status": "ok",
                    "error_kind": "",
                    "output_text": str(it["target"]) if ok else "no",
                    "model": f"{eng}-model",
                    "cost_usd": 0.0,
                    "latency_s": 0.0,
                    "tokens_in": 1,
                    "tokens_out": 1,
                }
            )
    a = suite.analyze(
        AnalyzeContext(
            cfg=cfg,
            items=items,
            graded=suite.grade(GradeContext(cfg=cfg, items=items, rows=rows)),
            rows=rows,
        )
    )
    return suite, json.loads(dumps(a))


def test_records_holm_over_every_pair_and_the_plans_delta(tmp_path: Path) -> None:
    _, a = _run(tmp_path, delta=0.1, power=0.9)
    assert (
        a["comparison_plan"]
        == ComparisonPlan(
            families={"engines": "every pair of engines the suite compares, on the items both did"},
            delta=0.1,
            power=0.9,
            tests={"engines": "exact_mcnemar"},
        ).describe()
    )
    assert a["comparison_plan"]["tests"] == {"engines": "exact_mcnemar"}
    cs = a["comparisons"]
    assert [(c["a"], c["b"]) for c in cs] == [("a", "b"), ("a", "c"), ("b", "c")]
    recs = [c["paired"] for c in cs]
    assert [r["p"] for r in recs] == [c["p"] for c in cs]
    # 0/1 verdicts: the mid-p McNemar test beside the exact one, the family confirmatory
    assert [r["p_midp"] for r in recs] == [
        stats.mcnemar_midp(r["a_better"], r["b_better"]) for r in recs
    ]
    assert {r["role"] for r in recs} == {"confirmatory"}
    assert [r["p_adj"] for r in recs] == pytest.approx(stats.holm([r["p"] for r in recs]))
    ab = recs[0]
    x = [float(v) for v in OK["a"]]
    y = [float(v) for v in OK["b"]]
    assert ab["diff"] == pytest.approx(cs[0]["difference"])
    assert (ab["lo"], ab["hi"]) == pytest.approx((cs[0]["lo"], cs[0]["hi"]))
    se = stats.paired_se(x, y)
    assert ab["mde"] == pytest.approx(stats.z_total(0.05, 0.9) * se)
    assert ab["n_needed_for_delta"] == stats.sample_size_items(
        se**2 * 12, 0, 0, 1, 1, 0.1, 0.05, 0.9
    )
    assert ab["detectable"] is (ab["mde"] <= abs(ab["diff"]))
    assert ab["bayes"] is not None and ab["bayes"]["p_a_better"] == stats.prob_a_better(7, 0)
    assert ab["bayes"]["a_rate"]["beta"] == pytest.approx(list(stats.beta_interval(11, 12)))


def test_report_table_has_every_column(tmp_path: Path) -> None:
    suite, a = _run(tmp_path)
    md = suite.report_sections({"analysis": a})
    assert "| " + " | ".join(HEADER) + " |" in md
    row = next(line for line in md.splitlines() if line.startswith("| a vs c |"))
    cells = [x.strip() for x in row.strip("|").split("|")]
    col = HEADER.index
    assert cells[col("n")] == "12" and cells[col("A better / B better / ties")] == "0 / 1 / 11"
    assert cells[col("p adjusted")].endswith("(Holm, of 3)") and cells[
        HEADER.index("n for δ")
    ].endswith("(δ = 0.05)")
    assert "could not have detected" in cells[col("could it detect the difference?")]
    assert "Second view, Bayesian" in md
