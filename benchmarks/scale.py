"""Publish at scale: N raw rows (default 1,000,000) → result.json; seconds and peak RSS.

Not a test: it measures. In a throwaway sealed project (``tests.projects.make_project``) the
golden suite is configured on one ``openai_chat`` engine; its real requests are rendered (keys,
items, prompts) and their raw rows written synthetically with the real ``RAW_SCHEMA``
(reference answers, a response body with its own id, per-row timestamps and latency),
``--rows-per-part`` rows per Parquet part and ``--row-group`` rows per row group. Up to
``--render`` rows are genuine (golden renders ~4 KB of prompt per request, so a million genuine
requests need ~4 GB just to plan); beyond that the rendered rows are repeated with derived
keys and repeat numbers.

Two measurements, each in a child process (wall time and peak RSS, ``ru_maxrss``):

* ``harness`` — everything publish does with raw rows itself, at the full N: stream every part
  (``store.raw.latest_records``: column batches → compact ``RawRecord``s, latest per key,
  canonical order), the seal/attempt summary over every attempt row (column-wise in Arrow),
  and the manifest (row counts from Parquet footers, sha256 of each part);
* ``build`` — every stage after the calls, as the audit runs them (``stages.pipeline.derive``:
  items, golden's grading into the typed graded table, its analysis and request planning,
  the completeness summary) and publish's ``assemble`` (manifest, result.json, report.md),
  per phase, when N ≤ ``--build-max`` (default: always).

    python benchmarks/scale.py                         # 1,000,000 rows: harness + build
    python benchmarks/scale.py --n 20000               # by phase, each phase's peak RSS
    python benchmarks/scale.py --rows-per-part 100000 --row-group 20000
    python benchmarks/scale.py --n 10000000 --keep     # then --project DIR: the same rows again
    python benchmarks/scale.py --suite tasks --items 100000 --repeats 10 --engines 10
    python benchmarks/scale.py --project DIR --stages --build-max 0   # the rules as processes

``--suite tasks`` is the shape issue #28 names (items × repeats × engines of a sealed
``tasks`` suite, every request rendered and keyed for real, a fifth of the answers wrong);
the default is golden with its repeats raised until it has ``--n`` requests.

Part and row-group sizes, measured (harness at 1,000,000 rows; CPU seconds, the 2-core
machine was shared, load 6-8; the defaults are the best row):

    rows per part   row group   on disk   harness CPU
          8,192         8,192     49 MB      22.3 s    (the largest part `sealedeval run` cuts)
        100,000        20,000     46 MB      19.6 s    (default)
        100,000       100,000     37 MB      20.9 s
      1,000,000        20,000     46 MB      20.6 s

Reading is Python-bound (column → objects), so layout moves it by ~10 %: many small parts
cost a file open and footer each; one huge part gains nothing. Batches of 65,536 rows bound
Arrow's share of memory whatever the layout.

Targets (issue #7, issue #11 for the whole build): under 2 minutes and under 2 GB for
1,000,000 rows; issue #28 item 3: under 40 s and 1 GB for 1,000,000 rows (met since b005184),
under 10 minutes and 2 GB for 10,000,000 (both met since 5ade0d6: 100.4 s, 1,545 MB at
7f2807c; 98.4 s, 1,536 MB at d0a0c89; 101.2 s, 1,320 MB at 35db1f9; 107.5 s, 1,279 MB at
171523c; docs/benchmarks.md has
the figures, what moved them, and the workflow's own grade, analyze and publish stages at
10,000,000 rows: ``--stages``). The ``build`` measured here derives every stage in memory, as
the audit does; the workflow's grade and analyze stages read past 2^18 attempts a key-prefix
bucket of one engine at a time (``stages/chunked.py``), their peak flat in the rows:
``--stages`` measures those.

``--distinct-answers`` gives every plain answer its own text: golden grades each distinct
(task, answer) once, and the generated rows repeat 20,000 genuine answers, so the default run
measures the graders on those only; this flag measures them on every row (their worst case).

Measured (``python benchmarks/scale.py``, 1,000,000 rows, 2-core machine at load ~1-2,
2026-12-01):

    before (2b8ff32): harness 8.0 s, 1,347 MB; whole build 110.4 s, peak RSS 5,617 MB
        (golden grade 47 s, graded-table round trip 23 s, golden analyze 14 s; idle machine)
    after (3f56459):  harness 2.2 s,   471 MB; whole build  96.3 s, peak RSS 1,882 MB
        (grade stage 62.4 s: golden's graders into columns and the sort; normalise 1.6 s;
        golden analyze 26.1 s)
    again at c3f3d6e (load < 1): harness 2.4 s, 523 MB; whole build 94.5 s, 1,815 MB
        (grade stage 67.3 s, golden analyze 19.6 s)

What moved it: the latest row per key is chosen in Arrow on four columns and the others are
read only when a suite first asks for them (``store.raw.LatestRecord``), the grade stage takes
a suite's rows into columns as it yields them (``stages.artifacts.GradedRows``, golden's
``iter_grade``), and the graded round trip is a per-column type check. The analysis is slower
per row than over dicts (a row is a view: ~26 s against 14 s), the price of the memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# not this folder first: benchmarks/html.py would shadow the standard library's html module
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

# Peak RSS from VmHWM: ``ru_maxrss`` survives fork+exec on Linux, so a child of this (large)
# generator process would report the parent's peak, not its own.
PEAK = """
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
"""

HARNESS = (
    PEAK
    + """
