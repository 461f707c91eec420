"""Issue 15 in grounding: each pre-declared comparison carries its stats.comparisons record
(Holm across the engine's pre-declared family beside the raw p the plan reads, MDE at 80% power
from the replicates, items needed for δ), shown in the report and the comparisons figure — from
the in-memory tiny run of the reference and naive answerers that test_grounding_report uses."""

from __future__ import annotations

from typing import Any

import pytest
from tests.grounding.test_grounding_report import HARNESS, section  # noqa: F401  (fixture)

from sealedeval import stats
from sealedeval.render.comparisons import HEADER
from sealedeval.render.figures import render_bytes
from sealedeval.suites.grounding.plan import COMPARISON_PLAN, PLAN


def test_records_follow_the_stats_and_keep_the_raw_numbers(
    section: dict[str, Any],  # noqa: F811
) -> None:
    seen = 0
    for e in section["analysis"]["engines"].values():
        for role, r in e["roles"].items():
            comps = r.get("comparisons") or []
            recs = [c["paired"] for c in comps]
            if not recs:
                continue
            assert [x["p_adj"] for x in recs] == pytest.approx(stats.holm([x["p"] for x in recs]))
            assert {x["family"] for x in recs} == {"pre-declared"}
            assert all(x["family_size"] == len(recs) for x in recs)
            assert len(recs) == (len(PLAN.comparisons) if role == "primary" else 1)
            for c, x in zip(comps, recs, strict=True):
                seen += 1
                assert x["p"] == c["p"] and x["n"] == c["n_items"]
                assert (x["a_better"], x["b_better"]) == (c["a_better"], c["b_better"])
                if c["mean_diff"] is not None:
                    assert x["diff"] == pytest.approx(c["mean_diff"])
                assert x["delta"] == COMPARISON_PLAN.delta and x["power"] == 0.8
                if x["mde"] is not None:
                    assert x["detectable"] is (x["mde"] <= abs(x["diff"]))
    assert seen >= len(PLAN.comparisons)


def test_report_and_figure(section: dict[str, Any]) -> None:  # noqa: F811
    md = HARNESS.report_sections(section)
    assert "| " + " | ".join(HEADER) + " |" in md
    assert "No multiple-comparison correction is applied" in md  # the plan's own statement stays
    assert "could not have detected" in md or "MDE not estimable" in md
    specs = {s.name: s for s in HARNESS.figures(section)}
    assert "MDE" in specs["comparisons"].caption
    assert render_bytes(specs["comparisons"].draw(), "png").startswith(b"\x89PNG")
