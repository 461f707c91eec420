"""The six track-A conditions (A, B, E, C, F, D) rendered from one content model.

Prompt layout, identical for every condition and item::

    system: SYSTEM_PROMPT (neutral, one for the whole suite)
    user:   ## Data tables   <- byte-identical in every data-bearing prompt (prompt-cache prefix)
            ## Context       <- table definitions, then the condition's block
            ## Answer format <- the track's contract instruction
            ## Question      <- the only item-specific text, last

Why this order: an OpenAI-compatible server (llama.cpp, vLLM) reuses the KV cache of the longest
common prefix, so ~10,000 characters of tables are processed once per run instead of once per
call; and since the conditions differ only inside ``## Context``, nothing else can explain a
difference between them.

Why one content model: conditions C, E, F and D (and the B1 catalogs) are rendered by
:func:`render_records` and :func:`render_prose` from the same
:class:`~sealedeval.suites.grounding.catalog.Catalog`. Both renderers report which facts they
emitted, so "E carries exactly C's facts" is checked, not asserted. F's padding is generated to
the exact character length of D's federation block and takes its position.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypedDict

from sealedeval.suites.grounding.catalog import (
    CONCEPT_LABELS,
    Catalog,
    Definition,
    FederationRecord,
)
from sealedeval.suites.grounding.corpus import EXTRACT_DATE, Corpus

__all__ = [
    "CONDITIONS",
    "CONDITION_NAMES",
    "REPRESENTATIONAL",
    "SCHEMA_TEXT",
    "SYSTEM_PROMPT",
    "WIKI_DEFICIENT",
    "ChatMessage",
    "Condition",
    "Rendered",
    "context_block",
    "federation_dict",
    "record_dict",
    "render_federation",
    "render_messages",
    "render_padding",
    "render_prose",
    "render_records",
    "user_prompt",
]

Condition = Literal["A", "B", "E", "C", "F", "D"]
CONDITIONS: tuple[Condition, ...] = ("A", "B", "E", "C", "F", "D")
CONDITION_NAMES: dict[Condition, str] = {
    "A": "schema",
    "B": "prose, deficient",
    "E": "prose, complete",
    "C": "records",
    "F": "records + padding",
    "D": "records + federation",
}


class ChatMessage(TypedDict):
    """One OpenAI-style chat message."""

    role: str
    content: str


SYSTEM_PROMPT = (
    "You answer questions about a company's data using only the material in the user's message. "
    "Reply with exactly one JSON object and nothing else."
)
"""Neutral system prompt shared by every call of the suite (spec: tools off, neutral prompt)."""

TABLES_HEADING = "## Data tables"
CONTEXT_HEADING = "## Context"
FORMAT_HEADING = "## Answer format"
QUESTION_HEADING = "## Question"

SCHEMA_TEXT = f"""Table definitions
customers: customer_id, name, region, signup_date (the day the account was opened).
orders: order_id, customer_id, order_date, goods (goods amount, USD), freight (freight charged \
to the customer, USD), commit_date (delivery date committed when the order was placed), \
recommit_date (renegotiated commit date; blank if never renegotiated).
shipments: shipment_id, order_id, carrier (HAL = Halden Logistics, ZEN = Zen Freight), \
contract_id, ship_date, scan_date (the carrier's delivery scan), confirm_date (the customer's \
confirmation of receipt). A blank date means the event has not happened.
invoices: invoice_id, order_id, invoice_date, goods, freight (USD).
returns: return_id, invoice_id, return_date, amount (goods value refunded, USD).
contracts: contract_id, carrier, carrier_name.
Dates are YYYY-MM-DD. The tables were extracted on {EXTRACT_DATE.isoformat()}."""
"""Condition A's whole block, and the first part of every other condition's block."""

WIKI_DEFICIENT = """Metrics wiki: how we count things (Sales & Operations space)

Active customers. A customer is active if they have ordered from us in the last year (365 days).

Net revenue. Net revenue is what we invoice, freight included, minus returns.

On time. A shipment is on time when the customer confirms receipt on or before the delivery date \
we committed to.

Delivered. An order is delivered when the customer confirms receipt.

Business days. Business days are Monday to Friday, excluding public holidays.

