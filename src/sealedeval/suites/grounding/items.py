"""The 40 track-A items: questions, the definition in force, and code-computed reference answers.

Each item is declared as a small spec (family, concept, audience, counterparty, contract, the
definition expected to govern) plus an ordered list of candidate queries. The builder takes the
first candidate that (a) is governed by the expected definition according to
:func:`~sealedeval.suites.grounding.catalog.governing_definition`, (b) separates that definition
from the competing one and (c) has a non-zero reference value and has not been used by another
item. So the reference answer is always *computed* from corpus + catalog, the spec only states
intent, and a generator change that breaks an item fails generation instead of silently producing
a non-separating item.

Only ``Item.question`` is ever rendered into a prompt; :func:`leak_check` proves that the
reference columns did not slip into the rendered messages.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from sealedeval.suites.grounding.catalog import (
    HALDEN,
    MERIDIAN,
    ZEN_FREIGHT,
    Audience,
    Catalog,
    Definition,
    DefRef,
    Query,
    evaluate,
    governing_definition,
    values_equal,
    verify_separating,
)
from sealedeval.suites.grounding.conditions import QUESTION_HEADING
from sealedeval.suites.grounding.corpus import Corpus

__all__ = [
    "FAMILIES",
    "FAMILY_COUNTS",
    "Family",
    "Item",
    "build_items",
    "competing_definition",
    "leak_check",
    "question_body",
]

Family = Literal["COMP", "TEMP", "XORG", "ABST"]
FAMILIES: tuple[Family, ...] = ("COMP", "TEMP", "XORG", "ABST")
FAMILY_COUNTS: dict[Family, int] = {"COMP": 12, "TEMP": 10, "XORG": 12, "ABST": 6}


@dataclass(frozen=True)
class Item:
    """One track-A item. Everything except ``question`` is grader-only and never rendered.

    Attributes:
        role: ``internal``, ``counterparty`` (a governed XORG question), ``scope_separator``
            (an XORG question outside the federation scope) or ``abstain``.
        boundary: True for the two TEMP items whose reference date is an effective date.
    """

    item_id: str
    family: Family
    question: str
    concept: str | None
    audience: Audience
    counterparty: str | None
    contract_id: str | None
    role: str
    boundary: bool
    query: Query | None
    in_force: DefRef | None
    competing: DefRef | None
    reference_value: float | None
    competing_value: float | None
    abstain_reason: str | None

    @property
    def answerable(self) -> bool:
        """False for ABST items, whose correct response is a refusal with a reason."""
        return self.in_force is not None


@dataclass(frozen=True)
class _Spec:
    item_id: str
    family: Family
    concept: str
    audience: Audience
    counterparty: str | None
    contract_id: str | None
    expect: str
    candidates: tuple[Query, ...]
    role: str = "internal"
    boundary: bool = False


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def _month_end(day: dt.date) -> dt.date:
    nxt = dt.date(day.year + day.month // 12, day.month % 12 + 1, 1)
    return nxt - dt.timedelta(days=1)


def _months(first: str, last: str, *, newest_first: bool = False) -> list[tuple[dt.date, dt.date]]:
    out: list[tuple[dt.date, dt.date]] = []
    day = _d(first)
    stop = _d(last)
    while day <= stop:
        out.append((day, _month_end(day)))
        day = _month_end(day) + dt.timedelta(days=1)
    return out[::-1] if newest_first else out


def _windows(
    first: str,
    last: str,
    *,
    newest_first: bool = False,
) -> list[tuple[dt.date, dt.date]]:
    """Candidate periods inside [first, last]: months, then two-month windows, then quarters."""
    months = _months(first, last)
    out = list(months)
    for width in (2, 3):
        out += [(months[i][0], months[i + width - 1][1]) for i in range(len(months) - width + 1)]
    if newest_first:
        out.sort(key=lambda p: (p[1] - p[0], -p[1].toordinal()))
    return out


def _periods(
    concept: str,
    spans: Iterable[tuple[dt.date, dt.date]],
    contract: str | None = None,
) -> tuple[Query, ...]:
    return tuple(Query(concept, start=a, end=b, contract_id=contract) for a, b in spans)


def _as_of(
    concept: str,
    dates: Sequence[str],
    regions: Sequence[str | None] = (None,),
) -> tuple[Query, ...]:
    return tuple(Query(concept, as_of=_d(d), region=r) for r in regions for d in dates)


def _bday(
    corpus: Corpus,
    contract: str,
    *,
    since: str = "2025-01-01",
    pairs: bool = False,
) -> tuple[Query, ...]:
    ships = [
        s
        for s in corpus.shipments
        if s.contract_id == contract and s.scan_date is not None and s.ship_date >= _d(since)
    ]
    groups: list[tuple[str, ...]] = (
        [(a.shipment_id, b.shipment_id) for i, a in enumerate(ships) for b in ships[i + 1 :]]
        if pairs
        else [(s.shipment_id,) for s in ships]
    )
    out = []
    for g in groups:
        last = max(corpus.shipment(sid).scan_date or dt.date.min for sid in g)
        out.append(Query("business_day", as_of=last, contract_id=contract, shipment_ids=g))
    return tuple(out)


_REGIONS = ("North", "South", "East", "West")


def _month_ends(first: str, last: str, *, newest_first: bool = False) -> tuple[str, ...]:
    ends = [b.isoformat() for _, b in _months(first, last)]
    return tuple(ends[::-1] if newest_first else ends)


def _specs(corpus: Corpus) -> list[_Spec]:
    """The 34 answerable item specs (COMP 12, TEMP 10, XORG 12) in item order.

    Candidate lists are ordered by preference (months before longer windows); the builder takes
    the first one that fits, so a list only needs to be wide enough, never exact.
    """
    cp: Audience = "counterparty"
    i_: Audience = "internal"
    hal = HALDEN
    act, rev, ont = "active_customer", "net_revenue", "on_time"
    dlv, val, bd = "delivered", "order_value", "business_day"
    post_v2_active = _month_ends("2026-04-01", "2026-08-31", newest_first=True)
    pre_v2_active = _month_ends("2025-07-01", "2026-03-31", newest_first=True)
    fed_span = ("2025-07-01", "2026-08-31")
    return [
        # COMP: the current definition, internal reporting (three of them on C-118 rows).
        _Spec(
            "COMP-01",
            "COMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v2",
            _as_of(act, post_v2_active),
        ),
        _Spec(
            "COMP-02",
            "COMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v2",
            _as_of(act, post_v2_active, _REGIONS),
        ),
        _Spec(
            "COMP-03",
            "COMP",
            rev,
            i_,
            None,
            None,
            "MSC-NET-REVENUE v2",
            _periods(rev, _months("2026-05-01", "2026-08-31")),
        ),
        _Spec(
            "COMP-04",
            "COMP",
            rev,
            i_,
            None,
            None,
            "MSC-NET-REVENUE v2",
            _periods(rev, _windows("2026-05-01", "2026-08-31")[::-1]),
        ),
        _Spec(
            "COMP-05",
            "COMP",
            ont,
            i_,
            None,
            None,
            "MSC-ON-TIME v2",
            _periods(ont, _windows("2026-02-01", "2026-08-31", newest_first=True)),
        ),
        _Spec(
            "COMP-06",
            "COMP",
            ont,
            i_,
            None,
            None,
            "MSC-ON-TIME v2",
            _periods(ont, _windows("2026-02-01", "2026-08-31")[::-1]),
        ),
        _Spec(
            "COMP-07",
            "COMP",
            dlv,
            i_,
            None,
            "C-118",
            "MSC-DELIVERED v1",
            _periods(dlv, _windows(*fed_span, newest_first=True), "C-118"),
        ),
        _Spec(
            "COMP-08",
            "COMP",
            dlv,
            i_,
            None,
            None,
            "MSC-DELIVERED v1",
            _periods(dlv, _windows(*fed_span)),
        ),
        _Spec(
            "COMP-09",
            "COMP",
            val,
            i_,
            None,
            "C-118",
            "MSC-ORDER-VALUE v1",
            _periods(val, _windows(*fed_span, newest_first=True), "C-118"),
        ),
        _Spec(
            "COMP-10",
            "COMP",
            val,
            i_,
            None,
            "C-301",
            "MSC-ORDER-VALUE v1",
            _periods(val, _windows(*fed_span), "C-301"),
        ),
        _Spec(
            "COMP-11",
            "COMP",
            bd,
            i_,
            None,
            "C-118",
            "MSC-BUSINESS-DAY v1",
            _bday(corpus, "C-118") + _bday(corpus, "C-118", pairs=True),
        ),
        _Spec(
            "COMP-12",
            "COMP",
            bd,
            i_,
            None,
            None,
            "MSC-BUSINESS-DAY v1",
            _bday(corpus, "C-204") + _bday(corpus, "C-301") + _bday(corpus, "C-204", pairs=True),
        ),
        # TEMP: reference date before a change (v1 governs), two exactly on an effective date.
        _Spec(
            "TEMP-01",
            "TEMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v1",
            _as_of(act, pre_v2_active),
        ),
        _Spec(
            "TEMP-02",
            "TEMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v1",
            _as_of(act, pre_v2_active[::-1]),
        ),
        _Spec(
            "TEMP-03",
            "TEMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v1",
            _as_of(act, pre_v2_active, _REGIONS),
        ),
        _Spec(
            "TEMP-04",
            "TEMP",
            act,
            i_,
            None,
            None,
            "MSC-ACTIVE-CUSTOMER v2",
            _as_of(act, ("2026-04-01",)),
            boundary=True,
        ),
        _Spec(
            "TEMP-05",
            "TEMP",
            rev,
            i_,
            None,
            None,
            "MSC-NET-REVENUE v1",
            _periods(rev, _windows("2025-07-01", "2026-04-30", newest_first=True)),
        ),
        _Spec(
            "TEMP-06",
            "TEMP",
            rev,
            i_,
            None,
            None,
            "MSC-NET-REVENUE v1",
            _periods(rev, _windows("2025-07-01", "2026-04-30")[::-1]),
        ),
        _Spec(
            "TEMP-07",
            "TEMP",
            rev,
            i_,
            None,
            None,
            "MSC-NET-REVENUE v2",
            _periods(rev, [(_d("2026-05-01"), _d("2026-05-01"))]),
            boundary=True,
        ),
        _Spec(
            "TEMP-08",
            "TEMP",
            ont,
            i_,
            None,
            None,
            "MSC-ON-TIME v1",
            _periods(ont, _windows("2025-05-01", "2026-01-31", newest_first=True)),
        ),
        _Spec(
            "TEMP-09",
            "TEMP",
            ont,
            i_,
            None,
            None,
            "MSC-ON-TIME v1",
            _periods(ont, _windows("2025-05-01", "2026-01-31")),
        ),
        _Spec(
            "TEMP-10",
            "TEMP",
            ont,
            i_,
            None,
            None,
            "MSC-ON-TIME v1",
            _periods(ont, _windows("2025-05-01", "2026-01-31")[::-1]),
        ),
        # XORG: ten questions addressed to Halden about C-118 (federation: Halden's rule) ...
        *(
            _Spec(
                f"XORG-0{n}",
                "XORG",
                dlv,
                cp,
                hal,
                "C-118",
                "HAL-DELIVERED v1",
                _periods(dlv, order, "C-118"),
                role="counterparty",
            )
            for n, order in (
                (1, _windows(*fed_span, newest_first=True)),
                (2, _windows(*fed_span)),
                (3, _windows(*fed_span)[::-1]),
                (4, _windows(*fed_span, newest_first=True)[::-1]),
            )
        ),
        *(
            _Spec(
                f"XORG-0{n}",
                "XORG",
                val,
                cp,
                hal,
                "C-118",
                "HAL-ORDER-VALUE v1",
                _periods(val, order, "C-118"),
                role="counterparty",
            )
            for n, order in (
                (5, _windows(*fed_span, newest_first=True)),
                (6, _windows(*fed_span)[::-1]),
                (7, _windows(*fed_span)),
            )
        ),
        _Spec(
            "XORG-08",
            "XORG",
            bd,
            cp,
            hal,
            "C-118",
            "HAL-BUSINESS-DAY v1",
            _bday(corpus, "C-118", since=fed_span[0]),
            role="counterparty",
        ),
        _Spec(
            "XORG-09",
            "XORG",
            bd,
            cp,
            hal,
            "C-118",
            "HAL-BUSINESS-DAY v1",
            _bday(corpus, "C-118", since=fed_span[0])[::-1],
            role="counterparty",
        ),
        _Spec(
            "XORG-10",
            "XORG",
            bd,
            cp,
            hal,
            "C-118",
            "HAL-BUSINESS-DAY v1",
            _bday(corpus, "C-118", since=fed_span[0], pairs=True),
            role="counterparty",
        ),
        # ... and the two scope separators, both outside the federation rules (Meridian's rule).
        _Spec(
            "XORG-11",
            "XORG",
            dlv,
            cp,
            hal,
            "C-301",
            "MSC-DELIVERED v1",
            _periods(dlv, _windows(*fed_span), "C-301"),
            role="scope_separator",
        ),
        _Spec(
            "XORG-12",
            "XORG",
            val,
            cp,
            ZEN_FREIGHT,
            "C-204",
            "MSC-ORDER-VALUE v1",
            _periods(val, _windows(*fed_span), "C-204"),
            role="scope_separator",
        ),
    ]


_ABSTAIN: tuple[tuple[str, Audience, str | None, str | None, str, str], ...] = (
    (
        "ABST-01",
        "internal",
        None,
        None,
        "What was the gross margin on orders placed in June 2026, in USD?",
        "the corpus has no cost of goods, so no margin can be computed",
    ),
    (
        "ABST-02",
        "internal",
        None,
        None,
        "How many of the orders placed in May 2026 came through the web shop?",
        "the orders table has no sales channel",
    ),
    (
        "ABST-03",
        "internal",
        None,
        "C-118",
        "What was the total shipped weight in kilograms under contract C-118 in April 2026?",
        "the shipments table has no weights",
    ),
    (
        "ABST-04",
        "counterparty",
        HALDEN,
        "C-118",
        "What fuel surcharge did Halden Logistics charge Meridian under contract C-118 in March "
        "2026, in USD?",
        "the corpus holds no carrier invoices or surcharges",
    ),
    (
        "ABST-05",
        "internal",
        None,
        None,
        "What was the average customer satisfaction score in the second quarter of 2026?",
        "the corpus holds no survey data",
    ),
    (
        "ABST-06",
        "internal",
        None,
        None,
        "How many customer complaints were logged in July 2026?",
        "the corpus holds no complaint records",
    ),
)


def _prefix(audience: Audience, counterparty: str | None, contract: str | None) -> str:
    if audience == "internal":
        return f"Internal reporting for {MERIDIAN} management."
    return (
        f"Question from {counterparty} (counterparty) about contract {contract}; the answer "
        f"will be sent to {counterparty}."
    )


def _span(q: Query) -> str:
    assert q.start is not None and q.end is not None
    if q.start == q.end:
        return f"on {q.start.isoformat()}"
    return f"from {q.start.isoformat()} to {q.end.isoformat()} inclusive"


def question_body(q: Query) -> str:
    """The question text for a query (no audience prefix); shared with tracks B1, B2, B4."""
    c = q.concept
    if c == "active_customer":
        assert q.as_of is not None
        where = f" in the {q.region} region" if q.region else ""
        return f"How many customers{where} were active as of {q.as_of.isoformat()}?"
    if c == "net_revenue":
        assert q.start is not None and q.end is not None
        if q.start == q.end:
            return f"What was net revenue for {q.start.isoformat()}, in USD?"
        return (
            f"What was net revenue for the period {q.start.isoformat()} to {q.end.isoformat()} "
            "inclusive, in USD?"
        )
    if c == "on_time":
        return f"Of the shipments delivered {_span(q)}, how many were on time?"
    if c == "delivered":
        under = f" under contract {q.contract_id}" if q.contract_id else ""
        return f"How many shipments{under} were delivered {_span(q)}?"
    if c == "order_value":
        return (
            f"What was the total order value of the orders placed {_span(q)} that shipped under "
            f"contract {q.contract_id}, in USD?"
        )
    if c == "business_day":
        rule = (
            "Count business days strictly after the ship date, up to and including the scan_date."
        )
        if len(q.shipment_ids) == 1:
            return f"{rule} How many business days did shipment {q.shipment_ids[0]} take?"
        ids = " and ".join(q.shipment_ids)
        return f"{rule} What is the total number of business days for shipments {ids}?"
    raise ValueError(f"no question template for {c}")


def competing_definition(catalog: Catalog, in_force: Definition) -> Definition:
    """The pre-specified competing rule for an item governed by ``in_force``.

    For a versioned concept it is the adjacent version (the superseded one for current questions,
    the current one for questions dated before a change); for a concept on which Meridian and
    Halden differ it is the other organisation's definition. Both are rules a reasonable reader
    holding the same material might apply.
    """
    versions = catalog.versions(in_force.def_id)
    if len(versions) > 1:
        other = in_force.version - 1 if in_force.version > 1 else in_force.version + 1
        return catalog.get(DefRef(in_force.def_id, other))
    rivals = [
        d
        for d in catalog.definitions
        if d.concept == in_force.concept and d.organisation != in_force.organisation
    ]
    if len(rivals) != 1:
        raise ValueError(f"{in_force.ref.label()}: no unique competing definition")
    return rivals[0]


def _build_answerable(corpus: Corpus, catalog: Catalog, spec: _Spec, used: set[Query]) -> Item:
    for q in spec.candidates:
        if q in used:
            continue
        defn = governing_definition(
            catalog,
            spec.concept,
            q.reference_date,
            audience=spec.audience,
            counterparty=spec.counterparty,
            contract_id=spec.contract_id,
            use_federation=True,
        )
        if defn.ref.label() != spec.expect:
            continue
        rival = competing_definition(catalog, defn)
        ref = evaluate(corpus, defn, q)
        alt = evaluate(corpus, rival, q)
        if values_equal(ref, alt) or values_equal(ref, 0.0):
            continue
        used.add(q)
        question = (
            f"{_prefix(spec.audience, spec.counterparty, spec.contract_id)} {question_body(q)}"
        )
        return Item(
            item_id=spec.item_id,
            family=spec.family,
            question=question,
            concept=spec.concept,
            audience=spec.audience,
            counterparty=spec.counterparty,
            contract_id=spec.contract_id,
            role=spec.role,
            boundary=spec.boundary,
            query=q,
            in_force=defn.ref,
            competing=rival.ref,
            reference_value=ref,
            competing_value=alt,
            abstain_reason=None,
        )
    raise ValueError(
        f"item {spec.item_id}: no candidate query is governed by {spec.expect} and "
        "separating on this corpus"
    )


def build_items(corpus: Corpus, catalog: Catalog) -> tuple[Item, ...]:
    """Build the 40 items and verify them.

    Raises:
        ValueError: An item cannot be built, the family counts are wrong, or an answerable
            item is not separating (re-checked by
            :func:`~sealedeval.suites.grounding.catalog.verify_separating`).
    """
    used: set[Query] = set()
    items = [_build_answerable(corpus, catalog, spec, used) for spec in _specs(corpus)]
    for item_id, audience, cp, contract, text, reason in _ABSTAIN:
        items.append(
            Item(
                item_id=item_id,
                family="ABST",
                question=f"{_prefix(audience, cp, contract)} {text}",
                concept=None,
                audience=audience,
                counterparty=cp,
                contract_id=contract,
                role="abstain",
                boundary=False,
                query=None,
                in_force=None,
                competing=None,
                reference_value=None,
                competing_value=None,
                abstain_reason=reason,
            )
        )
    for fam, want in FAMILY_COUNTS.items():
        got = sum(1 for it in items if it.family == fam)
        if got != want:
            raise ValueError(f"family {fam}: {got} items, the spec requires {want}")
    verify_separating(corpus, catalog, items)
    return tuple(items)


_HIDDEN_MARKERS = ("reference_value", "competing_value", "abstain_reason", "in_force")


def _number_forms(value: float) -> set[str]:
    forms = {f"{value:.2f}"}
    if float(value).is_integer():
        n = int(value)
        forms |= {str(n), f"{n:,}"}
    return forms


def leak_check(item: Item, messages: Sequence[Mapping[str, object]]) -> list[str]:
    """Find reference-answer leaks in the rendered messages of one item.

    Checks the whole prompt for the item id, the family label and the names of grader-only
    columns, and the item-specific block (everything after the last ``## Question`` heading; the
    tables and context before it are shared by all items, which the tests verify) for the
    reference value, the competing value and the abstention reason.

    Returns:
        One message per leak; empty when clean.
    """
    text = "\n".join(str(m.get("content", "")) for m in messages)
    problems: list[str] = []
    for marker in (item.item_id, *_HIDDEN_MARKERS):
        if marker in text:
            problems.append(f"{item.item_id}: prompt contains {marker!r}")
    if re.search(rf"\b{item.family}\b", text):
        problems.append(f"{item.item_id}: prompt contains the family label {item.family}")
    tail = text.rsplit(QUESTION_HEADING, 1)[-1]
    for label, value in (("reference", item.reference_value), ("competing", item.competing_value)):
        if value is None:
            continue
        for form in _number_forms(value):
            if re.search(rf"(?<![\w.,-]){re.escape(form)}(?![\w]|[.,]\d)", tail):
                problems.append(f"{item.item_id}: question block contains the {label} value {form}")
    if item.abstain_reason and item.abstain_reason in text:
        problems.append(f"{item.item_id}: prompt contains the abstention reason")
    return problems
