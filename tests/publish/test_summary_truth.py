"""The summary states a result's standing to its seal from result.json alone (fast, no CLI):
NOT AS SEALED first, the seal history of an amended suite, engines added after the seal
labelled in every line and table, and their comparisons apart from the pre-registered ones."""

from __future__ import annotations

from typing import Any

from sealedeval.publish import generic, summary
from sealedeval.publish.report_md import render_report


def _metric(engine: str, est: float) -> dict[str, Any]:
    return {
        "metric": "accuracy",
        "groups": {"engine": engine},
        "estimate": est,
        "lo": est - 0.1,
        "hi": est + 0.1,
        "method": "wilson",
        "n_ok": 10,
        "n_error": 0,
        "n_total": 10,
        "unit": "item",
    }


def _cmp(a: str, b: str, family: str, size: int) -> dict[str, Any]:
    rec = {"name": f"{a} vs {b}", "family": family, "family_size": size, "p_adj": 0.5}
    return {"a": a, "b": b, "difference": 0.1, "p": 0.25, "n_items": 10, "paired": rec}


def _section(**over: Any) -> dict[str, Any]:
    counts = {
        e: {"requests": 10, "ok": 10, "error": 0, "refused": 0, "missing": 0, "complete": True}
        for e in ("bad", "good", "late")
    }
    return {
        "seal": {
            "status": "amended",
            "seal_commits": ["b" * 40],
            "rubric_sha256": "r" * 64,
            "pre_registered": True,
            "counts": counts,
        },
        "seal_history": {
            "status": "amended",
            "earlier": [
                {
                    "commit": "a" * 40,
                    "date": "2026-01-02 03:04 UTC",
                    "runs": 2,
                    "calls": 20,
                    "engines": ["bad", "good"],
                    "changed": ["data/items.jsonl"],
                    "rows_present": False,
                    "headline": None,
                    "headline_note": "rows not present",
                },
                {
                    "commit": "c" * 40,
                    "date": "2026-01-03 03:04 UTC",
                    "runs": 1,
                    "calls": 10,
                    "engines": ["good"],
                    "changed": ["(design: engines or comparisons)"],
                    "rows_present": True,
                    "headline": [_metric("good", 0.7)],
                    "headline_note": "",
                },
            ],
        },
        "as_sealed": {"ok": False, "deviations": ["x/gone: sealed engine has no rows"]},
        "design": {
            "status": "deviates from the sealed design",
            "added_after_seal": ["late"],
            "missing_engines": ["gone"],
        },
        "analysis": {
            "metrics": [_metric("bad", 0.5), _metric("good", 0.8), _metric("late", 0.9)],
            "comparisons": [
                _cmp("good", "bad", "engines", 1),
                _cmp("good", "late", "exploratory", 2),
                _cmp("bad", "late", "exploratory", 2),
            ],
        },
    } | over


def test_summary_lines_state_the_standing_first() -> None:
    s = summary.suite_summary("x", _section())
    lines = summary.summary_lines(s)
    assert lines[0] == "**NOT AS SEALED**: x/gone: sealed engine has no rows."
    assert lines[1].startswith("Seal: **NOT AS SEALED** (its runs: amended)")
    complete = next(x for x in lines if x.startswith("Completeness"))
    assert "late (added after the seal) 10/10 ok" in complete
    assert "gone no rows (sealed engine missing: NOT AS SEALED)" in complete
    history = next(x for x in lines if x.startswith("Seal history"))
    assert "under 2 earlier seals" in history
    assert (
        "seal `aaaaaaaaaaaa` (2026-01-02 03:04 UTC): 2 runs (bad, good), 20 calls; changed "
        "since: `data/items.jsonl`; headline then: rows not present" in history
    )
    assert "headline then: good 0.700 [0.600, 0.800]" in history
    assert "Engines added after the seal: late" in " ".join(lines)
    head = next(x for x in lines if x.startswith("Headline"))
    assert "late (added after the seal) 0.900" in head and "good 0.800" in head
    pre = next(x for x in lines if x.startswith("Pre-registered comparisons"))
    assert "good vs bad" in pre and "late" not in pre
    explore = next(x for x in lines if x.startswith("Exploratory comparisons"))
    assert "good vs late" in explore and "bad vs late" in explore
    assert not s.complete and not s.as_sealed


def test_as_sealed_suite_has_no_extra_lines() -> None:
    sec = _section(
        seal_history={"status": "pre-registered", "earlier": []},
        as_sealed={"ok": True, "deviations": []},
        design={"status": "as sealed", "added_after_seal": []},
    )
    sec["seal"] = dict(sec["seal"]) | {"status": "pre-registered"}
    sec["analysis"] = dict(sec["analysis"]) | {"comparisons": [_cmp("good", "bad", "engines", 1)]}
    s = summary.suite_summary("x", sec)
    lines = summary.summary_lines(s)
    assert lines[0].startswith("Seal: **pre-registered**")
    text = " ".join(lines)
    for word in ("NOT AS SEALED", "Seal history", "added after the seal", "Exploratory"):
        assert word not in text
    assert s.complete


def test_no_design_sealed_labels_nothing() -> None:
    """Without a sealed design every engine is "added" in result_design's terms; the status
    already says nothing was pre-registered, so no engine is singled out."""
    sec = _section(design={"status": "design not sealed", "added_after_seal": ["bad", "good"]})
    s = summary.suite_summary("x", sec)
    assert s.added_after_seal == ()
    text = " ".join(summary.summary_lines(s))
    assert "(added after the seal)" not in text and "Engines added after" not in text


def test_every_appendix_table_labels_the_added_engine() -> None:
    section = _section()
    text = generic.report_section("x", section)
    rows = [r for r in text.splitlines() if r.startswith("|") and "late" in r]
    assert rows and all("late (added after the seal)" in r for r in rows), rows
    result = {
        "project": "p",
        "status": "NOT AS SEALED: x/gone: sealed engine has no rows",
        "rubric_lock_sha256": "l" * 64,
        "config": {"sources": ["config/config.yaml"], "sha256": "c" * 64},
        "versions": {},
        "engines": {e: {"kind": "reference"} for e in ("bad", "good", "late")},
        "manifest": [],
        "suites": {"x": section},
    }
    report = render_report(result)
    assert "Status: **NOT AS SEALED: x/gone: sealed engine has no rows**" in report
    named = [r for r in report.splitlines() if r.startswith("|") and "| late" in r]
    assert len(named) >= 3  # seal and completeness, the suite's completeness, engines
    assert all("| late (added after the seal)" in r for r in named), named


def test_first_page_table_labels_added_and_lists_missing_sealed_engines() -> None:
    """Table 1 of the first page (md, html and pdf share it) names every engine as the lines
    do: the added one labelled, the sealed one without rows stated as NOT AS SEALED."""
    from sealedeval.publish import first_page

    s = summary.suite_summary("x", _section())
    rows = {r[0]: r for r in first_page.headline_rows(s)}
    assert "late (added after the seal)" in rows and "late" not in rows
    assert rows["good"][1].startswith("0.800") and rows["good"][3] == "complete"
    assert rows["gone"][1:] == ["n/a", "-", "no rows: sealed engine missing (NOT AS SEALED)"]
    prose = " ".join(first_page.prose_lines(s))
    assert prose.startswith("**NOT AS SEALED**: x/gone") and "Seal history" in prose
