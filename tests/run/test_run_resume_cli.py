"""``sealedeval run`` as a user runs it: resume after kill -9, error retry, seal refusals.

Each test builds a throwaway project (config + golden data copied from the repo, git, a committed
seal) and points an ``openai_chat`` engine named ``fake`` at a FakeOpenAI.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.fakes import FakeOpenAI
from tests.run._support import cli_popen, git, run_cli, write_fake_config

from sealedeval.config import load_config
from sealedeval.plugins import RequestContext, get_suite
from sealedeval.seal import lock, standing
from sealedeval.stages.run import plan
from sealedeval.store import ledger
from sealedeval.store.raw import latest_rows, raw_dir, raw_files, read_raw

HERE = Path(__file__).resolve().parent
RUN = ("run", "golden", "--engine", "fake", "-c", "fake.yaml", "--no-progress")
N_TASKS = 20  # data/golden/tasks.yaml


@dataclass
class FakeProc:
    proc: subprocess.Popen[str]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def counts(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("count\n")
        self.proc.stdin.flush()
        out: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return out

    def total(self) -> int:
        return int(self.counts()["total"])

    def settled_total(self) -> int:
        """The count once bytes a killed client left in its socket have reached the server."""
        last, deadline = self.total(), time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.total()
            if now == last:
                return now
            last = now
        raise AssertionError("the fake kept receiving requests after the client was killed")


@pytest.fixture
def fake_proc() -> Iterator[Callable[..., FakeProc]]:
    """Factory: FakeOpenAI in its own process (so killing the harness cannot touch it)."""
    started: list[FakeProc] = []

    def start(latency_s: float = 0.0, faults: dict[str, list[str]] | None = None) -> FakeProc:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "fake_server_proc.py"),
                "--latency-s",
                str(latency_s),
                "--faults",
                json.dumps(faults or {}),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        fp = FakeProc(proc, int(line.split()[1]))
        started.append(fp)
        return fp

    yield start
    for fp in started:
        assert fp.proc.stdin is not None
        fp.proc.stdin.close()
        try:
            fp.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fp.proc.kill()
            fp.proc.wait()


def planned_keys(root: Path) -> set[str]:
    cfg = load_config(root, ["fake.yaml"])
    p = plan(cfg, "golden")
    ecfg = cfg.engine("fake")
    return {
        r.request_key
        for r in p.suite.requests(
            RequestContext(cfg=cfg, items=p.items, engine=ecfg, model=ecfg.model, seed=p.seed)
        )
    }


def rows_of(root: Path) -> list[dict[str, Any]]:
    return read_raw(raw_files(root, "golden")).to_pylist()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``sealedeval ARGS`` in-process (the same ``main`` the console script calls), for the
    refusal paths where a subprocess would only add interpreter start-up time."""
    from sealedeval.cli import main

    def call(root: Path, *args: str) -> Result:
        capsys.readouterr()
        rc = main([args[0], "--root", str(root), *args[1:]])
        out, err = capsys.readouterr()
        return Result(rc, out, err)

    return call


def one_line_error(proc: Result | subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = proc.stderr.strip()
    assert "\n" not in err, err
    assert err.startswith("sealedeval: error: "), err
    assert "Traceback" not in err
    return err


# -- resume after kill -9 ---------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_then_resume_gives_exactly_one_ok_row_per_key(
    make_project: Callable[..., Path], fake_proc: Callable[..., FakeProc]
) -> None:
    root = make_project()
    srv = fake_proc(latency_s=0.05)
    write_fake_config(root, srv.base_url, repeats=4, concurrency=4)
    planned = planned_keys(root)
    assert len(planned) == N_TASKS * 5 == 100
    out_dir = raw_dir(root, "golden", "fake")

    p = cli_popen(root, *RUN)
    deadline = time.monotonic() + 60
    while not list(out_dir.glob("part-*.parquet")):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "no part was flushed within 60 s"
        time.sleep(0.005)
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    assert p.returncode == -signal.SIGKILL

    before = rows_of(root)  # every committed part is readable: none was half-written
    ok_before = {r["request_key"] for r in before if r["status"] == "ok"}
    assert 0 < len(ok_before) < 100, "the kill did not land mid-run"
    assert ok_before <= planned
    sent_before = srv.settled_total()
    orphans = sorted(f.relative_to(root).as_posix() for f in out_dir.glob("part-*.parquet"))
    assert ledger.read(root) == [], "a run killed with kill -9 never wrote its entry"

    second = run_cli(root, *RUN)
    assert second.returncode == 0, second.stderr
    # the resume lists the killed run's parts as adopted: the study's parts all answer to the
    # ledger again, and the publish/audit check finds nothing amiss
    entry = ledger.read(root)[-1]
    assert sorted(p["path"] for p in entry["adopted"]) == orphans
    assert sum(p["rows"] for p in entry["adopted"]) == len(before)
    assert standing.part_deviations(root, lock.read(root)) == []
    assert f"requested 100, skipped (already ok) {len(ok_before)}" in second.stderr
    # the resumed run asked exactly for what was not stored ok
    assert srv.total() - sent_before == 100 - len(ok_before)

    rows = rows_of(root)
    ok = Counter(r["request_key"] for r in rows if r["status"] == "ok")
    assert set(ok) == planned
    assert max(ok.values()) == 1, "a key was answered ok twice"
    assert all(r["status"] == "ok" for r in rows)
    assert {r["sealed"] for r in rows} == {True}
    commit = git(root, "log", "-1", "--format=%H", "--", "rubric.lock")
    assert {r["seal_commit"] for r in rows} == {commit}
    assert {r["rubric_sha256"] for r in rows} == {lock.read(root)["suites"]["golden"]["sha256"]}

    parts = sorted(out_dir.glob("part-*.parquet"))
    sent = srv.total()
    third = run_cli(root, *RUN)
    assert third.returncode == 0, third.stderr
    assert "requested 100, skipped (already ok) 100, ok 0, error 0" in third.stderr
    assert srv.total() == sent, "a complete run must not call the engine again"
    assert sorted(out_dir.glob("part-*.parquet")) == parts