import json, sys, time
from pathlib import Path
from sealedeval.publish.build import manifest
from sealedeval.stages.pipeline import _attempt_summary
from sealedeval.store.raw import latest_records, raw_files
root, name = Path(sys.argv[1]), sys.argv[2]
t0 = time.perf_counter()
rows = latest_records(raw_files(root, name))
t1 = time.perf_counter()
summary = _attempt_summary(raw_files(root, name))
t2 = time.perf_counter()
parts = manifest(root)
t3 = time.perf_counter()
assert len(rows) == sum(summary.rows_by_engine.values()) == sum(p["rows"] for p in parts)
print(json.dumps({"rows": len(rows), "read_s": t1 - t0, "summary_s": t2 - t1,
                  "manifest_s": t3 - t2, "total_s": t3 - t0, "parts": len(parts),
                  "rss_mb": peak_mb()}))
"""
)

BUILD = (
    PEAK
    + """
import json, sys, time
from pathlib import Path
import sealedeval.publish.build as B
import sealedeval.stages.pipeline as P
from sealedeval.config import load_config
from sealedeval.plugins import get_suite
phases, peaks = {}, {}
def timed(owner, name, label):
    f = getattr(owner, name)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - t
            peaks.setdefault(label, peak_mb())  # the process's peak when the phase first ends
    setattr(owner, name, g)
root, name = Path(sys.argv[1]), sys.argv[2]
cfg = load_config(root, ["scale.yaml"])
suite = type(get_suite(name, cfg))
timed(P, "latest_records", "read raw (harness)")
timed(P, "generate_items", "generate")
timed(P, "grade", "grade stage (the suite's graders, into columns, sorted)")
timed(P.artifacts, "normalize_graded", "graded normalise (per column)")
timed(suite, "analyze", "analyze")
timed(P, "planned_keys", "plan (planned keys)")
timed(P, "_attempt_summary", "seal summary (harness)")
timed(P, "stage_key", "stage key (raw sha256)")
timed(B, "manifest", "manifest (harness)")
timed(B, "dumps", "canonical JSON")
t0 = time.perf_counter()
docs = {n: P.derive(cfg, n).doc for n in B.published_suites(cfg)}
text, report = B.assemble(cfg, docs)
dt = time.perf_counter() - t0
(root / "results").mkdir(exist_ok=True)
(root / "results/result.json").write_text(text)
print(json.dumps({"build_s": dt, "phases": phases, "peaks": peaks, "bytes": len(text),
                  "rss_mb": peak_mb()}))
