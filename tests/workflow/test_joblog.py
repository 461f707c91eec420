"""`sealedeval --log FILE --job RULE ...`, the way every workflow rule runs the CLI: the output
goes to FILE, a failure's one line to the terminal (and to the build's closing table)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.projects import sealedeval


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return sealedeval(cwd, *args, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert cli(tmp_path, "init", "p").returncode == 0
    return tmp_path / "p"


@pytest.mark.slow
def test_a_failing_job_says_its_one_line_with_rule_and_log(project: Path) -> None:
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # not sealed yet: generate refuses
    proc = cli(
        project, "--log", "logs/generate/example.log", "--job", "generate", "generate", "example"
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    line = proc.stderr.strip()
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert line.startswith("generate example: sealedeval: error: rubric.lock")
    assert line.endswith("(logs/generate/example.log)")
    # the whole output, the error included, is in the log
    log = (project / "logs/generate/example.log").read_text()
    assert "sealedeval: error: rubric.lock" in log
    record = json.loads((project / "logs/failed-jobs.jsonl").read_text().splitlines()[-1])
    assert record["job"] == "generate example" and record["suite"] == "example"
    # the closing table of a build that began before it names the job and the reason
    status = cli(project, "status", "--since", since)
    assert status.returncode == 0
    assert f"  {line}" in status.stdout.splitlines()
    assert "nothing to call" not in status.stdout
    # ... and one that began after it does not
    later = cli(project, "status", "--since", "9999-01-01T00:00:00.000000Z")
    assert "failed jobs" not in later.stdout


def test_a_job_that_succeeds_writes_only_its_log(project: Path) -> None:
    proc = cli(project, "--log", "logs/suites.log", "--job", "suites", "suites")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert "golden" in (project / "logs/suites.log").read_text()
    assert not (project / "logs/failed-jobs.jsonl").exists()


def test_audit_keeps_its_table_on_the_terminal(project: Path) -> None:
    proc = cli(project, "--log", "logs/audit.log", "--job", "audit", "audit")
    assert proc.returncode != 0
    log = (project / "logs/audit.log").read_text()
    assert log and log in proc.stdout
    assert proc.stderr.strip().startswith("audit: ")
    assert proc.stderr.strip().endswith("(logs/audit.log)")
