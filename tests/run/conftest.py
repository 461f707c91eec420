"""Shared fixtures for the run-stage tests.

Puts the repo root on ``sys.path`` so ``tests.fakes`` imports however pytest is invoked, and
builds throwaway sealed projects (config + golden data copied from the repo, git, a seal).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.run._support import GIT_ENV, ROOT, git  # noqa: E402


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's own git calls (in-process and in subprocesses) see a clean git config."""
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def make_project(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Factory: a project dir with config/, data/, git; optionally sealed and committed."""

    def make(*, seal: bool = True, commit_lock: bool = True, name: str = "proj") -> Path:
        root = tmp_path / name
        root.mkdir()
        shutil.copytree(ROOT / "config", root / "config")
        # data/golden is what these tests run; the rest of data/ is copied too because
        # `sealedeval seal` seals every registered suite and each needs its inputs present.
        shutil.copytree(ROOT / "data", root / "data")
        (root / ".gitignore").write_text("results/\nlogs/\n", encoding="utf-8")
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "inputs")
        if seal:
            from sealedeval.cli import main

            assert main(["seal", "--root", str(root)]) == 0
            assert (root / "rubric.lock").exists()
            if commit_lock:
                git(root, "add", "rubric.lock")
                git(root, "commit", "-q", "-m", "Seal rubric")
        return root

    yield make
