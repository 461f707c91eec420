"""Shared fixtures for the run-stage tests.

Puts the repo root on ``sys.path`` so ``tests.fakes`` imports however pytest is invoked, and
builds throwaway sealed projects (config + golden data copied from the repo, git, a seal).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.run._support import GIT_ENV  # noqa: E402


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's own git calls (in-process and in subprocesses) see a clean git config."""
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def make_project(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Factory: a project dir with config/, data/, git; optionally sealed and committed."""
    from tests.conftest import make_project as build

    def make(*, seal: bool = True, commit_lock: bool = True, name: str = "proj") -> Path:
        return build(tmp_path / name, seal=seal, commit_lock=commit_lock)

    yield make
