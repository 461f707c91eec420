"""The Meridian Supply Co corpus: a small synthetic supplier database, rebuilt from a fixed seed.

Every item in the suite is computed from these rows, so the corpus must be byte-identical on every
machine: the generator uses :class:`random.Random` (Mersenne Twister, stable across CPython
releases for ``randint``/``choice``/``shuffle``), stores money as whole dollars (no float drift)
and serialises canonically (sorted keys, ISO dates). The generation constraints of the spec are
enforced while generating *and* re-checked afterwards by :func:`validate_corpus`, because a
constraint that only holds by construction silently breaks the first time someone edits the
generator.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "CARRIER_NAMES",
    "CONTRACTS",
    "CORPUS_SEED",
    "EXPECTED_COUNTS",
    "EXTRACT_DATE",
    "Contract",
    "Corpus",
    "Customer",
    "Invoice",
    "Order",
    "Return",
    "Shipment",
    "build_corpus",
    "validate_corpus",
]

CORPUS_SEED = 48
"""The fixed seed of the published corpus (spec: "deterministic from a fixed seed")."""

EXTRACT_DATE = dt.date(2026, 8, 31)
"""The day the tables were extracted: no event in the corpus is later than this."""

EXPECTED_COUNTS: dict[str, int] = {
    "customers": 24,
    "orders": 72,
    "shipments": 66,
    "invoices": 56,
    "returns": 10,
}
"""Row counts fixed by the spec; :func:`validate_corpus` refuses any other count."""

CARRIER_NAMES: dict[str, str] = {"HAL": "Halden Logistics", "ZEN": "Zen Freight"}

CONTRACTS: tuple[tuple[str, str], ...] = (("C-118", "HAL"), ("C-301", "HAL"), ("C-204", "ZEN"))
"""(contract, carrier). C-118 is governed by the federation records, C-301 (same carrier) is
explicitly excluded, and Zen Freight's C-204 is outside the rules entirely."""

_ORDER_FIRST = dt.date(2025, 4, 1)
_ORDER_LAST = dt.date(2026, 8, 24)
_EARLY_SIGNUP = (dt.date(2024, 1, 8), dt.date(2025, 3, 31))
_LATE_SIGNUP = (dt.date(2025, 4, 1), dt.date(2026, 3, 31))
_N_EARLY = 15
_N_CANCELLED = 6
_N_UNCONFIRMED = 5
_N_AWAITING = 4
_REGIONS = ("North", "South", "East", "West")
_CONTRACT_WEIGHTS = (("C-118", 2), ("C-301", 1), ("C-204", 1))
_CUSTOMER_NAMES = (
    "Aldgate Foods",
    "Birchwell Hardware",
    "Corvin Medical",
    "Dunmore Textiles",
    "Elmstead Garden",
    "Farrow Print",
    "Glenholt Bakery",
    "Harrowgate Tools",
    "Ivel Pharmacy",
    "Juniper Office",
    "Kestrel Sports",
    "Larchmont Cafe",
    "Mossley Labs",
    "Northcote Motors",
    "Oakridge School",
    "Pennine Outdoor",
    "Quayside Marine",
    "Redfern Books",
    "Saltash Dairy",
    "Thornbury Clinic",
    "Upton Electrical",
    "Vale Crafts",
    "Wexcombe Hotel",
    "Yardley Florist",
)


@dataclass(frozen=True)
class Customer:
    """One customer account; ``signup_date`` bounds its first order from below."""

    customer_id: str
    name: str
    region: str
    signup_date: dt.date


@dataclass(frozen=True)
class Order:
    """One order. ``recommit_date`` is the renegotiated commit date (None if never renegotiated)."""

    order_id: str
    customer_id: str
    order_date: dt.date
    goods: int
    freight: int
    commit_date: dt.date
    recommit_date: dt.date | None


@dataclass(frozen=True)
class Shipment:
    """One shipment. ``scan_date`` is the carrier's delivery scan, ``confirm_date`` the customer's
    confirmation of receipt; either is None when the event has not happened by the extract date."""

    shipment_id: str
    order_id: str
    carrier: str
    contract_id: str
    ship_date: dt.date
    scan_date: dt.date | None
    confirm_date: dt.date | None


@dataclass(frozen=True)
class Invoice:
    """One invoice, carrying the order's goods and freight amounts."""

    invoice_id: str
    order_id: str
    invoice_date: dt.date
    goods: int
    freight: int


@dataclass(frozen=True)
class Return:
    """One return: goods value refunded against an invoice."""

    return_id: str
    invoice_id: str
    return_date: dt.date
    amount: int


@dataclass(frozen=True)
class Contract:
    """A carrier contract; the contract decides the carrier, never the other way round."""

    contract_id: str
    carrier: str
    carrier_name: str


