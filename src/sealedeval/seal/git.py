"""Thin git queries. The seal is bound to git history, so these must fail loudly, not guess."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sealedeval.errors import UserError


def git(root: Path, *args: str, check: bool = True) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=60
        )
    except FileNotFoundError:
        raise UserError("git is not installed; the seal is bound to git history") from None
    if check and proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise UserError(f"{root}: git {' '.join(args[:2])}: {msg}")
    return proc.stdout.strip()


def is_repo(root: Path) -> bool:
    proc = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"], cwd=root, capture_output=True, text=True
    )
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def last_commit_touching(root: Path, relpath: str) -> str:
    return git(root, "log", "-1", "--format=%H", "--", relpath)


def is_clean(root: Path, relpath: str) -> bool:
    """Tracked and identical to HEAD (no staged or unstaged change)."""
    if not git(root, "ls-files", "--", relpath):
        return False
    return git(root, "status", "--porcelain", "--", relpath) == ""


def is_ancestor(root: Path, a: str, b: str) -> bool:
    proc = subprocess.run(
        ["git", "merge-base", "--is-ancestor", a, b], cwd=root, capture_output=True, text=True
    )
    return proc.returncode == 0


def commit_time(root: Path, rev: str) -> int:
    """Committer date as a UNIX time. Client-set: it proves order only together with anchors."""
    return int(git(root, "show", "-s", "--format=%ct", rev))


def show(root: Path, rev: str, relpath: str) -> str | None:
    proc = subprocess.run(
        ["git", "show", f"{rev}:{relpath}"], cwd=root, capture_output=True, text=True
    )
    return proc.stdout if proc.returncode == 0 else None


def file_history(root: Path, relpath: str) -> list[tuple[str, str]]:
    """(commit, text) of every committed version of ``relpath``, oldest first (first parent
    line of HEAD); empty outside a repository or when the file was never committed."""
    if not is_repo(root):
        return []
    out = git(root, "log", "--first-parent", "--format=%H", "--reverse", "--", relpath, check=False)
    versions = []
    for commit in out.split():
        text = show(root, commit, relpath)
        if text is not None:
            versions.append((commit, text))
    return versions
