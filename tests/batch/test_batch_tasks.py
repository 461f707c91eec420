"""A ``tasks`` suite through the OpenAI batch fake: the same answers, graded rows and result.json
numbers as a live run on the same fake answers (costs halved); and 10,000 items split at a small
configured limit."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.fakes.openai_server import FakeOpenAI, last_user_content
from tests.tasks._support import ARITH, arith_suite, git, project

from sealedeval.store.raw import latest_rows, raw_files, read_raw


def _responder(body: dict[str, Any]) -> str:
    """Right unless the first operand is a multiple of 4 (deterministic)."""
    m = re.search(r"What is (\d+) \+ (\d+)\?", last_user_content(body))
    assert m, body
    a, b = int(m.group(1)), int(m.group(2))
    return f"The answer is {a + b + (1 if a % 4 == 0 else 0)}."


def _main(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    assert rc == 0, (out + err)[-3000:]
    return out + err


def _engine(base_url: str, **over: Any) -> dict[str, Any]:
    return {
        "kind": "openai_chat",
        "base_url": base_url,
        "model": "fake-model",
        "concurrency": 2,
        "max_retries": 2,
        "timeout_s": 10,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "price_in_per_mtok": 3.0,
        "price_out_per_mtok": 15.0,
    } | over


def _seal(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _main(root, "seal", capsys=capsys)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")


def _normal(x: Any, costs: dict[str, float], path: str = "") -> Any:
    """``x`` with cost figures moved out into ``costs``, the engine names made one, and what
    a run's timing sets (latencies, wall times) left out."""
    metric = str(x.get("metric", "")) if isinstance(x, dict) else ""
    if "cost" in metric:  # a cost metric's estimate
        costs[f"{path}/{metric}"] = float(x["estimate"])
        x = {**x, "estimate": None}
    elif "latency" in metric:  # a batched row's latency is not a call's
        x = {k: v for k, v in x.items() if k in ("metric", "groups")}
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            nk = str(k).replace("bat", "live")
            if "cost" in nk and isinstance(v, int | float):
                costs[f"{path}/{nk}"] = float(v)
            elif "latency" not in nk:
                out[nk] = _normal(v, costs, f"{path}/{nk}")
        return out
    if isinstance(x, list):
        return [_normal(v, costs, f"{path}/{i}") for i, v in enumerate(x)]
    if isinstance(x, str):
        x = "live" if x == "bat" else x.replace("arith_bat", "arith_live")
        return x.replace('"name":"bat"', '"name":"live"').replace(',"batch":true', "")
    return x


@pytest.mark.slow
def test_tasks_batch_run_matches_live_result_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAI(responder=_responder) as fake:
        engines = {
            "live": _engine(fake.base_url),
            "bat": _engine(
                fake.base_url, batch=True, batch_poll_seconds=0.01, batch_max_requests=5
            ),
        }
        suites = {}
        for name, eng in (("live", "live"), ("bat", "bat")):
            suites[f"arith_{name}"] = arith_suite(
                engines=[eng],
                graders=[{"name": "numeric"}, {"name": "exact"}],
                repeats=2,
                temperature=0.3,
                max_tokens=16,
                cluster_by="topic",
            )
        root = project(tmp_path / "p", suites, engines=engines)
        _seal(root, capsys)
        for name in ("live", "bat"):
            _main(root, "run", f"arith_{name}", "--no-progress", capsys=capsys)
        assert fake.batch_creates() == -(-len(ARITH) * 2 // 5)
        for name in ("live", "bat"):
            _main(root, "grade", f"arith_{name}", capsys=capsys)
            _main(root, "analyze", f"arith_{name}", capsys=capsys)
        _main(root, "publish", capsys=capsys)
    rows = {}
    for name in ("live", "bat"):
        got = latest_rows(read_raw(raw_files(root, f"arith_{name}")).to_pylist()).values()
        rows[name] = {(r["item_id"], r["repeat"]): r for r in got}
    assert rows["live"].keys() == rows["bat"].keys() and len(rows["live"]) == 24
    for k, lr in rows["live"].items():
        br = rows["bat"][k]
        assert br["output_text"] == lr["output_text"] and br["status"] == lr["status"] == "ok"
        # the two suites' names differ, so do their seeds, and so the fake's completion ids
        assert {**json.loads(br["response"]), "id": ""} == {**json.loads(lr["response"]), "id": ""}
        assert br["cost_usd"] == pytest.approx(lr["cost_usd"] / 2) and lr["cost_usd"] > 0
    graded = {}
    for name in ("live", "bat"):
        t = pq.read_table(root / f"results/graded/arith_{name}.parquet").to_pylist()
        graded[name] = sorted(
            (r["item_id"], r["repeat"], r["grader"], r["status"], r["passed"], r.get("score"))
            for r in t
        )
    assert graded["live"] and graded["live"] == graded["bat"]
    res = json.loads((root / "results/result.json").read_text())
    lc: dict[str, float] = {}
    bc: dict[str, float] = {}
    live = _normal(res["suites"]["arith_live"]["analysis"], lc)
    bat = _normal(res["suites"]["arith_bat"]["analysis"], bc)
    diff = [(a, b) for a, b in zip(live["metrics"], bat["metrics"], strict=True) if a != b]
    assert live == bat, diff[:2]
    accuracy = [m for m in live["metrics"] if m["metric"] == "accuracy"]
    assert accuracy and 0 < accuracy[0]["estimate"] < 1  # some right, some wrong: a real test
    assert lc.keys() == bc.keys() and any(v > 0 for v in lc.values())
    for k, v in lc.items():
        assert bc[k] == pytest.approx(v / 2), k


@pytest.mark.slow
def test_ten_thousand_items_split_at_a_small_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n, limit = 10_000, 2_500
    items = [
        {"id": f"q{i:05d}", "input": f"{i} + {i + 3}", "target": 2 * i + 3, "topic": f"t{i % 3}"}
        for i in range(n)
    ]
    with FakeOpenAI(responder=_responder) as fake:
        eng = _engine(fake.base_url, batch=True, batch_poll_seconds=0.01, batch_max_requests=limit)
        suite = arith_suite(engines=["bat"], max_tokens=16)
        root = project(tmp_path / "p", {"arith": suite}, engines={"bat": eng}, items=items)
        _seal(root, capsys)
        t0 = time.monotonic()
        out = _main(root, "run", "arith", "--no-progress", capsys=capsys)
        took = time.monotonic() - t0
        sizes = [len(b.lines) for b in fake.batches.values()]
    assert sizes == [limit] * (n // limit)
    assert f"ok {n}, error 0" in out
    rows = latest_rows(read_raw(raw_files(root, "arith")).to_pylist())
    assert len(rows) == n and {r["status"] for r in rows.values()} == {"ok"}
    assert not any(r.path == "/v1/chat/completions" for r in fake.requests)
    print(f"10k batch run: {took:.1f} s")
