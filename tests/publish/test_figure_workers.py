"""publish's figure workers (``publish.figures.FigureJob`` with ``jobs > 1``): the first worker
forks the others, they claim figures from a shared counter and a thread of the caller's collects
them. What is checked: every figure arrives once with the bytes drawing it here gives, whatever
the number of workers; a figure that fails raises in the caller with the worker's traceback; a
worker that dies is an error, never a hang; closing early (or before submitting) leaves no
process behind.

The plan is replaced by small specs (``figures.specs`` is looked up when the first worker
plans, and forked workers inherit this process's monkeypatch), so each test draws in a second.
"""

from __future__ import annotations

import json
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest

from sealedeval.publish import figures
from sealedeval.render.figures import FigureSpec, new_figure


def _bars(k: int) -> Any:
    fig = new_figure(3.0, 2.0)
    ax = fig.add_subplot()
    ax.bar(range(k + 1), [(j + 1) / (k + 2) for j in range(k + 1)])
    ax.set_title(f"figure {k}")
    return fig


def _boom() -> Any:
    raise ValueError("no such column: 'rate'")


def _die() -> Any:
    os._exit(3)  # a worker killed while drawing (e.g. out of memory)


def _plan(draws: dict[str, Any]) -> Any:
    def specs(result: Any) -> list[tuple[str, FigureSpec]]:
        return [("toy", FigureSpec(name, f"caption of {name}", fn)) for name, fn in draws.items()]

    return specs


SIX = {f"f{k}": (lambda k=k: _bars(k)) for k in range(6)}


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _gone(pids: set[int], timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids):
            return True
        time.sleep(0.1)
    return False


def _logged(k: int, log: Path) -> Any:
    """Figure ``k``, drawn after noting who draws it (and a pause, so every worker gets some)."""
    with log.open("a") as f:
        f.write(f"{os.getpid()} {os.getppid()}\n")
    time.sleep(0.2)
    return _bars(k)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [2, 3])
def test_every_figure_arrives_once_as_drawn_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: int
) -> None:
    log = tmp_path / "drawers.txt"
    monkeypatch.setattr(
        figures, "specs", _plan({f"f{k}": partial(_logged, k, log) for k in range(6)})
    )
    monkeypatch.setattr(figures, "default_jobs", lambda: 4)
    with figures.FigureJob(jobs=1) as here:
        want = here.submit("{}").result()
    log.unlink()
    with figures.FigureJob(jobs=jobs) as job:
        assert job.jobs == jobs
        got = job.submit("{}").result()
    assert got == want and len(got) == 12
    drawers = {tuple(map(int, line.split())) for line in log.read_text().splitlines()}
    assert len(drawers) == jobs and os.getpid() not in {pid for pid, _ in drawers}
    # the first worker is this process's child; it forked the others (they inherit its imports)
    (first,) = [pid for pid, parent in drawers if parent == os.getpid()]
    assert all(parent == first for pid, parent in drawers if pid != first)
    assert _gone({pid for pid, _ in drawers})


def test_a_failing_figure_raises_in_the_caller_with_the_worker_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draws = {"ok0": SIX["f0"], "broken": _boom, "ok2": SIX["f2"]}
    monkeypatch.setattr(figures, "specs", _plan(draws))
    monkeypatch.setattr(figures, "default_jobs", lambda: 2)
    with figures.FigureJob(jobs=2) as job:
        job.submit(json.dumps({}))
        assert job.files(0)["png"].startswith(b"\x89PNG")
        assert job.files(2)["svg"].startswith(b"<?xml")  # the others are still drawn
        with pytest.raises(ValueError, match="no such column") as err:
            job.files(1)
        notes = "\n".join(getattr(err.value, "__notes__", []))
        assert "figure worker drawing toy_broken" in notes and "_boom" in notes


def test_a_worker_that_dies_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = {"ok0": SIX["f0"], "dies": _die, "ok2": SIX["f2"], "ok3": SIX["f3"]}
    monkeypatch.setattr(figures, "specs", _plan(draws))
    monkeypatch.setattr(figures, "default_jobs", lambda: 2)
    t0 = time.monotonic()
    with figures.FigureJob(jobs=2) as job:
        job.submit("{}")
        with pytest.raises(RuntimeError, match="toy_dies: the figure workers exited"):
            job.files(1)
        assert job.files(3)["png"].startswith(b"\x89PNG")  # the survivor drew the rest
        workers = _children()
    assert time.monotonic() - t0 < 60
    assert _gone(workers)


def test_closing_before_or_while_drawing_leaves_no_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slow = {f"s{k}": (lambda k=k: (time.sleep(0.3), _bars(k))[1]) for k in range(20)}
    monkeypatch.setattr(figures, "specs", _plan(slow))
    monkeypatch.setattr(figures, "default_jobs", lambda: 2)
    before = _children()
    job = figures.FigureJob(jobs=2)
    started = _children() - before
    job.close()  # never submitted: the first worker reads end-of-file and ends
    assert started and _gone(started)

    t0 = time.monotonic()
    job = figures.FigureJob(jobs=2)
    job.submit("{}")
    job.files(0)
    started = _children() - before
    job.close()  # 19 figures left: each worker stops after the one it is drawing
    assert time.monotonic() - t0 < 20 * 0.3  # not every figure drawn
    assert _gone(started)