@dataclass(frozen=True)
class Corpus:
    """The whole database. Tuples of frozen rows, so an item cannot mutate what others read."""

    seed: int
    customers: tuple[Customer, ...]
    orders: tuple[Order, ...]
    shipments: tuple[Shipment, ...]
    invoices: tuple[Invoice, ...]
    returns: tuple[Return, ...]
    contracts: tuple[Contract, ...]

    def to_canonical_json(self) -> str:
        """Serialise canonically (sorted keys, ISO dates, no whitespace) for hashing."""
        payload = {
            "seed": self.seed,
            "customers": [_row(c) for c in self.customers],
            "orders": [_row(o) for o in self.orders],
            "shipments": [_row(s) for s in self.shipments],
            "invoices": [_row(i) for i in self.invoices],
            "returns": [_row(r) for r in self.returns],
            "contracts": [_row(c) for c in self.contracts],
        }
        return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def sha256(self) -> str:
        """Hex digest of :meth:`to_canonical_json`; pinned in the tests."""
        return hashlib.sha256(self.to_canonical_json().encode("utf-8")).hexdigest()

    def tables_csv(self) -> str:
        """Render the data tables as CSV, the byte-identical prefix of every data-bearing prompt.

        Rendered once per corpus (every prompt of a run starts with it).
        """
        return _tables_csv(self)

    def _render_tables(self) -> str:
        parts = [
            _csv("customers", ("customer_id", "name", "region", "signup_date"), self.customers),
            _csv(
                "orders",
                (
                    "order_id",
                    "customer_id",
                    "order_date",
                    "goods",
                    "freight",
                    "commit_date",
                    "recommit_date",
                ),
                self.orders,
            ),
            _csv(
                "shipments",
                (
                    "shipment_id",
                    "order_id",
                    "carrier",
                    "contract_id",
                    "ship_date",
                    "scan_date",
                    "confirm_date",
                ),
                self.shipments,
            ),
            _csv(
                "invoices",
                ("invoice_id", "order_id", "invoice_date", "goods", "freight"),
                self.invoices,
            ),
            _csv("returns", ("return_id", "invoice_id", "return_date", "amount"), self.returns),
            _csv("contracts", ("contract_id", "carrier", "carrier_name"), self.contracts),
        ]
        return "\n\n".join(parts)

    # Lookups used by the reference implementations; linear scans are fine at this size and
    # keep the dataclass free of cached mutable state.
    def customer(self, customer_id: str) -> Customer:
        """Return the customer row with this id."""
        return next(c for c in self.customers if c.customer_id == customer_id)

    def order(self, order_id: str) -> Order:
        """Return the order row with this id."""
        return next(o for o in self.orders if o.order_id == order_id)

    def shipment(self, shipment_id: str) -> Shipment:
        """Return the shipment row with this id."""
        return next(s for s in self.shipments if s.shipment_id == shipment_id)

    def shipment_for_order(self, order_id: str) -> Shipment | None:
        """Return the order's shipment, or None for an order that never shipped."""
        return next((s for s in self.shipments if s.order_id == order_id), None)

    def invoice(self, invoice_id: str) -> Invoice:
        """Return the invoice row with this id."""
        return next(i for i in self.invoices if i.invoice_id == invoice_id)


@lru_cache(maxsize=8)
def _tables_csv(corpus: Corpus) -> str:
    return corpus._render_tables()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _row(row: object) -> dict[str, object]:
    return {k: (_cell(v) if isinstance(v, dt.date) else v) for k, v in vars(row).items()}


def _csv(name: str, columns: tuple[str, ...], rows: tuple[object, ...]) -> str:
    lines = [f"{name}.csv", ",".join(columns)]
    lines += [",".join(_cell(getattr(r, c)) for c in columns) for r in rows]
    return "\n".join(lines)


def _rand_date(rng: random.Random, lo: dt.date, hi: dt.date) -> dt.date:
    return lo + dt.timedelta(days=rng.randint(0, (hi - lo).days))


