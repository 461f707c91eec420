"""A minimal sealed project for imported runs, and the audit's rows as a table (shared by the
lm-eval and promptfoo import tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import git

from sealedeval import cli
from sealedeval.store import ledger
from sealedeval.store.raw import raw_files


def make_project(root: Path, config: str, sources: Path, *, seal: bool = True) -> Path:
    """``config/config.yaml`` + the harness's task definition under ``tasks/``, sealed and
    committed (the seal then predates anything the harness runs afterwards)."""
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text(config)
    shutil.copytree(sources, root / "tasks")
    (root / ".gitignore").write_text("/results/\n/logs/\n__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    if seal:
        assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    return root


def publish_and_audit(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    """Publish, commit what the build wrote (the ledger), audit; the audit's exit code and
    its rows (check name → ``STATUS detail``)."""
    assert cli.main(["publish", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "ledger", "--allow-empty")
    capsys.readouterr()
    rc = cli.main(["audit", "--root", str(root)])
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines()[1:]:
        for status in ("PASS", "FAIL", "WARN"):
            if f"  {status}  " in line:
                name, detail = line.split(f"  {status}  ", 1)
                rows[name.strip()] = f"{status} {detail.strip()}"
    return rc, rows


def nothing_written(root: Path) -> bool:
    return raw_files(root) == [] and ledger.read(root) == []