"""
)


def generate(
    root: Path, n: int, per_part: int, row_group: int, render: int, distinct: bool = False
) -> int:
    import yaml

    from sealedeval.config import load_config
    from sealedeval.plugins import RequestContext
    from sealedeval.stages.run import plan
    from sealedeval.store.raw import raw_dir

    def config(repeats: int) -> object:
        doc = {
            "engines": {
                "bulk": {
                    "kind": "openai_chat",
                    "model": "bulk-model",
                    "base_url": "http://127.0.0.1:9/v1",
                }
            },
            "suites": {"golden": {"engines": ["bulk"], "repeats": repeats}},
        }
        (root / "scale.yaml").write_text(yaml.safe_dump(doc))
        return load_config(root, ["scale.yaml"])

    def count(repeats: int) -> int:
        cfg = config(repeats)
        p = plan(cfg, "golden")
        return len(
            p.suite.requests(
                RequestContext(
                    cfg=cfg,
                    items=p.items,
                    engine=cfg.engine("bulk"),
                    model="bulk-model",
                    seed=p.seed,
                )
            )
        )

    one, two = count(1), count(2)  # requests grow linearly in repeats
    genuine = min(n, render)
    reps = max(1, -(-(genuine - (one - (two - one))) // (two - one)))
    cfg = config(reps)
    p = plan(cfg, "golden")
    ecfg = cfg.engine("bulk")
    base = p.suite.requests(
        RequestContext(cfg=cfg, items=p.items, engine=ecfg, model=ecfg.model, seed=p.seed)
    )[:genuine]
    out = raw_dir(root, "golden", "bulk")

    def reqs() -> Iterator[tuple[Any, str, int]]:
        """(request, key, repeat): the genuine ones, then copies with derived keys."""
        copy = 0
        while True:
            for r in base:
                if copy == 0:
                    yield r, r.request_key, r.repeat
                else:
                    key = hashlib.sha256(f"{r.request_key}/{copy}".encode()).hexdigest()[:32]
                    yield r, key, r.repeat + copy * (reps + 1)
            copy += 1

    stream = reqs()
    chunks = (
        [next(stream) for _ in range(min(per_part, n - start))] for start in range(0, n, per_part)
    )
    return write_parts(
        out, "golden", "bulk", ecfg, p.seal, chunks, per_part, row_group, p.suite, distinct
    )


def write_parts(
    out: Path,
    suite_name: str,
    engine: str,
    ecfg: Any,
    seal: Any,
    chunks: Iterator[list[tuple[Any, str, int]]],
    per_part: int,
    row_group: int,
    suite: Any,
    distinct: bool = False,
) -> int:
    """Raw parts of synthetic ok rows for chunks of (request, key, repeat): the suite's
    reference answer (every plain answer its own text with ``distinct``), a response body with
    its own id and usage, per-row timestamps and latency, as a real run stores them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sealedeval import __version__
    from sealedeval.canonical import compact
    from sealedeval.store.schema import RAW_SCHEMA

    ident = compact(ecfg.public())
    out.mkdir(parents=True, exist_ok=True)
    msg_cache: dict[int, str] = {}
    params_cache: dict[int, str] = {}
    start = 0
    for part, chunk in enumerate(chunks):
        cols: dict[str, list[object]] = {c: [] for c in RAW_SCHEMA.names}
        for j, (r, key, repeat) in enumerate(chunk, start):
            text = suite.reference_answer(r)
            if distinct and not text.startswith("{"):  # every plain answer its own text
                text = f"{text} (#{j})"
            m = msg_cache.setdefault(id(r.messages), compact(list(r.messages)))
            ms = 100 + j % 900
            t = f"2026-01-01T{j // 3_600_000 % 24:02d}:{j // 60_000 % 60:02d}:"
            response = {
                "id": f"chatcmpl-{j:012d}",
                "object": "chat.completion",
                "created": 1_767_225_600 + j // 1000,
                "model": ecfg.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": 100 + j % 37,
                    "completion_tokens": 5 + j % 11,
                    "total_tokens": 105 + j % 37 + j % 11,
                },
            }
            row = {
                "request_key": key,
                "suite": suite_name,
                "item_id": r.item_id,
                "condition": r.condition,
                "repeat": repeat,
                "seed": r.seed,
                "engine": engine,
                "engine_kind": "openai_chat",
                "model": ecfg.model,
                "engine_identity": ident,
                "params": params_cache.setdefault(id(r.params), compact(r.params)),
                "messages": m,
                "response": compact(response),
                "output_text": text,
                "trajectory": "[]",
                "finish_reason": "stop",
                "engine_path": "primary",
                "tokens_in": 100 + j % 37,
                "tokens_out": 5 + j % 11,
                "cost_usd": 0.0,
                "latency_s": ms / 1000,
                "started_at": f"{t}{j // 1000 % 60:02d}.{j % 1000:03d}000Z",
                "finished_at": f"{t}{j // 1000 % 60:02d}.{j % 1000:03d}{ms:03d}Z",
                "attempts": 1,
                "status": "ok",
                "error_kind": "",
                "error_message": "",
                "rubric_sha256": seal.rubric_sha256,
                "seal_commit": seal.seal_commit,
                "sealed": seal.sealed,
                "harness_version": __version__,
            }
            for k, v in row.items():
                cols[k].append(v)
        table = pa.table(cols, schema=RAW_SCHEMA)
        pq.write_table(
            table,
            out / f"part-{engine}-{part:05d}.parquet",
            compression="zstd",
            row_group_size=row_group,
        )
        start += len(chunk)
    return start


