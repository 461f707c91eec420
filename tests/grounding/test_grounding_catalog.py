"""Catalog: versions, dates, owners, executable rules, federation scope, separation check."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.catalog import (
    DefRef,
    Query,
    Unanswerable,
    evaluate,
    governing_definition,
    implementation,
    verify_separating,
)


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def test_versions_and_effective_dates(suite: GroundingData) -> None:
    cat = suite.catalog
    changes = {
        "MSC-ACTIVE-CUSTOMER": ("2026-04-01", ("window_days", 365), ("window_days", 180)),
        "MSC-NET-REVENUE": ("2026-05-01", ("include_freight", True), ("include_freight", False)),
        "MSC-ON-TIME": (
            "2026-02-01",
            ("commit_date", "commit_date"),
            ("commit_date", "recommit_date, else commit_date"),
        ),
    }
    for def_id, (eff, v1_param, v2_param) in changes.items():
        v1, v2 = cat.versions(def_id)
        assert (v1.version, v2.version) == (1, 2)
        assert v2.effective_from == _d(eff)
        assert v2.supersedes == 1 and v1.superseded_by == 2
        assert v1_param in v1.parameters and v2_param in v2.parameters
        assert v1.owner and v1.owner == v2.owner


def test_organisations_differ_on_three_concepts(suite: GroundingData) -> None:
    cat = suite.catalog
    assert cat.get(DefRef("MSC-DELIVERED", 1)).params()["date_field"] == "confirm_date"
    assert cat.get(DefRef("HAL-DELIVERED", 1)).params()["date_field"] == "scan_date"
    assert cat.get(DefRef("MSC-ORDER-VALUE", 1)).params()["include_freight"] is False
    assert cat.get(DefRef("HAL-ORDER-VALUE", 1)).params()["include_freight"] is True
    msc = cat.get(DefRef("MSC-BUSINESS-DAY", 1)).params()["holidays"]
    hal = cat.get(DefRef("HAL-BUSINESS-DAY", 1)).params()["holidays"]
    assert isinstance(msc, tuple) and isinstance(hal, tuple) and set(msc) != set(hal)
    assert all(d.owner for d in cat.definitions)


def test_effective_date_is_inclusive(suite: GroundingData) -> None:
    cat = suite.catalog
    assert cat.in_force("MSC-ACTIVE-CUSTOMER", _d("2026-03-31")).version == 1
    assert cat.in_force("MSC-ACTIVE-CUSTOMER", _d("2026-04-01")).version == 2


def test_every_version_has_a_working_reference_implementation(suite: GroundingData) -> None:
    queries = {
        "active_customer": Query("active_customer", as_of=_d("2026-06-30")),
        "net_revenue": Query("net_revenue", start=_d("2026-01-01"), end=_d("2026-06-30")),
        "on_time": Query("on_time", start=_d("2025-07-01"), end=_d("2026-08-31")),
        "delivered": Query("delivered", start=_d("2025-07-01"), end=_d("2026-08-31")),
        "order_value": Query(
            "order_value", start=_d("2025-07-01"), end=_d("2026-08-31"), contract_id="C-118"
        ),
        "business_day": Query("business_day", shipment_ids=("S010", "S020", "S030")),
    }
    by_concept: dict[str, set[float]] = {}
    for defn in suite.catalog.definitions:
        value = implementation(suite.catalog, defn.ref)(suite.corpus, queries[defn.concept])
        assert value > 0
        by_concept.setdefault(defn.concept, set()).add(value)
    # On these wide queries every concept's two definitions disagree.
    assert all(len(v) == 2 for v in by_concept.values())


def test_active_customer_window_by_hand(suite: GroundingData) -> None:
    as_of = _d("2026-06-30")
    for window, ref in (
        (365, DefRef("MSC-ACTIVE-CUSTOMER", 1)),
        (180, DefRef("MSC-ACTIVE-CUSTOMER", 2)),
    ):
        lo = as_of - dt.timedelta(days=window)
        expected = len({o.customer_id for o in suite.corpus.orders if lo < o.order_date <= as_of})
        got = evaluate(suite.corpus, suite.catalog.get(ref), Query("active_customer", as_of=as_of))
        assert got == expected


def test_federation_scope(suite: GroundingData) -> None:
    cat = suite.catalog
    on = _d("2026-03-31")

    def gov(audience: str, cp: str | None, contract: str | None, fed: bool) -> str:
        return governing_definition(
            cat,
            "delivered",
            on,
            audience=audience,  # type: ignore[arg-type]
            counterparty=cp,
            contract_id=contract,
            use_federation=fed,
        ).def_id

    assert gov("counterparty", "Halden Logistics", "C-118", True) == "HAL-DELIVERED"
    assert gov("counterparty", "Halden Logistics", "C-301", True) == "MSC-DELIVERED"
    assert gov("counterparty", "Zen Freight", "C-204", True) == "MSC-DELIVERED"
    assert gov("internal", None, "C-118", True) == "MSC-DELIVERED"  # excluded by name
    assert gov("counterparty", "Halden Logistics", "C-118", False) == "MSC-DELIVERED"


@dataclasses.dataclass(frozen=True)
class _Case:
    item_id: str
    query: Query | None
    in_force: DefRef | None
    competing: DefRef | None


def test_verify_separating_rejects_a_non_separating_case(suite: GroundingData) -> None:
    # Before any order exists both windows count zero customers.
    same = _Case(
        "X-1",
        Query("active_customer", as_of=_d("2025-03-31")),
        DefRef("MSC-ACTIVE-CUSTOMER", 1),
        DefRef("MSC-ACTIVE-CUSTOMER", 2),
    )
    with pytest.raises(ValueError, match="item X-1: not separating"):
        verify_separating(suite.corpus, suite.catalog, [same])
    good = dataclasses.replace(same, query=Query("active_customer", as_of=_d("2026-06-30")))
    assert "X-1" in verify_separating(suite.corpus, suite.catalog, [good])


def test_gaps_make_rules_unanswerable(suite: GroundingData) -> None:
    v2 = dataclasses.replace(suite.catalog.get(DefRef("MSC-ACTIVE-CUSTOMER", 2)), parameters=())
    with pytest.raises(Unanswerable, match="window_days"):
        evaluate(suite.corpus, v2, Query("active_customer", as_of=_d("2026-06-30")))
