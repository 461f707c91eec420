"""Progress a user can see: the status line's format, its throttle, a real run's lines on the
file descriptor Snakemake's run rule opens, and the end-of-build table (``sealedeval status``)
from a tiny Snakemake build.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.fakes import FakeOpenAI
from tests.run._support import GIT_ENV, run_cli, write_fake_config

from sealedeval.run import progress as pg

CLI = (sys.executable, "-m", "sealedeval.cli")
LINE = re.compile(
    r"^(?P<label>\S+): (?P<done>\d+)/(?P<total>\d+) \((?P<pct>\d+)%\), ok (?P<ok>\d+), "
    r"error (?P<error>\d+)(?: \((?P<kinds>[^)]*)\))?(?:, (?P<skipped>\d+) already ok)?, "
    r"(?P<rate>[\d.]+|-)/s, (?:ETA (?P<eta>\S+)|done in (?P<took>\S+))$"
)


@dataclass
class Stats:
    ok: int = 0
    error: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_line_format_counts_kinds_rate_and_eta() -> None:
    line = pg.format_line(
        "golden/local", 120, 259, 118, 2, {"truncated": 1, "timeout": 1}, 60.0, skipped=5
    )
    assert line == (
        "golden/local: 120/259 (46%), ok 118, error 2 (timeout 1, truncated 1), "
        "5 already ok, 2.0/s, ETA 1m10s"
    )
    m = LINE.match(line)
    assert m and m["eta"] == "1m10s"
    final = pg.format_line("g/e", 10, 10, 10, 0, {}, 4.25, final=True)
    assert final == "g/e: 10/10 (100%), ok 10, error 0, 2.4/s, done in 4.2s"
    assert LINE.match(final)
    assert "\r" not in line + final and "\n" not in line + final


@pytest.mark.parametrize(
    ("done", "total", "elapsed", "want"),
    [(50, 100, 10.0, 10.0), (1, 4, 2.0, 6.0), (0, 10, 5.0, None), (3, 3, 9.0, 0.0)],
)
def test_eta_is_the_rate_so_far(done: int, total: int, elapsed: float, want: float) -> None:
    assert pg.eta(done, total, elapsed) == want


@pytest.mark.parametrize(
    ("s", "want"),
    [(None, "?"), (0.44, "0.4s"), (45.4, "45s"), (155, "2m35s"), (3720, "1h02m"), (-1, "?")],
)
def test_durations(s: float | None, want: str) -> None:
    assert pg.duration(s) == want


def _drive(total: int, per_call_s: float) -> tuple[list[str], list[float]]:
    """A dispatch of ``total`` calls of ``per_call_s`` each on a fake clock: the lines and the
    clock time at which each was written."""
    clock, out, times = Clock(), io.StringIO(), []
    stats = Stats()
    lines = pg.StatusLines("s/e", total, out, clock=clock)
    lines.start(stats)
    times.append(clock.t)
    for i in range(total):
        clock.t += per_call_s
        if i % 7 == 3:
            stats.error += 1
            stats.by_kind["timeout"] += 1
        else:
            stats.ok += 1
        if lines.update(stats):
            times.append(clock.t)
    lines.close(stats)
    times.append(clock.t)
    return out.getvalue().splitlines(), times


def test_fast_run_throttled_by_progress_and_min_gap() -> None:
    """10,000 calls in 10 s: one line per 5 % at most, never two within a second."""
    lines, times = _drive(10_000, 0.001)
    assert lines[0] == "s/e: starting 10000 calls"
    body = lines[1:]
    assert all(LINE.match(x) for x in body), body
    gaps = [b - a for a, b in itertools.pairwise(times[1:-1])]
    assert all(g >= pg.MIN_GAP_S - 1e-9 for g in gaps)
    assert 5 <= len(body) <= int(1 / pg.EVERY_FRACTION) + 1
    done = [int(LINE.match(x)["done"]) for x in body]  # type: ignore[index]
    assert done == sorted(done) and done[-1] == 10_000
    last = LINE.match(body[-1])
    assert last is not None and last["took"] == pg.duration(times[-1] - times[0])
    n_err = sum(1 for i in range(10_000) if i % 7 == 3)
    assert last["error"] == str(n_err) and last["kinds"] == f"timeout {n_err}"
    assert int(last["ok"]) + n_err == 10_000


def test_slow_run_gets_a_line_every_five_seconds_with_an_eta() -> None:
    """1,000 calls of 2 s: 5 % is 100 s, so mostly the time rule decides: every 5-6 s."""
    lines, times = _drive(1000, 2.0)
    mid = times[1:-1]
    gaps = [b - a for a, b in itertools.pairwise(mid)]
    # never longer than 5 s plus one call; shorter only where a 5 % mark fell due
    assert gaps and all(pg.MIN_GAP_S <= g < pg.EVERY_S + 2.0 for g in gaps)
    assert sum(1 for g in gaps if g < pg.EVERY_S) <= int(1 / pg.EVERY_FRACTION)
    m = LINE.match(lines[5])
    assert m is not None
    done, total = int(m["done"]), int(m["total"])
    # the ETA is (remaining calls) × 2 s, printed as minutes and seconds
    assert m["eta"] == pg.duration((total - done) * 2.0)


def test_a_second_phase_counts_only_its_own_calls() -> None:
    out, stats = io.StringIO(), Stats(ok=40, error=3, by_kind=Counter(malformed=3))
    lines = pg.StatusLines("s/e phase 2", 2, out, skipped=1, clock=Clock())
    lines.start(stats)
    stats.ok += 1
    lines.update(stats)
    stats.error += 1
    stats.by_kind["timeout"] += 1
    lines.update(stats)
    lines.close(stats)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("s/e phase 2: 2/2 (100%), ok 1, error 1 (timeout 1), 1 already ok")
    assert "malformed" not in last


def _status(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(root, "status", *args)


def _table(stdout: str) -> dict[tuple[str, str], dict[str, str]]:
    lines = [x for x in stdout.splitlines() if x.strip()]
    head_at = next(i for i, x in enumerate(lines) if x.startswith("suite "))
    header = re.split(r"\s{2,}", lines[head_at].strip())
    assert header == list(pg.STATUS_HEADER)
    out = {}
    for x in lines[head_at + 2 :]:
        cells = re.split(r"\s{2,}", x.strip())
        if len(cells) != len(header):  # the table ends; the build's summary follows
            break
        row = dict(zip(header, cells, strict=True))
        out[(row["suite"], row["engine"])] = row
    return out


@pytest.mark.slow
def test_run_writes_status_lines_to_the_fd_and_status_tabulates_errors_by_kind(
    make_project: Callable[..., Path],
) -> None:
    """A real run against the loopback OpenAI server with planted faults: the status fd gets
    clean lines (the log gets the bar), and ``sealedeval status`` shows the errors by kind."""
    root = make_project()
    faults = {
        "Did deploy 19 succeed?": ["malformed"],
        "How many deploys did mira make?": ["truncated"],
    }
    with FakeOpenAI(faults=faults) as fake:
        write_fake_config(root, fake.base_url, repeats=1)
        r, w = os.pipe()
        proc = subprocess.run(
            [*CLI, "run", "golden", "--engine", "fake", "-c", "fake.yaml", "--status-fd", str(w)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            pass_fds=(w,),
            env=os.environ | GIT_ENV,
        )
        os.close(w)
        with os.fdopen(r) as f:
            status = f.read()
    assert proc.returncode == 0, proc.stderr
    lines = status.splitlines()
    assert lines[0] == "golden/fake: starting 40 calls"
    assert "\r" not in status
    parsed = [LINE.match(x) for x in lines[1:]]
    assert all(parsed), lines
    last = parsed[-1]
    assert last is not None and last["took"] is not None
    assert (last["done"], last["ok"], last["error"]) == ("40", "38", "2")
    assert last["kinds"] == "malformed 1, truncated 1"

    table = _table(_status(root).stdout)
    row = table[("golden", "fake")]
    assert (row["planned"], row["ok"], row["skipped"], row["error"]) == ("40", "38", "0", "2")
    assert row["errors by kind"] == "malformed 1, truncated 1"
    assert row["outcome"] == "done"
    # a bad fd is one line, exit 2, and nothing is called
    bad = run_cli(root, "run", "golden", "--engine", "fake", "-c", "fake.yaml", "--status-fd", "97")
    assert bad.returncode == 2 and "--status-fd 97" in bad.stderr


def test_status_since_leaves_out_earlier_runs() -> None:
    entries = [
        {"kind": "run", "suite": "a", "engine": "x", "shard": [0, 1], "planned": 4, "ok": 4,
         "error": 0, "skipped": 0, "errors_by_kind": {}, "outcome": "done",
         "started_at": "2026-01-01T00:00:00.000000Z", "finished_at": "2026-01-01T00:00:03.500000Z"},
        {"kind": "import", "suite": "a", "engine": "x"},
        {"kind": "run", "suite": "a", "engine": "x", "shard": [1, 2], "planned": 2, "ok": 0,
         "error": 2, "skipped": 0, "outcome": "interrupted",
         "started_at": "2026-01-02T00:00:00.000000Z", "finished_at": "2026-01-02T00:02:05.000000Z"},
    ]  # fmt: skip
    assert [r[2] for r in pg.status_rows(entries)] == ["-", "2/2"]
    (row,) = pg.status_rows(entries, since="2026-01-02T00:00:00.000000Z")
    assert row == ["a", "x", "2/2", "2", "0", "0", "2", "not recorded", "2m05s", "interrupted"]
    assert pg.status_rows(entries, since="2027-01-01T00:00:00Z") == []


@pytest.mark.slow
def test_tiny_build_prints_progress_and_one_table_of_every_run(
    make_project: Callable[..., Path],
) -> None:
    """The tiny profile through Snakemake: each run's status lines reach Snakemake's stderr
    (not only logs/run/*.log) and the build ends with one table naming every run."""
    root = make_project()
    proc = subprocess.run(
        ["snakemake", "results/result.json", "--cores", "2", "--configfile", "config/tiny.yaml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env=os.environ | GIT_ENV,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = {("golden", "reference"), ("bloodpanel", "reference"), ("grounding", "reference")}
    for suite, engine in runs:
        # a status line is written whole, but Snakemake's own output (two jobs at once) may
        # not have ended its line when ours lands: taken from where the label starts
        label = f"{suite}/{engine}: "
        mine = [x[x.index(label) :] for x in proc.stderr.splitlines() if label in x]
        assert mine and mine[0].startswith(f"{label}starting "), (mine, proc.stderr[-2000:])
        assert LINE.match(mine[-1]) and "done in" in mine[-1]
        log = (root / f"logs/run/{suite}.{engine}.log").read_text()
        assert f"{suite}/{engine}: requested" in log  # the full log still goes to the file
    table = _table(proc.stdout)
    assert set(table) == runs
    for key in runs:
        assert table[key]["outcome"] == "done" and table[key]["error"] == "0"
        assert int(table[key]["ok"]) == int(table[key]["planned"]) > 0


def test_status_says_failed_with_the_reason_cut_to_its_width() -> None:
    base = {"kind": "run", "suite": "a", "engine": "x", "shard": [0, 1], "planned": 3, "ok": 0,
            "error": 3, "skipped": 0, "errors_by_kind": {"connection": 3},
            "started_at": "2026-01-01T00:00:00.000000Z",
            "finished_at": "2026-01-01T00:00:01.000000Z"}  # fmt: skip
    failed = {**base, "outcome": "failed", "reason": "unreachable: connection refused"}
    assert pg.status_rows([failed])[0][-1] == "failed: unreachable: connection refused"
    long = {**failed, "engine": "y", "reason": "r" * 200}
    cell = pg.status_rows([long])[0][-1]
    assert cell == "failed: " + "r" * (pg.REASON_CHARS - 1) + "…"
    assert pg.status_rows([{**base, "outcome": "done"}])[0][-1] == "done"
