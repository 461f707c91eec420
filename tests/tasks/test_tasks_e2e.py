"""A ``tasks`` suite end to end through the CLI, in a project that is only a config file and
data: seal + commit, run on two engines (the ``reference`` ceiling and an ``openai_chat`` engine
against the loopback fake server, priced), publish, audit. result.json must report accuracy
with its Wilson interval, the paired comparison, the pre-registered hypothesis, and cost and
latency per solved item that can be recomputed from the raw rows. A second project adds a
judge engine (swap, calibration labels) that grades both engines' answers in a second phase.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.fakes.openai_server import FakeOpenAI, last_user_content
from tests.tasks._support import ARITH, arith_suite, cli, git, project, write_jsonl

from sealedeval import stats

PRICE_IN, PRICE_OUT = 3.0, 15.0


def _responder(body: dict[str, Any]) -> str:
    """Right on most items; wrong when the first operand is a multiple of 4; "I don't know" on
    item 5; deterministic, so a resumed run would get the same bytes."""
    m = re.search(r"What is (\d+) \+ (\d+)\?", last_user_content(body))
    assert m, body
    a, b = int(m.group(1)), int(m.group(2))
    if a == 5:
        return "I don't know."
    return f"The answer is {a + b + (1 if a % 4 == 0 else 0)}."


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=_responder, latency_s=0.005) as server:
        yield server


def _engines(fake: FakeOpenAI, **more: Any) -> dict[str, Any]:
    return {
        "reference": {"kind": "reference", "concurrency": 4},
        "fake": {
            "kind": "openai_chat",
            "base_url": fake.base_url,
            "model": "fake-model",
            "concurrency": 2,
            "max_retries": 1,
            "timeout_s": 10,
            "price_in_per_mtok": PRICE_IN,
            "price_out_per_mtok": PRICE_OUT,
        },
    } | more


def _raw(root: Path, suite: str, engine: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for f in sorted((root / "results/raw" / suite / engine).glob("*.parquet")):
        rows += pq.read_table(f).to_pylist()
    return rows


def _metric(section: dict[str, Any], name: str, **groups: str) -> dict[str, Any]:
    [m] = [
        m for m in section["analysis"]["metrics"] if m["metric"] == name and m["groups"] == groups
    ]
    return dict(m)


def _seal_and_commit(root: Path) -> None:
    out = cli(root, "seal").stdout
    assert "arith:" in out
    git(root, "add", "rubric.lock", ".sealedeval")
    git(root, "commit", "-qm", "Seal rubric")


@pytest.mark.slow
def test_two_engines_seal_run_publish_audit(tmp_path: Path, fake: FakeOpenAI) -> None:
    suite = arith_suite(
        graders=[{"name": "numeric"}, {"name": "exact"}],
        engines=["reference", "fake"],
        repeats=2,
        temperature=0.3,
        max_tokens=16,
        abstention="category",
        cluster_by="topic",
        analysis={"hypotheses": [{"id": "ceiling", "a": "reference", "b": "fake", "alpha": 0.1}]},
    )
    root = project(tmp_path / "myeval", {"arith": suite}, engines=_engines(fake))
    _seal_and_commit(root)
    cli(root, "run", "arith", "--no-progress")
    assert fake.count() == 12 * 2
    cli(root, "publish")
    audit = cli(root, "audit", check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "audit: passed" in audit.stdout

    result = json.loads((root / "results/result.json").read_text())
    section = result["suites"]["arith"]
    counts = section["seal"]["counts"]
    for eng in ("reference", "fake"):
        assert counts[eng]["requests"] == 24 and counts[eng]["complete"], counts
    # accuracy over items with its Wilson interval (numeric is primary: "The answer is 9.")
    wrong = {it["id"] for it in ARITH if int(it["input"].split(" + ")[0]) % 4 == 0}
    idk = {it["id"] for it in ARITH if it["input"].startswith("5 + ")}
    k = 12 - len(wrong) - len(idk)
    for eng, kk in (("reference", 12), ("fake", k)):
        acc = _metric(section, "accuracy", engine=eng)
        lo, hi = stats.wilson(kk, 12)
        # result.json writes 10 significant digits (canonical JSON)
        assert [acc["estimate"], acc["lo"], acc["hi"]] == pytest.approx([kk / 12, lo, hi], 1e-9)
        assert (acc["method"], acc["unit"], acc["n_ok"], acc["n_error"]) == (
            "wilson",
            "item",
            12,
            0,
        )
    a = section["analysis"]
    assert a["engines"]["fake"]["categories"]["abstained"] == 2 * len(idk)
    # exact is stricter than numeric on "The answer is 9." — the grader, not the model
    assert _metric(section, "pass_rate", engine="fake", grader="exact")["estimate"] == 0.0
    # the paired comparison and the pre-registered hypothesis
    [c] = a["comparisons"]
    assert (c["a"], c["b"], c["n_items"], c["a_better"], c["b_better"]) == (
        "reference",
        "fake",
        12,
        12 - k,
        0,
    )
    assert c["p"] == stats.sign_test(12 - k, 0)
    assert c["difference"] == pytest.approx((12 - k) / 12) and c["lo"] < c["difference"] < c["hi"]
    [h] = a["hypotheses"]
    # 4 discordant items: p = 1/16, below the pre-registered alpha 0.1 (not below 0.05)
    assert h["id"] == "ceiling" and h["p"] == pytest.approx(0.5 ** (12 - k)) and h["rejected"]
    assert (
        _metric(section, "accuracy_clustered", engine="fake", cluster_by="topic")["lo"] is not None
    )
    # cost and latency per solved item, recomputed from the raw rows and the prices
    raw = _raw(root, "arith", "fake")
    assert len(raw) == 24
    for r in raw:
        want = (r["tokens_in"] * PRICE_IN + r["tokens_out"] * PRICE_OUT) / 1e6
        assert r["cost_usd"] == pytest.approx(want) and r["cost_usd"] > 0
    cost = a["engines"]["fake"]["cost"]
    total = math.fsum(r["cost_usd"] for r in raw)
    latency = math.fsum(r["latency_s"] for r in raw)
    assert cost["cost_usd"] == pytest.approx(total)
    assert cost["cost_per_solved_item_usd"] == pytest.approx(total / k) and total > 0
    assert cost["latency_per_solved_item_s"] == pytest.approx(latency / k) and latency > 0
    assert _metric(section, "cost_per_solved_item_usd", engine="fake")["estimate"] > 0
    # the report: the suite's own section with the item-level table
    report = (root / "results/report.md").read_text()
    assert "## arith" in report and "### Paired comparisons" in report
    assert "| item | fake | reference |" in report  # the item table, engines sorted
    assert "| q04 | fail (0/2) | pass (2/2) |" in report
    assert (root / "results/scorecards/arith.csv").read_text().count("\n") == 1 + 48 * 2
    # a rerun asks for nothing
    before = fake.count()
    cli(root, "run", "arith", "--no-progress")
    assert fake.count() == before


@pytest.mark.slow
def test_a_judge_engine_grades_both_engines_answers(tmp_path: Path, fake: FakeOpenAI) -> None:
    labels = [
        {"item": "q01", "answer": "5", "label": "PASS"},
        {"item": "q01", "answer": "6", "label": "FAIL"},
        {"id": "L3", "item": "q02", "answer": "It is 7.", "label": "pass"},
    ]
    suite = arith_suite(
        graders=[
            {"name": "numeric"},
            {
                "name": "judge",
                "engine": "judge",
                "rubric": "The candidate gives the reference number.",
                "swap": True,
                "labels": "data/arith/labels.jsonl",
            },
        ],
        engines=["reference", "fake", "judge"],
        judge_only=["judge"],
    )
    engines = _engines(
        fake,
        judge={
            "kind": "reference",
            "model": "judge-ceiling",
            "price_in_per_mtok": 1.0,
            "price_out_per_mtok": 2.0,
        },
    )
    root = project(tmp_path / "judged", {"arith": suite}, engines=engines)
    write_jsonl(root / "data/arith/labels.jsonl", labels)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "labels")
    _seal_and_commit(root)
    lock = json.loads((root / "rubric.lock").read_text())["suites"]["arith"]["files"]
    for name in (
        "data/arith/labels.jsonl",
        ".sealedeval/tasks-arith.json",
        "pkg:sealedeval/graders/kinds/verdict.py",
        "pkg:sealedeval/graders/judge.py",
    ):
        assert name in lock
    cli(root, "run", "arith", "--no-progress")  # engines in order: the judge runs last
    judge_rows = _raw(root, "arith", "judge")
    conds = {r["condition"] for r in judge_rows}
    assert conds == {
        "judge/judge/calibration/candidate-last",
        "judge/judge/calibration/candidate-first",
        *(
            f"judge/judge/answers/{e}/{o}"
            for e in ("reference", "fake")
            for o in ("candidate-last", "candidate-first")
        ),
    }
    assert len(judge_rows) == 3 * 2 + 12 * 2 * 2
    assert not any(r["condition"] == "answer" for r in judge_rows)  # judge_only
    cli(root, "publish")
    audit = cli(root, "audit", check=False)
    assert audit.returncode == 0, audit.stdout

    section = json.loads((root / "results/result.json").read_text())["suites"]["arith"]
    assert section["seal"]["counts"]["judge"]["missing"] == 0
    j = section["analysis"]["judges"]["judge"]
    assert j["answers"]["reference"]["pass"]["k"] == 12
    # the ceiling judge passes an answer when it contains the target: the fake's right ones
    fake_right = 12 - sum(1 for it in ARITH if it["input"].startswith(("4 ", "8 ", "12 ", "5 ")))
    assert j["answers"]["fake"]["pass"]["k"] == fake_right
    assert j["answers"]["fake"]["order_consistent"]["rate"] == 1.0
    cal = j["calibration"]["variants"]
    assert set(cal) == {"candidate-last", "candidate-first", "swap_and_agree"}
    assert all(v["agreement"] == 1.0 and v["n"] == 3 for v in cal.values())
    m = _metric(
        section, "judge_human_agreement", grader="judge", judge="judge", variant="swap_and_agree"
    )
    assert (m["estimate"], m["method"]) == (1.0, "wilson")
    cost = section["analysis"]["engines"]["fake"]["cost"]
    assert cost["judging_cost_usd"] > 0
    assert cost["cost_per_solved_item_with_judging_usd"] > cost["cost_per_solved_item_usd"]
    _graded_by_chunk_is_graded_whole(root, "arith", tmp_path)


def _graded_by_chunk_is_graded_whole(root: Path, name: str, tmp: Path) -> None:
    """The grade stage a key-prefix bucket at a time (``stages.chunked``, as past 2^18 rows)
    writes the file the workflow wrote grading every row at once: each judge's replies in
    both orders, which sit in other rows and so other buckets, reach their answers."""
    from sealedeval.canonical import dumps
    from sealedeval.config import load_config
    from sealedeval.plugins import AnalyzeContext, get_suite
    from sealedeval.stages import artifacts, chunked, pipeline
    from sealedeval.store.raw import raw_files

    cfg = load_config(root)
    key = pipeline.stage_key(cfg, name)
    whole = artifacts.graded_path(root, name)
    assert artifacts.read_graded_meta(whole).get("stage_key") == key
    out = tmp / "by-chunk.parquet"

    def items_for(hashes: set[str]) -> Any:
        return pipeline.load_items(cfg, name, pipeline.hash_label(hashes).removeprefix("mixed:"))

    suite = get_suite(name, cfg)
    files = raw_files(root, name)
    n = chunked.grade_by_chunk(cfg, suite, files, items_for, out, {"stage_key": key}, bucket_rows=1)
    assert n == pq.ParquetFile(whole).metadata.num_rows
    assert out.read_bytes() == whole.read_bytes()
    # ... and the analysis reading those rows a bucket at a time is the workflow's analysis
    written = artifacts.read_analysis(artifacts.analysis_path(root, name))["analysis"]
    with chunked.row_chunks(suite, files, whole, bucket_rows=1) as found:
        assert found is not None
        src, hashes = found
        items = items_for(hashes)
        ctx = AnalyzeContext(cfg=cfg, items=items, graded=(), rows=(), chunks=src)
        assert dumps(suite.analyze(ctx)) == dumps(written)
