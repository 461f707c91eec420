"""Items: 40 in four families, computed references, separation, wording rules, no leaks."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.catalog import evaluate, values_equal
from sealedeval.suites.grounding.conditions import CONDITIONS, render_messages
from sealedeval.suites.grounding.contract import ANSWER_INSTRUCTION
from sealedeval.suites.grounding.items import leak_check


def test_forty_items_in_four_families(suite: GroundingData) -> None:
    assert len(suite.items) == 40
    assert Counter(i.family for i in suite.items) == {"COMP": 12, "TEMP": 10, "XORG": 12, "ABST": 6}
    assert len({i.item_id for i in suite.items}) == 40
    assert sum(i.answerable for i in suite.items) == 34


def test_every_answerable_item_is_separating(suite: GroundingData) -> None:
    for item in suite.items:
        if not item.answerable:
            continue
        assert item.query and item.in_force and item.competing
        ref = evaluate(suite.corpus, suite.catalog.get(item.in_force), item.query)
        alt = evaluate(suite.corpus, suite.catalog.get(item.competing), item.query)
        assert values_equal(ref, item.reference_value or 0.0), item.item_id
        assert values_equal(alt, item.competing_value or 0.0), item.item_id
        assert not values_equal(ref, alt), item.item_id


def test_temp_items(suite: GroundingData) -> None:
    temp = [i for i in suite.items if i.family == "TEMP"]
    assert {i.concept for i in temp} == {"active_customer", "net_revenue", "on_time"}
    boundary = [i for i in temp if i.boundary]
    assert len(boundary) == 2
    for item in boundary:
        assert item.query and item.in_force
        eff = suite.catalog.get(item.in_force).effective_from
        assert item.query.reference_date == eff and item.in_force.version == 2
    for item in temp:
        if not item.boundary:
            assert item.in_force and item.in_force.version == 1


def test_xorg_items(suite: GroundingData) -> None:
    xorg = [i for i in suite.items if i.family == "XORG"]
    governed = [i for i in xorg if i.role == "counterparty"]
    separators = [i for i in xorg if i.role == "scope_separator"]
    assert len(governed) == 10 and len(separators) == 2
    assert all(i.in_force and i.in_force.def_id.startswith("HAL-") for i in governed)
    assert all(i.contract_id == "C-118" for i in governed)
    assert {(i.counterparty, i.contract_id) for i in separators} == {
        ("Halden Logistics", "C-301"),
        ("Zen Freight", "C-204"),
    }
    assert all(i.in_force and i.in_force.def_id.startswith("MSC-") for i in separators)


def test_internal_questions_on_c118_rows_use_meridian(suite: GroundingData) -> None:
    internal_118 = [i for i in suite.items if i.family == "COMP" and i.contract_id == "C-118"]
    assert len(internal_118) >= 3
    assert all(i.in_force and i.in_force.def_id.startswith("MSC-") for i in internal_118)


def test_question_wording_rules(suite: GroundingData) -> None:
    for item in suite.items:
        if item.audience == "internal":
            assert item.question.startswith("Internal reporting"), item.item_id
        else:
            assert item.counterparty and item.counterparty in item.question, item.item_id
        if item.concept == "business_day":
            assert "strictly after the ship date, up to and including the scan_date" in (
                item.question
            )


def test_no_reference_answer_leaks_into_any_prompt(suite: GroundingData) -> None:
    for item in suite.items:
        for condition in CONDITIONS:
            messages = render_messages(
                item.question,
                condition,
                corpus=suite.corpus,
                catalog=suite.catalog,
                instruction=ANSWER_INSTRUCTION,
            )
            assert leak_check(item, messages) == [], (item.item_id, condition)


def test_leak_check_catches_a_planted_leak(suite: GroundingData) -> None:
    item = next(i for i in suite.items if i.answerable)
    assert item.reference_value is not None
    leaky = dataclasses.replace(
        item, question=f"{item.question} (expected: {int(item.reference_value)})"
    )
    messages = render_messages(
        leaky.question,
        "C",
        corpus=suite.corpus,
        catalog=suite.catalog,
        instruction=ANSWER_INSTRUCTION,
    )
    problems = leak_check(item, messages)
    assert any("reference value" in p for p in problems)
    with_id = [{"role": "user", "content": f"{item.item_id}: {item.question}"}]
    assert any(item.item_id in p for p in leak_check(item, with_id))


def test_abstention_items_have_no_reference(suite: GroundingData) -> None:
    for item in suite.items:
        if item.family == "ABST":
            assert not item.answerable and item.abstain_reason
            assert item.reference_value is None and item.competing is None
            assert not re.search(r"\bABST\b", item.question)