def build_corpus(seed: int = CORPUS_SEED) -> Corpus:
    """Generate the corpus deterministically from ``seed`` and validate it.

    Constraints are enforced while generating (orders only go to customers already signed up;
    the carrier is derived from the contract) and then re-checked by :func:`validate_corpus`.

    Args:
        seed: Generator seed; the published corpus uses :data:`CORPUS_SEED`.

    Returns:
        The validated corpus.

    Raises:
        ValueError: A generation constraint does not hold (names the offending row).
    """
    rng = random.Random(seed)
    names = list(_CUSTOMER_NAMES)
    rng.shuffle(names)
    signups = [_rand_date(rng, *_EARLY_SIGNUP) for _ in range(_N_EARLY)]
    signups += [_rand_date(rng, *_LATE_SIGNUP) for _ in range(len(names) - _N_EARLY)]
    signups.sort()
    customers = tuple(
        Customer(f"C{i + 1:02d}", names[i], rng.choice(_REGIONS), signups[i])
        for i in range(len(names))
    )

    order_dates = sorted(
        _rand_date(rng, _ORDER_FIRST, _ORDER_LAST) for _ in range(EXPECTED_COUNTS["orders"])
    )
    orders: list[Order] = []
    for i, day in enumerate(order_dates):
        # Enforced at generation: only customers signed up by the order date may order.
        eligible = [c for c in customers if c.signup_date <= day]
        cust = rng.choice(eligible)
        commit = day + dt.timedelta(days=rng.randint(4, 9))
        recommit = commit + dt.timedelta(days=rng.randint(2, 7)) if rng.random() < 0.35 else None
        orders.append(
            Order(
                order_id=f"O{i + 1:03d}",
                customer_id=cust.customer_id,
                order_date=day,
                goods=rng.randint(8, 96) * 50,
                freight=rng.randint(4, 30) * 5,
                commit_date=commit,
                recommit_date=recommit,
            )
        )

    cancelled = set(rng.sample([o.order_id for o in orders], _N_CANCELLED))
    shipped = [o for o in orders if o.order_id not in cancelled]
    never_confirmed = set(rng.sample([o.order_id for o in shipped], _N_UNCONFIRMED))
    pool = [c for c, w in _CONTRACT_WEIGHTS for _ in range(w)]
    carrier_of = dict(CONTRACTS)
    shipments: list[Shipment] = []
    for i, o in enumerate(shipped):
        contract = rng.choice(pool)
        ship = o.order_date + dt.timedelta(days=rng.randint(1, 3))
        scan: dt.date | None = ship + dt.timedelta(days=rng.randint(1, 5))
        confirm: dt.date | None = None
        if scan is not None and scan > EXTRACT_DATE:
            scan = None
        if scan is not None and o.order_id not in never_confirmed:
            confirm = scan + dt.timedelta(days=rng.choice((0, 0, 1, 1, 2, 3, 4)))
            if confirm > EXTRACT_DATE:
                confirm = None
        shipments.append(
            Shipment(
                shipment_id=f"S{i + 1:03d}",
                order_id=o.order_id,
                carrier=carrier_of[contract],  # enforced: the contract decides the carrier
                contract_id=contract,
                ship_date=ship,
                scan_date=scan,
                confirm_date=confirm,
            )
        )

    # Uninvoiced shipments: the most recent ones await month-end invoicing, a few others are on
    # hold. Invoice ids follow ship-date order.
    by_ship = sorted(shipments, key=lambda s: (s.ship_date, s.shipment_id))
    n_hold = len(by_ship) - EXPECTED_COUNTS["invoices"] - _N_AWAITING
    on_hold = set(rng.sample([s.shipment_id for s in by_ship[:-_N_AWAITING]], n_hold))
    invoiced = [s for s in by_ship[:-_N_AWAITING] if s.shipment_id not in on_hold]
    invoices: list[Invoice] = []
    for i, s in enumerate(invoiced):
        o = next(x for x in orders if x.order_id == s.order_id)
        invoices.append(
            Invoice(
                invoice_id=f"I{i + 1:03d}",
                order_id=o.order_id,
                invoice_date=s.ship_date + dt.timedelta(days=rng.randint(0, 2)),
                goods=o.goods,
                freight=o.freight,
            )
        )

    returned = sorted(rng.sample(invoices, EXPECTED_COUNTS["returns"]), key=lambda v: v.invoice_id)
    returns: list[Return] = []
    for i, inv in enumerate(returned):
        day = min(inv.invoice_date + dt.timedelta(days=rng.randint(7, 45)), EXTRACT_DATE)
        amount = max(50, round(inv.goods * rng.randint(10, 60) / 100 / 10) * 10)
        returns.append(Return(f"R{i + 1:02d}", inv.invoice_id, day, amount))

    corpus = Corpus(
        seed=seed,
        customers=customers,
        orders=tuple(orders),
        shipments=tuple(shipments),
        invoices=tuple(invoices),
        returns=tuple(returns),
        contracts=tuple(Contract(c, k, CARRIER_NAMES[k]) for c, k in CONTRACTS),
    )
    validate_corpus(corpus)
    return corpus


