"""What the reader of a report sees (issue 25, items 6 and 7): the sample view answers "why was
this wrong?" (the verdict first, the expected answer, the prompt, then the graders), an
unpriced engine's cost reads "not priced", no figure of a metric that is zero everywhere,
p-values below 0.001 read ``p < 0.001``, and the first page is a table and a forest figure per
suite in report.md, report.html and report.pdf.

The fixture is the real result.json of every suite on the reference engines (make_fixture.py);
its engines have no price, so every cost in it is unpriced.
"""

from __future__ import annotations

import copy
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from sealedeval.publish import first_page, generic, summary
from sealedeval.publish import html as rh
from sealedeval.publish.figures import specs, stem, summary_specs
from sealedeval.publish.report_md import APPENDIX, render_report
from sealedeval.render import comparisons as rc
from sealedeval.render import md
from sealedeval.render.figures import ForestRow, forest_figure, render_formats
from sealedeval.render.metrics import metric_table, no_figure_note, without_figure

HERE = Path(__file__).parent
RESULT: dict[str, Any] = json.loads((HERE / "result_all.json").read_text())


def _summary_page(text: str) -> str:
    return text.split("## Summary", 1)[1].split(APPENDIX, 1)[0]


# -- p-values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "want"),
    [
        (0.0004, "< 0.001"),
        (1e-12, "< 0.001"),
        (0.0, "< 0.001"),
        (0.001, "0.001"),
        (0.0456, "0.046"),
        (1.0, "1.000"),
        (None, "n/a"),
    ],
)
def test_p_values_below_a_thousandth_print_as_less_than(p: float | None, want: str) -> None:
    assert md.pval(p) == want
    if p is not None:
        assert md.p_text(p) == ("p " + want if want.startswith("<") else "p = " + want)


def test_every_p_printer_says_p_below_0001_and_never_0000() -> None:
    assert summary.verdict("greater", 0.4, 0.00002) == "supported (p < 0.001)"
    assert "adjusted p < 0.001" in summary.verdict("greater", 0.4, 1e-5, p_label="adjusted p")
    c = summary.Comparison("P1", "a > b", 0.4, 0.2, 0.6, 1e-5, 3e-5, 30, "supported")
    assert "unadjusted p < 0.001" in summary.comparison_text(c)
    record = {
        "name": "a vs b",
        "family": "primary",
        "n": 30,
        "a_better": 12,
        "b_better": 0,
        "ties": 18,
        "diff": 0.4,
        "lo": 0.2,
        "hi": 0.6,
        "p": 0.00049,
        "p_adj": 0.00098,
        "family_size": 2,
        "mde": 0.2,
        "power": 0.8,
        "n_needed_for_delta": 20,
        "delta": 0.1,
        "detectable": True,
        "mde_note": "",
    }
    row = rc.comparison_rows([record])[0]
    col = rc.HEADER.index
    assert row[col("p")] == "< 0.001" and row[col("p adjusted")] == "< 0.001 (Holm, of 2)"
    # a 0/1 record since issue #30 prints the mid-p beside its exact p, with the same printer
    assert rc.p_cell(record | {"p_midp": 0.00021}) == "< 0.001 (mid-p < 0.001)"
    assert "0.0000" not in rc.comparison_table([record])
    assert md.p_compact(0.00049) == "p<0.001" and md.p_compact(0.25) == "p=0.250"


# -- cost: "not priced" ------------------------------------------------------------------------


def test_unpriced_engines_say_not_priced_in_every_cost_cell() -> None:
    assert not md.priced({"price_in_per_mtok": 0, "price_out_per_mtok": 0})
    assert md.priced({"price_in_per_mtok": 0, "price_out_per_mtok": 2.5})
    assert md.price_text({"price_in_per_mtok": 0}) == md.NOT_PRICED
    assert md.price_text({"price_in_per_mtok": 1, "price_out_per_mtok": 2}) == "$1 / $2"
    report = render_report(RESULT)
    engines = report.split("## Engines", 1)[1].split("## Raw-run manifest", 1)[0]
    assert "| reference | reference | reference | not priced |" in engines
    assert "$0" not in engines
    metrics = [
        {
            "metric": "cost_usd",
            "groups": {"engine": e},
            "estimate": 0.0 if e == "free" else 0.0123,
            "lo": None,
            "hi": None,
            "method": "sum",
            "n_ok": 3,
            "n_error": 0,
            "n_total": 3,
            "unit": "request",
        }
        for e in ("free", "paid")
    ]
    table = metric_table(metrics, {"free"})
    assert "| cost_usd | engine=free | not priced | - |" in table
    assert "| cost_usd | engine=paid | 0.012 |" in table


