"""golden's presentation, moved into the suite (``suites/golden/present``), renders exactly what
publish rendered before the move.

The expected outputs under ``tests/golden/fixtures/`` were generated once by the pre-redesign
code (commit fbf23e5: ``sealedeval.publish.golden_md.render`` and golden's entries of the old
``sealedeval.publish.figures.specs`` registry) with ``fixtures/make_present_fixture.py``, from
``tests/publish/result_pre_redesign.json``'s ``suites.golden`` section: ``golden_report.md`` is the
section's Markdown and ``golden_figures.json`` holds each figure's caption and the sha256 of its
PNG and SVG bytes (``render_bytes(spec.draw(), fmt)``). The hooks must reproduce them byte for
byte.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from tests._added_label import assert_only_labelled, drawn_texts
from tests._added_label import with_added as _with_added

from sealedeval.plugins import get_suite
from sealedeval.render.figures import render_bytes

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOLDEN = ROOT / "src" / "sealedeval" / "suites" / "golden"


def _section() -> dict[str, Any]:
    result = json.loads(
        (ROOT / "tests/publish/result_pre_redesign.json").read_text(encoding="utf-8")
    )
    section: dict[str, Any] = result["suites"]["golden"]
    return section


def _expected_figures() -> dict[str, Any]:
    out: dict[str, Any] = json.loads((FIXTURES / "golden_figures.json").read_text("utf-8"))
    return out


UNPRICED_SINCE = {
    "| $0.000000 / $0.000000 |": "| not priced |",
    "; $0 / $0 per Mtok in/out;": "; not priced;",
}
"""The one deliberate change since the redesign (issue 25): an engine without a price (the
fixture's reference engine) says "not priced" where its cost and price read "$0"."""


def test_report_sections_match_the_pre_redesign_text() -> None:
    want = (FIXTURES / "golden_report.md").read_text(encoding="utf-8")
    for old, new in UNPRICED_SINCE.items():
        assert old in want
        want = want.replace(old, new)
    assert get_suite("golden").report_sections(_section()) == want  # type: ignore[attr-defined]


def test_figure_names_and_captions_match_the_pre_redesign_specs() -> None:
    want = _expected_figures()
    specs = get_suite("golden").figures(_section())  # type: ignore[attr-defined]
    assert [s.name for s in specs] == want["order"]
    assert {s.name: s.caption for s in specs} == {
        n: f["caption"] for n, f in want["figures"].items()
    }


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_figure_bytes_match_the_pre_redesign_renders(fmt: str) -> None:
    want = _expected_figures()["figures"]
    specs = get_suite("golden").figures(_section())  # type: ignore[attr-defined]
    got = {s.name: hashlib.sha256(render_bytes(s.draw(), fmt)).hexdigest() for s in specs}
    assert got == {n: f[fmt] for n, f in want.items()}


def _imported(nodes: list[ast.stmt] | list[ast.AST]) -> set[str]:
    """Module names the import statements among ``nodes`` name (``from x import y``: x, x.y)."""
    mods: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            mods |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
    return mods


def test_sealed_modules_never_import_presentation() -> None:
    """``present/`` is not sealed, so no sealed module may depend on it when imported: the two
    hooks import it inside the method, and nothing sealed imports publish or matplotlib."""
    for path in sorted(GOLDEN.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = _imported(tree.body)
        everywhere = _imported(list(ast.walk(tree)))
        assert not [m for m in top if "present" in m], path.name
        assert not [m for m in everywhere if "publish" in m or "matplotlib" in m], path.name


def test_presentation_is_outside_the_seal() -> None:
    """The seal's expansion of golden's patterns (and the shared analysis inputs) covers the
    suite's modules but nothing under ``present/``."""
    from sealedeval.seal.lock import expand_inputs, suite_patterns

    sealed = expand_inputs(ROOT, suite_patterns(get_suite("golden").rubric_inputs()))
    assert "pkg:sealedeval/suites/golden/plan.py" in sealed
    assert (GOLDEN / "present" / "report.py").is_file()
    assert not [n for n in sealed if "/present/" in n or "/publish/" in n or "/render/" in n]


def test_an_engine_added_after_the_seal_is_labelled_in_tables_and_figures() -> None:
    suite = get_suite("golden")
    plain = _section()
    assert "design" not in plain
    labelled = _with_added(plain, "reference")
    text = suite.report_sections(labelled)  # type: ignore[attr-defined]
    assert_only_labelled(suite.report_sections(plain), text, "reference")  # type: ignore[attr-defined]
    spec = next(s for s in suite.figures(labelled) if s.name == "accuracy")  # type: ignore[attr-defined]
    assert "reference (added after the seal)" in drawn_texts(spec.draw())