@pytest.mark.slow
def test_errored_keys_are_retried_and_history_kept(make_project: Callable[..., Path]) -> None:
    root = make_project()
    faults = {
        "Did deploy 19 succeed?": ["malformed", "malformed"],
        "How many deploys did mira make?": ["truncated", "truncated"],
    }
    with FakeOpenAI(faults=faults) as fake:
        write_fake_config(root, fake.base_url, repeats=1)
        planned = planned_keys(root)
        assert len(planned) == N_TASKS * 2

        first = run_cli(root, *RUN)
        assert first.returncode == 0, first.stderr
        assert "ok 36, error 4 (malformed 2, truncated 2)" in first.stderr
        assert fake.count() == 40  # final kinds are not retried within a run
        rows1 = rows_of(root)
        failed = {r["request_key"]: r for r in rows1 if r["status"] == "error"}
        assert len(failed) == 4 and len(rows1) == 40
        assert sorted(r["error_kind"] for r in failed.values()) == [
            "malformed",
            "malformed",
            "truncated",
            "truncated",
        ]
        assert all(r["attempts"] == 1 for r in failed.values())
        trunc = [r for r in failed.values() if r["error_kind"] == "truncated"]
        assert all(r["output_text"].startswith("ANSWER: How many") for r in trunc)

        second = run_cli(root, *RUN)
        assert second.returncode == 0, second.stderr
        assert "requested 40, skipped (already ok) 36, ok 4, error 0" in second.stderr
        assert fake.count() == 44  # only the errored keys were asked again
        retried = {
            m["content"] for r in fake.requests[40:] for m in (r.body or {})["messages"][-1:]
        }
        assert retried == set(faults)

    rows = rows_of(root)
    assert len(rows) == 44
    # the old error rows stay as history ...
    history = [r for r in rows if r["request_key"] in failed]
    assert Counter(r["status"] for r in history) == {"error": 4, "ok": 4}
    assert {(r["request_key"], r["finished_at"]) for r in history if r["status"] == "error"} == {
        (k, r["finished_at"]) for k, r in failed.items()
    }
    # ... while the latest view is complete and all ok
    best = latest_rows(rows)
    assert set(best) == planned
    assert all(r["status"] == "ok" for r in best.values())
    assert Counter(r["request_key"] for r in rows if r["status"] == "ok") == dict.fromkeys(
        planned, 1
    )


# -- seal refusals ----------------------------------------------------------------------------


@pytest.fixture
def quiet_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _no_rows(root: Path) -> None:
    assert raw_files(root, "golden") == []


def test_refuses_without_rubric_lock(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI
) -> None:
    """As a subprocess: exit code and stderr exactly as a shell sees them."""
    root = make_project(seal=False)
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    err = one_line_error(run_cli(root, *RUN))  # the real console entry point
    assert "rubric.lock" in err and "missing" in err
    assert quiet_fake.count() == 0
    _no_rows(root)


