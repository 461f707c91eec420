"""The suite's presentation hooks render exactly what publish rendered before the redesign.

The expected outputs under ``fixtures/`` were generated once by the pre-redesign code (commit
fbf23e5, ``publish.bloodpanel_md``, ``publish.figures``, ``publish.scorecard``) with
``fixtures/make_present_fixtures.py``; the inputs (the bloodpanel section of
``tests/publish/result_pre_redesign.json``, ``present_section_b.json`` — two engines, repeats,
errors, a paired comparison — and ``present_graded.jsonl``) are the same for both. Report
text, every figure's name, caption and PNG/SVG bytes, and every scorecard's CSV text must be
identical.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from tests._added_label import assert_only_labelled, drawn_texts
from tests._added_label import with_added as _with_added

from sealedeval.plugins import ScorecardContext
from sealedeval.render.figures import render_bytes
from sealedeval.suites.bloodpanel.present.scorecard import COLUMNS
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"
EXPECTED = json.loads((FIX / "pre_redesign.json").read_text(encoding="utf-8"))


def _sections() -> dict[str, dict[str, Any]]:
    result = json.loads(
        (ROOT / "tests/publish/result_pre_redesign.json").read_text(encoding="utf-8")
    )
    return {
        "result_all": result["suites"]["bloodpanel"],
        "section_b": json.loads((FIX / "present_section_b.json").read_text(encoding="utf-8")),
    }


SECTIONS = _sections()


def _graded() -> list[dict[str, Any]]:
    lines = (FIX / "present_graded.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("tag", sorted(SECTIONS))
def test_report_section_is_the_pre_redesign_text(tag: str) -> None:
    expected = (FIX / f"present_report_{tag}.md").read_text(encoding="utf-8")
    assert BloodpanelSuite().report_sections(SECTIONS[tag]) == expected


@pytest.mark.slow
@pytest.mark.parametrize("tag", sorted(SECTIONS))
def test_figures_are_the_pre_redesign_bytes(tag: str) -> None:
    specs = BloodpanelSuite().figures(SECTIONS[tag])
    got = []
    for spec in specs:
        entry = {"name": spec.name, "caption": spec.caption}
        for fmt in ("png", "svg"):
            entry[f"{fmt}_sha256"] = hashlib.sha256(render_bytes(spec.draw(), fmt)).hexdigest()
        got.append(entry)
    assert got == EXPECTED["figures"][tag]


def test_scorecards_are_the_pre_redesign_csv_text() -> None:
    graded = _graded()
    cards = BloodpanelSuite().scorecards(
        ScorecardContext(graded=graded, section=SECTIONS["section_b"])
    )
    assert sorted(cards) == sorted(EXPECTED["scorecards"])
    for name, text in cards.items():
        assert text == (FIX / f"present_{name}").read_text(encoding="utf-8"), name
        assert hashlib.sha256(text.encode()).hexdigest() == EXPECTED["scorecards"][name]


def test_scorecards_cover_every_engine_header_only_without_rows() -> None:
    """An engine counted in the seal or configured but with no graded rows gets a header-only
    file; the profile is the analysis's headline profile."""
    section = json.loads(json.dumps(SECTIONS["section_b"]))
    section["seal"]["counts"]["waiting"] = {"requests": 0}
    section["analysis"]["design"]["cohorts"]["configured"] = "all"
    cards = BloodpanelSuite().scorecards(ScorecardContext(graded=_graded(), section=section))
    assert sorted(cards) == [
        "bloodpanel-configured.csv",
        "bloodpanel-local.csv",
        "bloodpanel-reference.csv",
        "bloodpanel-waiting.csv",
    ]
    for empty in ("bloodpanel-configured.csv", "bloodpanel-waiting.csv"):
        assert cards[empty] == ",".join(COLUMNS) + "\n"
    section["analysis"]["profile"] = "kantesti-v11"
    v11 = BloodpanelSuite().scorecards(ScorecardContext(graded=_graded(), section=section))[
        "bloodpanel-local.csv"
    ]
    rows = list(csv.DictReader(io.StringIO(v11)))
    assert rows and {r["profile"] for r in rows} == {"kantesti-v11"}
    assert BloodpanelSuite().scorecards(ScorecardContext(graded=[], section={"analysis": {}})) == {}


def test_presentation_is_not_sealed_and_not_loaded_by_the_core() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import sealedeval.suites.bloodpanel as bp; "
        "assert not any(m.startswith('sealedeval.suites.bloodpanel.present') for m in sys.modules)"
        "; bp.suite.report_sections; "
        "assert 'sealedeval.suites.bloodpanel.present' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    inputs = BloodpanelSuite().rubric_inputs()
    assert not any("present" in p for p in inputs)


def test_an_engine_added_after_the_seal_is_labelled_in_tables_and_figures() -> None:
    plain = SECTIONS["section_b"]
    assert "design" not in plain
    labelled = _with_added(plain, "local")
    text = BloodpanelSuite().report_sections(labelled)
    assert text != BloodpanelSuite().report_sections(plain)
    assert_only_labelled(BloodpanelSuite().report_sections(plain), text, "local")
    assert "| local (added after the seal) | reference |" in text  # the comparison's A column
    spec = next(s for s in BloodpanelSuite().figures(labelled) if s.name == "composite")
    texts = drawn_texts(spec.draw())
    assert "local (added after the seal)" in texts
    assert "reference" in texts and "local" not in texts
