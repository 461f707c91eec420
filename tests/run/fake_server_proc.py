"""FakeOpenAI as its own process, with marker faults and a request counter on stdin/stdout.

    python tests/run/fake_server_proc.py --latency-s 0.05 --faults '{"MARK": ["malformed"]}'

prints ``PORT <n>``; each ``count`` line on stdin is answered with one JSON line
``{"total": N, "by_fault": {...}}``; EOF on stdin stops the server.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.openai_server import FakeOpenAI


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency-s", type=float, default=0.0)
    ap.add_argument("--faults", default="{}")
    args = ap.parse_args()
    fake = FakeOpenAI(latency_s=args.latency_s, faults=json.loads(args.faults))
    fake.start()
    print(f"PORT {fake.port}", flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "count":
                with fake._lock:
                    by_fault = Counter(r.fault for r in fake.requests)
                print(
                    json.dumps({"total": sum(by_fault.values()), "by_fault": by_fault}), flush=True
                )
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