def generate_tasks(
    root: Path, items: int, repeats: int, engines: int, per_part: int, row_group: int
) -> int:
    """The issue's shape: a ``tasks`` suite of ``items`` arithmetic items, ``repeats`` runs
    each, on ``engines`` engines; every request rendered and keyed for real (one engine's at a
    time), sealed in the project. A fifth of the answers are wrong."""
    import yaml
    from tests.projects import git, sealedeval

    from sealedeval.config import load_config
    from sealedeval.plugins import RequestContext
    from sealedeval.stages.run import plan
    from sealedeval.store.raw import raw_dir

    data = root / "data/bulk/items.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    with data.open("w") as f:
        for i in range(items):
            a, b = i % 997, i // 997
            f.write(json.dumps({"id": f"q{i:07d}", "input": f"{a} + {b}", "target": a + b}) + "\n")
    names = [f"e{k}" for k in range(engines)]
    doc = {
        "engines": {
            n: {"kind": "openai_chat", "model": f"model-{n}", "base_url": "http://127.0.0.1:9/v1"}
            for n in names
        },
        "suites": {
            "bulk": {
                "kind": "tasks",
                "items": "data/bulk/items.jsonl",
                "prompt": "What is {input}? Reply with the number only.",
                "graders": [{"name": "exact"}],
                "engines": names,
                "repeats": repeats,
            }
        },
    }
    (root / "scale.yaml").write_text(yaml.safe_dump(doc))
    sealedeval(root, "seal", "-c", "config/config.yaml", "-c", "scale.yaml")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "scale suite")
    cfg = load_config(root, ["scale.yaml"])
    p = plan(cfg, "bulk")
    total = 0
    for n in names:
        ecfg = cfg.engine(n)
        reqs = p.suite.requests(
            RequestContext(cfg=cfg, items=p.items, engine=ecfg, model=ecfg.model, seed=p.seed)
        )

        class Wrong:
            """Every fifth item answered wrong (the reference answer plus one)."""

            def __init__(self, suite: Any) -> None:
                self.suite = suite

            def reference_answer(self, r: Any) -> str:
                text = str(self.suite.reference_answer(r))
                return f"{int(text) + 1}" if int(r.item_id[1:]) % 5 == 0 else text

        chunks = (
            [(r, r.request_key, r.repeat) for r in reqs[i : i + per_part]]
            for i in range(0, len(reqs), per_part)
        )
        total += write_parts(
            raw_dir(root, "bulk", n),
            "bulk",
            n,
            ecfg,
            p.seal,
            chunks,
            per_part,
            row_group,
            Wrong(p.suite),
        )
        del reqs
    return total


def _part_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def child(code: str, root: Path, suite: str, timeout: float) -> dict[str, Any] | str:
    """Run a measurement child; its JSON line, or why there is none."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(root), suite],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout:.0f} s"
    if proc.returncode != 0:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


STAGES = (
    ("grade", ("grade", "{suite}")),
    ("analyze", ("analyze", "{suite}")),
    ("publish", ("publish", "--jobs", "1", "--allow-incomplete")),
)
"""The workflow's rules after the calls, each its own process as Snakemake runs them."""


LAUNCH = """
import json, os, subprocess, sys, threading
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
timer = threading.Timer(float(sys.argv[1]), proc.kill)
timer.start()
_, status, usage = os.wait4(proc.pid, 0)
timer.cancel()
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "maxrss_kb": usage.ru_maxrss}))
"""
"""Runs a stage and reports its own peak. A process forked from this one inherits its peak in
``ru_maxrss`` (Linux keeps the larger across fork and exec), so after generating 4,000,000
rows every stage reported this process's 3.7 GB: the stage is forked from a small launcher."""


