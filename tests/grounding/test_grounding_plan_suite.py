"""Plan as data, and the suite-level dispatch over the whole design."""

from __future__ import annotations

import json
from typing import cast

from sealedeval.suites.grounding.bundle import (
    GroundingData,
    render_request,
    response_format_for,
    score_response,
)
from sealedeval.suites.grounding.conditions import Condition
from sealedeval.suites.grounding.design import build_design
from sealedeval.suites.grounding.plan import PLAN, plan_json
from sealedeval.suites.grounding.reference import as_output_text, reference_answer


def test_hypotheses_and_flags() -> None:
    flags = {h.hypothesis_id: h.pre_specified for h in PLAN.hypotheses}
    assert flags == {
        "H1": True,
        "H2": True,
        "H3": True,
        "H4": True,
        "H5": False,
        "H6": False,
        "H7": False,
        "H8": False,
        "H9": False,
    }


def test_comparisons_and_correction() -> None:
    assert len(PLAN.comparisons) == 8
    assert all("exact two-sided sign test" in c.test for c in PLAN.comparisons)
    pairs = {(c.condition_a, c.condition_b, c.metric, c.item_set) for c in PLAN.comparisons}
    assert len(pairs) == 8
    assert ("C", "E", "M1", "answerable") in pairs and ("F", "C", "M1", "answerable") in pairs
    assert PLAN.multiple_comparison_correction is None
    assert "No multiple-comparison correction" in PLAN.correction_statement
    assert set(PLAN.threats_to_validity) == {"construct", "internal", "external", "statistical"}


def test_plan_json_is_canonical() -> None:
    text = plan_json()
    assert text == plan_json() and json.loads(text)["version"] == PLAN.version


def test_every_request_of_the_full_design_renders_and_scores(suite: GroundingData) -> None:
    outputs: dict[str, str] = {}
    for spec in build_design("full").specs:
        messages = render_request(suite, spec, outputs)
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
        assert response_format_for(spec)["type"] == "json_schema"
        if spec.track == "A":
            condition = cast(Condition, spec.condition)
            output = as_output_text(reference_answer(suite.item(spec.item_id), condition))
        elif spec.track == "B2" and spec.condition == "select":
            picks = [r.label() for r in sorted(suite.b2_question(spec.item_id).required)]
            output = json.dumps({"records": picks})
        else:
            output = "not json"
        row = score_response(suite, spec, output, outputs)
        assert row["request_id"] == spec.request_id
        if spec.track == "A" and spec.condition == "D":
            assert row["m1"] in (1, None) and row["m5"] in (1, None)
        if spec.track == "B2" and spec.condition == "select":
            assert row["recall"] == 1.0
        outputs[spec.request_id] = output
