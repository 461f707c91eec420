"""The definition catalog: six ambiguous concepts, their versions, owners and executable rules.

This module is the *content model*. Conditions C, E, F, D (and the B1/B2/B4 catalogs) are all
rendered from the objects defined here, so no two renderings can disagree about a window, a date
or an owner. Each definition version is executable: :func:`evaluate` runs the reference
implementation of a concept with that version's ``parameters``, so the numbers in the prompt and
the numbers the grader expects come from one place.

Concepts and their axes of disagreement (spec table "Six ambiguous concepts"):

* active customer: 365- vs 180-day window, v1 → v2 on 2026-04-01;
* net revenue: freight in (v1) or out (v2), minus returns, v1 → v2 on 2026-05-01;
* delivered: customer confirmation (Meridian) vs carrier scan (Halden);
* on time: original (v1) vs renegotiated (v2) commit date, v1 → v2 on 2026-02-01;
* order value: freight excluded (Meridian) vs included (Halden);
* business day: the Meridian vs the Halden holiday calendar.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from sealedeval.suites.grounding.corpus import Corpus, Shipment

__all__ = [
    "CONCEPTS",
    "CONCEPT_LABELS",
    "HALDEN",
    "MERIDIAN",
    "ZEN_FREIGHT",
    "Audience",
    "Catalog",
    "DefRef",
    "Definition",
    "FederationRecord",
    "OwnerRole",
    "Param",
    "Query",
    "SeparationCase",
    "Unanswerable",
    "build_catalog",
    "evaluate",
    "governing_definition",
    "implementation",
    "values_equal",
    "verify_separating",
    "with_definitions",
]

MERIDIAN = "Meridian Supply Co"
HALDEN = "Halden Logistics"
ZEN_FREIGHT = "Zen Freight"

CONCEPTS = (
    "active_customer",
    "net_revenue",
    "delivered",
    "on_time",
    "order_value",
    "business_day",
)
CONCEPT_LABELS: dict[str, str] = {
    "active_customer": "active customer",
    "net_revenue": "net revenue",
    "delivered": "delivered",
    "on_time": "on time",
    "order_value": "order value",
    "business_day": "business day",
}

Param = int | bool | str | tuple[str, ...]
Audience = Literal["internal", "counterparty"]

SALES_OPS = "Sales Operations Lead"
FINANCE = "Financial Controller"
LOGISTICS = "Logistics Manager"
PLANNING = "Operations Planning Lead"
CONTRACTS_MANAGER = "Carrier Contracts Manager"
STEWARD = "Data Governance Lead"
HALDEN_OWNER = "Halden Commercial Operations"

_MERIDIAN_HOLIDAYS = (
    "2025-01-01",
    "2025-04-18",
    "2025-04-21",
    "2025-05-05",
    "2025-05-26",
    "2025-08-25",
    "2025-09-30",
    "2025-11-28",
    "2025-12-25",
    "2025-12-26",
    "2026-01-01",
    "2026-01-02",
    "2026-03-31",
    "2026-04-03",
    "2026-04-06",
    "2026-05-04",
    "2026-05-25",
    "2026-06-30",
    "2026-08-31",
    "2026-12-25",
    "2026-12-28",
)
_HALDEN_HOLIDAYS = (
    "2025-01-01",
    "2025-04-17",
    "2025-04-18",
    "2025-04-21",
    "2025-05-01",
    "2025-05-29",
    "2025-06-09",
    "2025-12-24",
    "2025-12-25",
    "2025-12-26",
    "2025-12-31",
    "2026-01-01",
    "2026-04-02",
    "2026-04-03",
    "2026-04-06",
    "2026-05-01",
    "2026-05-14",
    "2026-05-25",
    "2026-06-19",
    "2026-12-24",
    "2026-12-25",
)

VERSION_RULE = (
    "a figure uses the version in force on its reference date (the as-of date, or the last day "
    "of the period); a version is in force from its effective_from date inclusive until the "
    "effective_from date of the version that supersedes it"
)
"""Catalog-level rule that makes "the definition in force" decidable; rendered in C, E, F, D."""


class Unanswerable(Exception):
    """A definition cannot produce a value (a gap: missing parameter, calendar not covering)."""


@dataclass(frozen=True, order=True)
class DefRef:
    """A definition id plus version: what M2 asks the model to name."""

    def_id: str
    version: int

    def label(self) -> str:
        """Human form used in records and reasons, e.g. ``MSC-ACTIVE-CUSTOMER v2``."""
        return f"{self.def_id} v{self.version}"


@dataclass(frozen=True)
class Definition:
    """One version of one organisation's definition of a concept.

    ``effective_from``/``owner`` are optional only so the B1 track can represent gaps; a complete
    catalog (:func:`build_catalog`) always fills them.
    """

    def_id: str
    version: int
    concept: str
    organisation: str
    effective_from: dt.date | None
    supersedes: int | None
    superseded_by: int | None
    owner: str | None
    parameters: tuple[tuple[str, Param], ...]

    @property
    def ref(self) -> DefRef:
        """This version as a :class:`DefRef`."""
        return DefRef(self.def_id, self.version)

    def params(self) -> dict[str, Param]:
        """Parameters as a dict (the tuple form keeps the dataclass hashable and ordered)."""
        return dict(self.parameters)


@dataclass(frozen=True)
class FederationRecord:
    """Says whose definition governs one class of counterparty questions, and where it stops."""

    fed_id: str
    version: int
    effective_from: dt.date
    owner: str
    concept: str
    governing: DefRef
    counterparty: str
    contracts: tuple[str, ...]
    excluded: str

    def applies(
        self, audience: Audience, counterparty: str | None, contract_id: str | None
    ) -> bool:
        """True only for a question addressed to this counterparty about an in-scope contract.

        Internal reporting is excluded by name even when the rows belong to a governed contract:
        leaving that out was the validity defect (R2) of the benchmark's version 1.
        """
        return (
            audience == "counterparty"
            and counterparty == self.counterparty
            and contract_id in self.contracts
        )


@dataclass(frozen=True)
class OwnerRole:
    """A responsible role and the remit it owns (used to name owners of gaps and in B4)."""

    role: str
    remit: str
    concepts: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    """The definition records of one condition plus the federation layer and ownership map."""

    organisation: str
    version_rule: str
    steward: str
    definitions: tuple[Definition, ...]
    federation: tuple[FederationRecord, ...]
    owners: tuple[OwnerRole, ...]

    def get(self, ref: DefRef) -> Definition:
        """Return the definition with this id and version.

        Raises:
            KeyError: No such version in this catalog.
        """
        for d in self.definitions:
            if d.ref == ref:
                return d
        raise KeyError(ref.label())

    def versions(self, def_id: str) -> tuple[Definition, ...]:
        """All versions of one definition id, oldest first."""
        return tuple(
            sorted((d for d in self.definitions if d.def_id == def_id), key=lambda d: d.version)
        )

    def in_force(self, def_id: str, on: dt.date) -> Definition:
        """The version of ``def_id`` in force on ``on`` (effective_from inclusive).

        Raises:
            Unanswerable: No version is in force, or an effective date is missing so the
                question cannot be decided.
        """
        candidates = self.versions(def_id)
        if not candidates:
            raise Unanswerable(f"no definition {def_id}")
        if any(d.effective_from is None for d in candidates):
            raise Unanswerable(f"{def_id}: a version has no effective_from")
        live = [d for d in candidates if d.effective_from is not None and d.effective_from <= on]
        if not live:
            raise Unanswerable(f"{def_id}: no version in force on {on}")
        chosen = max(live, key=lambda d: (d.effective_from or dt.date.min, d.version))
        known = {d.version for d in candidates}
        if chosen.superseded_by is not None and chosen.superseded_by not in known:
            # Superseded by a version nobody recorded: its start date is unknown, so whether
            # the old rule still holds on ``on`` cannot be decided.
            raise Unanswerable(f"{def_id}: superseded by missing version {chosen.superseded_by}")
        return chosen

    def owner_of(self, concept: str) -> str:
        """The role owning a concept, from the ownership map (not from a record's field)."""
        for o in self.owners:
            if concept in o.concepts:
                return o.role
        return self.steward


@dataclass(frozen=True)
class Query:
    """The computation a question asks for, independent of which definition is applied.

    ``as_of`` is the reference date for point-in-time questions; otherwise the period end is.
    Business-day queries count, for each listed shipment, the business days strictly after the
    ship date up to and including the scan date (the question states this rule).
    """

    concept: str
    as_of: dt.date | None = None
    start: dt.date | None = None
    end: dt.date | None = None
    contract_id: str | None = None
    region: str | None = None
    shipment_ids: tuple[str, ...] = ()

    @property
    def reference_date(self) -> dt.date:
        """The date that decides which version is in force."""
        if self.as_of is not None:
            return self.as_of
        if self.end is not None:
            return self.end
        raise ValueError(f"query for {self.concept} has no reference date")


def _p(defn: Definition, key: str) -> Param:
    params = defn.params()
    if key not in params:
        raise Unanswerable(f"{defn.ref.label()}: parameter {key} is missing")
    return params[key]


def _in(day: dt.date | None, q: Query) -> bool:
    if day is None or q.start is None or q.end is None:
        return False
    return q.start <= day <= q.end


def _contract_ok(corpus: Corpus, order_id: str, contract_id: str | None) -> bool:
    if contract_id is None:
        return True
    ship = corpus.shipment_for_order(order_id)
    return ship is not None and ship.contract_id == contract_id


def _eval_active(corpus: Corpus, defn: Definition, q: Query) -> float:
    window = _p(defn, "window_days")
    assert isinstance(window, int) and q.as_of is not None
    lo = q.as_of - dt.timedelta(days=window)
    active = {o.customer_id for o in corpus.orders if lo < o.order_date <= q.as_of}
    if q.region is not None:
        active = {c for c in active if corpus.customer(c).region == q.region}
    return float(len(active))


def _eval_net_revenue(corpus: Corpus, defn: Definition, q: Query) -> float:
    freight = _p(defn, "include_freight")
    assert isinstance(freight, bool)
    total = 0
    for inv in corpus.invoices:
        if _in(inv.invoice_date, q) and _contract_ok(corpus, inv.order_id, q.contract_id):
            total += inv.goods + (inv.freight if freight else 0)
    for r in corpus.returns:
        inv = corpus.invoice(r.invoice_id)
        if _in(r.return_date, q) and _contract_ok(corpus, inv.order_id, q.contract_id):
            total -= r.amount
    return float(total)


def _date_field(s: Shipment, name: Param) -> dt.date | None:
    if name not in ("scan_date", "confirm_date"):
        raise Unanswerable(f"unknown delivery field {name!r}")
    value = getattr(s, str(name))
    assert value is None or isinstance(value, dt.date)
    return value


def _eval_delivered(corpus: Corpus, defn: Definition, q: Query) -> float:
    field = _p(defn, "date_field")
    return float(
        sum(
            1
            for s in corpus.shipments
            if _in(_date_field(s, field), q)
            and (q.contract_id is None or s.contract_id == q.contract_id)
        )
    )


def _eval_on_time(corpus: Corpus, defn: Definition, q: Query) -> float:
    field = _p(defn, "delivery_field")
    commit_rule = _p(defn, "commit_date")
    count = 0
    for s in corpus.shipments:
        day = _date_field(s, field)
        if day is None or not _in(day, q):
            continue
        if q.contract_id is not None and s.contract_id != q.contract_id:
            continue
        order = corpus.order(s.order_id)
        if commit_rule == "commit_date":
            commit = order.commit_date
        elif commit_rule == "recommit_date, else commit_date":
            commit = order.recommit_date or order.commit_date
        else:
            raise Unanswerable(f"{defn.ref.label()}: unknown commit rule {commit_rule!r}")
        count += day <= commit
    return float(count)


def _eval_order_value(corpus: Corpus, defn: Definition, q: Query) -> float:
    freight = _p(defn, "include_freight")
    assert isinstance(freight, bool)
    return float(
        sum(
            o.goods + (o.freight if freight else 0)
            for o in corpus.orders
            if _in(o.order_date, q) and _contract_ok(corpus, o.order_id, q.contract_id)
        )
    )


def _eval_business_day(corpus: Corpus, defn: Definition, q: Query) -> float:
    holidays = _p(defn, "holidays")
    years = _p(defn, "calendar_years")
    assert isinstance(holidays, tuple) and isinstance(years, tuple)
    off = {dt.date.fromisoformat(h) for h in holidays}
    total = 0
    for sid in q.shipment_ids:
        s = corpus.shipment(sid)
        if s.scan_date is None:
            raise Unanswerable(f"shipment {sid} has no scan_date")
        day = s.ship_date + dt.timedelta(days=1)
        while day <= s.scan_date:
            if str(day.year) not in years:
                raise Unanswerable(f"{defn.ref.label()}: calendar does not cover {day.year}")
            if day.weekday() < 5 and day not in off:
                total += 1
            day += dt.timedelta(days=1)
    return float(total)


_EVALUATORS: dict[str, Callable[[Corpus, Definition, Query], float]] = {
    "active_customer": _eval_active,
    "net_revenue": _eval_net_revenue,
    "delivered": _eval_delivered,
    "on_time": _eval_on_time,
    "order_value": _eval_order_value,
    "business_day": _eval_business_day,
}


def evaluate(corpus: Corpus, defn: Definition, query: Query) -> float:
    """Run the reference implementation of ``defn`` on the corpus.

    One evaluator per concept reads everything that varies between versions from the record's
    ``parameters``: a version *is* its parameters, so the prompt text and the computed answer
    cannot drift apart.

    Raises:
        ValueError: The definition's concept differs from the query's.
        Unanswerable: The record lacks what the computation needs (a B1 gap).
    """
    if defn.concept != query.concept:
        raise ValueError(f"{defn.ref.label()} defines {defn.concept}, not {query.concept}")
    return _EVALUATORS[defn.concept](corpus, defn, query)


def implementation(catalog: Catalog, ref: DefRef) -> Callable[[Corpus, Query], float]:
    """The reference implementation of one definition version as a plain function."""
    defn = catalog.get(ref)

    def run(corpus: Corpus, query: Query) -> float:
        return evaluate(corpus, defn, query)

    run.__name__ = f"impl_{ref.def_id.lower().replace('-', '_')}_v{ref.version}"
    return run


def values_equal(a: float, b: float) -> bool:
    """Answer equality used everywhere (M1, M7, separation): equal at cent precision."""
    return round(a, 2) == round(b, 2)


def governing_definition(
    catalog: Catalog,
    concept: str,
    on: dt.date,
    *,
    audience: Audience,
    counterparty: str | None,
    contract_id: str | None,
    use_federation: bool,
) -> Definition:
    """Resolve which definition a reader holding ``catalog`` must apply.

    Without federation records the reader's own organisation (Meridian) governs every question:
    the partner's records are in the catalog, but nothing says when they apply. With federation
    records, a question addressed to the counterparty about an in-scope contract is governed by
    the counterparty's definition; everything else (internal reporting, C-301, Zen Freight) stays
    with Meridian.

    Raises:
        Unanswerable: No Meridian definition of the concept is in force on ``on``.
    """
    if use_federation:
        for fed in catalog.federation:
            if (
                fed.concept == concept
                and fed.effective_from <= on
                and fed.applies(audience, counterparty, contract_id)
            ):
                return catalog.get(fed.governing)
    own = [
        d.def_id
        for d in catalog.definitions
        if d.concept == concept and d.organisation == catalog.organisation
    ]
    if not own:
        raise Unanswerable(f"no {catalog.organisation} definition of {concept}")
    return catalog.in_force(own[0], on)


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def build_catalog() -> Catalog:
    """The complete catalog (conditions C/E/F/D): 9 Meridian, 3 Halden and 3 federation records."""
    base = _d("2025-01-01")
    calendar_years = ("2025", "2026")
    defs = (
        Definition(
            "MSC-ACTIVE-CUSTOMER",
            1,
            "active_customer",
            MERIDIAN,
            base,
            None,
            2,
            SALES_OPS,
            (("window_days", 365), ("date_field", "order_date")),
        ),
        Definition(
            "MSC-ACTIVE-CUSTOMER",
            2,
            "active_customer",
            MERIDIAN,
            _d("2026-04-01"),
            1,
            None,
            SALES_OPS,
            (("window_days", 180), ("date_field", "order_date")),
        ),
        Definition(
            "MSC-NET-REVENUE",
            1,
            "net_revenue",
            MERIDIAN,
            base,
            None,
            2,
            FINANCE,
            (
                ("include_freight", True),
                ("period_field", "invoice_date"),
                ("returns_field", "return_date"),
            ),
        ),
        Definition(
            "MSC-NET-REVENUE",
            2,
            "net_revenue",
            MERIDIAN,
            _d("2026-05-01"),
            1,
            None,
            FINANCE,
            (
                ("include_freight", False),
                ("period_field", "invoice_date"),
                ("returns_field", "return_date"),
            ),
        ),
        Definition(
            "MSC-ON-TIME",
            1,
            "on_time",
            MERIDIAN,
            base,
            None,
            2,
            LOGISTICS,
            (("delivery_field", "confirm_date"), ("commit_date", "commit_date")),
        ),
        Definition(
            "MSC-ON-TIME",
            2,
            "on_time",
            MERIDIAN,
            _d("2026-02-01"),
            1,
            None,
            LOGISTICS,
            (
                ("delivery_field", "confirm_date"),
                ("commit_date", "recommit_date, else commit_date"),
            ),
        ),
        Definition(
            "MSC-DELIVERED",
            1,
            "delivered",
            MERIDIAN,
            base,
            None,
            None,
            LOGISTICS,
            (("date_field", "confirm_date"),),
        ),
        Definition(
            "MSC-ORDER-VALUE",
            1,
            "order_value",
            MERIDIAN,
            base,
            None,
            None,
            FINANCE,
            (("include_freight", False),),
        ),
        Definition(
            "MSC-BUSINESS-DAY",
            1,
            "business_day",
            MERIDIAN,
            base,
            None,
            None,
            PLANNING,
            (
                ("weekend", ("Saturday", "Sunday")),
                ("calendar_years", calendar_years),
                ("holidays", _MERIDIAN_HOLIDAYS),
            ),
        ),
        Definition(
            "HAL-DELIVERED",
            1,
            "delivered",
            HALDEN,
            base,
            None,
            None,
            HALDEN_OWNER,
            (("date_field", "scan_date"),),
        ),
        Definition(
            "HAL-ORDER-VALUE",
            1,
            "order_value",
            HALDEN,
            base,
            None,
            None,
            HALDEN_OWNER,
            (("include_freight", True),),
        ),
        Definition(
            "HAL-BUSINESS-DAY",
            1,
            "business_day",
            HALDEN,
            base,
            None,
            None,
            HALDEN_OWNER,
            (
                ("weekend", ("Saturday", "Sunday")),
                ("calendar_years", calendar_years),
                ("holidays", _HALDEN_HOLIDAYS),
            ),
        ),
    )
    excluded = (
        "internal reporting (even for rows of contract C-118); contract C-301 of Halden "
        "Logistics; Zen Freight and its contract C-204"
    )
    fed = tuple(
        FederationRecord(
            fed_id=f"FED-{suffix}",
            version=1,
            effective_from=_d("2025-07-01"),
            owner=CONTRACTS_MANAGER,
            concept=concept,
            governing=DefRef(f"HAL-{suffix}", 1),
            counterparty=HALDEN,
            contracts=("C-118",),
            excluded=excluded,
        )
        for suffix, concept in (
            ("DELIVERED", "delivered"),
            ("ORDER-VALUE", "order_value"),
            ("BUSINESS-DAY", "business_day"),
        )
    )
    owners = (
        OwnerRole(
            SALES_OPS,
            "customer definitions (active, new customers)",
            ("active_customer", "new_customer"),
        ),
        OwnerRole(
            FINANCE,
            "revenue and value definitions (net revenue, order value)",
            ("net_revenue", "order_value"),
        ),
        OwnerRole(
            LOGISTICS, "fulfilment definitions (delivered, on time)", ("delivered", "on_time")
        ),
        OwnerRole(PLANNING, "calendars (business days, holidays)", ("business_day",)),
    )
    return Catalog(MERIDIAN, VERSION_RULE, STEWARD, defs, fed, owners)


def with_definitions(catalog: Catalog, definitions: Iterable[Definition]) -> Catalog:
    """A copy of ``catalog`` with other definitions (the B1 gaps, the B4 completed versions)."""
    return replace(catalog, definitions=tuple(definitions))


class SeparationCase(Protocol):
    """What :func:`verify_separating` needs from an item (kept structural to avoid a cycle)."""

    @property
    def item_id(self) -> str: ...

    @property
    def query(self) -> Query | None: ...

    @property
    def in_force(self) -> DefRef | None: ...

    @property
    def competing(self) -> DefRef | None: ...


def verify_separating(
    corpus: Corpus, catalog: Catalog, cases: Iterable[SeparationCase]
) -> Mapping[str, tuple[float, float]]:
    """Check that every answerable item separates its definition from the competing one.

    An item whose competing definition gives the same number cannot show whether a model
    applied the right rule, so generation fails instead of producing it.

    Returns:
        ``item_id -> (reference value, competing value)`` for every answerable case.

    Raises:
        ValueError: A case is not separating, or lacks a query or a competing definition.
    """
    out: dict[str, tuple[float, float]] = {}
    for case in cases:
        if case.in_force is None:
            continue
        if case.query is None or case.competing is None:
            raise ValueError(f"item {case.item_id}: answerable but no query/competing definition")
        if case.competing == case.in_force:
            raise ValueError(f"item {case.item_id}: competing definition equals the reference")
        ref = evaluate(corpus, catalog.get(case.in_force), case.query)
        alt = evaluate(corpus, catalog.get(case.competing), case.query)
        if values_equal(ref, alt):
            raise ValueError(
                f"item {case.item_id}: not separating ({case.in_force.label()} and "
                f"{case.competing.label()} both give {ref:g})"
            )
        out[case.item_id] = (ref, alt)
    return out