Update from the sales team: active customers are those with an order in the last 180 days. \
Please use this from now on."""
"""Condition B: a wiki page as organisations keep it. No owners, no dates; the last paragraph
contradicts the first; order value, the holiday lists, renegotiated commit dates, Halden's
definitions and the change dates are missing; net revenue still states the superseded rule."""

REPRESENTATIONAL = frozenset({"id", "version", "supersedes", "superseded_by"})
"""Fact attributes that exist only in the record representation (prose has no ids/versions)."""


@dataclass(frozen=True)
class Rendered:
    """A rendered block plus the content facts it carries, as ``"<def ref>.<attribute>"`` keys."""

    text: str
    facts: frozenset[str]


def _fact(defn: Definition, attribute: str) -> str:
    return f"{defn.ref.label()}.{attribute}"


def _rule_text(defn: Definition) -> str:
    """The record's ``rule`` field: how the parameters are used (no parameter values)."""
    return {
        "active_customer": "a customer is active on the as-of date if it has at least one order "
        "whose date_field lies in (as_of - window_days, as_of]",
        "net_revenue": "sum of invoice goods, plus invoice freight if include_freight, over "
        "invoices whose period_field is in the period; minus the amount of returns whose "
        "returns_field is in the period",
        "on_time": "a shipment is on time if its delivery_field is on or before the date named "
        "by commit_date",
        "delivered": "a shipment is delivered on its date_field; blank means not delivered",
        "order_value": "goods of the order, plus its freight if include_freight",
        "business_day": "a day that is neither a weekend day nor in holidays; the calendar is "
        "defined for calendar_years only",
    }[defn.concept]


