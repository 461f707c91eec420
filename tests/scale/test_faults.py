"""Fault battery for ``sealedeval run`` → ``publish`` (issue #7), beyond tests/run:

* 20 seeded kill -9 points during one run, resumed each time → exactly one ok row per key and
  the same ``result.json`` analysis as an uninterrupted run (latency figures excepted: they
  are wall-clock measurements);
* 10 % mixed injected faults → every request ends ok or as a classified error, none dropped,
  and result.json's counts equal the raw error rows;
* a full disk (ENOSPC from the Parquet write, simulated in-process) → one clear line, exit 2,
  every committed part readable.

A 200 answer carrying an HTML error page is classified ``malformed`` by
``tests/engines/test_openai_chat_engine.py::test_malformed_html_error_page_with_200``.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.conftest import make_project
from tests.fakes import FakeOpenAI
from tests.run._support import cli_popen, run_cli, write_fake_config

from sealedeval.config import load_config
from sealedeval.plugins import RequestContext
from sealedeval.stages.run import plan
from sealedeval.store.raw import raw_dir, raw_files, read_raw
from sealedeval.store.schema import ERROR_KINDS

RUN = ("run", "golden", "--engine", "fake", "-c", "fake.yaml", "--no-progress")
PUBLISH = ("publish", "-c", "fake.yaml")


def _planned(root: Path) -> set[str]:
    cfg = load_config(root, ["fake.yaml"])
    p = plan(cfg, "golden")
    reqs = p.suite.requests(
        RequestContext(
            cfg=cfg, items=p.items, engine=cfg.engine("fake"), model="fake-model", seed=p.seed
        )
    )
    return {r.request_key for r in reqs}


def _rows(root: Path) -> list[dict[str, Any]]:
    files = raw_files(root, "golden")
    for f in files:  # every committed part is whole Parquet
        pq.ParquetFile(f).metadata  # noqa: B018
    rows: list[dict[str, Any]] = read_raw(files).to_pylist()
    return rows


def _result(root: Path) -> dict[str, Any]:
    proc = run_cli(root, *PUBLISH, timeout=180)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads((root / "results/result.json").read_text())
    return doc


def _strip_latency(x: Any) -> Any:
    """Wall-clock latency figures differ between any two runs; everything else must not."""
    if isinstance(x, dict):
        return {k: _strip_latency(v) for k, v in x.items() if "latency" not in k}
    if isinstance(x, list):
        return [_strip_latency(v) for v in x]
    return x


def _analysis(doc: dict[str, Any]) -> str:
    return json.dumps(_strip_latency(doc["suites"]["golden"]["analysis"]), sort_keys=True)


@pytest.mark.slow
def test_twenty_kill_9_points_then_resume(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    # 0.2 s per call at concurrency 4: an uninterrupted run takes seconds, so the kill points
    # (0.3-2.5 s after launch: in start-up, in planning or mid-dispatch) land while work
    # remains; at 20 ms a run finished inside the window once start-up got fast.
    with FakeOpenAI(latency_s=0.2) as fake:
        clean = make_project(tmp_path / "clean")
        write_fake_config(clean, fake.base_url, repeats=4, concurrency=4)
        assert run_cli(clean, *RUN, timeout=120).returncode == 0
        expected = _analysis(_result(clean))

        root = make_project(tmp_path / "killed")
        write_fake_config(root, fake.base_url, repeats=4, concurrency=4)
        planned = _planned(root)
        kills = 0
        for _ in range(20):
            p = cli_popen(root, *RUN)
            time.sleep(rng.uniform(0.3, 2.5))
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                kills += 1
            p.communicate(timeout=30)
        proc = run_cli(root, *RUN, timeout=120)
        assert proc.returncode == 0, proc.stderr
        rows = _rows(root)
        ok = Counter(r["request_key"] for r in rows if r["status"] == "ok")
        assert set(ok) == planned
        assert set(ok.values()) == {1}, "a key was answered ok twice"
        assert kills >= 10, f"only {kills} of 20 kill points landed during a run"
        assert _analysis(_result(root)) == expected


@pytest.mark.slow
def test_ten_percent_mixed_faults_all_accounted(tmp_path: Path) -> None:
    kinds = [
        "rate_limit",
        "server",
        "unavailable",
        "timeout",
        "reset",
        "malformed",
        "truncated",
        "html",
        "empty",
    ]
    with FakeOpenAI(
        fault_rate=0.10, fault_kinds=kinds, seed=7, hang_s=1.0, retry_after="0.01"
    ) as fake:
        root = make_project(tmp_path / "proj")
        write_fake_config(
            root, fake.base_url, repeats=9, concurrency=8, max_retries=1, timeout_s=0.4
        )
        planned = _planned(root)
        proc = run_cli(root, *RUN, timeout=180)
        assert proc.returncode == 0, proc.stderr
        assert fake.count() > len(planned)  # faults were injected (and some retried)
    rows = _rows(root)
    assert {r["request_key"] for r in rows} == planned, "a request was dropped"
    assert len(rows) == len(planned)  # one row per request: retries are attempts, not rows
    errors = [r for r in rows if r["status"] != "ok"]
    assert errors, "10% faults with one retry should leave some final errors"
    assert all(r["status"] == "error" and r["error_kind"] in ERROR_KINDS for r in errors)
    assert all(r["error_kind"] == "" for r in rows if r["status"] == "ok")
    counts = _result(root)["suites"]["golden"]["seal"]["counts"]["fake"]
    assert counts["requests"] == len(planned)
    assert counts["error"] == len(errors)
    assert counts["ok"] == len(planned) - len(errors)
    assert counts["complete"] is False


@pytest.mark.slow
def test_disk_full_is_one_clear_error_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sealedeval.store.raw as raw
    from sealedeval.cli import main

    real = raw.pq.write_table
    calls = {"n": 0}

    def write_table(table: Any, where: Any, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] <= 2:
            return real(table, where, **kw)
        with open(where, "wb") as fh:  # a half-written temp part, as a full disk leaves it
            fh.write(b"PAR1\x00\x00")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(raw.pq, "write_table", write_table)
    with FakeOpenAI() as fake:
        root = make_project(tmp_path / "proj")
        write_fake_config(root, fake.base_url, repeats=4, concurrency=4)
        monkeypatch.chdir(root)
        rc = main([*RUN[:-1], "--no-progress"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2
        assert len(err) == 1 and "No space left on device" in err[0], err
        d = raw_dir(root, "golden", "fake")
        assert not list(d.glob(".*.tmp")), "temp part left behind"
        parts = list(d.glob("part-*.parquet"))
        assert len(parts) == 2
        for p in parts:
            assert pq.read_table(p).num_rows > 0
        monkeypatch.setattr(raw.pq, "write_table", real)  # space freed: resume completes
        assert main([*RUN[:-1], "--no-progress"]) == 0
    assert {r["request_key"] for r in _rows(root) if r["status"] == "ok"} == _planned(root)
