"""The ``tasks`` analysis on synthetic raw rows: every number against the stats module it must
come from, with errors, repeats, clusters, abstentions, costs and two engines."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from tests.tasks._support import ARITH, write_jsonl

from sealedeval import stats
from sealedeval.config import Config
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext
from sealedeval.stages.pipeline import graded_rows  # noqa: F401  (the stage module imports)
from sealedeval.stats.metrics import METRIC_KEYS, OPTIONAL_METRIC_KEYS, validate_metrics
from sealedeval.suites.tasks import TasksSuite
from sealedeval.suites.tasks.analysis import one_sided_p, reduce_outcomes


def _suite(root: Path, **over: Any) -> tuple[TasksSuite, Config, list[dict[str, Any]]]:
    write_jsonl(root / "data/items.jsonl", ARITH)
    section = {
        "kind": "tasks",
        "items": "data/items.jsonl",
        "prompt": "{input}",
        "graders": [{"name": "exact"}, {"name": "numeric", "label": "num"}],
        "engines": ["a", "b"],
    } | over
    suite = TasksSuite("arith", section, root=root)
    cfg = Config(root=root, data={"project": {"seed": 1}}, sources=())
    return suite, cfg, suite.generate(GenerateContext(cfg=cfg, seed=5))


def _row(engine: str, item: str, rep: int, text: str | None, **kw: Any) -> dict[str, Any]:
    return {
        "request_key": f"{engine}-{item}-{rep}-{kw.get('condition', 'answer')}",
        "engine": engine,
        "item_id": item,
        "condition": "answer",
        "repeat": rep,
        "status": "ok" if text is not None else "error",
        "error_kind": "" if text is not None else "timeout",
        "output_text": text or "",
        "model": f"{engine}-model",
        "cost_usd": 0.0,
        "latency_s": 0.0,
        "tokens_in": 10,
        "tokens_out": 2,
    } | kw


def _metric(doc: dict[str, Any], name: str, **groups: str) -> dict[str, Any]:
    [m] = [m for m in doc["metrics"] if m["metric"] == name and m["groups"] == groups]
    return dict(m)


def test_accuracy_wilson_over_items_errors_counted_not_graded(tmp_path: Path) -> None:
    suite, cfg, items = _suite(tmp_path)
    rows = []
    for i, it in enumerate(items):
        t = str(it["target"])
        rows.append(_row("a", it["id"], 0, t if i < 9 else "0" if i < 11 else None))
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    validate_metrics(a["metrics"], "tasks")
    assert all(set(m) == {*METRIC_KEYS, *OPTIONAL_METRIC_KEYS} for m in a["metrics"])
    acc = _metric(a, "accuracy", engine="a")
    lo, hi = stats.wilson(9, 11)
    assert (acc["estimate"], acc["lo"], acc["hi"]) == (pytest.approx(9 / 11), lo, hi)
    assert (acc["n_ok"], acc["n_error"], acc["n_total"], acc["unit"]) == (11, 1, 12, "item")
    low = _metric(a, "accuracy_errors_as_failures", engine="a")
    assert low["estimate"] == pytest.approx(9 / 12) and low["lo"] == stats.wilson(9, 12)[0]
    e = a["engines"]["a"]
    assert (e["n_total"], e["n_ok"], e["n_error"]) == (12, 11, 1)
    assert e["errors_by_kind"] == {"timeout": 1}
    assert e["categories"] == {"correct": 9, "wrong": 2, "abstained": 0, "error": 1}
    # the errored call has a graded row per grader, category error, never a failure verdict
    err = [g for g in graded if g["status"] != "ok"]
    assert len(err) == 2 and {g["category"] for g in err} == {"error"}
    assert {g["grader_id"] for g in graded} == {"exact", "num"}
    assert _metric(a, "pass_rate", engine="a", grader="num")["n_ok"] == 11


def test_repeats_reduce_per_item_spread_and_pass_at_k(tmp_path: Path) -> None:
    suite, cfg, items = _suite(tmp_path, repeats=3)
    pattern = {0: [1, 1, 1], 1: [1, 1, 0], 2: [1, 0, 0], 3: [0, 0, 0]}
    rows = []
    outcomes: dict[str, list[bool]] = {}
    for i, it in enumerate(items):
        p = pattern[i % 4]
        outcomes[it["id"]] = [bool(x) for x in p]
        for rep, ok in enumerate(p):
            rows.append(_row("a", it["id"], rep, str(it["target"]) if ok else "-1"))
    a = suite.analyze(
        AnalyzeContext(
            cfg=cfg,
            items=items,
            graded=suite.grade(GradeContext(cfg=cfg, items=items, rows=rows)),
            rows=rows,
        )
    )
    acc = _metric(a, "accuracy", engine="a")
    assert acc["estimate"] == pytest.approx(6 / 12)  # majority: patterns 0 and 1
    mean = _metric(a, "accuracy_mean", engine="a")
    vals = [float(x) for v in outcomes.values() for x in v]
    ids = [i for i, v in outcomes.items() for _ in v]
    se = stats.item_se(vals, ids)
    assert mean["estimate"] == pytest.approx(0.5)
    assert mean["lo"] == pytest.approx(0.5 - stats.Z_95 * se)
    rep = a["engines"]["a"]["repeats"]
    assert [r["k"] for r in rep["per_repeat"]] == [9, 6, 3]
    assert rep["sd"] == pytest.approx(stats.mean_sd([0.75, 0.5, 0.25])[1])
    assert rep["pass_at_k"]["3"] == pytest.approx(stats.mean_pass_at_k(outcomes, 3))
    assert rep["pass_hat_k"]["2"] == pytest.approx(stats.mean_pass_hat_k(outcomes, 2))
    assert _metric(a, "pass_at_k", engine="a", k="3")["estimate"] == pytest.approx(0.75)
    assert a["items"]["q02"]["a"] == {"n": 3, "mean": pytest.approx(2 / 3), "passed": True}
    assert a["items"]["q03"]["a"]["passed"] is False


@pytest.mark.parametrize(
    ("how", "outcomes", "want"),
    [
        ("majority", [True, False], False),
        ("majority", [True, True, False], True),
        ("any", [False, True], True),
        ("all", [True, False], False),
        ("first", [False, True], False),
        ("all", [], False),
    ],
)
def test_reductions(how: str, outcomes: list[bool], want: bool) -> None:
    assert reduce_outcomes(outcomes, how) is want


def test_paired_comparison_sign_test_paired_se_and_hypotheses(tmp_path: Path) -> None:
    suite, cfg, items = _suite(
        tmp_path,
        analysis={
            "hypotheses": [
                {"id": "a_wins", "a": "a", "b": "b"},
                {"a": "a", "b": "b", "direction": "less", "alpha": 0.2},
            ]
        },
    )
    rows = []
    a_ok = [1] * 10 + [0, 1]
    b_ok = [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1]
    for it, x, y in zip(items, a_ok, b_ok, strict=True):
        rows.append(_row("a", it["id"], 0, str(it["target"]) if x else "no"))
        rows.append(_row("b", it["id"], 0, str(it["target"]) if y else "no"))
    a = suite.analyze(
        AnalyzeContext(
            cfg=cfg,
            items=items,
            graded=suite.grade(GradeContext(cfg=cfg, items=items, rows=rows)),
            rows=rows,
        )
    )
    [c] = a["comparisons"]
    assert (c["a"], c["b"], c["n_items"], c["a_better"], c["b_better"]) == ("a", "b", 12, 7, 0)
    assert c["p"] == stats.sign_test(7, 0)
    se = stats.paired_se([float(x) for x in a_ok], [float(y) for y in b_ok])
    assert c["difference"] == pytest.approx((11 - 4) / 12)
    assert c["lo"] == pytest.approx(7 / 12 - stats.Z_95 * se)
    d = _metric(a, "difference", a="a", b="b")
    assert (d["estimate"], d["method"], d["n_ok"]) == (pytest.approx(7 / 12), "paired normal", 12)
    h1, h2 = a["hypotheses"]
    assert h1["id"] == "a_wins" and h1["p"] == pytest.approx(1 / 128)  # P(X >= 7 | n = 7)
    assert h2["id"] == "H2" and h2["p"] == 1.0 and h2["alpha"] == 0.2
    assert h1["p_adjusted"] == pytest.approx(stats.holm([1 / 128, 1.0])[0])
    assert h1["rejected"] and not h2["rejected"]
    assert one_sided_p(8, 9) == pytest.approx(10 / 512)


def test_cluster_by_gives_the_cluster_robust_interval(tmp_path: Path) -> None:
    suite, cfg, items = _suite(tmp_path, cluster_by="topic")
    rows = [
        _row("a", it["id"], 0, str(it["target"]) if i % 3 else "x") for i, it in enumerate(items)
    ]
    a = suite.analyze(
        AnalyzeContext(
            cfg=cfg,
            items=items,
            graded=suite.grade(GradeContext(cfg=cfg, items=items, rows=rows)),
            rows=rows,
        )
    )
    m = _metric(a, "accuracy_clustered", engine="a", cluster_by="topic")
    vals = [0.0 if i % 3 == 0 else 1.0 for i in range(12)]
    se = stats.clustered_se(vals, [it["topic"] for it in items])
    assert m["estimate"] == pytest.approx(8 / 12)
    assert m["lo"] == pytest.approx(max(0.0, 8 / 12 - stats.Z_95 * se))
    assert m["method"] == "cluster-robust normal"
    assert {g["cluster"] for g in suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))} == {
        "t0",
        "t1",
        "t2",
    }


def test_cost_and_latency_per_solved_item_with_real_prices(tmp_path: Path) -> None:
    suite, cfg, items = _suite(tmp_path)
    rows = []
    for i, it in enumerate(items):
        text = str(it["target"]) if i < 8 else "wrong"
        rows.append(_row("a", it["id"], 0, text, cost_usd=0.0015 * (i + 1), latency_s=0.5 + i))
    # a judge-free errored call still costs nothing and adds no latency
    a = suite.analyze(
        AnalyzeContext(
            cfg=cfg,
            items=items,
            graded=suite.grade(GradeContext(cfg=cfg, items=items, rows=rows)),
            rows=rows,
        )
    )
    cost = a["engines"]["a"]["cost"]
    total = math.fsum(0.0015 * (i + 1) for i in range(12))
    assert cost["cost_usd"] == pytest.approx(total)
    assert cost["cost_per_solved_item_usd"] == pytest.approx(total / 8)
    assert cost["latency_per_solved_item_s"] == pytest.approx(sum(0.5 + i for i in range(12)) / 8)
    assert cost["solved_items"] == 8 and cost["cost_per_item_usd"] == pytest.approx(total / 12)
    m = _metric(a, "cost_per_solved_item_usd", engine="a")
    assert m["estimate"] == pytest.approx(total / 8) and m["estimate"] > 0


def test_abstention_category(tmp_path: Path) -> None:
    data = [r | {"answerable": i != 11} for i, r in enumerate(ARITH)]
    write_jsonl(tmp_path / "data/items.jsonl", data)
    suite = TasksSuite(
        "arith",
        {
            "kind": "tasks",
            "items": "data/items.jsonl",
            "graders": [{"name": "exact"}],
            "engines": ["a"],
            "abstention": "category",
        },
        root=tmp_path,
    )
    cfg = Config(root=tmp_path, data={}, sources=())
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    texts = [str(it["target"]) for it in items[:6]] + ["I don't know."] * 3 + ["7", ""]
    texts.append("I don't know.")  # on the unanswerable item: graded, not set apart
    rows = [_row("a", it["id"], 0, t) for it, t in zip(items, texts, strict=True)]
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    cats = [g["category"] for g in graded]
    assert cats == ["correct"] * 6 + ["abstained"] * 3 + ["wrong", "wrong", "wrong"]
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    ab = a["engines"]["a"]["abstention"]
    assert (ab["correct"], ab["wrong"], ab["abstained"]) == (6, 2, 3)
    assert ab["selective_accuracy"] == pytest.approx(6 / 8)
    assert ab["score"]["0.75"] == pytest.approx(stats.abstention_score(6, 2, 3, 0.75))
    assert _metric(a, "abstention_rate", engine="a")["estimate"] == pytest.approx(3 / 11)
    assert _metric(a, "accuracy", engine="a")["estimate"] == pytest.approx(6 / 12)


def test_failure_mode_counts_abstentions_as_wrong(tmp_path: Path) -> None:
    suite, cfg, items = _suite(tmp_path, abstention="failure")
    rows = [_row("a", it["id"], 0, "I don't know.") for it in items]
    assert {g["category"] for g in suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))} == {
        "wrong"
    }


def test_a_primary_judge_without_verdicts_grades_nothing(tmp_path: Path) -> None:
    """Answers the judge has not graded yet are ungraded (error), never failures."""
    suite, cfg, items = _suite(
        tmp_path,
        graders=[{"name": "judge", "engine": "b", "rubric": "Right number."}, {"name": "exact"}],
    )
    rows = [_row("a", it["id"], 0, str(it["target"])) for it in items]
    judged = [
        _row(
            "b",
            it["id"],
            0,
            '{"verdict": "PASS"}' if n % 2 else "FAIL",
            condition="judge/judge/answers/a/candidate-last",
        )
        for n, it in enumerate(items[:6])
    ]
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows + judged))
    cats = [g["category"] for g in graded if g["grader_id"] == "exact"]
    assert cats == ["wrong", "correct"] * 3 + ["error"] * 6
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows + judged))
    acc = _metric(a, "accuracy", engine="a")
    assert (acc["estimate"], acc["n_ok"], acc["n_error"]) == (0.5, 6, 6)
    jp = _metric(a, "judge_pass", grader="judge", judge="b", engine="a")
    assert (jp["estimate"], jp["n_ok"], jp["n_error"]) == (0.5, 6, 6)
    assert _metric(a, "pass_rate", engine="a", grader="exact")["estimate"] == 1.0
    assert "b" not in {m["groups"].get("engine") for m in a["metrics"] if m["metric"] == "accuracy"}
