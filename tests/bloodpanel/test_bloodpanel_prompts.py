"""Prompts: opaque ids only, shared prefix first, leak check, tolerant answer parsing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from sealedeval.suites.bloodpanel.cases import Case, load_curated
from sealedeval.suites.bloodpanel.prompts import (
    REPORT_JSON_SCHEMA,
    SYSTEM,
    leak_check,
    messages,
    parse_report,
    response_format,
)
from sealedeval.suites.bloodpanel.reference import reference_report

ROOT = Path(__file__).resolve().parents[2]
CURATED = ROOT / "data" / "bloodpanel" / "curated.yaml"


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_curated(CURATED)


def test_curated_prompts_pass_leak_check(cases: list[Case]) -> None:
    for c in cases:
        msgs = messages(c)
        leak_check(c, msgs)
        text = json.dumps(msgs)
        assert c.case_id not in text and "BT-" not in text and "Trap" not in text
        assert c.case_uid in msgs[1]["content"]
        for r in c.panel:
            assert r.analyte in msgs[1]["content"]


def test_shared_prefix_first(cases: list[Case]) -> None:
    firsts = {json.dumps(messages(c)[0]) for c in cases}
    assert len(firsts) == 1 and messages(cases[0])[0]["content"] == SYSTEM
    assert all(messages(c)[1]["content"].rstrip().endswith("|") for c in cases)


@pytest.mark.parametrize(
    ("inject", "what"),
    [
        ("Case ID: BT-011-SLE", "case id"),
        ("Panel type: Trap", "the word 'trap'"),
        ("Compute the Mentzer index.", "scoring system 'mentzer'"),
        ("Think about iron-deficiency anaemia.", "keyword 'iron deficiency anemia'"),
        ("Mind the ferritin.", "keyword 'ferritin'"),  # an analyte name beyond the table is a hint
    ],
)
def test_leak_check_catches_hints(cases: list[Case], inject: str, what: str) -> None:
    case = next(c for c in cases if c.case_id == "BT-001-IDA")
    if "SLE" in inject:
        case = next(c for c in cases if c.case_id == "BT-011-SLE")
    msgs = messages(case)
    msgs[1]["content"] += "\n" + inject
    with pytest.raises(ValueError, match=f"{case.case_id}: prompt leaks .*{what}"):
        leak_check(case, msgs)


def test_leak_check_trap_flags_and_specialty(cases: list[Case]) -> None:
    healthy = next(c for c in cases if c.case_id == "BT-015-HEALTHY")
    msgs = messages(healthy)
    msgs[0]["content"] += " Beware of over-calling hypothyroidism."
    with pytest.raises(ValueError, match="trap flag 'hypothyroidism'"):
        leak_check(healthy, msgs)
    thal = dataclasses.replace(next(c for c in cases if c.case_id == "BT-007-THAL"))
    msgs = messages(thal)
    msgs[1]["content"] += "\nReferred by haematology."
    with pytest.raises(ValueError, match="specialty 'haematology'"):
        leak_check(thal, msgs)


def test_schema_is_strict_and_accepts_the_reference(cases: list[Case]) -> None:
    jsonschema.Draft202012Validator.check_schema(REPORT_JSON_SCHEMA)
    fmt = response_format()
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True

    def closed(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert set(node["required"]) == set(node["properties"])
            for v in node.values():
                closed(v)

    closed(REPORT_JSON_SCHEMA)
    report = reference_report(cases[0])
    jsonschema.validate(report, REPORT_JSON_SCHEMA)
    bad = dict(report)
    del bad["conclusion"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, REPORT_JSON_SCHEMA)


@pytest.mark.parametrize(
    "wrap",
    [
        "{body}",
        "```json\n{body}\n```",
        "Here is the report:\n```\n{body}\n```\nDone.",
        "Sure! {body} Hope this helps.",
        "\ufeff{body}",
    ],
)
def test_parse_report_tolerant(wrap: str) -> None:
    body = json.dumps({"introduction": {"introduction_summary": ["x"]}, "differential": []})
    assert parse_report(wrap.format(body=body)) == json.loads(body)


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2]", "{not json}", "```json\n```"])
def test_parse_report_none(text: str) -> None:
    assert parse_report(text) is None
