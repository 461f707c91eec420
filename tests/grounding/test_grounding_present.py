"""The grounding presentation hooks give byte-identical output to the code before the redesign.

The expected outputs under ``fixtures/`` were generated once by the pre-redesign code
(``sealedeval.publish.grounding_md.render`` and the figure planner registered for grounding in
``sealedeval.publish.figures``, drawn with ``render_bytes``) from ``suites.grounding`` of
``tests/publish/result_pre_redesign.json``: ``present_report.md`` is the report section's text and
``present_figures.json`` each figure's name, caption and the sha256 of its PNG and SVG bytes.
Moving the presentation into the suite (``GroundingSuite.report_sections`` / ``figures``) must
not change a byte of what publish writes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from tests._added_label import assert_only_labelled, drawn_texts
from tests._added_label import with_added as _with_added

from sealedeval.plugins import get_suite, hook
from sealedeval.render.figures import FORMATS, render_bytes
from sealedeval.render.metrics import ADDED_LABEL as ADDED

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
RESULT = HERE.parent / "publish" / "result_pre_redesign.json"


@pytest.fixture(scope="module")
def section() -> dict[str, Any]:
    out: dict[str, Any] = json.loads(RESULT.read_text(encoding="utf-8"))["suites"]["grounding"]
    return out


def test_report_section_is_unchanged(section: dict[str, Any]) -> None:
    report_sections = hook(get_suite("grounding"), "report_sections")
    assert report_sections is not None
    want = (FIXTURES / "present_report.md").read_bytes().decode("utf-8")
    assert report_sections(section) == want


def test_figures_are_unchanged(section: dict[str, Any]) -> None:
    figures = hook(get_suite("grounding"), "figures")
    assert figures is not None
    want = json.loads((FIXTURES / "present_figures.json").read_text(encoding="utf-8"))["figures"]
    got = []
    for spec in figures(section):
        entry = {"name": spec.name, "caption": spec.caption}
        for fmt in FORMATS:
            entry[f"{fmt}_sha256"] = hashlib.sha256(render_bytes(spec.draw(), fmt)).hexdigest()
        got.append(entry)
    assert [g["name"] for g in got] == [w["name"] for w in want]
    assert got == want


def test_presentation_is_not_sealed() -> None:
    inputs = get_suite("grounding").rubric_inputs()
    assert not any("/present" in p for p in inputs)
    assert "pkg:sealedeval/suites/grounding/solvers.py" in inputs
    assert not any("run/chain" in p for p in inputs)


def test_an_engine_added_after_the_seal_is_labelled_in_tables_and_figures(
    section: dict[str, Any],
) -> None:
    report_sections = hook(get_suite("grounding"), "report_sections")
    figures = hook(get_suite("grounding"), "figures")
    assert report_sections is not None and figures is not None
    assert "design" not in section
    labelled = _with_added(section, "naive")
    text = report_sections(labelled)
    assert_only_labelled(report_sections(section), text, "naive")
    assert "### Engine `naive (added after the seal)`" in text
    spec = next(s for s in figures(labelled) if s.name == "track_a")
    texts = drawn_texts(spec.draw())
    assert any(t.startswith("naive (added after the seal)") for t in texts)
    assert not any(t.split(" ")[0] == "naive" and ADDED not in t for t in texts)
