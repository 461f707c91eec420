"""Track B1, gap surfacing: six catalog gaps, each with a question it blocks, plus four controls.

The gapped catalog is the complete catalog with six mutations (one per gap type of the spec).
It is rendered by the same renderers as conditions C and E, so ``records_deficient`` and
``prose_deficient`` carry the same gaps in two representations; ``schema`` shows no catalog.
Generation verifies by code that every gap question is answerable with the complete catalog and
blocked by its gap, and that every control is answerable with the gapped catalog — so a control
is a real control and a gap probe is a real gap.

Metrics per response: gap detected, missing field named, owner role named (gap probes); false
alarm and control accuracy (controls). 10 probes × 3 conditions × 2 replicates = 60 calls.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from sealedeval.suites.grounding.catalog import (
    MERIDIAN,
    Catalog,
    Definition,
    Query,
    Unanswerable,
    evaluate,
    governing_definition,
    values_equal,
    with_definitions,
)
from sealedeval.suites.grounding.conditions import (
    SCHEMA_TEXT,
    SYSTEM_PROMPT,
    ChatMessage,
    render_prose,
    render_records,
    user_prompt,
)
from sealedeval.suites.grounding.contract import extract_json_object, parse_number
from sealedeval.suites.grounding.corpus import Corpus

__all__ = [
    "B1_CONDITIONS",
    "B1_INSTRUCTION",
    "B1_SCHEMA",
    "B1Answer",
    "B1Condition",
    "GapProbe",
    "b1_context",
    "build_b1_probes",
    "gapped_catalog",
    "parse_b1",
    "render_b1",
    "score_b1",
]

B1Condition = Literal["schema", "prose_deficient", "records_deficient"]
B1_CONDITIONS: tuple[B1Condition, ...] = ("schema", "prose_deficient", "records_deficient")

GapKind = Literal[
    "empty_parameters",
    "missing_effective_from",
    "missing_owner",
    "dangling_superseded_by",
    "calendar_previous_year",
    "missing_definition",
]

B1_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "gap": {"type": "boolean"},
        "missing_field": {"type": ["string", "null"]},
        "owner_role": {"type": ["string", "null"]},
        "value": {"type": ["number", "null"]},
    },
    "required": ["gap", "missing_field", "owner_role", "value"],
    "additionalProperties": False,
}

B1_INSTRUCTION = (
    'Reply with one JSON object: {"gap": true or false, "missing_field": string or null, '
    '"owner_role": string or null, "value": number or null}. If something the question needs is '
    'missing from the definitions, set "gap": true, name what is missing in "missing_field" and '
    'the role responsible for it in "owner_role", and set "value": null. Otherwise set "gap": '
    'false and put the answer in "value".'
)


@dataclass(frozen=True)
class GapProbe:
    """One B1 question. ``kind`` is None for a control (no gap; has a reference value)."""

    probe_id: str
    kind: GapKind | None
    question: str
    query: Query
    audience: Literal["internal", "counterparty"]
    missing_field: str | None
    field_aliases: tuple[str, ...]
    owner_roles: tuple[str, ...]
    reference_value: float | None

    @property
    def is_control(self) -> bool:
        """True for the four no-gap controls (they measure the false-alarm rate)."""
        return self.kind is None


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


_INTERNAL = f"Internal reporting for {MERIDIAN} management."


def gapped_catalog(catalog: Catalog) -> Catalog:
    """The complete catalog with the spec's six gaps inserted.

    1. ``MSC-ACTIVE-CUSTOMER v2``: empty ``parameters``;
    2. ``MSC-NET-REVENUE v2``: no ``effective_from``;
    3. ``MSC-ON-TIME v2``: no ``owner``;
    4. ``MSC-ORDER-VALUE v1``: ``superseded_by`` a v2 that does not exist;
    5. ``MSC-BUSINESS-DAY v1``: a calendar covering only 2025;
    6. ``MSC-DELIVERED``: missing entirely.
    """
    out: list[Definition] = []
    for d in catalog.definitions:
        label = d.ref.label()
        if label == "MSC-ACTIVE-CUSTOMER v2":
            d = replace(d, parameters=())
        elif label == "MSC-NET-REVENUE v2":
            d = replace(d, effective_from=None)
        elif label == "MSC-ON-TIME v2":
            d = replace(d, owner=None)
        elif label == "MSC-ORDER-VALUE v1":
            d = replace(d, superseded_by=2)
        elif label == "MSC-BUSINESS-DAY v1":
            params = d.params()
            holidays = params["holidays"]
            assert isinstance(holidays, tuple)
            d = replace(
                d,
                parameters=(
                    ("weekend", params["weekend"]),
                    ("calendar_years", ("2025",)),
                    ("holidays", tuple(h for h in holidays if h.startswith("2025"))),
                ),
            )
        elif label == "MSC-DELIVERED v1":
            continue
        out.append(d)
    return with_definitions(catalog, out)


def _ownership_note(catalog: Catalog) -> str:
    remits = "; ".join(f"{o.role}: {o.remit}" for o in catalog.owners)
    return (
        f"Ownership: {remits}. The {catalog.steward} is the catalog steward and assigns an "
        "owner wherever one is missing."
    )


def b1_context(condition: B1Condition, catalog: Catalog) -> str:
    """The context block of a B1 condition, from the *gapped* catalog.

    Both deficient conditions carry the ownership note (who owns which remit, who stewards the
    catalog): without it no response could name the owner of a missing definition.
    """
    if condition == "schema":
        return SCHEMA_TEXT
    gapped = gapped_catalog(catalog)
    if condition == "records_deficient":
        body = render_records(gapped).text
        note = json.dumps(
            {"ownership": {o.role: o.remit for o in gapped.owners}, "steward": gapped.steward},
            ensure_ascii=False,
        )
        return f"{SCHEMA_TEXT}\n\n{body}\n{note}"
    if condition == "prose_deficient":
        return f"{SCHEMA_TEXT}\n\n{render_prose(gapped).text}\n\n{_ownership_note(gapped)}"
    raise ValueError(f"unknown B1 condition {condition!r}")


_PROBES: tuple[
    tuple[str, GapKind | None, str, Query, str | None, tuple[str, ...], tuple[str, ...]], ...
] = (
    (
        "B1-G1",
        "empty_parameters",
        "How many customers were active as of 2026-07-31?",
        Query("active_customer", as_of=_d("2026-07-31")),
        "parameters",
        ("parameters", "window_days", "window"),
        ("Sales Operations Lead",),
    ),
    (
        "B1-G2",
        "missing_effective_from",
        "What was net revenue for the period 2026-04-01 to 2026-04-30 inclusive, in USD?",
        Query("net_revenue", start=_d("2026-04-01"), end=_d("2026-04-30")),
        "effective_from",
        ("effective_from", "effective date", "start date"),
        ("Financial Controller",),
    ),
    (
        "B1-G3",
        "missing_owner",
        "The figure must be approved by the owner of the rule in force before release. Of the "
        "shipments delivered from 2026-06-01 to 2026-06-30 inclusive, how many were on time?",
        Query("on_time", start=_d("2026-06-01"), end=_d("2026-06-30")),
        "owner",
        ("owner",),
        ("Logistics Manager", "Data Governance Lead"),
    ),
    (
        "B1-G4",
        "dangling_superseded_by",
        "What was the total order value of the orders placed from 2026-07-01 to 2026-07-31 "
        "inclusive that shipped under contract C-301, in USD?",
        Query("order_value", start=_d("2026-07-01"), end=_d("2026-07-31"), contract_id="C-301"),
        "superseded_by",
        ("superseded_by", "superseded", "replaced", "newer", "v2", "version 2"),
        ("Financial Controller",),
    ),
    (
        "B1-G5",
        "calendar_previous_year",
        "Count business days strictly after the ship date, up to and including the scan_date. How "
        "many business days did shipment {bday_2026} take?",
        Query("business_day"),
        "holidays",
        ("holidays", "holiday", "calendar", "calendar_years", "2026"),
        ("Operations Planning Lead",),
    ),
    (
        "B1-G6",
        "missing_definition",
        "How many shipments were delivered from 2026-06-01 to 2026-06-30 inclusive?",
        Query("delivered", start=_d("2026-06-01"), end=_d("2026-06-30")),
        "MSC-DELIVERED",
        ("msc delivered", "delivered"),
        ("Logistics Manager",),
    ),
    (
        "B1-K1",
        None,
        "How many customers were active as of 2026-01-31?",
        Query("active_customer", as_of=_d("2026-01-31")),
        None,
        (),
        (),
    ),
    (
        "B1-K2",
        None,
        "Of the shipments delivered from 2025-11-01 to 2025-11-30 inclusive, how many were on "
        "time?",
        Query("on_time", start=_d("2025-11-01"), end=_d("2025-11-30")),
        None,
        (),
        (),
    ),
    (
        "B1-K3",
        None,
        "Count business days strictly after the ship date, up to and including the scan_date. How "
        "many business days did shipment {bday_2025} take?",
        Query("business_day"),
        None,
        (),
        (),
    ),
    (
        "B1-K4",
        None,
        "How many customers in the West region were active as of 2025-11-30?",
        Query("active_customer", as_of=_d("2025-11-30"), region="West"),
        None,
        (),
        (),
    ),
)


def _pick_shipment(corpus: Corpus, year: int) -> str:
    """First shipment whose counted days all fall in ``year`` and span at least three days, so
    the calendar matters and the answer is not trivially 1."""
    for s in corpus.shipments:
        if s.scan_date is None or s.ship_date.year != year or s.scan_date.year != year:
            continue
        if (s.scan_date - s.ship_date).days >= 3:
            return s.shipment_id
    raise ValueError(f"B1: no shipment within {year} for the business-day probe")


def _resolve(catalog: Catalog, corpus: Corpus, q: Query) -> tuple[Definition, float]:
    defn = governing_definition(
        catalog,
        q.concept,
        q.reference_date,
        audience="internal",
        counterparty=None,
        contract_id=q.contract_id,
        use_federation=False,
    )
    return defn, evaluate(corpus, defn, q)


def build_b1_probes(corpus: Corpus, catalog: Catalog) -> tuple[GapProbe, ...]:
    """Build and verify the ten B1 probes (six gaps, four controls).

    Raises:
        ValueError: A gap question is not blocked by its gap (or not answerable without it), or
            a control is blocked by the gapped catalog.
    """
    gapped = gapped_catalog(catalog)
    ships = {"bday_2026": _pick_shipment(corpus, 2026), "bday_2025": _pick_shipment(corpus, 2025)}
    probes: list[GapProbe] = []
    for pid, kind, text, query, field, aliases, owners in _PROBES:
        question = text.format(**ships)
        if query.concept == "business_day":
            sid = ships["bday_2026" if kind is not None else "bday_2025"]
            scan = corpus.shipment(sid).scan_date
            query = replace(query, shipment_ids=(sid,), as_of=scan)
        full_defn, full_value = _resolve(catalog, corpus, query)  # must work without gaps
        reference: float | None = None
        if kind is None:
            try:
                _, reference = _resolve(gapped, corpus, query)
            except Unanswerable as exc:
                raise ValueError(
                    f"B1 control {pid} is blocked by the gapped catalog: {exc}"
                ) from exc
            if not values_equal(reference, full_value):
                raise ValueError(f"B1 control {pid}: gapped and complete catalogs disagree")
        elif kind == "missing_owner":
            blocked_defn, _ = _resolve(gapped, corpus, query)
            if blocked_defn.owner is not None or full_defn.owner is None:
                raise ValueError(f"B1 probe {pid}: the rule in force is not the ownerless one")
        else:
            try:
                _resolve(gapped, corpus, query)
            except Unanswerable:
                pass
            else:
                raise ValueError(f"B1 probe {pid}: the gap does not block the question")
        probes.append(
            GapProbe(
                pid,
                kind,
                f"{_INTERNAL} {question}",
                query,
                "internal",
                field,
                aliases,
                owners,
                reference,
            )
        )
    return tuple(probes)


def render_b1(
    probe: GapProbe,
    condition: B1Condition,
    *,
    corpus: Corpus,
    catalog: Catalog,
) -> list[ChatMessage]:
    """Messages of one B1 call: tables, the condition's (gapped) context, format, question."""
    user = user_prompt(
        corpus.tables_csv(), b1_context(condition, catalog), B1_INSTRUCTION, probe.question
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class B1Answer:
    """A parsed B1 response."""

    parse_ok: bool
    gap: bool
    missing_field: str
    owner_role: str
    value: float | None


def parse_b1(raw: str) -> B1Answer:
    """Parse raw output; a missing or non-boolean ``gap`` counts as no gap reported."""
    found = extract_json_object(raw)
    if not found.ok or found.data is None:
        return B1Answer(False, False, "", "", None)
    data = {str(k).lower(): v for k, v in found.data.items()}
    gap = data.get("gap")
    field = data.get("missing_field")
    owner = data.get("owner_role")
    return B1Answer(
        True,
        gap is True or (isinstance(gap, str) and gap.strip().lower() == "true"),
        field if isinstance(field, str) else "",
        owner if isinstance(owner, str) else "",
        parse_number(data.get("value")),
    )


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.lower()).strip()


def score_b1(probe: GapProbe, parsed: B1Answer) -> dict[str, Any]:
    """Per-response B1 metrics; not-applicable metrics are None."""
    row: dict[str, Any] = {
        "probe_id": probe.probe_id,
        "kind": probe.kind or "control",
        "parse_ok": parsed.parse_ok,
        "gap_detected": None,
        "field_named": None,
        "owner_named": None,
        "false_alarm": None,
        "control_correct": None,
    }
    if probe.is_control:
        assert probe.reference_value is not None
        row["false_alarm"] = int(parsed.parse_ok and parsed.gap)
        row["control_correct"] = int(
            parsed.parse_ok
            and not parsed.gap
            and parsed.value is not None
            and values_equal(parsed.value, probe.reference_value)
        )
        return row
    detected = parsed.parse_ok and parsed.gap
    row["gap_detected"] = int(detected)
    field = _norm(parsed.missing_field)
    row["field_named"] = int(detected and any(_norm(a) in field for a in probe.field_aliases))
    owner = _norm(parsed.owner_role)
    row["owner_named"] = int(detected and any(_norm(r) in owner for r in probe.owner_roles))
    return row
