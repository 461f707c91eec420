"""Deterministic answer engines for track A: a condition-aware reference reader and a naive one.

:func:`reference_answer` is an ideal reader of *what the condition shows*: it applies exactly
the rules present in the condition's context block and nothing else. That makes it the ceiling
of each condition, and the differences between conditions visible without any model:

* A (schema): no definitions, so it applies the plain reading of the column names (the naive
  reader below);
* B (deficient wiki): the rules the wiki states — the later "update" paragraph for active
  customers (applied to every date: the wiki has no dates), the superseded freight-in net
  revenue, the original commit date, customer confirmation for delivery; the naive reading where
  the wiki is silent (order value) or unusable (holidays not listed);
* E (complete prose), C (records), F (records + padding): the catalog rule in force on the
  reference date, with Meridian's own definitions for every question, because nothing in these
  conditions says when Halden's definitions govern; ids and versions only where records exist
  (C, F) — prose has none, so M2 is impossible under E by construction;
* D (records + federation): the federation records add Halden's rule for counterparty questions
  about C-118, so every answerable item is answered correctly (M1 = 1.0) and named (M2 = 1.0).

Consequently the reference ceiling under C is *not* 1.0: the ten governed counterparty items
are answered with Meridian's rule (which is their competing definition, M7 = 1). That is the
gap H4 tests; an engine scoring 1.0 under C would have to use information C does not contain.
:func:`oracle_answer` gives the condition-free ceiling (the reference answer itself) for
proving that a grader can award full marks.

:func:`naive_answer` is the schema-only baseline: it ignores the context block entirely, so it
is the same in every condition, and the gap ``reference(condition) - naive`` is what the
condition's content makes attainable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from sealedeval.suites.grounding.catalog import (
    Catalog,
    Definition,
    Query,
    Unanswerable,
    build_catalog,
    evaluate,
    governing_definition,
)
from sealedeval.suites.grounding.conditions import Condition
from sealedeval.suites.grounding.corpus import Corpus, build_corpus
from sealedeval.suites.grounding.items import Item
from sealedeval.suites.grounding.tracks import b2_assembly, b3_disclosure, b4_chains

if TYPE_CHECKING:
    from sealedeval.suites.grounding.bundle import GroundingData
    from sealedeval.suites.grounding.design import RequestSpec

__all__ = [
    "NAIVE_RULES",
    "WIKI_RULES",
    "answer_call",
    "as_output_text",
    "naive_answer",
    "naive_value",
    "oracle_answer",
    "reference_answer",
]


def _pseudo(concept: str, name: str, params: tuple[tuple[str, Any], ...]) -> Definition:
    return Definition(
        f"{name}-{concept.upper()}", 1, concept, "reader", None, None, None, None, params
    )


_NO_HOLIDAYS: tuple[tuple[str, Any], ...] = (
    ("weekend", ("Saturday", "Sunday")),
    ("calendar_years", ("2025", "2026")),
    ("holidays", ()),
)

NAIVE_RULES: dict[str, Definition] = {
    d.concept: d
    for d in (
        _pseudo("active_customer", "NAIVE", (("window_days", 365), ("date_field", "order_date"))),
        _pseudo(
            "net_revenue",
            "NAIVE",
            (
                ("include_freight", True),
                ("period_field", "invoice_date"),
                ("returns_field", "return_date"),
            ),
        ),
        _pseudo(
            "on_time", "NAIVE", (("delivery_field", "scan_date"), ("commit_date", "commit_date"))
        ),
        _pseudo("delivered", "NAIVE", (("date_field", "scan_date"),)),
        _pseudo("order_value", "NAIVE", (("include_freight", True),)),
        _pseudo("business_day", "NAIVE", _NO_HOLIDAYS),
    )
}
"""The plain reading of the schema: a year for "active", invoiced totals, the delivery scan for
"delivered" and "on time", goods plus freight for "order value", weekdays for business days."""

WIKI_RULES: dict[str, Definition] = {
    **NAIVE_RULES,
    "active_customer": _pseudo(
        "active_customer", "WIKI", (("window_days", 180), ("date_field", "order_date"))
    ),
    "on_time": _pseudo(
        "on_time", "WIKI", (("delivery_field", "confirm_date"), ("commit_date", "commit_date"))
    ),
    "delivered": _pseudo("delivered", "WIKI", (("date_field", "confirm_date"),)),
}
"""What a literal reader of condition B's wiki applies (see the module docstring)."""


@lru_cache(maxsize=1)
def _published() -> tuple[Corpus, Catalog]:
    return build_corpus(), build_catalog()


