"""A throwaway sealed project built from this repository's config/ and data/ (a git repo).

Apart from ``conftest.py`` and free of pytest, so the benchmarks, which measure in such a
project, run after README command (a) alone (no test dependencies installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

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


def sealedeval(
    cwd: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``sealedeval ARGS`` in ``cwd`` (``env``: variables added to this process's)."""
    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | dict(env or {}),
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


def snakemake(
    root: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``snakemake --cores 2 ARGS`` in ``root``, as a user runs it (``env``: the whole
    environment, where a test sets one)."""
    return subprocess.run(
        ["snakemake", "--cores", "2", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=None if env is None else dict(env),
    )
