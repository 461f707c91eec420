"""Rewrite ``tests/durations.json`` from the ``--durations=0`` report of a pytest run.

    pytest -p no:cacheprovider --durations=0 > run.log   # serial, on a quiet machine
    python -m tests.durations run.log

The file maps a test's node id to its seconds (setup + call + teardown; the tests of
``MIN_S`` and more). A parallel run (``pytest -n 2``) hands out its work units, the test files,
longest first by it (``tests/conftest.py``); nothing else reads it, and no result depends on it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).with_name("durations.json")
MIN_S = 0.5
LINE = re.compile(r"^(?P<s>\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(?P<id>tests/\S.*)$")


def parse(text: str) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            total[m["id"]] += float(m["s"])
    return {k: round(v, 1) for k, v in sorted(total.items(), key=lambda kv: -kv[1]) if v >= MIN_S}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    found: dict[str, float] = {}
    for name in argv:
        found |= parse(Path(name).read_text(encoding="utf-8", errors="replace"))
    found = dict(sorted(found.items(), key=lambda kv: -kv[1]))
    OUT.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT.name}: {len(found)} tests of {MIN_S:g} s or more, {sum(found.values()):,.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