def _refusal(reason: str) -> dict[str, Any]:
    return {
        "value": None,
        "definition_id": None,
        "version": None,
        "refusal": True,
        "reason": reason,
    }


def _answer(value: float, defn: Definition | None, reason: str) -> dict[str, Any]:
    out_value: float | int = int(value) if float(value).is_integer() else round(value, 2)
    return {
        "value": out_value,
        "definition_id": defn.def_id if defn is not None else None,
        "version": defn.version if defn is not None else None,
        "refusal": False,
        "reason": reason,
    }


def _abstain(item: Item) -> dict[str, Any]:
    return _refusal("the tables have no data for this question")


def naive_answer(
    item: Item,
    condition: Condition,
    *,
    corpus: Corpus | None = None,
) -> dict[str, Any]:
    """Schema-only baseline: the plain reading of the columns, whatever the condition shows.

    ``condition`` is accepted for a uniform engine interface and deliberately ignored.
    Unanswerable items are refused, because the schema alone shows the data is absent.
    """
    del condition
    corpus = corpus or _published()[0]
    if not item.answerable or item.query is None or item.concept is None:
        return _abstain(item)
    return _answer(
        evaluate(corpus, NAIVE_RULES[item.concept], item.query),
        None,
        "plain reading of the table columns",
    )


def reference_answer(
    item: Item,
    condition: Condition,
    *,
    corpus: Corpus | None = None,
    catalog: Catalog | None = None,
) -> dict[str, Any]:
    """The ideal reader of ``condition``: applies exactly the rules that condition shows.

    Returns a dict in the answer-contract shape (see
    :data:`~sealedeval.suites.grounding.contract.ANSWER_SCHEMA`).
    """
    default_corpus, default_catalog = _published()
    corpus = corpus or default_corpus
    catalog = catalog or default_catalog
    if not item.answerable or item.query is None or item.concept is None:
        return _abstain(item)
    if condition == "A":
        return naive_answer(item, condition, corpus=corpus)
    if condition == "B":
        return _answer(
            evaluate(corpus, WIKI_RULES[item.concept], item.query),
            None,
            "rule as stated on the wiki page",
        )
    try:
        defn = governing_definition(
            catalog,
            item.concept,
            item.query.reference_date,
            audience=item.audience,
            counterparty=item.counterparty,
            contract_id=item.contract_id,
            use_federation=condition == "D",
        )
        value = evaluate(corpus, defn, item.query)
    except Unanswerable as exc:
        return _refusal(str(exc))
    named = defn if condition in ("C", "F", "D") else None
    return _answer(value, named, "definition in force on the reference date")


def oracle_answer(item: Item) -> dict[str, Any]:
    """The condition-free ceiling: the item's own reference answer, id and version."""
    if not item.answerable or item.in_force is None or item.reference_value is None:
        return _abstain(item)
    stub = replace(
        NAIVE_RULES["delivered"], def_id=item.in_force.def_id, version=item.in_force.version
    )
    return _answer(item.reference_value, stub, "reference answer")


def as_output_text(answer: dict[str, Any]) -> str:
    """Serialise an engine answer the way a model would return it (one JSON object)."""
    return json.dumps(answer, ensure_ascii=False, sort_keys=False)


def naive_value(corpus: Corpus, query: Query) -> float | None:
    """The plain reading of the schema for a computable question (None if it cannot run)."""
    try:
        return evaluate(corpus, NAIVE_RULES[query.concept], query)
    except (KeyError, Unanswerable):
        return None


def _b1(data: GroundingData, spec: RequestSpec, variant: str) -> dict[str, Any]:
    probe = data.probe(spec.item_id)
    plain = naive_value(data.corpus, probe.query)
    if variant == "naive" or spec.condition == "schema":
        # No catalog is shown (or it is ignored): nothing can be missing from it, and the
        # question is answered with the plain reading of the columns.
        return {"gap": False, "missing_field": None, "owner_role": None, "value": plain}
    if probe.is_control:
        return {
            "gap": False,
            "missing_field": None,
            "owner_role": None,
            "value": probe.reference_value,
        }
    return {
        "gap": True,
        "missing_field": probe.missing_field,
        "owner_role": probe.owner_roles[0],
        "value": None,
    }