def _param_json(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def record_dict(defn: Definition) -> tuple[dict[str, object], set[str]]:
    """One definition as a record object, plus the fact keys it carries."""
    obj: dict[str, object] = {"id": defn.def_id, "version": defn.version}
    facts = {
        _fact(defn, "id"),
        _fact(defn, "version"),
        _fact(defn, "concept"),
        _fact(defn, "organisation"),
        _fact(defn, "rule"),
    }
    obj["concept"] = CONCEPT_LABELS[defn.concept]
    obj["organisation"] = defn.organisation
    if defn.effective_from is not None:
        obj["effective_from"] = defn.effective_from.isoformat()
        facts.add(_fact(defn, "effective_from"))
    if defn.supersedes is not None:
        obj["supersedes"] = f"{defn.def_id} v{defn.supersedes}"
        facts.add(_fact(defn, "supersedes"))
    if defn.superseded_by is not None:
        obj["superseded_by"] = f"{defn.def_id} v{defn.superseded_by}"
        facts.add(_fact(defn, "superseded_by"))
    if defn.owner is not None:
        obj["owner"] = defn.owner
        facts.add(_fact(defn, "owner"))
    obj["parameters"] = {k: _param_json(v) for k, v in defn.parameters}
    facts |= {_fact(defn, f"param.{k}") for k, _ in defn.parameters}
    obj["rule"] = _rule_text(defn)
    return obj, facts


def _line(obj: Mapping[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def render_records(catalog: Catalog, *, heading: str = "Definition records") -> Rendered:
    """Condition C: the catalog as machine-readable records, one JSON object per line.

    The first line states the catalog-level version rule, which decides the definition in force.
    """
    lines = [f"{heading} (JSON, one per line):"]
    lines.append(_line({"catalog": catalog.organisation, "version_rule": catalog.version_rule}))
    facts = {"catalog.organisation", "catalog.version_rule"}
    for defn in catalog.definitions:
        obj, f = record_dict(defn)
        lines.append(_line(obj))
        facts |= f
    return Rendered("\n".join(lines), frozenset(facts))


def _holidays(days: Iterable[str]) -> str:
    items = list(days)
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _prose_clause(defn: Definition) -> tuple[str, set[str]] | None:
    """The rule of one definition in words, or None if its parameters are missing (a gap)."""
    p = defn.params()
    keys = {_fact(defn, f"param.{k}") for k in p} | {_fact(defn, "rule")}
    try:
        if defn.concept == "active_customer":
            text = (
                f"a customer is active on a date if it has at least one order whose "
                f"{p['date_field']} falls within the {p['window_days']} days ending on that date "
                "(that date included)"
            )
        elif defn.concept == "net_revenue":
            goods = "goods plus freight" if p["include_freight"] else "goods without freight"
            text = (
                f"net revenue for a period is the {goods} of invoices whose {p['period_field']} "
                f"is in the period, minus the amount of returns whose {p['returns_field']} is in "
                "the period"
            )
        elif defn.concept == "on_time":
            text = (
                f"a shipment is on time if its {p['delivery_field']} is on or before its "
                f"{p['commit_date']}"
            )
        elif defn.concept == "delivered":
            text = f"a shipment is delivered on its {p['date_field']}; if that is blank, it is not"
        elif defn.concept == "order_value":
            text = (
                "the value of an order is its goods plus its freight"
                if p["include_freight"]
                else "the value of an order is its goods, without freight"
            )
        elif defn.concept == "business_day":
            weekend = p["weekend"]
            years = p["calendar_years"]
            holidays = p["holidays"]
            assert isinstance(weekend, tuple) and isinstance(years, tuple)
            assert isinstance(holidays, tuple)
            text = (
                f"a business day is any day except {_holidays(weekend)} and these holidays: "
                f"{', '.join(holidays)}; the calendar is defined for {_holidays(years)} only"
            )
        else:
            raise KeyError(defn.concept)
    except KeyError:
        return None
    return text, keys


def _prose_definition(defn: Definition, catalog: Catalog) -> tuple[str, set[str]]:
    facts = {_fact(defn, "concept"), _fact(defn, "organisation")}
    label = CONCEPT_LABELS[defn.concept]
    if defn.effective_from is not None:
        when = f"From {defn.effective_from.isoformat()}"
        facts.add(_fact(defn, "effective_from"))
    else:
        when = "From a date that is not recorded"
    clause = _prose_clause(defn)
    if clause is None:
        body = f"a new rule for {label} applies, but its details are not written down"
    else:
        body, keys = clause
        facts |= keys
    if defn.owner is not None:
        owner = f"This rule is owned by the {defn.owner}."
        if defn.organisation != catalog.organisation:
            owner = f"This rule is owned by {defn.owner}."
        facts.add(_fact(defn, "owner"))
    else:
        owner = "No owner is named for this rule."
    text = f"{when}, for {defn.organisation} {body}. {owner}"
    if defn.superseded_by is not None and not any(
        d.def_id == defn.def_id and d.version == defn.superseded_by for d in catalog.definitions
    ):
        text += f" It has been replaced by a newer {label} rule, which is not described here."
    return text, facts


def render_prose(catalog: Catalog, *, heading: str = "Definitions") -> Rendered:
    """Condition E: the same content as :func:`render_records` as running text.

    Windows, change dates, formulas, owner roles and both calendars are all there; ids, version
    numbers and supersedes pointers are not (they are representation, see
    :data:`REPRESENTATIONAL`). Versions of one concept appear in date order, so "from <date>"
    carries the change.
    """
    facts = {"catalog.organisation", "catalog.version_rule"}
    paras = [
        f"{heading} kept by {catalog.organisation}.",
        "Which rule applies: a figure uses the rule in force on its reference date (the as-of "
        "date, or the last day of the period); a rule is in force from its start date (that day "
        "included) until the start date of the rule that replaces it.",
    ]
    order = {d.ref: i for i, d in enumerate(catalog.definitions)}
    for label in dict.fromkeys((d.concept, d.organisation) for d in catalog.definitions):
        group = sorted(
            (d for d in catalog.definitions if (d.concept, d.organisation) == label),
            key=lambda d: (d.version, order[d.ref]),
        )
        sentences = []
        for defn in group:
            text, f = _prose_definition(defn, catalog)
            sentences.append(text)
            facts |= f
        title = CONCEPT_LABELS[label[0]].capitalize()
        paras.append(f"{title} ({label[1]}). " + " ".join(sentences))
    return Rendered("\n\n".join(paras), frozenset(facts))


def federation_dict(fed: FederationRecord) -> dict[str, object]:
    """One federation record as an object: governing definition, scope and exclusions."""
    return {
        "id": fed.fed_id,
        "version": fed.version,
        "effective_from": fed.effective_from.isoformat(),
        "owner": fed.owner,
        "concept": CONCEPT_LABELS[fed.concept],
        "governing_definition": fed.governing.label(),
        "applies_to": (
            f"only questions addressed to {fed.counterparty} (the counterparty) about "
            f"contract {', '.join(fed.contracts)}"
        ),
        "excludes": fed.excluded,
    }


FEDERATION_HEADING = "Federation records (JSON, one per line):"
PADDING_HEADING = "Appendix: facilities notes (JSON, one per line):"


def render_federation(catalog: Catalog) -> str:
    """Condition D's extra block: the federation records, stating their scope and exclusions."""
    lines = [FEDERATION_HEADING] + [_line(federation_dict(f)) for f in catalog.federation]
    return "\n".join(lines)


_PADDING_NOTES = (
    (
        "visitor parking",
        "Visitors park in the marked bays by the north gate and sign in at "
        "reception; the bays are reserved for visitors during office hours.",
    ),
    (
        "meeting rooms",
        "Meeting rooms are booked through the shared calendar; please leave the "
        "room tidy and return the whiteboard markers to the tray.",
    ),
    (
        "kitchen",
        "The kitchen is cleaned every evening; label food kept in the fridge and take "
        "it home at the end of the week.",
    ),
    (
        "fire drills",
        "Fire drills are announced by the facilities team; leave by the nearest "
        "exit and gather at the assembly point in the car park.",
    ),
    (
        "printing",
        "Printers on each floor accept badge release; collect your pages promptly and "
        "recycle unwanted prints in the blue bins.",
    ),
    ("lost property", "Lost property is kept at reception for one month before it is donated."),
)


def render_padding(length: int) -> str:
    """Condition F's inert appendix of exactly ``length`` characters.

    It is shaped like the federation block (a heading and JSON lines) but says nothing about
    definitions, so F vs C isolates context length from content. The last note is cut to make the
    length exact.

    Raises:
        ValueError: ``length`` is too small to hold the heading and one record.
    """
    lines = [PADDING_HEADING]
    i = 0
    while True:
        topic, note = _PADDING_NOTES[i % len(_PADDING_NOTES)]
        rec = {"id": f"FAC-{i + 1:02d}", "topic": topic, "note": note}
        candidate = "\n".join([*lines, _line(rec)])
        if len(candidate) > length:
            break
        lines.append(_line(rec))
        i += 1
    topic, note = _PADDING_NOTES[i % len(_PADDING_NOTES)]
    base = "\n".join([*lines, _line({"id": f"FAC-{i + 1:02d}", "topic": topic, "note": ""})])
    room = length - len(base)
    if room < 2:
        # The cut record would be empty: stretch the previous note instead.
        if len(lines) < 2:
            raise ValueError(f"padding length {length} is too small")
        lines.pop()
        i -= 1
        topic, note = _PADDING_NOTES[i % len(_PADDING_NOTES)]
        base = "\n".join([*lines, _line({"id": f"FAC-{i + 1:02d}", "topic": topic, "note": ""})])
        room = length - len(base)
    filler = (note + " ") * (room // max(len(note), 1) + 2)
    cut = filler[: room - 1].rstrip()
    cut = cut + "." * (room - len(cut))
    text = "\n".join([*lines, _line({"id": f"FAC-{i + 1:02d}", "topic": topic, "note": cut})])
    if len(text) != length:  # json escaping never applies to this ASCII text; keep it honest
        raise ValueError(f"padding came out at {len(text)} characters, wanted {length}")
    return text


@lru_cache(maxsize=64)
def context_block(condition: Condition, catalog: Catalog) -> str:
    """The ``## Context`` block of one condition: table definitions plus the condition's part.

    Cached: a run renders the same six blocks hundreds of times.
    """
    if condition == "A":
        return SCHEMA_TEXT
    if condition == "B":
        return f"{SCHEMA_TEXT}\n\n{WIKI_DEFICIENT}"
    if condition == "E":
        return f"{SCHEMA_TEXT}\n\n{render_prose(catalog).text}"
    records = f"{SCHEMA_TEXT}\n\n{render_records(catalog).text}"
    if condition == "C":
        return records
    federation = render_federation(catalog)
    if condition == "D":
        return f"{records}\n\n{federation}"
    if condition == "F":
        return f"{records}\n\n{render_padding(len(federation))}"
    raise ValueError(f"unknown condition {condition!r}")


def user_prompt(tables: str | None, context: str, instruction: str, question: str) -> str:
    """Assemble the user message: tables first, context next, answer format, question last."""
    parts = []
    if tables is not None:
        parts.append(f"{TABLES_HEADING}\n{tables}")
    parts.append(f"{CONTEXT_HEADING}\n{context}")
    parts.append(f"{FORMAT_HEADING}\n{instruction}")
    parts.append(f"{QUESTION_HEADING}\n{question}")
    return "\n\n".join(parts)


def render_messages(
    question: str,
    condition: Condition,
    *,
    corpus: Corpus,
    catalog: Catalog,
    instruction: str,
) -> list[ChatMessage]:
    """Render one track-A call: neutral system prompt, then tables → context → format → question.

    Args:
        question: The item's question (the only item-specific text).
        condition: One of :data:`CONDITIONS`.
        corpus: Source of the data tables.
        catalog: The complete catalog (conditions choose what of it to show).
        instruction: The answer-contract instruction of track A.
    """
    user = user_prompt(
        corpus.tables_csv(), context_block(condition, catalog), instruction, question
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]
