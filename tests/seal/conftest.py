"""A real sealed project in a temp dir, built once per session and copied per test.

The template is what a careful evaluator leaves behind: inputs committed, ``sealedeval seal``
committed as its own commit, the tiny profile run on the reference engine, ``publish``ed, and the
raw runs + results committed on top. Each test gets a private copy (``.git`` included), plants one
failure, and audits it through the real CLI entry point.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sealedeval.cli import main
from sealedeval.store.schema import RAW_SCHEMA

REPO = Path(__file__).resolve().parents[2]
TINY = "config/tiny.yaml"
_ROW = re.compile(r"^(?P<name>.+?)\s+(?P<status>PASS|FAIL|WARN)\s+(?P<detail>.*)$")


@dataclass(repr=False)
class Audit:
    """One ``sealedeval audit`` invocation: exit code, parsed table, raw streams."""

    rc: int
    out: str
    err: str
    checks: dict[str, tuple[str, str]] = field(default_factory=dict)

    def status(self, name: str) -> str:
        return self.checks[name][0]

    def detail(self, name: str) -> str:
        return self.checks[name][1]

    def failing(self) -> set[str]:
        return {n for n, (s, _) in self.checks.items() if s == "FAIL"}

    def __repr__(self) -> str:  # shown by pytest when an assertion on it fails
        return f"audit rc={self.rc}\n{self.out}{self.err}"


class Project:
    """A project directory plus the few operations the tests need."""

    def __init__(self, root: Path, init_commit: str, seal_commit: str) -> None:
        self.root = root
        self.init_commit = init_commit
        self.seal_commit = seal_commit

    # -- git ------------------------------------------------------------------------------------
    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            check=False,
        )
        assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
        return proc.stdout.strip()

    def commit(self, message: str, *paths: str, env: dict[str, str] | None = None) -> str:
        self.git("add", "-A", "--", *(paths or (".",)))
        self.git("commit", "-q", "--no-verify", "-m", message, env=env)
        return self.git("rev-parse", "HEAD")

    # -- sealedeval -----------------------------------------------------------------------------
    def cli(self, command: str, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = main([command, "--root", str(self.root), *args])
        return rc, out.getvalue(), err.getvalue()

    def seal(self, *configs: str) -> None:
        """Seal the rubric and the design of each profile (none: the default config alone)."""
        for cfg in configs or (None,):
            rc, _, err = self.cli("seal", *(("-c", cfg) if cfg else ()))
            assert rc == 0, err

    def run(self, *args: str, configs: tuple[str, ...] = (TINY,)) -> int:
        cfg = [a for c in configs for a in ("-c", c)]
        rc, _, _ = self.cli("run", "golden", *cfg, "--no-progress", *args)
        return rc

    def publish(self, configs: tuple[str, ...] = (TINY,), *, not_as_sealed: str = "") -> None:
        """Publish; with ``not_as_sealed``, expect exit 1 and that text in the NOT AS SEALED
        line (the report is written and says so)."""
        cfg = [a for c in configs for a in ("-c", c)]
        rc, _, err = self.cli("publish", *cfg)
        if not_as_sealed:
            assert rc == 1, err
            assert "NOT AS SEALED: " in err and not_as_sealed in err, err
            status = json.loads(self.result_path.read_text(encoding="utf-8"))["status"]
            assert status.startswith("NOT AS SEALED: ") and not_as_sealed in status, status
        else:
            assert rc == 0, err

    def audit(self, *args: str, configs: tuple[str, ...] = (TINY,)) -> Audit:
        cfg = [a for c in configs for a in ("-c", c)]
        rc, out, err = self.cli("audit", *cfg, *args)
        a = Audit(rc, out, err)
        for line in out.splitlines()[1:]:
            m = _ROW.match(line)
            if m:
                a.checks[m["name"]] = (m["status"], m["detail"])
        return a

    # -- files ----------------------------------------------------------------------------------
    @property
    def result_path(self) -> Path:
        return self.root / "results" / "result.json"

    @property
    def report_path(self) -> Path:
        return self.root / "results" / "report.md"

    def parts(self) -> list[Path]:
        return sorted((self.root / "results" / "raw").rglob("part-*.parquet"))

    def read_part(self, path: Path) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = pq.read_table(path, schema=RAW_SCHEMA).to_pylist()
        return rows

    def write_part(self, path: Path, rows: list[dict[str, Any]]) -> None:
        pq.write_table(pa.Table.from_pylist(rows, schema=RAW_SCHEMA), path, compression="zstd")

    def all_rows(self) -> list[dict[str, Any]]:
        return [r for p in self.parts() for r in self.read_part(p)]


def _copy_inputs(dst: Path) -> None:
    shutil.copytree(REPO / "config", dst / "config")
    # data/golden is what the tiny profile needs; other suites' hand-written inputs are copied
    # too so `sealedeval seal` (which seals every registered suite) finds them as they land.
    for d in sorted((REPO / "data").iterdir()):
        if d.is_dir():
            shutil.copytree(d, dst / "data" / d.name)
    (dst / ".gitignore").write_text("/logs/\n__pycache__/\n", encoding="utf-8")


@pytest.fixture(scope="session")
def sealed_template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("sealed-template") / "proj"
    root.mkdir()
    _copy_inputs(root)
    p = Project(root, "", "")
    p.git("init", "-q")
    p.git("symbolic-ref", "HEAD", "refs/heads/main")
    for k, v in (
        ("user.name", "Seal Tester"),
        ("user.email", "seal@example.invalid"),
        ("commit.gpgsign", "false"),
        ("core.autocrlf", "false"),
    ):
        p.git("config", k, v)
    p.init_commit = p.commit("Inputs: config and golden data")
    p.seal()  # the rubric and the default profile's design ...
    p.seal(TINY)  # ... and the design of the profile the tests run
    p.seal_commit = p.commit("Seal rubric", "rubric.lock")
    assert p.run() == 0
    p.publish()
    p.commit("Raw runs, results and the run ledger", "results", "ledger.jsonl")
    return p


@pytest.fixture
def sealed(sealed_template: Project, tmp_path: Path) -> Iterator[Project]:
    """A private copy of the template (``.git`` included) for one test to tamper with."""
    root = tmp_path / "proj"
    shutil.copytree(sealed_template.root, root, symlinks=True)
    yield Project(root, sealed_template.init_commit, sealed_template.seal_commit)
