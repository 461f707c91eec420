"""``sealedeval run`` against an engine that cannot answer: it stops within its first calls.

A closed loopback port (connection refused), a host name under ``.invalid`` (RFC 6761: never
resolves; only the local resolver is asked) and the loopback FakeOpenAI answering 401: each run
ends within a few calls with exit 2 and one line naming the engine, the reason and the URL,
every planned request has an error row of the failure's kind (the ones never called say so),
the ledger entry says ``failed`` with the reason, and ``sealedeval status`` says so too. After
the fix, a rerun asks every errored request again. A 503-then-ok engine does not trip it.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes import FakeOpenAI
from tests.run._support import run_cli, write_fake_config

from sealedeval.run.retry import TRIP_AFTER
from sealedeval.store import ledger
from sealedeval.store.raw import raw_files, read_raw

RUN = ("run", "golden", "--engine", "fake", "-c", "fake.yaml", "--no-progress")
N_TASKS = 20  # data/golden/tasks.yaml
PLANNED = N_TASKS * 2  # repeats=1: one answer and one follow-up per task
CONCURRENCY = 4
# Retry settings under which the old dispatcher made (1 + MAX_RETRIES) calls per request.
MAX_RETRIES = 4
WALL_BOUND_S = 60.0
"""Generous: interpreter start-up and the seal check on a loaded 2-core machine; the run's
own stop is asserted by the number of calls, not by time."""


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening: every connect is refused, and no other
    process can take the port while the test runs."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    try:
        yield int(s.getsockname()[1])
    finally:
        s.close()


def rows_of(root: Path) -> list[dict[str, Any]]:
    return read_raw(raw_files(root, "golden")).to_pylist()


def run_entries(root: Path) -> list[dict[str, Any]]:
    return [e for e in ledger.read(root) if e.get("kind") == "run"]


def status_outcome(root: Path) -> str:
    out = run_cli(root, "status", "-c", "fake.yaml")
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("golden ")]
    return line.split("  ")[-1].strip()


def config(root: Path, url: str, **engine: Any) -> None:
    write_fake_config(
        root, url, repeats=1, **{"concurrency": CONCURRENCY, "max_retries": MAX_RETRIES, **engine}
    )


def assert_stopped(
    root: Path, proc: Any, kind: str, reason: str, url: str, wall: float
) -> list[dict[str, Any]]:
    """The shared promises of a tripped run; returns its rows."""
    assert wall < WALL_BOUND_S
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"sealedeval: error: golden/fake: engine {reason} at {url} ("), err
    assert "circuit open after " in err and "recorded as errors without a call" in err
    rows = rows_of(root)
    assert len(rows) == PLANNED == len({r["request_key"] for r in rows})
    assert {r["status"] for r in rows} == {"error"}
    assert {r["error_kind"] for r in rows} == {kind}
    not_called = [r for r in rows if r["attempts"] == 0]
    assert all(r["error_message"].startswith("not called: circuit open after") for r in not_called)
    assert all(reason in r["error_message"] for r in not_called)
    # the old dispatcher called every request 1 + MAX_RETRIES times
    assert sum(r["attempts"] for r in rows) <= CONCURRENCY + TRIP_AFTER
    assert len(not_called) >= PLANNED - CONCURRENCY - TRIP_AFTER
    assert f"{len(not_called)} of {PLANNED} requests recorded as errors" in err
    (entry,) = run_entries(root)
    assert (entry["outcome"], entry["reason"]) == ("failed", reason)
    assert entry["ok"] == 0 and entry["error"] == PLANNED == entry["planned"]
    assert entry["errors_by_kind"] == {kind: PLANNED}
    assert status_outcome(root) == f"failed: {reason}"
    return rows


def resume_after_fix(root: Path) -> None:
    """Pointed at a working engine, the rerun asks every errored request again and is done."""
    with FakeOpenAI() as fake:
        config(root, fake.base_url)
        again = run_cli(root, *RUN)
        assert again.returncode == 0, again.stderr
        assert f"requested {PLANNED}, skipped (already ok) 0, ok {PLANNED}, error 0" in again.stderr
        assert fake.count() == PLANNED
    assert run_entries(root)[-1]["outcome"] == "done" and "reason" not in run_entries(root)[-1]
    assert status_outcome(root) == "done"


@pytest.mark.slow
def test_connection_refused_stops_within_the_first_calls(
    make_project: Callable[..., Path], closed_port: int
) -> None:
    root = make_project()
    url = f"http://127.0.0.1:{closed_port}/v1"
    config(root, url)
    t0 = time.perf_counter()
    proc = run_cli(root, *RUN, timeout=WALL_BOUND_S + 30)
    assert_stopped(
        root, proc, "connection", "unreachable: connection refused", url, time.perf_counter() - t0
    )
    # --allow-errors lets the exit pass, not the truth: the ledger still says failed
    allowed = run_cli(root, *RUN, "--allow-errors")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: golden/fake: engine unreachable: connection refused" in allowed.stderr
    assert run_entries(root)[-1]["outcome"] == "failed"
    resume_after_fix(root)


@pytest.mark.slow
def test_unresolvable_host_stops_within_the_first_calls(make_project: Callable[..., Path]) -> None:
    root = make_project()
    url = "http://nonexistent.invalid/v1"  # RFC 6761: .invalid never resolves
    config(root, url)
    t0 = time.perf_counter()
    proc = run_cli(root, *RUN, timeout=WALL_BOUND_S + 30)
    assert_stopped(
        root, proc, "connection", "unreachable: host name not resolved", url,
        time.perf_counter() - t0,
    )  # fmt: skip


@pytest.mark.slow
def test_rejected_key_stops_at_the_first_answer_and_is_never_written(
    make_project: Callable[..., Path],
) -> None:
    root = make_project()
    wrong = "sk-wrong-key-0123456789abcdef"
    with FakeOpenAI(api_key="sk-right-key-0123456789abcdef") as fake:
        config(root, fake.base_url, api_key_env="FAIL_FAST_TEST_KEY")
        t0 = time.perf_counter()
        proc = run_cli(root, *RUN, timeout=WALL_BOUND_S + 30, env={"FAIL_FAST_TEST_KEY": wrong})
        wall = time.perf_counter() - t0
        # only the first wave of calls (already in flight when the 401 came back) was sent
        assert 1 <= fake.count() == fake.count("auth") <= CONCURRENCY
        rows = assert_stopped(
            root, proc, "refused", "credentials rejected (HTTP 401)", fake.base_url, wall
        )
        assert sum(r["attempts"] for r in rows) == fake.count()
    called = [r for r in rows if r["attempts"] > 0]
    assert all(r["error_message"].startswith("HTTP 401: ") for r in called)
    assert all("***" in r["error_message"] for r in called)  # the echoed key, scrubbed
    written = json.dumps(rows, default=str) + (root / ledger.LEDGER_NAME).read_text()
    assert wrong not in written and wrong not in proc.stderr and wrong not in proc.stdout
    logs = [p for p in (root / "logs").rglob("*") if p.is_file()]
    assert not any(wrong in p.read_text(errors="replace") for p in logs)


@pytest.mark.slow
def test_transient_503_then_ok_does_not_trip(make_project: Callable[..., Path]) -> None:
    """The run's first calls all get 503 (more of them than ``TRIP_AFTER``, before any
    answer), then the engine answers: no circuit, every request ok after its retries."""
    root = make_project()
    n_503 = 2 * CONCURRENCY + TRIP_AFTER
    with FakeOpenAI(faults={"": ["unavailable"] * n_503}) as fake:
        # enough retries that no request can use them all up on 503s
        config(root, fake.base_url, fail_on_error=0, max_retries=n_503 + 1)
        proc = run_cli(root, *RUN, timeout=WALL_BOUND_S + 30)
        assert proc.returncode == 0, proc.stderr
        assert fake.count("unavailable") == n_503
        assert fake.count("ok") == PLANNED
    rows = rows_of(root)
    assert Counter(r["status"] for r in rows) == {"ok": PLANNED}
    assert max(r["attempts"] for r in rows) >= 2
    assert run_entries(root)[-1]["outcome"] == "done"
    assert status_outcome(root) == "done"