def test_refuses_when_rubric_input_edited_after_seal(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    root = make_project()
    tasks = root / "data" / "golden" / "tasks.yaml"
    tasks.write_text(tasks.read_text(encoding="utf-8") + "# edited after the seal\n", "utf-8")
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    err = one_line_error(cli(root, *RUN))
    assert "data/golden/tasks.yaml" in err and "after the seal" in err
    assert quiet_fake.count() == 0
    _no_rows(root)


def test_refuses_when_new_rubric_input_appears_after_seal(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    root = make_project()
    (root / "data" / "golden" / "files" / "extra.txt").write_text("new fact\n", "utf-8")
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    err = one_line_error(cli(root, *RUN))
    assert "extra.txt" in err
    assert quiet_fake.count() == 0
    _no_rows(root)


def test_refuses_when_lock_not_committed(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    root = make_project(commit_lock=False)
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    err = one_line_error(cli(root, *RUN))
    assert "not committed" in err
    assert quiet_fake.count() == 0
    _no_rows(root)


@pytest.mark.slow
def test_refuses_when_reseal_not_committed(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    """Edit + re-seal makes the lock match the files again, but the new lock is uncommitted."""
    root = make_project()
    tasks = root / "data" / "golden" / "tasks.yaml"
    tasks.write_text(tasks.read_text(encoding="utf-8") + "# edited\n", "utf-8")
    from sealedeval.cli import main

    assert main(["seal", "--root", str(root)]) == 0
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    err = one_line_error(cli(root, *RUN))
    assert "not committed" in err
    assert quiet_fake.count() == 0


def test_unsealed_runs_and_marks_rows(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    root = make_project(seal=False)
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    proc = cli(root, *RUN, "--unsealed")
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(root)
    assert len(rows) == N_TASKS == quiet_fake.count()
    assert all(r["status"] == "ok" for r in rows)
    assert {r["sealed"] for r in rows} == {False}
    assert {r["seal_commit"] for r in rows} == {""}
    current = lock.compute(root, {"golden": get_suite("golden").rubric_inputs()})
    assert {r["rubric_sha256"] for r in rows} == {current["suites"]["golden"]["sha256"]}
    marker = json.loads((raw_dir(root, "golden", "fake") / "_run.json").read_text("utf-8"))
    assert marker["sealed"] is False and marker["ok_now"] == N_TASKS


# -- read-only results directory --------------------------------------------------------------


def test_read_only_results_dir_is_one_clear_error(
    make_project: Callable[..., Path], quiet_fake: FakeOpenAI, cli: Callable[..., Result]
) -> None:
    root = make_project()
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    out_dir = raw_dir(root, "golden", "fake")
    out_dir.mkdir(parents=True)
    out_dir.chmod(0o555)
    try:
        if os.access(out_dir, os.W_OK):
            pytest.skip("chmod does not restrict this user (root?)")
        proc = cli(root, *RUN)
        err = one_line_error(proc)
        assert str(out_dir) in err or "results/raw/golden/fake" in err, err
        assert "writ" in err  # "not writable" / "cannot write"
        assert list(out_dir.iterdir()) == []  # no part, no temp file, no marker
        assert quiet_fake.count() == 0
    finally:
        out_dir.chmod(stat.S_IRWXU)


@pytest.mark.slow
def test_unset_api_key_fails_before_anything_is_written(make_project: Callable[..., Path]) -> None:
    """A configured but unset key variable: one line, exit 2, and no raw directory left behind."""
    root = make_project()
    cfg = write_fake_config(root, "http://127.0.0.1:9/v1", api_key_env="SEALEDEVAL_NO_SUCH_KEY")
    env = {k: v for k, v in os.environ.items() if k != "SEALEDEVAL_NO_SUCH_KEY"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sealedeval.cli",
            "run",
            "golden",
            "--engine",
            "fake",
            "-c",
            str(cfg.relative_to(root)),
            "--no-progress",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "sealedeval: error: engine 'fake': environment variable SEALEDEVAL_NO_SUCH_KEY is not set"
    ]
    assert not raw_dir(root, "golden", "fake").exists()


@pytest.mark.parametrize("damage", ["not parquet", "no status column"])
def test_a_damaged_part_stops_the_resume_scan_with_one_line(
    make_project: Callable[..., Path],
    quiet_fake: FakeOpenAI,
    cli: Callable[..., Result],
    damage: str,
) -> None:
    """The resume scan reads four columns of every stored part: a part that is not Parquet, or
    lacks one of them, is named in one line (exit 2) before any call, and nothing is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = make_project()
    write_fake_config(root, quiet_fake.base_url, repeats=0)
    out_dir = raw_dir(root, "golden", "fake")
    out_dir.mkdir(parents=True)
    bad = out_dir / "part-20261130T000000-damaged-00000.parquet"
    if damage == "not parquet":
        bad.write_bytes(b"PAR1 this is not a parquet file")
        expected = "corrupt raw-run part"
    else:
        pq.write_table(pa.table({"request_key": ["k"], "rubric_sha256": ["x"]}), bad)
        expected = "corrupt raw-run part (no column 'status')"
    proc = cli(root, *RUN)
    err = one_line_error(proc)
    assert str(bad.relative_to(root)) in err or str(bad) in err, err
    assert expected in err, err
    assert sorted(p.name for p in out_dir.iterdir()) == [bad.name]  # no part, temp or marker
    assert quiet_fake.count() == 0
