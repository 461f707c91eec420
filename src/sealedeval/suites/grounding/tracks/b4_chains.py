"""Track B4, collaborative completion: a coordinator and four owner agents complete a definition.

Each chain starts from the complete catalog plus an announced but unrecorded change to one
definition (the new parameter value and its effective date are held only by the owning role).
Three calls per chain:

1. the coordinator (tables + catalog + ownership + question) addresses exactly one owner and
   asks for one field;
2. the addressed owner (its remit, the directory of remits, its own data — nothing else)
   answers, or refuses and names the right owner;
3. the coordinator records the answer as a new version and answers the original question.

16 chains = 8 scenarios (two per owner) × 2 ownership representations (``records``: the draft
record names its owner and the directory is records; ``prose``: the change and the remits are
described in text). The pairing makes H9 (structured ownership routes more requests to the
right owner) a paired comparison on 8 scenarios; the spec does not say how B4 varies ownership,
so this split is a design decision recorded in the plan. 16 × 3 = 48 calls.

Everything here is pure: the lead's multi-agent solver calls :func:`render_coordinator_request`,
:func:`route_owner`, :func:`render_owner` and :func:`render_coordinator_record` in order and
:func:`score_chain` at the end.
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
    DefRef,
    Param,
    Query,
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
from sealedeval.suites.grounding.contract import (
    extract_json_object,
    normalise_def_id,
    parse_number,
    parse_version,
)
from sealedeval.suites.grounding.corpus import Corpus
from sealedeval.suites.grounding.items import question_body

__all__ = [
    "OWNER_INSTRUCTION",
    "OWNER_SCHEMA",
    "RECORD_INSTRUCTION",
    "RECORD_SCHEMA",
    "REQUEST_INSTRUCTION",
    "REQUEST_SCHEMA",
    "Chain",
    "Ownership",
    "build_chains",
    "completed_definition",
    "parse_owner_reply",
    "parse_record",
    "parse_request",
    "render_coordinator_record",
    "render_coordinator_request",
    "render_owner",
    "route_owner",
    "score_chain",
]

Ownership = Literal["records", "prose"]


@dataclass(frozen=True)
class Chain:
    """One B4 chain. ``new_value`` and ``effective_from`` are what only the owner knows."""

    chain_id: str
    scenario_id: str
    ownership: Ownership
    def_id: str
    prev_version: int
    field: str
    field_aliases: tuple[str, ...]
    owner: str
    decoy_owner: str
    new_value: Param
    new_value_text: str
    effective_from: dt.date
    question: str
    query: Query
    reference_value: float


REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string"},
        "field": {"type": "string"},
        "request": {"type": "string"},
    },
    "required": ["to", "field", "request"],
    "additionalProperties": False,
}
REQUEST_INSTRUCTION = (
    "A change to a definition has been decided but is not in the catalog yet. Before answering, "
    'ask exactly one owner for what is missing. Reply with one JSON object: {"to": the owner '
    'role, "field": the field you need, "request": your question to that owner}.'
)

OWNER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "refuse": {"type": "boolean"},
        "redirect_to": {"type": ["string", "null"]},
        "value": {"type": ["string", "null"]},
        "effective_from": {"type": ["string", "null"]},
    },
    "required": ["refuse", "redirect_to", "value", "effective_from"],
    "additionalProperties": False,
}
OWNER_INSTRUCTION = (
    'Reply with one JSON object: {"refuse": true or false, "redirect_to": role or null, '
    '"value": string or null, "effective_from": "YYYY-MM-DD" or null}. Answer only requests '
    "within your remit, from your own records. Refuse anything else and name the role that owns "
    'it in "redirect_to".'
)

RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "record": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "version": {"type": "integer"},
                "effective_from": {"type": "string"},
                "supersedes": {"type": "string"},
                "owner": {"type": "string"},
                "field": {"type": "string"},
                "value": {"type": "string"},
            },
            "required": [
                "id",
                "version",
                "effective_from",
                "supersedes",
                "owner",
                "field",
                "value",
            ],
            "additionalProperties": False,
        },
        "value": {"type": ["number", "null"]},
    },
    "required": ["record", "value"],
    "additionalProperties": False,
}
RECORD_INSTRUCTION = (
    "Record the owner's answer as a new version of the definition, then answer the original "
    'question with it. Reply with one JSON object: {"record": {"id": string, "version": '
    'integer, "effective_from": "YYYY-MM-DD", "supersedes": "<id> v<version>", "owner": string, '
    '"field": string, "value": string}, "value": number or null}.'
)

_INTERNAL = f"Internal reporting for {MERIDIAN} management."


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def completed_definition(catalog: Catalog, chain: Chain) -> Definition:
    """The new version the coordinator should record (the reference for well-formedness)."""
    prev = catalog.get(DefRef(chain.def_id, chain.prev_version))
    params = dict(prev.parameters)
    params[chain.field] = chain.new_value
    return replace(
        prev,
        version=chain.prev_version + 1,
        effective_from=chain.effective_from,
        supersedes=chain.prev_version,
        superseded_by=None,
        parameters=tuple(params.items()),
    )


def _new_holiday(
    corpus: Corpus,
    month: int,
    catalog: Catalog,
    skip: set[str],
) -> tuple[str, str]:
    """A 2026 shipment in ``month`` and a weekday inside its counted days to declare a holiday."""
    cal = catalog.get(DefRef("MSC-BUSINESS-DAY", 1)).params()["holidays"]
    assert isinstance(cal, tuple)
    for s in corpus.shipments:
        if s.scan_date is None or s.ship_date.year != 2026 or s.ship_date.month != month:
            continue
        if s.shipment_id in skip:
            continue
        day = s.ship_date + dt.timedelta(days=1)
        while day <= s.scan_date:
            if day.weekday() < 5 and day.isoformat() not in cal:
                return s.shipment_id, day.isoformat()
            day += dt.timedelta(days=1)
    raise ValueError(f"B4: no 2026-{month:02d} shipment with a weekday to declare a holiday")


def build_chains(corpus: Corpus, catalog: Catalog) -> tuple[Chain, ...]:
    """The 16 chains (8 scenarios × records/prose ownership), each verified to matter.

    Raises:
        ValueError: A scenario's completed definition gives the same answer as the version in
            the catalog (the chain would not test anything).
    """
    sales, fin = "Sales Operations Lead", "Financial Controller"
    logi, plan = "Logistics Manager", "Operations Planning Lead"
    ship7, hol7 = _new_holiday(corpus, 7, catalog, set())
    ship8, hol8 = _new_holiday(corpus, 8, catalog, {ship7})
    cal = catalog.get(DefRef("MSC-BUSINESS-DAY", 1)).params()["holidays"]
    assert isinstance(cal, tuple)
    periods = {
        "June": (Query("net_revenue", start=_d("2026-06-01"), end=_d("2026-06-30")),),
        "C-204": tuple(
            Query("order_value", start=_d(a), end=_d(b), contract_id="C-204")
            for a, b in (("2026-06-01", "2026-07-31"), ("2026-06-01", "2026-08-31"))
        ),
        "on_time": tuple(
            Query("on_time", start=_d(a), end=_d(b))
            for a, b in (("2026-06-01", "2026-08-31"), ("2026-06-01", "2026-07-31"))
        ),
        "delivered": tuple(
            Query("delivered", start=_d(a), end=_d(b))
            for a, b in (
                ("2026-07-01", "2026-07-31"),
                ("2026-05-01", "2026-05-31"),
                ("2026-06-01", "2026-06-30"),
                ("2026-05-01", "2026-06-30"),
            )
        ),
    }
    scenarios: list[
        tuple[str, str, int, str, tuple[str, ...], str, str, Param, str, str, tuple[Query, ...]]
    ] = [
        (
            "S1",
            "MSC-ACTIVE-CUSTOMER",
            2,
            "window_days",
            ("window_days", "window"),
            sales,
            fin,
            90,
            "90",
            "2026-08-01",
            (Query("active_customer", as_of=_d("2026-08-31")),),
        ),
        (
            "S2",
            "MSC-ACTIVE-CUSTOMER",
            2,
            "window_days",
            ("window_days", "window"),
            sales,
            logi,
            120,
            "120",
            "2026-07-01",
            (Query("active_customer", as_of=_d("2026-07-31")),),
        ),
        (
            "S3",
            "MSC-NET-REVENUE",
            2,
            "include_freight",
            ("include_freight", "freight"),
            fin,
            sales,
            True,
            "true",
            "2026-06-01",
            periods["June"],
        ),
        (
            "S4",
            "MSC-ORDER-VALUE",
            1,
            "include_freight",
            ("include_freight", "freight"),
            fin,
            plan,
            True,
            "true",
            "2026-06-01",
            periods["C-204"],
        ),
        (
            "S5",
            "MSC-ON-TIME",
            2,
            "delivery_field",
            ("delivery_field", "delivery"),
            logi,
            fin,
            "scan_date",
            "scan_date",
            "2026-06-01",
            periods["on_time"],
        ),
        (
            "S6",
            "MSC-DELIVERED",
            1,
            "date_field",
            ("date_field", "delivered", "date"),
            logi,
            sales,
            "scan_date",
            "scan_date",
            "2026-05-01",
            periods["delivered"],
        ),
        (
            "S7",
            "MSC-BUSINESS-DAY",
            1,
            "holidays",
            ("holidays", "holiday", "calendar"),
            plan,
            logi,
            (*cal, hol7),
            f"add {hol7}",
            "2026-07-01",
            (Query("business_day", as_of=corpus.shipment(ship7).scan_date, shipment_ids=(ship7,)),),
        ),
        (
            "S8",
            "MSC-BUSINESS-DAY",
            1,
            "holidays",
            ("holidays", "holiday", "calendar"),
            plan,
            fin,
            (*cal, hol8),
            f"add {hol8}",
            "2026-08-01",
            (Query("business_day", as_of=corpus.shipment(ship8).scan_date, shipment_ids=(ship8,)),),
        ),
    ]
    # Each scenario keeps the first candidate query on which the change matters.
    resolved: list[tuple[Any, ...]] = []
    for sid, def_id, prev, field, aliases, owner, decoy, value, text, eff, queries in scenarios:
        probe = Chain(
            f"probe-{sid}",
            sid,
            "records",
            def_id,
            prev,
            field,
            aliases,
            owner,
            decoy,
            value,
            text,
            _d(eff),
            "",
            queries[0],
            0.0,
        )
        new = completed_definition(catalog, probe)
        old = catalog.get(DefRef(def_id, prev))
        chosen = next(
            (
                q
                for q in queries
                if not values_equal(evaluate(corpus, new, q), evaluate(corpus, old, q))
            ),
            None,
        )
        if chosen is None:
            raise ValueError(f"B4 {sid}: the change does not change the answer to any candidate")
        resolved.append(
            (
                sid,
                def_id,
                prev,
                field,
                aliases,
                owner,
                decoy,
                value,
                text,
                eff,
                question_body(chosen),
                chosen,
            )
        )
    chains: list[Chain] = []
    for ownership in ("records", "prose"):
        for n, (
            sid,
            def_id,
            prev,
            field,
            aliases,
            owner,
            decoy,
            value,
            text,
            eff,
            question,
            query,
        ) in enumerate(resolved):
            chain = Chain(
                chain_id=f"B4-{ownership[0].upper()}{n + 1}",
                scenario_id=sid,
                ownership=ownership,
                def_id=def_id,
                prev_version=prev,
                field=field,
                field_aliases=aliases,
                owner=owner,
                decoy_owner=decoy,
                new_value=value,
                new_value_text=text,
                effective_from=_d(eff),
                question=f"{_INTERNAL} {question}",
                query=query,
                reference_value=0.0,
            )
            new = completed_definition(catalog, chain)
            updated = with_definitions(catalog, (*catalog.definitions, new))
            defn = governing_definition(
                updated,
                query.concept,
                query.reference_date,
                audience="internal",
                counterparty=None,
                contract_id=query.contract_id,
                use_federation=False,
            )
            if defn.ref != new.ref:
                raise ValueError(f"B4 {sid}: the new version does not govern the question")
            ref = evaluate(corpus, new, query)
            before = evaluate(corpus, catalog.get(DefRef(def_id, prev)), query)
            if values_equal(ref, before):
                raise ValueError(f"B4 {sid}: the change does not change the answer ({ref:g})")
            chains.append(replace(chain, reference_value=ref))
    return tuple(chains)


def _draft_record(chain: Chain) -> str:
    return json.dumps(
        {
            "id": chain.def_id,
            "version": chain.prev_version + 1,
            "status": "decided, not recorded",
            "supersedes": f"{chain.def_id} v{chain.prev_version}",
            "owner": chain.owner,
            "effective_from": None,
            "parameters": {chain.field: None},
        }
    )


_FIELD_PROSE = {
    "window_days": "window in days",
    "include_freight": "treatment of freight",
    "delivery_field": "delivery date used",
    "date_field": "delivery date used",
    "holidays": "holiday list",
}


def _coordinator_context(chain: Chain, catalog: Catalog) -> str:
    label = chain.def_id.removeprefix("MSC-").replace("-", " ").lower()
    if chain.ownership == "records":
        directory = "\n".join(
            json.dumps({"role": o.role, "remit": o.remit}) for o in catalog.owners
        )
        return (
            f"{SCHEMA_TEXT}\n\n{render_records(catalog).text}\n"
            f"{_draft_record(chain)}\n\nOwner directory (JSON, one per line):\n{directory}"
        )
    remits = " ".join(f"The {o.role} looks after {o.remit}." for o in catalog.owners)
    what = _FIELD_PROSE[chain.field]
    return (
        f"{SCHEMA_TEXT}\n\n{render_prose(catalog).text}\n\nPending change: a new {label} "
        f"rule has been decided, but its {what} and start date have not been written down "
        f"yet.\n\nWho owns what: {remits}"
    )


def render_coordinator_request(
    chain: Chain,
    *,
    corpus: Corpus,
    catalog: Catalog,
) -> list[ChatMessage]:
    """Round 1: the coordinator sees tables, catalog, ownership and the question."""
    user = user_prompt(
        corpus.tables_csv(),
        _coordinator_context(chain, catalog),
        REQUEST_INSTRUCTION,
        chain.question,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.lower()).strip()


def _role_named(text: str, catalog: Catalog) -> str | None:
    said = _norm(text)
    hits = [o.role for o in catalog.owners if _norm(o.role) in said]
    return hits[0] if len(hits) == 1 else None


def parse_request(raw: str) -> dict[str, Any]:
    """Parse round 1 into ``{"parse_ok", "to", "field", "request"}`` (strings, maybe empty)."""
    found = extract_json_object(raw)
    data = found.data or {}
    return {
        "parse_ok": found.ok,
        "to": str(data.get("to") or ""),
        "field": str(data.get("field") or ""),
        "request": str(data.get("request") or ""),
    }


def route_owner(chain: Chain, request: dict[str, Any], catalog: Catalog) -> str:
    """Which owner receives round 2.

    The role the coordinator named if it names exactly one known role; otherwise the chain's
    pre-declared decoy owner, so round 2 still happens (the design has a fixed 48 calls) and
    still measures refusal behaviour. Routing is scored 0 in that case anyway.
    """
    return _role_named(str(request.get("to", "")), catalog) or chain.decoy_owner


def render_owner(
    chain: Chain,
    owner_role: str,
    request: dict[str, Any],
    *,
    catalog: Catalog,
) -> list[ChatMessage]:
    """Round 2: what one owner agent sees — its remit, the directory, its own data, the request.

    Only the chain's owner holds the decision; any other owner holds no pending decision and
    must refuse and redirect.
    """
    me = next(o for o in catalog.owners if o.role == owner_role)
    directory = "; ".join(f"{o.role}: {o.remit}" for o in catalog.owners)
    if owner_role == chain.owner:
        data = (
            f"Decision you hold: {chain.def_id} gets a new version; {chain.field} = "
            f"{chain.new_value_text}, effective from {chain.effective_from.isoformat()}."
        )
    else:
        data = "Decisions you hold: none pending."
    context = (
        f"You are the {me.role} at {MERIDIAN}. Your remit: {me.remit}.\n"
        f"Owners: {directory}.\n{data}"
    )
    question = (
        f"Request from the catalog coordinator (field: {request.get('field', '')}): "
        f"{request.get('request', '')}"
    )
    user = user_prompt(None, context, OWNER_INSTRUCTION, question)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_owner_reply(raw: str) -> dict[str, Any]:
    """Parse round 2 into ``{"parse_ok", "refuse", "redirect_to", "value", "effective_from"}``."""
    found = extract_json_object(raw)
    data = found.data or {}
    refuse = data.get("refuse")
    return {
        "parse_ok": found.ok,
        "refuse": refuse is True or (isinstance(refuse, str) and refuse.lower() == "true"),
        "redirect_to": str(data.get("redirect_to") or ""),
        "value": "" if data.get("value") is None else str(data.get("value")),
        "effective_from": str(data.get("effective_from") or ""),
    }


def render_coordinator_record(
    chain: Chain,
    request: dict[str, Any],
    owner_role: str,
    owner_output: str,
    *,
    corpus: Corpus,
    catalog: Catalog,
) -> list[ChatMessage]:
    """Round 3: round 1's context plus the exchange (the owner's raw reply); record the version
    and answer the question."""
    exchange = (
        f"You asked the {owner_role} (field: {request.get('field', '')}): "
        f"{request.get('request', '')}\nReply from the {owner_role}: {owner_output.strip()}"
    )
    user = user_prompt(
        corpus.tables_csv(),
        f"{_coordinator_context(chain, catalog)}\n\n{exchange}",
        RECORD_INSTRUCTION,
        chain.question,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_record(raw: str) -> dict[str, Any]:
    """Parse round 3 into ``{"parse_ok", "record": dict, "value": float | None}``."""
    found = extract_json_object(raw)
    data = found.data or {}
    record = data.get("record")
    return {
        "parse_ok": found.ok,
        "record": record if isinstance(record, dict) else {},
        "value": parse_number(data.get("value")),
    }


def _value_matches(chain: Chain, said: str) -> bool:
    text = _norm(said)
    if isinstance(chain.new_value, bool):
        return text in ("true", "yes", "included", "include freight")
    if isinstance(chain.new_value, int):
        return parse_number(said) == float(chain.new_value)
    return _norm(chain.new_value_text.removeprefix("add ")) in text


def score_chain(
    chain: Chain,
    request: dict[str, Any],
    addressed_owner: str,
    reply: dict[str, Any],
    record: dict[str, Any],
    *,
    catalog: Catalog,
) -> dict[str, Any]:
    """Per-chain B4 metrics.

    * ``routing_correct``: round 1 names the owning role and the missing field;
    * ``owner_behaviour_correct``: the addressed owner answers with its value if it owns the
      field, otherwise refuses and redirects to the right owner;
    * ``record_well_formed``: id, next version, supersedes, owner, field and value all right,
      effective_from a valid date;
    * ``effective_date_correct``: the record's effective_from is the owner's date;
    * ``final_correct``: the answer equals the value under the completed definition.
    """
    named = _role_named(str(request.get("to", "")), catalog)
    field = _norm(str(request.get("field", "")))
    routing = (
        request.get("parse_ok", False)
        and named == chain.owner
        and any(_norm(a) in field for a in chain.field_aliases)
    )
    if addressed_owner == chain.owner:
        behaviour = (
            reply.get("parse_ok", False)
            and not reply.get("refuse", False)
            and _value_matches(chain, str(reply.get("value", "")))
        )
    else:
        behaviour = (
            reply.get("parse_ok", False)
            and bool(reply.get("refuse", False))
            and _role_named(str(reply.get("redirect_to", "")), catalog) == chain.owner
        )
    rec = record.get("record", {}) or {}
    eff_text = str(rec.get("effective_from", ""))
    try:
        eff: dt.date | None = dt.date.fromisoformat(eff_text)
    except ValueError:
        eff = None
    supersedes = str(rec.get("supersedes", ""))
    m = re.fullmatch(r"\s*(.+?)\s*v?(\d+)\s*", supersedes, re.IGNORECASE)
    well_formed = bool(
        record.get("parse_ok", False)
        and normalise_def_id(str(rec.get("id", ""))) == chain.def_id
        and parse_version(rec.get("version")) == chain.prev_version + 1
        and m is not None
        and normalise_def_id(m.group(1)) == chain.def_id
        and int(m.group(2)) == chain.prev_version
        and _role_named(str(rec.get("owner", "")), catalog) == chain.owner
        and any(_norm(a) in _norm(str(rec.get("field", ""))) for a in chain.field_aliases)
        and _value_matches(chain, str(rec.get("value", "")))
        and eff is not None
    )
    value = record.get("value")
    return {
        "chain_id": chain.chain_id,
        "scenario_id": chain.scenario_id,
        "ownership": chain.ownership,
        "addressed_owner": addressed_owner,
        "routing_correct": int(bool(routing)),
        "owner_behaviour_correct": int(bool(behaviour)),
        "record_well_formed": int(well_formed),
        "effective_date_correct": int(eff == chain.effective_from),
        "final_correct": int(
            isinstance(value, float) and values_equal(value, chain.reference_value)
        ),
    }