def _tasks_like(cost: float) -> dict[str, Any]:
    """A suite section without presentation hooks: accuracy and a cost per engine."""
    ms = []
    for e, acc in (("a", 0.6), ("b", 0.8)):
        for name, est, unit in (("accuracy", acc, "item"), ("cost_usd", cost, "request")):
            ms.append(
                {
                    "metric": name,
                    "groups": {"engine": e},
                    "estimate": est,
                    "lo": est - 0.1 if name == "accuracy" else None,
                    "hi": est + 0.1 if name == "accuracy" else None,
                    "method": "wilson" if name == "accuracy" else "sum",
                    "n_ok": 5,
                    "n_error": 0,
                    "n_total": 5,
                    "unit": unit,
                }
            )
    counts = {e: {"requests": 5, "ok": 5, "error": 0, "missing": 0, "complete": True} for e in "ab"}
    return {"seal": {"counts": counts}, "analysis": {"metrics": ms}}


def test_no_figure_of_a_metric_that_is_zero_everywhere_and_the_section_says_why() -> None:
    unpriced = _tasks_like(0.0)
    names = [s.name for s in generic.figure_specs("mine", unpriced)]
    assert names == ["metric-accuracy"]
    assert without_figure(unpriced["analysis"]["metrics"]) == ["cost_usd"]
    engines = {e: {"price_in_per_mtok": 0, "price_out_per_mtok": 0} for e in "ab"}
    text = generic.report_section("mine", unpriced, engines)
    assert "No figure of `cost_usd`: zero or undefined for every engine (cost: not priced)." in (
        text
    )
    assert "| cost_usd | engine=a | not priced | - |" in text
    # a priced run keeps its cost figure and its dollars
    priced = _tasks_like(0.25)
    assert [s.name for s in generic.figure_specs("mine", priced)] == [
        "metric-accuracy",
        "metric-cost-usd",
    ]
    assert no_figure_note(priced["analysis"]["metrics"]) == ""
    paid = {e: {"price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0} for e in "ab"}
    assert "not priced" not in generic.report_section("mine", priced, paid)
    # undefined everywhere counts too
    undefined = copy.deepcopy(unpriced)
    for m in undefined["analysis"]["metrics"]:
        if m["metric"] == "accuracy":
            m.update(estimate=None, lo=None, hi=None)
    assert generic.figure_specs("mine", undefined) == []


def test_golden_and_tasks_sections_say_not_priced() -> None:
    from sealedeval.suites.tasks.present.report import _money

    assert _money(0.0, 0.0) == md.NOT_PRICED and _money(0.5, 1.0) == "$0.500000"
    appendix = render_report(RESULT).split(APPENDIX, 1)[1]
    golden = appendix.split("\n## golden", 1)[1].split("\n## ", 1)[0]
    assert "$0.000000" not in golden and "not priced" in golden


# -- the sample view ---------------------------------------------------------------------------


def _raw(key: str, item: str, out: str) -> dict[str, Any]:
    return {
        "request_key": key,
        "engine": "e",
        "condition": "answer",
        "item_id": item,
        "repeat": 0,
        "status": "ok",
        "output_text": out,
        "messages": json.dumps([{"role": "user", "content": f"question {item}?"}]),
    }


def _graded(key: str, item: str, grader: str, passed: bool, category: str, **extra: Any) -> Any:
    return {
        "request_key": key,
        "engine": "e",
        "item_id": item,
        "condition": "answer",
        "repeat": 0,
        "status": "ok",
        "grader": grader,
        "grader_version": "1",
        "score": float(passed),
        "passed": passed,
        "category": category,
        "details": "{}",
        **extra,
    }


def test_the_sample_carries_its_expected_answer_and_its_own_verdict() -> None:
    raw = [_raw("k1", "i1", "Paris is nice"), _raw("k2", "i2", "4")]
    graded = [  # the primary grader fails, a lenient one passes: the verdict is the primary's
        _graded("k1", "i1", "exact", False, "wrong", grader_id="strict"),
        _graded("k1", "i1", "includes", True, "wrong", grader_id="lenient"),
        _graded("k2", "i2", "exact", True, "correct", grader_id="strict"),
        _graded("k2", "i2", "includes", True, "correct", grader_id="lenient"),
    ]
    items = {"i1": {"id": "i1", "gold": "Paris"}, "i2": {"id": "i2", "gold": ["4", "four"]}}
    view = rh.SampleView(primary_grader="strict", target_field="gold")
    k1, k2 = rh.suite_samples("s", raw, graded, items, view)
    assert k1["target"] == {"field": "gold", "value": "Paris"}
    assert k2["target"] == {"field": "gold", "value": ["4", "four"]}
    assert k1["verdict"] == {"word": "wrong", "grader": "exact", "passed": False, "tone": "fail"}
    assert k2["verdict"]["word"] == "correct" and k2["verdict"]["tone"] == "pass"
    index = rh.sample_index([k1, k2])
    labels, cols = index["labels"], index["cols"]
    assert [labels["primary"][c] for c in cols["primary"]] == ["wrong", "correct"]
    assert cols["tone"] == ["fail", "pass"]
    assert "verdict: wrong" in [labels["verdict"][c] for c in cols["verdicts"][0]]
    detail = rh.chunk_samples(rh.unpack(rh.sample_chunks([k1, k2])[0]))[0]
    assert detail["target"]["value"] == "Paris" and detail["verdict"]["word"] == "wrong"
    # without a named field: the first of TARGET_FIELDS the item has; without a primary: the
    # category every row shares; graders that disagree with no primary are counted
    plain = rh.suite_samples("s", raw, graded, {"i1": {"id": "i1", "answer": "Paris"}})
    assert plain[0]["target"] == {"field": "answer", "value": "Paris"}
    assert plain[0]["verdict"]["word"] == "wrong" and plain[1]["target"] is None
    split = [_graded("k1", "i1", "a", True, ""), _graded("k1", "i1", "b", False, "")]
    assert rh.suite_samples("s", raw[:1], split)[0]["verdict"]["word"] == "1/2 graders pass"


def test_sample_view_knows_where_each_suite_keeps_verdict_and_answer() -> None:
    golden = rh.sample_view("golden", RESULT["suites"]["golden"])
    assert golden == rh.SampleView(primary_grader="regex", target_field="answer")
    tasks_like = {"analysis": {"design": {"primary": "strict"}}, "design": {"x": {}}}
    tasks_like["design"]["x"] = {"parameters": {"target_column": "gold"}}
    assert rh.sample_view("not-installed", tasks_like) == rh.SampleView("strict", "gold")


def test_the_sample_view_shows_verdict_then_answer_then_prompt_then_graders() -> None:
    """report.js builds a sample's view in the order a reader asks "why was this wrong?": its
    own verdict, the expected answer beside the response, the prompt, the graders' details;
    and it lists the primary verdict, not a count of passing graders."""
    js = rh._asset("report.js")
    body = js[js.index("function showSample") : js.index("function openFromHash")]
    marks = ['"sample-verdict"', '"Expected answer"', '"Response"', '"Prompt"', '"Graders (']
    at = [body.index(m) for m in marks]
    assert at == sorted(at), marks
    assert body.index('"Graders (') < body.index('"Request"') < body.index("Agent trajectory")
    verdict_of = js[js.index("function verdictOf") :].split("}", 1)[0]
    assert "L.primary[C.primary[i]]" in verdict_of and "n_pass" not in verdict_of
    assert '"not priced"' in js and "L.unpriced[C.engine[i]]" in js


# -- the first page ----------------------------------------------------------------------------


def test_first_page_is_a_table_and_a_forest_figure_per_suite() -> None:
    page = _summary_page(render_report(RESULT))
    figs = specs(RESULT)
    forests = [(s, f) for s, f in figs if f.name == first_page.FOREST]
    assert figs[: len(forests)] == forests  # Figures 1..k
    n = 0
    for s in summary.suite_summaries(RESULT):
        block = page.split(f"### {s.suite}\n", 1)[1].split("\n### ", 1)[0]
        assert "| engine | " in block and "| ok / planned | status |" in block
        for row in first_page.headline_rows(s):
            assert "| " + " | ".join(row) + " |" in block
        # no paragraph of "difference ..., unadjusted p = ..., n = ..." any more
        assert "Completeness:" not in block and not re.search(r"difference -?\d", block)
        assert "unadjusted p" not in block
        if not s.comparisons:  # bloodpanel on one engine: nothing to compare, no figure
            assert "- Pre-registered comparisons: none in this run." in block
            assert "![Figure" not in block
            continue
        n += 1
        assert f"![Figure {n}](figures/{s.suite}_{first_page.FOREST}.svg)" in block
        for c in s.comparisons:
            assert first_page.verdict_line(c) in block
    assert [s for s, _ in forests] == ["golden", "grounding"]


def test_headline_table_rows_come_from_result_json() -> None:
    r = copy.deepcopy(RESULT)
    for m in r["suites"]["golden"]["analysis"]["metrics"]:
        if m["metric"] == "greedy_accuracy":
            m.update(estimate=0.123456, lo=0.0456, hi=0.4)
    r["suites"]["golden"]["seal"]["counts"]["reference"].update(complete=False, missing=3, ok=3)
    s = next(x for x in summary.suite_summaries(r) if x.suite == "golden")
    (row,) = first_page.headline_rows(s)
    requests = r["suites"]["golden"]["seal"]["counts"]["reference"]["requests"]
    assert row == ["reference", "0.123 [0.046, 0.400]", f"3 / {requests}", "INCOMPLETE (3 missing)"]


def test_forest_figure_is_deterministic_and_draws_each_comparison() -> None:
    rows = [
        ForestRow("P1 a > b", 0.2, -0.1, 0.5, 0.3, "0.200 [-0.100, 0.500]"),
        ForestRow("P2 a > c", None, None, None, None, "n/a"),
    ]
    one = render_formats(forest_figure(rows, "t", "x"), ("svg", "png"))
    two = render_formats(forest_figure(rows, "t", "x"), ("svg", "png"))
    assert one == two
    svg = one["svg"]
    assert isinstance(svg, bytes) and b"<svg" in svg
    other = render_formats(forest_figure(rows[:1], "t", "x"), ("svg",))["svg"]
    assert other != svg
    forests = summary_specs(RESULT)
    assert [s for s, _ in forests] == ["golden", "grounding"]
    for _, spec in forests:
        assert render_formats(spec.draw(), ("svg",)) == render_formats(spec.draw(), ("svg",))


def test_html_first_page_has_the_table_and_the_forest_before_the_sections() -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>'
    figs = [(suite, stem_, cap, svg) for suite, stem_, cap in rh.figure_slots(RESULT)]
    page = rh.render_html(RESULT, [], figs)
    top = page[page.index('id="summary"') : page.index('class="suite"')]
    for s in summary.suite_summaries(RESULT):
        card = top[top.index(f'data-suite="{s.suite}"') :]
        card = card[: card.index('<ul class="verdicts">')]
        assert "<th>ok / planned</th>" in card
        for row in first_page.headline_rows(s):
            assert "".join(f"<td>{rh.inline_md(c)}</td>" for c in row) in card
        assert (f'id="fig-{s.suite}_{first_page.FOREST}"' in card) == bool(s.comparisons)
    assert top.count("<figure") == 2
    assert re.search(r"<figcaption>Figure 1\. golden: the pre-registered", top)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) missing")
def test_pdf_first_page_has_the_table_and_the_forest(tmp_path: Path) -> None:
    from sealedeval.publish.pdf import build_pdf

    report = render_report(RESULT)
    # the forests drawn; every other figure a blank stand-in (page 1 is what is looked at)
    blank = io.BytesIO()
    Image.new("RGB", (64, 32), "white").save(blank, format="PNG")
    images = {stem(suite, spec): (lambda: blank.getvalue()) for suite, spec in specs(RESULT)}
    for suite, spec in summary_specs(RESULT):
        png = render_formats(spec.draw(), ("png",), {"png": 150})["png"]
        images[stem(suite, spec)] = lambda png=png: png  # type: ignore[misc]
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(build_pdf(RESULT, report, images))
    out = subprocess.run(
        ["pdftotext", "-f", "1", "-l", "1", "-layout", str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first = next(s for s in summary.suite_summaries(RESULT) if s.comparisons)
    assert "ok / planned" in out and first.suite in out
    assert "Figure 1. " + first.suite + ": the pre-registered comparisons" in out
    assert "unadjusted p =" not in out
    img = subprocess.run(
        ["pdfimages", "-f", "1", "-l", "1", "-list", str(pdf)], capture_output=True, text=True
    )
    if img.returncode == 0:
        assert len(img.stdout.strip().splitlines()) >= 3  # header lines + the forest figure
    assert stem(first.suite, first_page.forest_spec(first)) == (  # type: ignore[arg-type]
        f"{first.suite}_{first_page.FOREST}"
    )
