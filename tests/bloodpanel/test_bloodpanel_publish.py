"""Publish on the tiny profile: result.json, report section, CSV scorecards, audit, determinism."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from tests.conftest import make_project

from sealedeval.cli import main
from sealedeval.suites.bloodpanel.present.scorecard import COLUMNS

TINY = "config/tiny.yaml"


def cli(root: Path, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([args[0], "--root", str(root), "-c", TINY, *args[1:]])
    return rc, out.getvalue() + err.getvalue()


@pytest.mark.slow
def test_tiny_publish_writes_deterministic_scorecards_and_report(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    assert cli(root, "run", "bloodpanel", "--no-progress")[0] == 0
    rc, out = cli(root, "publish")
    assert rc == 0, out
    card = root / "results/scorecards/bloodpanel-reference.csv"
    assert "results/scorecards/bloodpanel-reference.csv" in out
    first = card.read_bytes(), (root / "results/result.json").read_bytes()
    rows = list(csv.DictReader(io.StringIO(card.read_text())))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 16  # tiny: 4 curated + 12 generated, one answer each
    assert [r["case_id"] for r in rows] == sorted(r["case_id"] for r in rows)
    assert all(r["composite"] == "1.0000" and r["status"] == "ok" for r in rows)
    assert all(r["sections_hit"] == "7/7" and r["subsections_hit"] == "16/16" for r in rows)
    assert {r["engine_path"] for r in rows} == {"primary"} and {r["profile"] for r in rows} == {
        "sealed"
    }
    result = json.loads(first[1])
    a = result["suites"]["bloodpanel"]["analysis"]
    sample = a["engines"]["reference"]["review_sample"]
    assert sample["n"] == 10 and len(sample["case_ids"]) == 10
    assert set(sample["case_ids"]) <= {r["case_id"] for r in rows}
    report = (root / "results/report.md").read_text()
    assert "## bloodpanel — blood-test interpretation" in report
    assert "### Review sample" in report and "| reference | 10 | 16 |" in report
    assert "### Over-diagnosis on trap cases" in report
    # A second publish from the same raw runs gives the same bytes; the audit re-derives them.
    card.unlink()
    assert cli(root, "publish")[0] == 0
    assert (card.read_bytes(), (root / "results/result.json").read_bytes()) == first
    rc, out = cli(root, "audit")
    assert rc == 0, out
