"""Regenerate ``result_all.json``: a real run of every suite on the reference engines.

    python tests/publish/make_fixture.py

Builds a throwaway sealed project (tests/conftest.make_project), runs the tiny profile with an
overlay that switches on what the figures draw (golden's branches and judge, two bloodpanel
repeats, grounding's naive baseline), and copies its result.json here. Seconds; no model.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.conftest import make_project  # noqa: E402

OVERLAY = """\
suites:
  golden:
    branches:
      A: {solver: single, tools: false}
      B: {solver: agent, tools: true, repeats: 2}
    branch_engines: [reference]
    agent: {max_steps: 4, max_tokens: 96, tools: [read_file, grep, list_files], final_answer: true}
    judge: {engines: [reference], variants: [v1, v2], transcripts: [A]}
  bloodpanel:
    repeats: 2
  grounding:
    engines: [reference, naive]
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp) / "proj")
        (root / "config/fixture.yaml").write_text(OVERLAY)
        proc = subprocess.run(
            [
                "snakemake",
                "results/result.json",
                "--cores",
                "2",
                "--configfile",
                "config/tiny.yaml",
                "config/fixture.yaml",
            ],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            print(proc.stderr[-4000:], file=sys.stderr)
            return 1
        shutil.copy(root / "results/result.json", HERE / "result_all.json")
    print(f"wrote {HERE / 'result_all.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
