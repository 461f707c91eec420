"""The summary page: every number traceable to result.json, verdicts that follow the tests,
the same page first in report.md and report.pdf.

The fixture is the real result.json of every suite on the reference engines (make_fixture.py).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sealedeval.publish import first_page
from sealedeval.publish import summary as sm
from sealedeval.publish.report_md import APPENDIX, render_report

HERE = Path(__file__).parent
RESULT: dict[str, Any] = json.loads((HERE / "result_all.json").read_text())


def _numbers(x: Any) -> Iterator[float]:
    if isinstance(x, bool):
        return
    if isinstance(x, int | float):
        yield float(x)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from _numbers(v)


def _suite_block(md: str, suite: str) -> str:
    body = md.split("## Summary", 1)[1].split(APPENDIX, 1)[0]
    return body.split(f"### {suite}\n", 1)[1].split("\n### ", 1)[0]


def test_every_suite_has_a_headline_from_its_own_metrics() -> None:
    out = sm.suite_summaries(RESULT)
    assert [s.suite for s in out] == list(RESULT["suites"])
    for s in out:
        metrics = RESULT["suites"][s.suite]["analysis"]["metrics"]
        assert s.headline, s.suite
        for h in s.headline:
            same = [
                m
                for m in metrics
                if m["metric"] == s.metric
                and m["groups"].get("engine", "") == h.engine
                and (m["estimate"], m["lo"], m["hi"]) == (h.estimate, h.lo, h.hi)
                and (m["n_ok"], m["n_error"]) == (h.n_ok, h.n_error)
            ]
            assert same, (s.suite, h)
        counts = RESULT["suites"][s.suite]["seal"]["counts"]
        assert {c.engine: (c.requests, c.ok, c.error) for c in s.completeness} == {
            e: (c["requests"], c["ok"], c["error"]) for e, c in counts.items()
        }
    by = {s.suite: s for s in out}
    # the suites' hooks chose their pre-registered headline, not the first metric by name
    assert by["golden"].metric == "greedy_accuracy"
    assert by["bloodpanel"].metric == "composite"
    assert {h.where for h in by["bloodpanel"].headline} == {""}  # one profile: the sealed one
    assert by["grounding"].metric == "track_a.m1"
    assert [h.where for h in by["grounding"].headline] == [
        "condition=A",
        "condition=C",
    ] * len(RESULT["suites"]["grounding"]["seal"]["counts"])
    # grounding's eight pre-declared tests, per engine, with their claimed direction
    ids = [c.id for c in by["grounding"].comparisons]
    assert ids == [f"P{i}" for i in range(1, 9)] * 2
    assert "not > A" in by["grounding"].comparisons[2].claim


def test_every_decimal_on_the_summary_page_is_a_number_of_result_json() -> None:
    md = first_page.summary_markdown(RESULT)
    for suite, section in RESULT["suites"].items():
        have = {f"{v:.3f}" for v in _numbers(section)}
        block = _suite_block(md, suite)
        shown = re.findall(r"(?<![\w.])-?\d+\.\d{3}(?![\d])", block)
        assert shown, suite
        assert set(shown) <= have, (suite, set(shown) - have)


def test_summary_follows_result_json() -> None:
    r = copy.deepcopy(RESULT)
    for m in r["suites"]["golden"]["analysis"]["metrics"]:
        if m["metric"] == "greedy_accuracy":
            m.update(estimate=0.123456, lo=0.0456, hi=0.4)
    r["suites"]["golden"]["seal"]["counts"]["reference"].update(complete=False, missing=3)
    block = _suite_block(first_page.summary_markdown(r), "golden")
    assert "0.123 [0.046, 0.400]" in block
    assert "| INCOMPLETE (3 missing) |" in block
    before = _suite_block(first_page.summary_markdown(RESULT), "golden")
    assert "0.123" not in before and "INCOMPLETE" not in before
    assert not sm.suite_summaries(r)[1].complete


@pytest.mark.parametrize(
    ("direction", "estimate", "p", "want"),
    [
        ("greater", 0.3, 0.01, "supported"),
        ("greater", -0.3, 0.01, "contradicted: significant in the opposite direction"),
        ("greater", 0.3, 0.2, "not shown"),
        ("less", -0.3, 0.01, "supported"),
        ("less", 0.3, 0.01, "contradicted"),
        ("not_greater", 0.3, 0.01, "contradicted"),
        ("not_greater", -0.3, 0.01, "consistent: no significant increase"),
        ("not_greater", 0.3, 0.5, "consistent: no significant increase"),
        ("not_less", -0.3, 0.01, "contradicted"),
        ("equal", 0.3, 0.01, "differ"),
        ("two-sided", 0.0, 0.9, "no difference shown"),
        ("greater", 0.3, None, "not testable"),
    ],
)
def test_verdicts_follow_the_test(
    direction: str, estimate: float, p: float | None, want: str
) -> None:
    assert sm.verdict(direction, estimate, p).startswith(want)


def test_verdict_at_the_boundary_and_with_an_adjusted_p() -> None:
    assert sm.verdict("greater", 0.1, sm.ALPHA).startswith("supported")
    assert sm.verdict("greater", 0.1, sm.ALPHA + 1e-9).startswith("not shown")
    assert "not evidence of equality" in sm.verdict("equal", 0.0, 0.7)
    assert sm.verdict("greater", 0.1, 0.01, n=0).startswith("not testable")
    with pytest.raises(ValueError, match="sideways"):
        sm.verdict("sideways", 0.1, 0.01)
    # the adjusted p decides when the plan corrects for multiplicity
    c = sm._comparison(
        {"a": "x", "b": "y", "direction": "greater", "estimate": 0.2, "p": 0.01, "p_adjusted": 0.2},
        sm.ALPHA,
    )
    assert c.verdict == "not shown (adjusted p = 0.200)"
    assert "unadjusted p = 0.010" in sm.comparison_text(c)


def test_a_comparison_record_supplies_what_the_hint_leaves_out() -> None:
    """A ``stats.comparisons`` record (``paired``): difference, interval, Holm-adjusted p, MDE;
    the hint's own values win."""
    record = {"diff": 0.25, "lo": -0.1, "hi": 0.6, "p": 0.03, "p_adj": 0.09, "n": 20}
    c = sm._comparison(
        {"claim": "A vs B", "paired": {**record, "mde": 0.4, "detectable": False}}, sm.ALPHA
    )
    assert (c.estimate, c.lo, c.hi, c.p, c.p_adjusted, c.n) == (0.25, -0.1, 0.6, 0.03, 0.09, 20)
    assert c.verdict == "no difference shown (adjusted p = 0.090; not evidence of equality)"
    text = sm.comparison_text(c)
    assert "difference 0.250 [-0.100, 0.600]" in text
    assert "MDE 0.400; could not have detected the difference seen" in text
    # a plan that pre-declared unadjusted tests (grounding's seed plan): the raw p decides
    raw = sm._comparison({"claim": "A vs B", "paired": record, "adjusted_decides": False}, 0.05)
    assert raw.verdict == "differ (p = 0.030)"
    assert "adjusted p = 0.090" in sm.comparison_text(raw)
    own = sm._comparison({"claim": "A vs B", "n": 7, "paired": record}, sm.ALPHA)
    assert own.n == 7 and own.mde is None and "MDE" not in sm.comparison_text(own)


