"""Snakemake end to end on config/tiny.yaml (reference engine: seconds, no model)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import sealedeval

pytestmark = [  # real Snakemake runs
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing"),
]


def snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["snakemake", "--cores", "2", "--configfile", "config/tiny.yaml", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_tiny_workflow_builds_audits_and_rebuilds_identically(
    project: Callable[..., Path],
) -> None:
    root = project()
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((root / "results/result.json").read_text())
    counts = result["suites"]["golden"]["seal"]["counts"]["reference"]
    assert counts["requests"] == 6 * (1 + 3) and counts["ok"] == counts["requests"]
    assert result["status"] == "pre-registered"
    assert (root / "results/graded/golden.parquet").exists()
    assert (root / "results/analysis/golden.json").exists()
    audit = sealedeval(root, "audit", "-c", "config/tiny.yaml", check=False)
    assert audit.returncode == 0, audit.stdout

    first = (root / "results/result.json").read_bytes(), (root / "results/report.md").read_bytes()
    for sub in ("items", "graded", "analysis", "result.json", "report.md"):
        p = root / "results" / sub
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    raw_before = sorted(p.name for p in (root / "results/raw").rglob("*.parquet"))
    proc = snakemake(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in (root / "results/raw").rglob("*.parquet")) == raw_before, (
        "rebuilding the analysis must not call the engine again"
    )
    again = (root / "results/result.json").read_bytes(), (root / "results/report.md").read_bytes()
    assert again == first


def test_workflow_refuses_unsealed_rubric(project: Callable[..., Path]) -> None:
    root = project(seal=False)
    proc = snakemake(root)
    assert proc.returncode != 0
    # Snakemake stops before any job: the seal is a declared input of generate and run.
    assert "rubric.lock" in proc.stdout + proc.stderr
    raw = root / "results/raw"
    assert not raw.exists() or not list(raw.rglob("*.parquet"))


def test_schema_rejects_bad_config_at_parse_time(project: Callable[..., Path]) -> None:
    root = project()
    bad = root / "config/bad.yaml"
    bad.write_text("engines:\n  reference:\n    kind: reference\n    concurrency: 0\n")
    proc = subprocess.run(
        ["snakemake", "--cores", "1", "--configfile", "config/bad.yaml", "-n"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "concurrency" in proc.stderr + proc.stdout
    cli = sealedeval(root, "run", "golden", "-c", "config/bad.yaml", check=False)
    assert cli.returncode == 2
    assert cli.stderr.count("\n") == 1 and "engines.reference.concurrency" in cli.stderr
