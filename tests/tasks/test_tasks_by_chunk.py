"""A ``tasks`` suite's analysis read a key-prefix bucket at a time (``stages.chunked``, as past
2^18 rows) is the analysis of every row at once, byte for byte: repeats, abstention, a judge
in two orders with calibration labels, comparisons and hypotheses, costs summed exactly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from tests.tasks._support import ARITH, write_jsonl

from sealedeval.config import Config
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext
from sealedeval.stages import artifacts, chunked
from sealedeval.stages.grade import ORDER
from sealedeval.store.raw import RawWriter, latest_records, raw_dir, raw_files
from sealedeval.store.schema import RAW_SCHEMA
from sealedeval.suites.tasks import TasksSuite

ORDERS = ("candidate-last", "candidate-first")


def dumps(doc: Any) -> str:
    """Every float to its last bit (the canonical form rounds them)."""
    return json.dumps(doc, sort_keys=True)


def _suite(root: Path) -> tuple[TasksSuite, Config, list[dict[str, Any]]]:
    items = [r | {"answerable": i != 11} for i, r in enumerate(ARITH)]
    write_jsonl(root / "data/items.jsonl", items)
    write_jsonl(
        root / "data/labels.jsonl",
        [
            {"item": "q01", "answer": "5", "label": "PASS"},
            {"item": "q02", "answer": "6", "label": "FAIL"},
            {"item": "q03", "answer": "9", "label": "PASS"},
        ],
    )
    section = {
        "kind": "tasks",
        "items": "data/items.jsonl",
        "prompt": "{input}",
        "repeats": 3,
        "abstention": "category",
        "graders": [
            {"name": "exact"},
            {"name": "numeric", "label": "num"},
            {
                "name": "judge",
                "engine": "j",
                "rubric": "The right number.",
                "swap": True,
                "labels": "data/labels.jsonl",
            },
        ],
        "engines": ["a", "b", "j"],
        "judge_only": ["j"],
        "comparisons": [["a", "b"]],
        "analysis": {"hypotheses": [{"a": "a", "b": "b", "direction": "greater"}]},
    }
    suite = TasksSuite("arith", section, root=root)
    cfg = Config(root=root, data={"project": {"seed": 1}}, sources=())
    return suite, cfg, suite.generate(GenerateContext(cfg=cfg, seed=5))


def _rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Both engines' answers (right, wrong, abstained, truncated or failed by position, with
    costs that do not sum exactly in floating point), the judge's verdict on most of them in
    both orders, and its calibration calls; sha256 hex keys, as real runs key their rows."""
    template = {c: "" for c in RAW_SCHEMA.names} | {
        "suite": "arith",
        "params": "{}",
        "messages": "[]",
        "response": "{}",
        "trajectory": "[]",
        "attempts": 1,
        "seed": 7,
        "sealed": True,
        "engine_path": "primary",
        "engine_kind": "reference",
        "finished_at": "2026-01-01T00:00:00Z",
        "started_at": "2026-01-01T00:00:00Z",
    }
    rows: list[dict[str, Any]] = []
    n = 0

    def add(engine: str, item: str, condition: str, repeat: int, text: str, **kw: Any) -> None:
        nonlocal n
        n += 1
        key = hashlib.sha256(f"{engine}/{condition}/{item}/{repeat}".encode()).hexdigest()[:32]
        rows.append(
            template
            | {
                "request_key": key,
                "engine": engine,
                "model": f"{engine}-model",
                "item_id": item,
                "condition": condition,
                "repeat": repeat,
                "status": "ok",
                "error_kind": "",
                "output_text": text,
                "tokens_in": 10 + n % 7,
                "tokens_out": 1 + n % 3,
                "cost_usd": 0.1 if n % 5 else 0.3,  # sums that round by the grouping
                "latency_s": 0.3 + 0.01 * (n % 13),
            }
            | kw
        )

    for engine in ("a", "b"):
        for i, it in enumerate(items):
            for rep in range(3):
                pick = (i * 3 + rep + (engine == "b")) % 6
                target = str(it["target"])
                if pick == 4:
                    add(engine, it["id"], "answer", rep, "", status="error", error_kind="timeout")
                    continue
                text = {0: target, 1: "0", 2: "I don't know.", 3: target, 5: f"It is {target}."}
                add(
                    engine,
                    it["id"],
                    "answer",
                    rep,
                    text[pick],
                    finish_reason="length" if pick == 5 else "stop",
                )
                for o, order in enumerate(ORDERS):
                    if (i + rep + o) % 7 == 3:
                        continue  # a verdict missing in one order
                    verdict = "PASS" if pick in (0, 3, 5) or (i + o) % 4 == 0 else "FAIL"
                    add(
                        "j",
                        it["id"],
                        f"judge/judge/answers/{engine}/{order}",
                        rep,
                        json.dumps({"verdict": verdict}),
                    )
    for label, verdict in (("q01#1", "PASS"), ("q02#2", "PASS"), ("q03#3", "FAIL")):
        for order in ORDERS:
            add("j", label, f"judge/judge/calibration/{order}", 0, verdict)
    return rows


@pytest.mark.parametrize("bucket_rows", [1, 8, 64], ids=["256-buckets", "32", "4"])
def test_the_analysis_by_chunk_is_the_analysis_of_all_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket_rows: int
) -> None:
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 40)
    suite, cfg, items = _suite(tmp_path)
    plain = sorted(_rows(items), key=lambda r: (r["engine"], r["request_key"]))
    w = RawWriter(raw_dir(tmp_path / "store", "arith", "all"), flush_rows=50, flush_s=3600)
    for r in plain:
        w.append(r)
    w.close()
    files = raw_files(tmp_path / "store", "arith")
    latest = latest_records(files)
    extra = {"suite": "arith", "suite_version": "1"}
    ctx = GradeContext(cfg=cfg, items=items, rows=latest)
    graded = artifacts.GradedRows.from_rows(suite.iter_grade(ctx), extra).sorted_by(ORDER)
    path = tmp_path / "graded.parquet"
    artifacts.write_graded(path, graded)
    whole = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=latest))
    # the test is not vacuous: every part of the analysis has something to read
    a = whole["engines"]["a"]
    assert a["n_error"] > 0 and a["truncated_answers"] > 0 and a["categories"]["abstained"] > 0
    assert whole["judges"]["judge"]["answers"]["a"]["n_missing"] > 0
    assert whole["judges"]["judge"]["calibration"]["variants"]["swap_and_agree"]["n"] == 3
    assert whole["hypotheses"] and whole["comparisons"]
    assert whole["engines"]["j"]["judging"]["n_total"] > 0
    with chunked.row_chunks(suite, files, path, bucket_rows=bucket_rows) as found:
        assert found is not None
        src, _ = found
        assert sum(1 for e in src.engines for _ in src.chunks(e)) > len(src.engines)
        ctx = AnalyzeContext(cfg=cfg, items=items, graded=(), rows=(), chunks=src)
        assert dumps(suite.analyze(ctx)) == dumps(whole)
    # ... and the whole analysis of the graded rows read back from the file is the same too
    back = artifacts.read_graded(path)
    assert dumps(
        suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=back, rows=latest))
    ) == dumps(whole)
