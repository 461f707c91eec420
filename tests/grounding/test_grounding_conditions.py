"""Conditions: shared table prefix, E has C's facts, F pads exactly like D, question last."""

from __future__ import annotations

import json
import re

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.conditions import (
    CONDITIONS,
    QUESTION_HEADING,
    REPRESENTATIONAL,
    SCHEMA_TEXT,
    SYSTEM_PROMPT,
    Condition,
    context_block,
    render_federation,
    render_messages,
    render_padding,
    render_prose,
    render_records,
)
from sealedeval.suites.grounding.contract import ANSWER_INSTRUCTION

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_COLUMNS = (
    "order_date",
    "invoice_date",
    "return_date",
    "confirm_date",
    "scan_date",
    "commit_date",
    "recommit_date",
    "goods",
    "freight",
)


def _user(suite: GroundingData, condition: Condition, question: str = "Q?") -> str:
    msgs = render_messages(
        question,
        condition,
        corpus=suite.corpus,
        catalog=suite.catalog,
        instruction=ANSWER_INSTRUCTION,
    )
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
    return msgs[1]["content"]


def test_tables_first_and_byte_identical(suite: GroundingData) -> None:
    tables = suite.corpus.tables_csv()
    prefix = f"## Data tables\n{tables}\n\n## Context\n{SCHEMA_TEXT}"
    users = {c: _user(suite, c) for c in CONDITIONS}
    for text in users.values():
        assert text.startswith(prefix)
        assert text.count(tables) == 1
    assert len({t.split("## Context")[0] for t in users.values()}) == 1


def test_conditions_differ_only_in_the_context_block(suite: GroundingData) -> None:
    users = {c: _user(suite, c) for c in CONDITIONS}
    tails = {t.split("## Answer format")[1] for t in users.values()}
    assert len(tails) == 1
    blocks = {
        c: t.split("## Context\n")[1].split("\n\n## Answer format")[0] for c, t in users.items()
    }
    assert blocks == {c: context_block(c, suite.catalog) for c in CONDITIONS}
    assert len(set(blocks.values())) == 6
    assert blocks["A"] == SCHEMA_TEXT


def test_question_is_last(suite: GroundingData) -> None:
    for c in CONDITIONS:
        text = _user(suite, c, "How many?")
        assert text.endswith(f"{QUESTION_HEADING}\nHow many?")
        assert (
            text.index("## Context") < text.index("## Answer format") < text.index(QUESTION_HEADING)
        )


def _content_atoms_of_records(text: str) -> tuple[set[str], set[str]]:
    """Dates and bare integers of the records, representational fields removed."""
    dates: set[str] = set()
    numbers: set[str] = set()
    for line in text.splitlines()[1:]:
        obj = json.loads(line)
        for key in REPRESENTATIONAL:
            obj.pop(key, None)
        flat = json.dumps(obj)
        dates |= set(_DATE.findall(flat))
        numbers |= set(re.findall(r"(?<![\d-])\d+(?![\d-])", _DATE.sub(" ", flat)))
    return dates, numbers


def test_prose_carries_exactly_the_records_facts(suite: GroundingData) -> None:
    records = render_records(suite.catalog)
    prose = render_prose(suite.catalog)
    representational = {f for f in records.facts if f.rsplit(".", 1)[-1] in REPRESENTATIONAL}
    assert representational
    assert prose.facts == records.facts - representational
    r_dates, r_numbers = _content_atoms_of_records(records.text)
    assert set(_DATE.findall(prose.text)) == r_dates
    p_numbers = set(re.findall(r"(?<![\d-])\d+(?![\d-])", _DATE.sub(" ", prose.text)))
    assert p_numbers == r_numbers
    for owner in {d.owner for d in suite.catalog.definitions if d.owner}:
        assert owner in prose.text and owner in records.text
    for column in _COLUMNS:
        assert (column in prose.text) == (column in records.text), column
    # Prose has no ids, versions or record fields.
    assert not re.search(r"\b(MSC|HAL|FED)-", prose.text)
    assert "version" not in prose.text.lower() and "effective_from" not in prose.text


def test_padding_matches_federation_length_and_position(suite: GroundingData) -> None:
    fed = render_federation(suite.catalog)
    d_block = context_block("D", suite.catalog)
    f_block = context_block("F", suite.catalog)
    c_block = context_block("C", suite.catalog)
    assert len(d_block) == len(f_block)
    assert d_block.startswith(c_block + "\n\n") and f_block.startswith(c_block + "\n\n")
    pad = f_block[len(c_block) + 2 :]
    assert d_block[len(c_block) + 2 :] == fed
    assert len(pad) == len(fed) and pad != fed
    assert "C-118" not in pad and "Halden" not in pad
    for n in (200, 777, len(fed)):
        assert len(render_padding(n)) == n


def test_federation_states_its_scope_and_exclusions(suite: GroundingData) -> None:
    fed = render_federation(suite.catalog)
    assert fed.count("\n") == 3
    for needle in (
        "only questions addressed to Halden Logistics",
        "C-118",
        "C-301",
        "C-204",
        "internal reporting",
    ):
        assert needle in fed


def test_context_lengths_pinned(suite: GroundingData) -> None:
    # The plan's threat-to-validity text quotes these two numbers.
    assert len(context_block("E", suite.catalog)) == 4297
    assert len(context_block("C", suite.catalog)) == 6305
