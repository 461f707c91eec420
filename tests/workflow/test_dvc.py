"""DVC: raw runs persist, and after a fresh clone + `dvc pull` Snakemake redoes no engine call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import git, sealedeval

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("dvc") is None or shutil.which("snakemake") is None,
        reason="dvc/snakemake missing",
    ),
]
ENV = os.environ | {"DVC_NO_ANALYTICS": "1"}


def run(cwd: Path, *cmd: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=900, env=ENV)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def parts(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "results/raw").rglob("*.parquet"))


def test_clone_pull_does_not_redo_engine_calls(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    root = project()
    remote = tmp_path / "remote"
    run(root, "dvc", "init", "-q")
    run(root, "dvc", "remote", "add", "-d", "store", str(remote))
    dvc_yaml = (root / "dvc.yaml").read_text()
    tiny = dvc_yaml.replace(
        "snakemake --cores 8 runs", "snakemake --cores 2 runs --configfile config/tiny.yaml"
    ).replace(
        "--allowed-rules generate analyze publish",
        "--allowed-rules generate analyze publish --configfile config/tiny.yaml",
    )
    assert tiny.count("--configfile config/tiny.yaml") == 2, "dvc.yaml's stage commands moved"
    (root / "dvc.yaml").write_text(tiny)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "dvc")
    run(root, "dvc", "repro")
    before = parts(root)
    assert before, "the runs stage produced no raw runs"
    result = (root / "results/result.json").read_bytes()
    run(root, "dvc", "push")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "runs")

    # dvc repro again: raw runs persist, nothing is re-requested.
    run(root, "dvc", "repro", "-f", "runs")
    assert parts(root) == before

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    run(clone, "dvc", "pull")
    assert parts(clone) == before
    # Arbitrary mtimes after a pull: make the seal look newer than the runs.
    os.utime(clone / "rubric.lock")
    ledgered = len((clone / "ledger.jsonl").read_text().splitlines())
    run(clone, "snakemake", "--cores", "2", "--configfile", "config/tiny.yaml")
    assert parts(clone) == before
    assert (clone / "results/result.json").read_bytes() == result
    # The items are generated again in the clone, so the run jobs rerun: as resume checks that
    # find every planned key answered and make no engine call (the ledger says so).
    entries = [json.loads(x) for x in (clone / "ledger.jsonl").read_text().splitlines()]
    assert all(e["ok"] + e["error"] == 0 and e["parts"] == [] for e in entries[ledgered:])
    audit = sealedeval(clone, "audit", "-c", "config/tiny.yaml", check=False)
    assert audit.returncode == 0, audit.stdout


def test_analysis_stage_never_calls_an_engine(project: Callable[..., Path]) -> None:
    root = project()
    proc = subprocess.run(
        [
            "snakemake",
            "--cores",
            "1",
            "--configfile",
            "config/tiny.yaml",
            "--allowed-rules",
            "generate",
            "analyze",
            "publish",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )
    assert proc.returncode != 0
    assert not (root / "results/raw").exists() or not parts(root)