def _unique(table: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for rid in ids:
        if rid in seen:
            raise ValueError(f"{table} row {rid}: duplicate id")
        seen.add(rid)


def validate_corpus(corpus: Corpus) -> None:
    """Re-check every generation constraint on a finished corpus.

    Checks the spec's counts, unique ids, that no order precedes its customer's signup date, that
    contract and carrier are consistent (so the federation scope, C-118, can never overlap the
    excluded C-301/C-204 rows), event order (order ≤ ship ≤ scan ≤ confirm; ship ≤ invoice ≤
    return) and that no event is later than :data:`EXTRACT_DATE`.

    Args:
        corpus: The corpus to check.

    Raises:
        ValueError: The first violated constraint, naming the table and the offending row.
    """
    actual = {
        "customers": len(corpus.customers),
        "orders": len(corpus.orders),
        "shipments": len(corpus.shipments),
        "invoices": len(corpus.invoices),
        "returns": len(corpus.returns),
    }
    for table, want in EXPECTED_COUNTS.items():
        if actual[table] != want:
            raise ValueError(f"{table}: {actual[table]} rows, the spec requires {want}")
    _unique("customers", [c.customer_id for c in corpus.customers])
    _unique("orders", [o.order_id for o in corpus.orders])
    _unique("shipments", [s.shipment_id for s in corpus.shipments])
    _unique("invoices", [i.invoice_id for i in corpus.invoices])
    _unique("returns", [r.return_id for r in corpus.returns])

    carrier_of = dict(CONTRACTS)
    for k in corpus.contracts:
        if carrier_of.get(k.contract_id) != k.carrier:
            raise ValueError(f"contracts row {k.contract_id}: carrier {k.carrier} is inconsistent")
        if CARRIER_NAMES.get(k.carrier) != k.carrier_name:
            raise ValueError(f"contracts row {k.contract_id}: carrier name {k.carrier_name!r}")

    customers = {c.customer_id: c for c in corpus.customers}
    orders = {o.order_id: o for o in corpus.orders}
    for o in corpus.orders:
        cust = customers.get(o.customer_id)
        if cust is None:
            raise ValueError(f"orders row {o.order_id}: unknown customer {o.customer_id}")
        if o.order_date < cust.signup_date:
            raise ValueError(
                f"orders row {o.order_id}: order_date {o.order_date} precedes the signup date "
                f"{cust.signup_date} of customer {cust.customer_id}"
            )
        if o.commit_date < o.order_date:
            raise ValueError(f"orders row {o.order_id}: commit_date precedes order_date")
        if o.recommit_date is not None and o.recommit_date <= o.commit_date:
            raise ValueError(f"orders row {o.order_id}: recommit_date not after commit_date")
        if o.order_date > EXTRACT_DATE:
            raise ValueError(f"orders row {o.order_id}: order_date after the extract date")

    shipped: dict[str, Shipment] = {}
    for s in corpus.shipments:
        order = orders.get(s.order_id)
        if order is None:
            raise ValueError(f"shipments row {s.shipment_id}: unknown order {s.order_id}")
        if s.order_id in shipped:
            raise ValueError(f"shipments row {s.shipment_id}: order {s.order_id} shipped twice")
        shipped[s.order_id] = s
        if s.contract_id not in carrier_of:
            raise ValueError(f"shipments row {s.shipment_id}: unknown contract {s.contract_id}")
        if carrier_of[s.contract_id] != s.carrier:
            raise ValueError(
                f"shipments row {s.shipment_id}: carrier {s.carrier} does not hold contract "
                f"{s.contract_id}"
            )
        if s.ship_date < order.order_date:
            raise ValueError(f"shipments row {s.shipment_id}: ship_date precedes order_date")
        if s.scan_date is not None and s.scan_date < s.ship_date:
            raise ValueError(f"shipments row {s.shipment_id}: scan_date precedes ship_date")
        if s.confirm_date is not None and (s.scan_date is None or s.confirm_date < s.scan_date):
            raise ValueError(f"shipments row {s.shipment_id}: confirm_date before the scan")
        last = max(d for d in (s.ship_date, s.scan_date, s.confirm_date) if d is not None)
        if last > EXTRACT_DATE:
            raise ValueError(f"shipments row {s.shipment_id}: event after the extract date")

    invoices = {i.invoice_id: i for i in corpus.invoices}
    for inv in corpus.invoices:
        ship = shipped.get(inv.order_id)
        if ship is None:
            raise ValueError(f"invoices row {inv.invoice_id}: order {inv.order_id} never shipped")
        order = orders[inv.order_id]
        if (inv.goods, inv.freight) != (order.goods, order.freight):
            raise ValueError(f"invoices row {inv.invoice_id}: amounts differ from the order")
        if not ship.ship_date <= inv.invoice_date <= EXTRACT_DATE:
            raise ValueError(f"invoices row {inv.invoice_id}: invoice_date out of range")
    for r in corpus.returns:
        inv2 = invoices.get(r.invoice_id)
        if inv2 is None:
            raise ValueError(f"returns row {r.return_id}: unknown invoice {r.invoice_id}")
        if not inv2.invoice_date <= r.return_date <= EXTRACT_DATE:
            raise ValueError(f"returns row {r.return_id}: return_date out of range")
        if not 0 < r.amount <= inv2.goods:
            raise ValueError(f"returns row {r.return_id}: amount exceeds the invoiced goods")
