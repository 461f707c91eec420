"""Corpus: the spec's counts, carriers and constraints, determinism and the pinned hash."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.corpus import (
    CORPUS_SEED,
    EXTRACT_DATE,
    Corpus,
    build_corpus,
    validate_corpus,
)

PINNED_SHA256 = "6493ac359f44664f932cc4d60e7145fdb22947695c7da6f5b0e0d9270498e282"


def test_counts_match_the_spec(suite: GroundingData) -> None:
    c = suite.corpus
    assert (len(c.customers), len(c.orders), len(c.shipments), len(c.invoices), len(c.returns)) == (
        24,
        72,
        66,
        56,
        10,
    )


def test_carriers_and_contracts(suite: GroundingData) -> None:
    c = suite.corpus
    assert {(k.contract_id, k.carrier, k.carrier_name) for k in c.contracts} == {
        ("C-118", "HAL", "Halden Logistics"),
        ("C-301", "HAL", "Halden Logistics"),
        ("C-204", "ZEN", "Zen Freight"),
    }
    carrier_of = {k.contract_id: k.carrier for k in c.contracts}
    assert all(s.carrier == carrier_of[s.contract_id] for s in c.shipments)
    # Every contract is used, so both sides of the federation scope are exercised.
    assert {s.contract_id for s in c.shipments} == {"C-118", "C-301", "C-204"}


def test_no_order_precedes_its_customers_signup(suite: GroundingData) -> None:
    signup = {c.customer_id: c.signup_date for c in suite.corpus.customers}
    assert all(o.order_date >= signup[o.customer_id] for o in suite.corpus.orders)
    # ...and the constraint binds: some customers sign up inside the order window.
    first_order = min(o.order_date for o in suite.corpus.orders)
    assert any(d > first_order for d in signup.values())


def test_no_event_after_extract_date(suite: GroundingData) -> None:
    c = suite.corpus
    days = [o.order_date for o in c.orders] + [i.invoice_date for i in c.invoices]
    days += [r.return_date for r in c.returns]
    days += [d for s in c.shipments for d in (s.ship_date, s.scan_date, s.confirm_date) if d]
    assert max(days) <= EXTRACT_DATE


def test_generation_is_deterministic_and_pinned() -> None:
    a, b = build_corpus(CORPUS_SEED), build_corpus(CORPUS_SEED)
    assert a.to_canonical_json() == b.to_canonical_json()
    assert a.tables_csv() == b.tables_csv()
    assert a.sha256() == PINNED_SHA256
    assert build_corpus(CORPUS_SEED + 1).sha256() != PINNED_SHA256


def test_tables_are_about_ten_thousand_characters(suite: GroundingData) -> None:
    text = suite.corpus.tables_csv()
    assert 9_000 <= len(text) <= 11_000
    assert text.startswith("customers.csv\ncustomer_id,name,region,signup_date\n")


def _with(corpus: Corpus, table: str, index: int, **changes: Any) -> Corpus:
    rows = list(getattr(corpus, table))
    rows[index] = dataclasses.replace(rows[index], **changes)
    fields: dict[str, Any] = {table: tuple(rows)}
    return dataclasses.replace(corpus, **fields)


def test_order_before_signup_is_rejected_naming_the_row(suite: GroundingData) -> None:
    c = suite.corpus
    order = c.orders[0]
    signup = c.customer(order.customer_id).signup_date
    bad = _with(c, "orders", 0, order_date=signup - dt.timedelta(days=1))
    with pytest.raises(ValueError, match=rf"orders row {order.order_id}: .*precedes the signup"):
        validate_corpus(bad)


def test_carrier_contract_mismatch_is_rejected_naming_the_row(suite: GroundingData) -> None:
    c = suite.corpus
    idx = next(i for i, s in enumerate(c.shipments) if s.contract_id == "C-301")
    bad = _with(c, "shipments", idx, carrier="ZEN")
    sid = c.shipments[idx].shipment_id
    with pytest.raises(ValueError, match=rf"shipments row {sid}: carrier ZEN does not hold"):
        validate_corpus(bad)


def test_wrong_count_is_rejected(suite: GroundingData) -> None:
    bad = dataclasses.replace(suite.corpus, returns=suite.corpus.returns[:-1])
    with pytest.raises(ValueError, match="returns: 9 rows"):
        validate_corpus(bad)
