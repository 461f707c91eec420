"""Latency-bound dispatch: N calls at engine latency L (jittered) and concurrency C.

Not a test: it measures. The ideal wall time is N·L/C (C calls always in flight, no harness
gap between one answer and the next request); the ratio wall / ideal says how much the
dispatcher loses to scheduling, retries bookkeeping and raw-store flushes. The wall is the
dispatch (engine start → last part fsynced); the figure with request rendering (prompts and
request keys, done before the first call) is printed beside it. The server is
``benchmarks/_server.py`` with ``--latency-ms L --jitter J`` in its own process; the client path
is the full one (``Dispatcher`` + ``OpenAIChatEngine`` + ``RawWriter``).

    python benchmarks/latency_bound.py                      # N=2000, L=200 ms ±50 %, C=64
    python benchmarks/latency_bound.py --n 5000 --latency-ms 100 --concurrency 256

Target (issue #7): wall within 1.15× of N·L/C.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _server import Server  # noqa: E402
from dispatch import sealed_path  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--jitter", type=float, default=0.5, help="uniform ± fraction of L")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    ideal = a.n * a.latency_ms / 1000 / a.concurrency
    walls, totals = [], []
    with Server(
        "--cpu", str(cpus[-1]), "--latency-ms", str(a.latency_ms), "--jitter", str(a.jitter)
    ) as srv:
        os.sched_setaffinity(0, {cpus[0]})
        tmp = Path(tempfile.mkdtemp(prefix="sealedeval-lat-"))
        for _ in range(a.reps):
            rate, dispatch_s = sealed_path(srv.base_url, a.n, a.concurrency, tmp)
            walls.append(dispatch_s)
            totals.append(a.n / rate)
        shutil.rmtree(tmp, ignore_errors=True)
    wall = statistics.median(walls)
    total = statistics.median(totals)
    print(
        f"N={a.n} L={a.latency_ms:.0f} ms ±{a.jitter:.0%} C={a.concurrency}: "
        f"dispatch wall {wall:.2f} s (runs {', '.join(f'{w:.2f}' for w in walls)}), "
        f"limit N·L/C = {ideal:.2f} s, ratio {wall / ideal:.3f}× (target ≤ 1.15); "
        f"with request rendering {total:.2f} s = {total / ideal:.3f}×"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
