"""Shared fixtures: a throwaway sealed project (a git repo) built from this repository's
config/ and data/, so tests exercise the real seal → run → publish → audit path offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

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


PROJECT_FILES = (
    "config",
    "data",
    "envs",
    "Snakefile",
    "rules",
    "profiles",
    "dvc.yaml",
    ".dvcignore",
)


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    e = (
        os.environ
        | {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }
        | (env or {})
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=e
    ).stdout.strip()


def sealedeval(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"sealedeval {' '.join(args)} → {proc.returncode}\n{proc.stderr}")
    return proc


def make_project(dest: Path, *, seal: bool = True, commit_lock: bool = True) -> Path:
    """Copy the project files into ``dest``, git init, seal and (optionally) commit the lock."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / ".gitignore").write_text("/results/\n/logs/\n/.snakemake/\n")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "project")
    if seal:
        sealedeval(dest, "seal")
        if commit_lock:
            git(dest, "add", "rubric.lock")
            git(dest, "commit", "-qm", "seal")
    return dest


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    def factory(name: str = "proj", **kw: bool) -> Path:
        return make_project(tmp_path / name, **kw)

    return factory