def stage(root: Path, args: tuple[str, ...], timeout: float) -> tuple[float, float] | str:
    """``sealedeval ARGS -c scale.yaml`` in the project: (wall seconds, peak RSS in MB of the
    process and the children it waited for: what ``/usr/bin/time`` reports), or why not."""
    cmd = [sys.executable, "-m", "sealedeval.cli", *args, "-c", "scale.yaml"]
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCH, str(timeout), *cmd],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            err.seek(0)
            return "launcher failed: " + (err.read().strip().splitlines() or ["?"])[-1]
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        if got["code"] < 0:
            return f"did not finish within {timeout:.0f} s"
        if got["code"] != 0:
            err.seek(0)
            return "failed: " + (err.read().strip().splitlines() or ["?"])[-1]
    return wall, got["maxrss_kb"] / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rows-per-part", type=int, default=100_000)
    ap.add_argument("--row-group", type=int, default=20_000)
    ap.add_argument("--render", type=int, default=20_000, help="genuine rows (rest repeated)")
    ap.add_argument("--build-max", type=int, default=10_000_000, help="full build only up to N")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument(
        "--suite",
        choices=["golden", "tasks"],
        default="golden",
        help="golden, its repeats raised to reach --n; or tasks: --items × --repeats × --engines",
    )
    ap.add_argument("--items", type=int, default=100_000, help="tasks: items")
    ap.add_argument("--repeats", type=int, default=10, help="tasks: repeats per item")
    ap.add_argument("--engines", type=int, default=1, help="tasks: engines")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--stages",
        action="store_true",
        help="then the workflow's grade, analyze and publish, each its own process: time, peak RSS",
    )
    ap.add_argument(
        "--project",
        type=Path,
        help="measure a project kept by an earlier --keep run (its rows; --n etc. are ignored)",
    )
    ap.add_argument(
        "--distinct-answers",
        action="store_true",
        help="every plain answer its own text (no two rows graded alike: the graders' worst case)",
    )
    a = ap.parse_args()
    from tests.projects import make_project

    suite = "bulk" if a.suite == "tasks" else "golden"
    if a.project is not None:
        root, tmp = a.project.resolve(), None
        rows, gen_s = sum(_part_rows(p) for p in (root / "results/raw").rglob("*.parquet")), 0.0
    else:
        tmp = Path(tempfile.mkdtemp(prefix="sealedeval-scale-"))
        root = make_project(tmp / "proj")
        t0 = time.perf_counter()
        if a.suite == "tasks":
            rows = generate_tasks(root, a.items, a.repeats, a.engines, a.rows_per_part, a.row_group)
        else:
            rows = generate(root, a.n, a.rows_per_part, a.row_group, a.render, a.distinct_answers)
        gen_s = time.perf_counter() - t0
    disk = sum(f.stat().st_size for f in (root / "results/raw").rglob("*.parquet"))
    print(
        f"rows {rows:,} ({min(rows, a.render):,} genuine) in parts of {a.rows_per_part:,} "
        f"(row groups {a.row_group:,}): {disk / 1e6:,.0f} MB on disk, generated in "
        f"{gen_s:.1f} s",
        flush=True,
    )
    h = child(HARNESS, root, suite, a.timeout)
    if isinstance(h, str):
        print(f"harness: {h}")
    else:
        print(
            f"harness (stream {h['parts']} parts → latest per key, seal summary, manifest): "
            f"{h['total_s']:.1f} s (read {h['read_s']:.1f}, summary {h['summary_s']:.1f}, "
            f"manifest {h['manifest_s']:.1f}), peak RSS {h['rss_mb']:,.0f} MB; "
            f"ratios to target: {h['total_s'] / 120:.2f}× of 120 s, "
            f"{h['rss_mb'] / 2048:.2f}× of 2048 MB",
            flush=True,
        )
    if rows <= a.build_max:
        b = child(BUILD, root, suite, a.timeout)
        if isinstance(b, str):
            print(f"whole build: {b}")
        else:
            print(
                f"whole build (every stage + publish) → result.json ({b['bytes']:,} bytes): "
                f"{b['build_s']:.1f} s, "
                f"peak RSS {b['rss_mb']:,.0f} MB; by phase: "
                + ", ".join(
                    f"{k} {v:.1f} s (peak so far {b['peaks'][k]:,.0f} MB)"
                    for k, v in b["phases"].items()
                )
            )
    else:
        print(
            f"publish.build: skipped above --build-max {a.build_max:,} rows (golden's "
            "grading, planning and all-k pass@k table dominate; see its phases at "
            "--n 20000)"
        )
    if a.stages:
        for name, args in STAGES:
            got = stage(root, tuple(x.format(suite=suite) for x in args), a.timeout)
            if isinstance(got, str):
                print(f"stage {name}: {got}", flush=True)
            else:
                print(f"stage {name}: {got[0]:.1f} s, peak RSS {got[1]:,.0f} MB", flush=True)
    if tmp is not None and not a.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
