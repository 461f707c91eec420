"""Publish at scale: N raw rows (default 1,000,000) → result.json; seconds and peak RSS.

Not a test: it measures. In a throwaway sealed project (``tests.conftest.make_project``) the
golden suite is configured with enough repeats on one ``openai_chat`` engine for N requests;
the real requests are rendered (so keys, items and planned-vs-present counts are genuine) and
their raw rows are written synthetically with the real ``RAW_SCHEMA`` (reference answers as
output, status ok), ``--rows-per-part`` rows per Parquet part and ``--row-group`` rows per row
group. Then ``sealedeval.publish.build.build`` runs in a child process whose peak RSS
(``ru_maxrss``) and wall time are reported, beside the generation time and bytes on disk.

    python benchmarks/scale.py                         # 1,000,000 rows
    python benchmarks/scale.py --n 100000 --rows-per-part 50000 --row-group 10000

Targets (issue #7): under 2 minutes and under 2 GB for 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CHILD = """
import json, resource, sys, time
from pathlib import Path
from sealedeval.config import load_config
from sealedeval.publish.build import build
root = Path(sys.argv[1])
t0 = time.perf_counter()
text, _ = build(load_config(root, ["scale.yaml"]))
dt = time.perf_counter() - t0
(root / "results").mkdir(exist_ok=True)
(root / "results/result.json").write_text(text)
print(json.dumps({"build_s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                  / 1024, "bytes": len(text)}))
"""


def generate(root: Path, n: int, per_part: int, row_group: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    from sealedeval import __version__
    from sealedeval.canonical import compact
    from sealedeval.config import load_config
    from sealedeval.run.runner import plan
    from sealedeval.store.raw import raw_dir
    from sealedeval.store.schema import RAW_SCHEMA

    n_items = 20
    reps = max(1, -(-n // n_items) - 1)
    doc = {
        "engines": {"bulk": {"kind": "openai_chat", "model": "bulk-model",
                             "base_url": "http://127.0.0.1:9/v1"}},
        "suites": {"golden": {"engines": ["bulk"], "repeats": reps}},
    }
    (root / "scale.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_config(root, ["scale.yaml"])
    p = plan(cfg, "golden")
    ecfg = cfg.engine("bulk")
    reqs = p.suite.requests(cfg, p.items, ecfg, ecfg.model, p.seed)[:n]
    ident = compact(ecfg.public())
    out = raw_dir(root, "golden", "bulk")
    out.mkdir(parents=True, exist_ok=True)
    msg_cache: dict[int, str] = {}
    for start in range(0, len(reqs), per_part):
        chunk = reqs[start : start + per_part]
        cols: dict[str, list[object]] = {c: [] for c in RAW_SCHEMA.names}
        for j, r in enumerate(chunk, start):
            text = p.suite.reference_answer(r)
            m = msg_cache.setdefault(id(r.messages), compact(list(r.messages)))
            # As a real run stores them: a response body with its own id and usage, and
            # per-row timestamps and latency (so no column is artificially constant).
            ms = 100 + j % 900
            t = f"2026-01-01T{j // 3_600_000 % 24:02d}:{j // 60_000 % 60:02d}:"
            response = {
                "id": f"chatcmpl-{j:012d}", "object": "chat.completion", "created": 1_767_225_600
                + j // 1000, "model": ecfg.model, "choices": [{"index": 0, "message": {
                    "role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100 + j % 37, "completion_tokens": 5 + j % 11,
                          "total_tokens": 105 + j % 37 + j % 11},
            }
            row = {
                "request_key": r.request_key, "suite": "golden", "item_id": r.item_id,
                "condition": r.condition, "repeat": r.repeat, "seed": r.seed, "engine": "bulk",
                "engine_kind": "openai_chat", "model": ecfg.model, "engine_identity": ident,
                "params": compact(r.params), "messages": m,
                "response": compact(response),
                "output_text": text, "trajectory": "[]", "finish_reason": "stop",
                "engine_path": "primary", "tokens_in": 100 + j % 37, "tokens_out": 5 + j % 11,
                "cost_usd": 0.0, "latency_s": ms / 1000,
                "started_at": f"{t}{j // 1000 % 60:02d}.{j % 1000:03d}000Z",
                "finished_at": f"{t}{j // 1000 % 60:02d}.{j % 1000:03d}{ms:03d}Z",
                "attempts": 1, "status": "ok",
                "error_kind": "", "error_message": "", "rubric_sha256": p.seal.rubric_sha256,
                "seal_commit": p.seal.seal_commit, "sealed": p.seal.sealed,
                "harness_version": __version__,
            }
            for k, v in row.items():
                cols[k].append(v)
        table = pa.table(cols, schema=RAW_SCHEMA)
        pq.write_table(table, out / f"part-bulk-{start // per_part:05d}.parquet",
                       compression="zstd", row_group_size=row_group)
    return len(reqs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rows-per-part", type=int, default=100_000)
    ap.add_argument("--row-group", type=int, default=20_000)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    from tests.conftest import make_project

    tmp = Path(tempfile.mkdtemp(prefix="sealedeval-scale-"))
    root = make_project(tmp / "proj")
    t0 = time.perf_counter()
    rows = generate(root, a.n, a.rows_per_part, a.row_group)
    gen_s = time.perf_counter() - t0
    disk = sum(f.stat().st_size for f in (root / "results/raw").rglob("*.parquet"))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root)], capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"rows {rows:,} in parts of {a.rows_per_part:,} (row groups {a.row_group:,}): "
          f"{disk / 1e6:,.0f} MB on disk, generated in {gen_s:.1f} s")
    print(f"publish.build → result.json ({doc['bytes']:,} bytes): {doc['build_s']:.1f} s, "
          f"peak RSS {max(doc['rss_mb'], child_rss):,.0f} MB (targets < 120 s, < 2048 MB)")
    if not a.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
