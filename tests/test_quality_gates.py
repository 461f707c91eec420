"""The quality gates CI holds the tree to: ruff (lint and format), mypy --strict, snakemake --lint.

They run as tests so `.ci/run` (the README's test command) enforces them from a fresh clone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(*cmd: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_ruff_check_is_clean() -> None:
    proc = _run(sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_is_clean() -> None:
    proc = _run(sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    proc = _run(sys.executable, "-m", "mypy", "--no-incremental")  # files/strict: pyproject
    assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.slow  # the real Snakemake parses the workflow
@pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing")
def test_snakemake_lint_is_clean() -> None:
    proc = _run("snakemake", "--lint", timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
