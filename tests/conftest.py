"""Shared fixtures: a throwaway sealed project (a git repo) built from this repository's
config/ and data/, so tests exercise the real seal → run → publish → audit path offline."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.projects import PROJECT_FILES, git, make_project, sealedeval  # noqa: E402

__all__ = ["PROJECT_FILES", "REPO", "git", "make_project", "sealedeval", "shared_fixture"]

SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
"""Third-party data the tests read but this repository does not commit (published benchmark
files under their own licences): ``../shared/fixtures/`` beside the checkout, where CI has it.
docs/bloodpanel.md, "Published Kantesti files", says where the public originals are."""


def shared_fixture(name: str, *files: str) -> Path:
    """``../shared/fixtures/<name>``; the calling test is skipped, naming the missing path,
    where it (or one of ``files`` inside it) is absent, so a checkout without the shared
    directory still runs everything else."""
    where = SHARED_FIXTURES / name
    for path in [where, *(where / f for f in files)]:
        if not path.exists():
            pytest.skip(
                f"third-party fixture {path} is absent (not committed here; docs/bloodpanel.md, "
                "'Published Kantesti files', says where the public original is)"
            )
    return where


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    def factory(name: str = "proj", **kw: bool) -> Path:
        return make_project(tmp_path / name, **kw)

    return factory