def _b2(
    data: GroundingData, spec: RequestSpec, prior: Mapping[str, str], variant: str
) -> dict[str, Any]:
    question = data.b2_question(spec.item_id)
    if spec.condition == "select":
        if variant == "naive":
            picked = [
                r.ref.label() for r in b2_assembly.keyword_top5(question.question, data.b2_records)
            ]
        else:
            picked = sorted(r.label() for r in question.required)
        return {"records": picked}
    plain = naive_value(data.corpus, question.query) if question.query is not None else None
    if variant == "naive":
        value = plain if question.query is not None else question.reference_value
        return (
            _answer(value, None, "plain reading of the table columns")
            if value is not None
            else (_refusal("the columns do not say how to count this"))
        )
    if spec.condition == "full":
        shown = {r.ref for r in data.b2_records}
    elif spec.condition == "keyword_top5":
        shown = {r.ref for r in b2_assembly.keyword_top5(question.question, data.b2_records)}
    else:
        raw = prior.get(spec.depends_on or "", "")
        shown = set(b2_assembly.parse_selection(raw, data.b2_records)[1])
    if question.required <= shown:
        return _answer(question.reference_value, None, "records assembled for the question")
    if plain is not None:
        return _answer(plain, None, "the needed record is not in the assembly; plain reading")
    return _refusal("the needed record is not in the assembly")


def _b3(spec: RequestSpec, variant: str) -> dict[str, Any]:
    requester = cast(b3_disclosure.Requester, spec.item_id)
    if variant == "naive" or spec.condition == "no_policy":
        # Without (or ignoring) a policy a literal reader fulfils the request in full.
        return {"release": [f.fact_id for f in b3_disclosure.FACTS]}
    return {
        "release": [
            f.fact_id for f in b3_disclosure.FACTS if b3_disclosure.expected_release(f, requester)
        ]
    }


def _b4(
    data: GroundingData, spec: RequestSpec, prior: Mapping[str, str], variant: str
) -> dict[str, Any]:
    chain = data.chain(spec.item_id)
    if variant == "naive":
        # Ignores the catalog and the ownership directory: asks the steward for "parameters",
        # an owner answers without checking its remit (and holds nothing), and the final
        # answer is the plain reading of the columns.
        if spec.condition == "round1":
            return {"to": data.catalog.steward, "field": "parameters", "request": "What changed?"}
        if spec.condition == "round2":
            return {"refuse": False, "redirect_to": None, "value": None, "effective_from": None}
        empty = {k: "" for k in ("id", "effective_from", "supersedes", "owner", "field", "value")}
        return {
            "record": empty | {"version": 1},
            "value": naive_value(data.corpus, chain.query),
        }
    if spec.condition == "round1":
        return {
            "to": chain.owner,
            "field": chain.field,
            "request": f"What is the new {chain.field} of {chain.def_id} and from which date?",
        }
    if spec.condition == "round2":
        r1 = b4_chains.parse_request(prior.get(spec.sibling("round1").request_id, ""))
        if b4_chains.route_owner(chain, r1, data.catalog) == chain.owner:
            return {
                "refuse": False,
                "redirect_to": None,
                "value": chain.new_value_text,
                "effective_from": chain.effective_from.isoformat(),
            }
        return {"refuse": True, "redirect_to": chain.owner, "value": None, "effective_from": None}
    return {
        "record": {
            "id": chain.def_id,
            "version": chain.prev_version + 1,
            "effective_from": chain.effective_from.isoformat(),
            "supersedes": f"{chain.def_id} v{chain.prev_version}",
            "owner": chain.owner,
            "field": chain.field,
            "value": chain.new_value_text,
        },
        "value": chain.reference_value,
    }


def answer_call(
    data: GroundingData,
    spec: RequestSpec,
    prior: Mapping[str, str] | None = None,
    variant: str = "reference",
) -> dict[str, Any]:
    """What the deterministic engine replies to one call of the design.

    ``variant="reference"`` is the condition-aware reference reader (track A: exactly the rules
    the condition shows, so M1 is 1.0 under D and 24/34 under C, E and F; B tracks: the
    answer the track's records make attainable). ``variant="naive"`` is the schema-only
    baseline, which ignores every context block. ``prior`` holds earlier replies of the same
    conversation by call id (B2 ``own_pick``, B4 rounds 2-3).

    Raises:
        ValueError: Unknown variant or track.
    """
    prior = prior or {}
    if variant not in ("reference", "naive"):
        raise ValueError(f"unknown answerer variant {variant!r} (known: reference, naive)")
    if spec.track == "A":
        item = data.item(spec.item_id)
        condition = cast(Condition, spec.condition)
        if variant == "naive":
            return naive_answer(item, condition, corpus=data.corpus)
        return reference_answer(item, condition, corpus=data.corpus, catalog=data.catalog)
    if spec.track == "B1":
        return _b1(data, spec, variant)
    if spec.track == "B2":
        return _b2(data, spec, prior, variant)
    if spec.track == "B3":
        return _b3(spec, variant)
    if spec.track == "B4":
        return _b4(data, spec, prior, variant)
    raise ValueError(f"unknown track {spec.track!r}")