def test_a_suite_without_a_hook_gets_its_metrics_and_hypotheses() -> None:
    """An installed suite, a tasks suite or someone else's result: the metric schema and the
    tasks kind's hypothesis shape are enough."""
    section = {
        "seal": {
            "status": "not pre-registered",
            "seal_commits": [],
            "rubric_sha256": "",
            "counts": {"m1": {"requests": 10, "ok": 9, "error": 1, "missing": 0, "complete": True}},
        },
        "analysis": {
            "metrics": [
                {
                    "metric": "aaa_unestimable",
                    "groups": {"engine": "m1"},
                    "estimate": None,
                    "lo": None,
                    "hi": None,
                    "method": "wilson",
                    "n_total": 1,
                    "n_ok": 0,
                    "n_error": 1,
                    "unit": "item",
                },
                {
                    "metric": "accuracy",
                    "groups": {"engine": "m1"},
                    "estimate": 0.7,
                    "lo": 0.4,
                    "hi": 0.9,
                    "method": "wilson",
                    "n_total": 10,
                    "n_ok": 9,
                    "n_error": 1,
                    "unit": "item",
                },
            ],
            "hypotheses": [
                {
                    "id": "H1",
                    "a": "m1",
                    "b": "m2",
                    "direction": "greater",
                    "n_items": 9,
                    "p": 0.004,
                    "p_adjusted": 0.008,
                    "alpha": 0.01,
                    "difference": 0.3,
                    "rejected": True,
                }
            ],
        },
    }
    r = {"status": "not pre-registered", "suites": {"not_installed_suite": section}}
    (s,) = sm.suite_summaries(r, audit="passed")
    assert s.metric == "accuracy" and s.audit == "passed"
    assert [(h.engine, h.estimate, h.lo, h.hi) for h in s.headline] == [("m1", 0.7, 0.4, 0.9)]
    (c,) = s.comparisons
    assert (c.id, c.claim, c.n) == ("H1", "m1 > m2", 9)
    assert c.verdict == "supported (adjusted p = 0.008)"
    md = first_page.summary_markdown(r, audit="passed")
    assert "| m1 | 0.700 [0.400, 0.900] | 9 / 10 | complete (1 error) |" in md
    assert "audit: passed" in md
    assert "![Figure 1](figures/not_installed_suite_summary-comparisons.svg)" in md


def test_report_md_opens_with_the_summary_and_keeps_the_detail_in_the_appendix() -> None:
    md = render_report(RESULT)
    head, appendix = md.split(APPENDIX, 1)
    assert first_page.summary_markdown(RESULT) in head
    assert "## Seal and completeness" in appendix and "## Seal and completeness" not in head
    for suite in RESULT["suites"]:
        assert f"### {suite}\n" in head
        assert f"\n## {suite}" in appendix and f"\n## {suite}" not in head
    # the first page's only figures are the forests of the pre-registered comparisons
    figures = re.findall(r"^!\[Figure \d+\]\(figures/(\w+?)_([\w-]+)\.svg\)$", head, re.M)
    assert figures and all(name == "summary-comparisons" for _, name in figures)
