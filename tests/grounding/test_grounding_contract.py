"""Answer contract: schema, tolerant parser, and the M1/M2/M5/M7 definitions."""

from __future__ import annotations

import json

import jsonschema
import pytest

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.contract import (
    ANSWER_SCHEMA,
    extract_json_object,
    parse_answer,
    parse_number,
    parse_version,
    response_format,
    score_item,
)
from sealedeval.suites.grounding.items import Item

GOOD = {
    "value": 14,
    "definition_id": "MSC-ACTIVE-CUSTOMER",
    "version": 2,
    "refusal": False,
    "reason": "v2 in force",
}


def test_schema_is_valid_and_strict_compatible() -> None:
    jsonschema.Draft202012Validator.check_schema(ANSWER_SCHEMA)
    jsonschema.validate(GOOD, ANSWER_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**GOOD, "extra": 1}, ANSWER_SCHEMA)
    fmt = response_format()
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert set(ANSWER_SCHEMA["required"]) == set(ANSWER_SCHEMA["properties"])
    assert len(json.dumps(ANSWER_SCHEMA)) < 400  # compact enough for a 135M model


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD) + "\n```",
        "Sure! Here it is:\n```\n" + json.dumps(GOOD) + "\n```\nHope this helps.",
        "The answer: " + json.dumps(GOOD) + " -- done {not json}",
        json.dumps(GOOD)[:-1] + ",}",
        json.dumps(GOOD)[:-1],  # truncated closing brace
        '{"reason": "a } inside", "value": 14, "definition_id": "MSC-ACTIVE-CUSTOMER", '
        '"version": 2, "refusal": false}',
    ],
)
def test_parser_tolerates_wrapping(raw: str) -> None:
    ans = parse_answer(raw)
    assert ans.parse_ok
    assert ans.value == 14 and ans.version == 2 and ans.refusal is False
    assert ans.definition_id == "MSC-ACTIVE-CUSTOMER"


@pytest.mark.parametrize(
    "raw",
    ["", "   ", "I think it is 14.", "{not json at all", "[1, 2, 3]", "```\nno object here\n```"],
)
def test_parser_reports_failure(raw: str) -> None:
    ans = parse_answer(raw)
    assert not ans.parse_ok and not ans.contract_ok and ans.value is None
    assert extract_json_object(raw).error


def test_field_normalisation() -> None:
    ans = parse_answer(
        '{"Value": "$1,234.50", "definition_id": "msc_net revenue v2", '
        '"refusal": "false", "reason": ""}'
    )
    assert ans.parse_ok and not ans.contract_ok
    assert ans.value == 1234.5 and ans.version == 2
    assert parse_number("about 14 or 15") is None  # never guessed out of a sentence
    assert parse_number(True) is None
    assert parse_version("v3") == 3 and parse_version("version 2") == 2
    assert parse_version(2.5) is None


def _answerable(suite: GroundingData) -> Item:
    return next(i for i in suite.items if i.item_id == "COMP-01")


def _raw(**fields: object) -> str:
    return json.dumps({**GOOD, **fields})


def test_metrics_on_an_answerable_item(suite: GroundingData) -> None:
    item = _answerable(suite)
    assert item.in_force and item.reference_value is not None
    assert item.competing_value is not None
    ident = {"definition_id": item.in_force.def_id, "version": item.in_force.version}
    right = score_item(item, parse_answer(_raw(value=item.reference_value, **ident)))
    assert (right["m1"], right["m2"], right["m7"], right["m5"]) == (1, 1, 0, None)
    assert right["unjustified_abstention"] == 0
    wrong_rule = score_item(
        item,
        parse_answer(
            _raw(value=item.competing_value, definition_id=item.in_force.def_id, version=1)
        ),
    )
    assert (wrong_rule["m1"], wrong_rule["m2"], wrong_rule["m7"]) == (0, 0, 1)
    refused = score_item(item, parse_answer(_raw(value=item.reference_value, refusal=True)))
    assert (refused["m1"], refused["m7"], refused["unjustified_abstention"]) == (0, 0, 1)
    garbage = score_item(item, parse_answer("no idea"))
    assert garbage["parse_ok"] is False
    assert (garbage["m1"], garbage["m2"], garbage["m7"]) == (0, 0, 0)


def test_metrics_on_an_unanswerable_item(suite: GroundingData) -> None:
    item = next(i for i in suite.items if i.family == "ABST")
    refused = score_item(item, parse_answer(_raw(value=None, refusal=True)))
    assert refused["m5"] == 1 and refused["m1"] is None and refused["m7"] is None
    answered = score_item(item, parse_answer(_raw(value=3, refusal=False)))
    assert answered["m5"] == 0 and answered["unjustified_abstention"] is None
