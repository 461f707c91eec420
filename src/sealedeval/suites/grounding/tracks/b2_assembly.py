"""Track B2, assembly: pick the minimal records a question needs from a 41-record catalog.

The wide catalog is the complete track-A catalog (12 definitions + 3 federation records) plus 26
plausible neighbouring definitions (~10,300 characters in all, like the seed's 10,332). Each of
the 10 questions needs one or two records, listed by hand and checked by code: the required
records must resolve the question to the reference answer.

Stage 1 (``select``): the agent lists the records it needs. Stage 2: the question is re-asked
with three assemblies — the ``full`` catalog, the agent's ``own_pick`` from stage 1 (a pure
function of the parsed stage-1 output) and a naive ``keyword_top5`` baseline. Metrics: selection
precision and recall against the required set, context size, answer accuracy per assembly.
10 questions × (1 + 3) calls × 2 replicates = 80 calls.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sealedeval.suites.grounding.catalog import (
    HALDEN,
    MERIDIAN,
    Catalog,
    DefRef,
    Query,
    evaluate,
    governing_definition,
    values_equal,
)
from sealedeval.suites.grounding.conditions import (
    SCHEMA_TEXT,
    SYSTEM_PROMPT,
    ChatMessage,
    federation_dict,
    record_dict,
    user_prompt,
)
from sealedeval.suites.grounding.contract import (
    ANSWER_INSTRUCTION,
    Answer,
    extract_json_object,
    normalise_def_id,
)
from sealedeval.suites.grounding.corpus import EXTRACT_DATE, Corpus

__all__ = [
    "ASSEMBLIES",
    "B2_SELECT_INSTRUCTION",
    "B2_SELECT_SCHEMA",
    "Assembly",
    "B2Question",
    "WideRecord",
    "assemble",
    "build_b2_questions",
    "build_wide_catalog",
    "keyword_top5",
    "parse_selection",
    "render_b2_answer",
    "render_b2_select",
    "score_b2_answer",
    "score_b2_selection",
]

Assembly = Literal["full", "own_pick", "keyword_top5"]
ASSEMBLIES: tuple[Assembly, ...] = ("full", "own_pick", "keyword_top5")

B2_SELECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"records": {"type": "array", "items": {"type": "string"}}},
    "required": ["records"],
    "additionalProperties": False,
}

B2_SELECT_INSTRUCTION = (
    'Do not answer the question yet. Reply with one JSON object: {"records": [...]}, listing '
    'each record the question needs as "<id> v<version>". Choose the smallest set that is '
    "enough to answer it."
)


@dataclass(frozen=True)
class WideRecord:
    """One record of the 41-record catalog: its key (``ID vN``) and its rendered JSON line."""

    ref: DefRef
    line: str


_FILLERS: tuple[tuple[str, str, str, str, dict[str, object], str], ...] = (
    (
        "MSC-NEW-CUSTOMER",
        "new customer",
        MERIDIAN,
        "Sales Operations Lead",
        {"date_field": "signup_date"},
        "a customer is new in a period if its date_field is in the period",
    ),
    (
        "MSC-OPEN-ORDER",
        "open order",
        MERIDIAN,
        "Logistics Manager",
        {"status": "no shipment"},
        "an order is open on the as-of date if its order_date is on or before that date and it has "
        "no shipment",
    ),
    (
        "MSC-GROSS-MARGIN",
        "gross margin",
        MERIDIAN,
        "Financial Controller",
        {"cost_source": "ERP cost ledger"},
        "net revenue minus cost of goods sold",
    ),
    (
        "MSC-REPEAT-CUSTOMER",
        "repeat customer",
        MERIDIAN,
        "Sales Operations Lead",
        {"min_orders": 2},
        "a customer with at least min_orders orders ever",
    ),
    (
        "MSC-CHURNED-CUSTOMER",
        "churned customer",
        MERIDIAN,
        "Sales Operations Lead",
        {"silence_days": 400},
        "a customer with no order in the last silence_days days",
    ),
    (
        "MSC-AVERAGE-ORDER-VALUE",
        "average order value",
        MERIDIAN,
        "Financial Controller",
        {"basis": "MSC-ORDER-VALUE"},
        "order value divided by the number of orders",
    ),
    (
        "MSC-RETURN-RATE",
        "return rate",
        MERIDIAN,
        "Financial Controller",
        {"numerator": "returns", "denominator": "invoices"},
        "returns per invoice in a period",
    ),
    (
        "MSC-FILL-RATE",
        "fill rate",
        MERIDIAN,
        "Logistics Manager",
        {"unit": "order lines"},
        "share of order lines shipped complete",
    ),
    (
        "MSC-BACKORDER",
        "backorder",
        MERIDIAN,
        "Logistics Manager",
        {"unit": "order lines"},
        "an order line waiting for stock",
    ),
    (
        "MSC-LEAD-TIME",
        "lead time",
        MERIDIAN,
        "Logistics Manager",
        {"from": "order_date", "to": "ship_date"},
        "calendar days from order to shipment",
    ),
    (
        "MSC-CYCLE-TIME",
        "order cycle time",
        MERIDIAN,
        "Logistics Manager",
        {"from": "order_date", "to": "confirm_date"},
        "calendar days from order to confirmation",
    ),
    (
        "MSC-DSO",
        "days sales outstanding",
        MERIDIAN,
        "Financial Controller",
        {"window_days": 90},
        "receivables divided by daily net revenue",
    ),
    (
        "MSC-FREIGHT-RATIO",
        "freight ratio",
        MERIDIAN,
        "Financial Controller",
        {"numerator": "freight", "denominator": "goods"},
        "freight charged per dollar of goods",
    ),
    (
        "MSC-INVOICE-ACCURACY",
        "invoice accuracy",
        MERIDIAN,
        "Financial Controller",
        {"source": "credit notes"},
        "share of invoices never corrected",
    ),
    (
        "MSC-PERFECT-ORDER",
        "perfect order",
        MERIDIAN,
        "Logistics Manager",
        {"requires": ["on time", "complete", "undamaged"]},
        "an order meeting every requirement",
    ),
    (
        "MSC-DWELL-TIME",
        "dwell time",
        MERIDIAN,
        "Logistics Manager",
        {"unit": "hours"},
        "hours a shipment waits at the dock before pickup",
    ),
    (
        "MSC-CARRIER-SHARE",
        "carrier share",
        MERIDIAN,
        "Carrier Contracts Manager",
        {"basis": "shipments"},
        "share of shipments handled by each carrier",
    ),
    (
        "MSC-KEY-ACCOUNT",
        "key account",
        MERIDIAN,
        "Sales Operations Lead",
        {"min_goods": 10000},
        "a customer whose goods ordered in a year reach min_goods",
    ),
    (
        "MSC-DORMANT-CUSTOMER",
        "dormant customer",
        MERIDIAN,
        "Sales Operations Lead",
        {"window_days": 540},
        "a signed-up customer with no order in window_days days",
    ),
    (
        "MSC-CREDIT-NOTE",
        "credit note",
        MERIDIAN,
        "Financial Controller",
        {"source": "ERP"},
        "a document reversing part of an invoice",
    ),
    (
        "MSC-TRANSIT-TIME",
        "transit time",
        MERIDIAN,
        "Logistics Manager",
        {"from": "ship_date", "to": "confirm_date"},
        "calendar days in transit",
    ),
    (
        "HAL-TRANSIT-TIME",
        "transit time",
        HALDEN,
        "Halden Commercial Operations",
        {"from": "ship_date", "to": "scan_date"},
        "calendar days in transit",
    ),
    (
        "HAL-DAMAGE-RATE",
        "damage rate",
        HALDEN,
        "Halden Commercial Operations",
        {"source": "claims"},
        "share of shipments with an accepted damage claim",
    ),
    (
        "HAL-PICKUP-WINDOW",
        "pickup window",
        HALDEN,
        "Halden Commercial Operations",
        {"hours": "08:00-16:00"},
        "hours in which a pickup may be booked",
    ),
    (
        "ZEN-DELIVERED",
        "delivered",
        "Zen Freight",
        "Zen Freight Operations",
        {"date_field": "scan_date"},
        "a shipment is delivered on its date_field",
    ),
    (
        "ZEN-ORDER-VALUE",
        "order value",
        "Zen Freight",
        "Zen Freight Operations",
        {"include_freight": True},
        "goods of the order, plus its freight if include_freight",
    ),
)


def build_wide_catalog(catalog: Catalog) -> tuple[WideRecord, ...]:
    """The 41 records in catalog order: definitions, federation records, then the 26 others."""
    out: list[WideRecord] = []
    for defn in catalog.definitions:
        obj, _ = record_dict(defn)
        out.append(WideRecord(defn.ref, json.dumps(obj, ensure_ascii=False)))
    for fed in catalog.federation:
        out.append(
            WideRecord(
                DefRef(fed.fed_id, fed.version),
                json.dumps(federation_dict(fed), ensure_ascii=False),
            )
        )
    for def_id, concept, org, owner, params, rule in _FILLERS:
        # Neighbouring records are terser than the core ones (as in real catalogs); that keeps
        # the 41 records near the seed's ~10,332 characters.
        del concept, org
        obj = {"id": def_id, "version": 1, "owner": owner, "parameters": params, "rule": rule}
        out.append(WideRecord(DefRef(def_id, 1), json.dumps(obj, ensure_ascii=False)))
    if len(out) != 41:
        raise ValueError(f"B2 catalog has {len(out)} records, the spec requires 41")
    return tuple(out)


def assemble(records: Sequence[WideRecord]) -> str:
    """The catalog block for a set of records (an empty selection yields a header only)."""
    return "\n".join(["Definition records (JSON, one per line):", *(r.line for r in records)])


@dataclass(frozen=True)
class B2Question:
    """One B2 question with its known required records and reference answer.

    ``query`` is the computable form of the question (None for the two questions answered from
    neighbouring records that have no reference implementation); grader- and engine-side only.
    """

    question_id: str
    question: str
    required: frozenset[DefRef]
    reference_value: float
    query: Query | None = None


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


_INTERNAL = f"Internal reporting for {MERIDIAN} management."
_HALDEN_Q = (
    f"Question from {HALDEN} (counterparty) about contract C-118; the answer will be sent to "
    f"{HALDEN}."
)


def _new_customers(corpus: Corpus, start: dt.date, end: dt.date) -> float:
    return float(sum(1 for c in corpus.customers if start <= c.signup_date <= end))


def _open_orders(corpus: Corpus, as_of: dt.date) -> float:
    return float(
        sum(
            1
            for o in corpus.orders
            if o.order_date <= as_of and corpus.shipment_for_order(o.order_id) is None
        )
    )


def build_b2_questions(corpus: Corpus, catalog: Catalog) -> tuple[B2Question, ...]:
    """The ten B2 questions; references computed from the required records.

    Raises:
        ValueError: A required record is not in the wide catalog, or the required definition is
            not the one that governs the question.
    """
    wide = {r.ref for r in build_wide_catalog(catalog)}

    def ref(label: str) -> DefRef:
        def_id, v = label.rsplit(" v", 1)
        out = DefRef(def_id, int(v))
        if out not in wide:
            raise ValueError(f"B2: required record {label} is not in the catalog")
        return out

    specs: list[tuple[str, str, tuple[str, ...], Query | None, float | None]] = [
        (
            "B2-01",
            f"{_INTERNAL} How many customers were active as of 2026-06-30?",
            ("MSC-ACTIVE-CUSTOMER v2",),
            Query("active_customer", as_of=_d("2026-06-30")),
            None,
        ),
        (
            "B2-02",
            f"{_INTERNAL} How many customers were active as of 2025-12-31?",
            ("MSC-ACTIVE-CUSTOMER v1", "MSC-ACTIVE-CUSTOMER v2"),
            Query("active_customer", as_of=_d("2025-12-31")),
            None,
        ),
        (
            "B2-03",
            f"{_INTERNAL} What was net revenue for the period 2026-06-01 to 2026-06-30 "
            "inclusive, in USD?",
            ("MSC-NET-REVENUE v2",),
            Query("net_revenue", start=_d("2026-06-01"), end=_d("2026-06-30")),
            None,
        ),
        (
            "B2-04",
            f"{_INTERNAL} Of the shipments delivered from 2026-03-01 to 2026-05-31 "
            "inclusive, how many were on time?",
            ("MSC-ON-TIME v2",),
            Query("on_time", start=_d("2026-03-01"), end=_d("2026-05-31")),
            None,
        ),
        (
            "B2-05",
            f"{_INTERNAL} How many shipments under contract C-118 were delivered from "
            "2025-12-01 to 2026-02-28 inclusive?",
            ("MSC-DELIVERED v1",),
            Query("delivered", start=_d("2025-12-01"), end=_d("2026-02-28"), contract_id="C-118"),
            None,
        ),
        (
            "B2-06",
            f"{_HALDEN_Q} How many shipments under contract C-118 were delivered from "
            "2025-12-01 to 2026-02-28 inclusive?",
            ("HAL-DELIVERED v1", "FED-DELIVERED v1"),
            Query("delivered", start=_d("2025-12-01"), end=_d("2026-02-28"), contract_id="C-118"),
            None,
        ),
        (
            "B2-07",
            f"{_HALDEN_Q} What was the total order value of the orders placed from "
            "2026-04-01 to 2026-05-31 inclusive that shipped under contract C-118, in USD?",
            ("HAL-ORDER-VALUE v1", "FED-ORDER-VALUE v1"),
            Query("order_value", start=_d("2026-04-01"), end=_d("2026-05-31"), contract_id="C-118"),
            None,
        ),
        (
            "B2-08",
            f"{_INTERNAL} What was the total order value of the orders placed from "
            "2026-04-01 to 2026-05-31 inclusive that shipped under contract C-204, in USD?",
            ("MSC-ORDER-VALUE v1",),
            Query("order_value", start=_d("2026-04-01"), end=_d("2026-05-31"), contract_id="C-204"),
            None,
        ),
        (
            "B2-09",
            f"{_INTERNAL} How many new customers signed up from 2025-07-01 to 2025-12-31 "
            "inclusive?",
            ("MSC-NEW-CUSTOMER v1",),
            None,
            _new_customers(corpus, _d("2025-07-01"), _d("2025-12-31")),
        ),
        (
            "B2-10",
            f"{_INTERNAL} How many orders were open as of {EXTRACT_DATE.isoformat()}?",
            ("MSC-OPEN-ORDER v1",),
            None,
            _open_orders(corpus, EXTRACT_DATE),
        ),
    ]
    out: list[B2Question] = []
    for qid, text, labels, query, fixed in specs:
        required = frozenset(ref(lbl) for lbl in labels)
        if query is not None:
            counterparty = HALDEN if text.startswith("Question from") else None
            defn = governing_definition(
                catalog,
                query.concept,
                query.reference_date,
                audience="counterparty" if counterparty else "internal",
                counterparty=counterparty,
                contract_id=query.contract_id,
                use_federation=True,
            )
            if defn.ref not in required:
                raise ValueError(f"B2 {qid}: governing {defn.ref.label()} is not required")
            value = evaluate(corpus, defn, query)
        else:
            assert fixed is not None
            value = fixed
        out.append(B2Question(qid, text, required, value, query))
    return tuple(out)


_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "or",
        "by",
        "was",
        "were",
        "is",
        "are",
        "how",
        "many",
        "what",
        "which",
        "from",
        "with",
        "that",
        "as",
        "at",
        "be",
        "it",
        "its",
        "this",
        "under",
        "our",
        "we",
        "us",
        "internal",
        "reporting",
        "management",
        "question",
        "answer",
        "will",
        "sent",
        "counterparty",
        "inclusive",
        "usd",
        "meridian",
        "supply",
        "co",
    ]
)


def _tokens(text: str) -> set[str]:
    # Words only: digits would make every date in a question match every holiday list.
    return {t for t in re.findall(r"[a-z]+", text.lower()) if t not in _STOP and len(t) > 1}


def keyword_top5(question: str, records: Sequence[WideRecord]) -> tuple[WideRecord, ...]:
    """Naive retrieval baseline: the five records sharing the most words with the question.

    Ties keep catalog order, so the result is deterministic.
    """
    q = _tokens(question)
    scored = sorted(enumerate(records), key=lambda ir: (-len(q & _tokens(ir[1].line)), ir[0]))
    return tuple(r for _, r in scored[:5])


def parse_selection(
    raw: str, records: Sequence[WideRecord]
) -> tuple[bool, tuple[DefRef, ...], tuple[str, ...]]:
    """Parse a stage-1 answer.

    Returns:
        ``(parse_ok, known refs in catalog order, unknown strings)``. Unknown strings (records
        that do not exist) still count against precision.
    """
    found = extract_json_object(raw)
    if not found.ok or found.data is None:
        return False, (), ()
    listed = found.data.get("records")
    if not isinstance(listed, list):
        return True, (), ()
    by_key = {f"{normalise_def_id(r.ref.def_id)} V{r.ref.version}": r.ref for r in records}
    known: set[DefRef] = set()
    unknown: list[str] = []
    for entry in listed:
        if not isinstance(entry, str):
            continue
        m = re.fullmatch(r"\s*(.+?)\s*(?:@|\s|\.|/)\s*v?(\d+)\s*", entry, re.IGNORECASE)
        key = f"{normalise_def_id(m.group(1))} V{m.group(2)}" if m else normalise_def_id(entry)
        if key in by_key:
            known.add(by_key[key])
        else:
            unknown.append(entry)
    ordered = tuple(r.ref for r in records if r.ref in known)
    return True, ordered, tuple(unknown)


def score_b2_selection(
    question: B2Question, parsed: tuple[bool, tuple[DefRef, ...], tuple[str, ...]]
) -> dict[str, Any]:
    """Selection precision and recall against the known required set.

    Precision is None for an empty selection (nothing was claimed); recall is 0 then.
    """
    parse_ok, known, unknown = parsed
    picked = len(known) + len(unknown)
    hits = len(set(known) & question.required)
    return {
        "question_id": question.question_id,
        "parse_ok": parse_ok,
        "n_selected": picked,
        "precision": hits / picked if picked else None,
        "recall": hits / len(question.required),
        "exact": int(set(known) == question.required and not unknown),
    }


def _block(
    assembly: Assembly,
    question: B2Question,
    records: Sequence[WideRecord],
    own_pick: Sequence[DefRef],
) -> str:
    if assembly == "full":
        chosen: Sequence[WideRecord] = records
    elif assembly == "own_pick":
        wanted = set(own_pick)
        chosen = [r for r in records if r.ref in wanted]
    elif assembly == "keyword_top5":
        chosen = keyword_top5(question.question, records)
    else:
        raise ValueError(f"unknown assembly {assembly!r}")
    return assemble(chosen)


def render_b2_select(question: B2Question, records: Sequence[WideRecord]) -> list[ChatMessage]:
    """Stage 1: the full catalog and the question; no data tables (selection needs none)."""
    user = user_prompt(
        None, f"{SCHEMA_TEXT}\n\n{assemble(records)}", B2_SELECT_INSTRUCTION, question.question
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def render_b2_answer(
    question: B2Question,
    assembly: Assembly,
    *,
    corpus: Corpus,
    records: Sequence[WideRecord],
    own_pick: Sequence[DefRef] = (),
) -> tuple[list[ChatMessage], int]:
    """Stage 2: tables, the assembled records, the track-A contract, the question.

    Returns:
        The messages and the context size (characters of the assembled records block).
    """
    block = _block(assembly, question, records, own_pick)
    user = user_prompt(
        corpus.tables_csv(), f"{SCHEMA_TEXT}\n\n{block}", ANSWER_INSTRUCTION, question.question
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}], len(
        block
    )


def score_b2_answer(
    question: B2Question, assembly: Assembly, parsed: Answer, context_chars: int
) -> dict[str, Any]:
    """Answer accuracy of one stage-2 response, with the assembly's context size."""
    correct = (
        parsed.parse_ok
        and not parsed.refusal
        and parsed.value is not None
        and values_equal(parsed.value, question.reference_value)
    )
    return {
        "question_id": question.question_id,
        "assembly": assembly,
        "parse_ok": parsed.parse_ok,
        "correct": int(correct),
        "context_chars": context_chars,
    }
