"""Reference and naive engines: ceilings per condition and the gaps between conditions."""

from __future__ import annotations

import statistics
from typing import Any

import jsonschema

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.conditions import CONDITIONS, Condition
from sealedeval.suites.grounding.contract import ANSWER_SCHEMA, parse_answer, score_item
from sealedeval.suites.grounding.reference import (
    as_output_text,
    naive_answer,
    oracle_answer,
    reference_answer,
)

# M1 of the reference reader per condition, over the 34 answerable items (pinned).
EXPECTED_REFERENCE_M1: dict[Condition, int] = {"A": 16, "B": 16, "E": 24, "C": 24, "F": 24, "D": 34}


def _scores(suite: GroundingData, engine: str, condition: Condition) -> list[dict[str, Any]]:
    fn = reference_answer if engine == "reference" else naive_answer
    return [score_item(i, parse_answer(as_output_text(fn(i, condition)))) for i in suite.items]


def test_answers_follow_the_contract(suite: GroundingData) -> None:
    for item in suite.items:
        for condition in CONDITIONS:
            jsonschema.validate(reference_answer(item, condition), ANSWER_SCHEMA)
            jsonschema.validate(naive_answer(item, condition), ANSWER_SCHEMA)


def test_reference_is_perfect_under_d(suite: GroundingData) -> None:
    rows = [r for r in _scores(suite, "reference", "D") if r["m1"] is not None]
    assert len(rows) == 34
    assert all(r["m1"] == 1 and r["m2"] == 1 and r["m7"] == 0 for r in rows)
    abst = [r for r in _scores(suite, "reference", "D") if r["m5"] is not None]
    assert len(abst) == 6 and all(r["m5"] == 1 for r in abst)


def test_reference_under_c_misses_only_the_governed_counterparty_items(
    suite: GroundingData,
) -> None:
    for condition in ("C", "F"):
        for item, row in zip(suite.items, _scores(suite, "reference", condition), strict=True):
            if not item.answerable:
                continue
            if item.role == "counterparty":
                assert (row["m1"], row["m7"]) == (0, 1), item.item_id
            else:
                assert (row["m1"], row["m2"]) == (1, 1), item.item_id


def test_reference_m1_per_condition_pinned(suite: GroundingData) -> None:
    for condition, expected in EXPECTED_REFERENCE_M1.items():
        m1 = sum(int(r["m1"] or 0) for r in _scores(suite, "reference", condition))
        assert m1 == expected, condition


def test_prose_gives_values_but_no_ids(suite: GroundingData) -> None:
    for item in suite.items:
        e, c = reference_answer(item, "E"), reference_answer(item, "C")
        assert e["value"] == c["value"]
        assert e["definition_id"] is None and e["version"] is None
        for condition in ("A", "B"):
            assert reference_answer(item, condition)["definition_id"] is None


def test_naive_ignores_the_condition_and_trails_the_reference(suite: GroundingData) -> None:
    per_condition = {c: [r["m1"] for r in _scores(suite, "naive", c)] for c in CONDITIONS}
    assert len({tuple(v) for v in per_condition.values()}) == 1
    naive_m1 = statistics.mean(int(v or 0) for v in per_condition["A"] if v is not None)
    ref_d = statistics.mean(
        int(r["m1"] or 0) for r in _scores(suite, "reference", "D") if r["m1"] is not None
    )
    assert naive_m1 < ref_d


def test_deficient_wiki_matches_superseded_rules_more(suite: GroundingData) -> None:
    # H2's mechanism: the wiki states the superseded net-revenue rule and undated windows.
    m7 = {c: sum(int(r["m7"] or 0) for r in _scores(suite, "reference", c)) for c in ("A", "B")}
    assert m7["B"] > m7["A"]


def test_oracle_gets_full_marks(suite: GroundingData) -> None:
    for item in suite.items:
        row = score_item(item, parse_answer(as_output_text(oracle_answer(item))))
        assert row["m1"] in (1, None) and row["m5"] in (1, None) and row["m2"] in (1, None)
