"""Curated cases as data: values, answer keys, validation errors, record round trip."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.cases import (
    SPECIALTIES,
    Case,
    load_curated,
    make_row,
    parse_reference,
)

ROOT = Path(__file__).resolve().parents[2]
CURATED = ROOT / "data" / "bloodpanel" / "curated.yaml"


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_curated(CURATED)


def by_id(cases: list[Case], cid: str) -> Case:
    return next(c for c in cases if c.case_id == cid)


def test_fifteen_cases_in_spec_specialties(cases: list[Case]) -> None:
    assert [c.case_id[:6] for c in cases] == [f"BT-{i:03d}" for i in range(1, 16)]
    assert Counter(c.specialty for c in cases) == {
        "haematology": 3,
        "endocrinology": 3,
        "metabolic": 2,
        "hepatology": 2,
        "nephrology": 1,
        "cardiology": 1,
        "rheumatology": 1,
        "internal_medicine": 2,
    }
    assert {c.case_id for c in cases if c.is_trap} == {"BT-014-GILBERT", "BT-015-HEALTHY"}
    assert all(c.specialty in SPECIALTIES for c in cases)


def test_seed_prose_wins_for_bt001(cases: list[Case]) -> None:
    c = by_id(cases, "BT-001-IDA")
    assert c.value("hb") == 10.4  # seed prose, not the published 9.8
    assert c.value("rbc") == 4.1  # the RBC count the published panel forgot
    assert c.value("mcv") == 72.4 and c.value("ferritin") == 6 and c.value("tibc") == 445
    assert round(72.4 / 4.1, 1) == 17.7  # the Mentzer index the seed quotes


def test_answer_keys_as_published(cases: list[Case]) -> None:
    c = by_id(cases, "BT-014-GILBERT")
    assert c.trap_flags == (
        "hepatitis",
        "cirrhosis",
        "hemolytic anemia",
        "liver failure",
        "liver disease",
        "biliary obstruction",
    )
    h = by_id(cases, "BT-015-HEALTHY")
    assert h.trap_flags == (
        "diabetes",
        "anemia",
        "hypothyroidism",
        "dyslipidemia",
        "hepatitis",
        "kidney disease",
        "deficiency",
    )
    assert sum(len(c.trap_flags) for c in cases) == 13
    assert by_id(cases, "BT-011-SLE").expected_scoring_systems == ("slicc", "eular")
    assert by_id(cases, "BT-004-NAFLD").expected_scoring_systems == ("fib-4", "de ritis")
    assert by_id(cases, "BT-002-HASH").expected_keywords == (
        "hashimoto",
        "thyroiditis",
        "anti-tpo",
        "tsh",
        "hypothyroid",
    )
    assert all(not c.trap_flags for c in cases if not c.is_trap)


def test_spot_values_against_spec_tables(cases: list[Case]) -> None:
    expect = {
        ("BT-007-THAL", "rbc"): 6.2,
        ("BT-007-THAL", "hba2"): 5.6,
        ("BT-005-CKD", "acr"): 120,
        ("BT-005-CKD", "egfr"): 38,
        ("BT-009-VIRHEP", "alt"): 1420,
        ("BT-009-VIRHEP", "inr"): 1.3,
        ("BT-010-ASCVD", "apob"): 148,
        ("BT-011-SLE", "ana"): 640,
        ("BT-011-SLE", "c4"): 8,
        ("BT-012-VITD", "vitd"): 11,
        ("BT-013-GOUT", "uric_acid"): 9.8,
        ("BT-014-GILBERT", "haptoglobin"): 112,
        ("BT-015-HEALTHY", "vitd"): 38,
        ("BT-008-PCOS", "insulin"): 21,
        ("BT-003-T2DM", "insulin"): 22,
    }
    for (cid, code), v in expect.items():
        assert by_id(cases, cid).value(code) == v, (cid, code)
    assert len(by_id(cases, "BT-015-HEALTHY").panel) == 15


def test_healthy_panel_entirely_in_range_and_gilbert_isolated(cases: list[Case]) -> None:
    assert all(r.flag == "normal" for r in by_id(cases, "BT-015-HEALTHY").panel)
    abnormal = {r.code for r in by_id(cases, "BT-014-GILBERT").panel if r.flag != "normal"}
    assert abnormal == {"tbil", "ibil"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.0-16.0", (12.0, 16.0)),
        ("<200", (None, 200.0)),
        (">40", (40.0, None)),
        ("<1:80", (None, 80.0)),
        ("0-35", (0.0, 35.0)),
        ("", (None, None)),
    ],
)
def test_parse_reference(text: str, expected: tuple[float | None, float | None]) -> None:
    assert parse_reference(text) == expected


def test_flags_strict_one_sided_inclusive_two_sided() -> None:
    assert make_row("HbA1c", 5.7, "%", "<5.7").flag == "high"
    assert make_row("HbA1c", 5.6, "%", "<5.7").flag == "normal"
    assert make_row("HDL", 40, "mg/dL", ">40").flag == "low"
    assert make_row("SHBG", 18, "nmol/L", "18-144").flag == "normal"
    assert make_row("SHBG", 17, "nmol/L", "18-144").flag == "low"


def test_record_round_trip_through_parquet(cases: list[Case]) -> None:
    recs = [c.to_record() for c in cases]
    json.dumps(recs)  # JSON-serialisable
    table = pa.Table.from_pylist(recs)
    back = [Case.from_record(r) for r in table.to_pylist()]
    assert back == cases
    assert [b.value("hb") for b in back] == [c.value("hb") for c in cases]


def test_uid_is_opaque_and_stable(cases: list[Case]) -> None:
    for c in cases:
        assert c.case_uid.startswith("bp-") and len(c.case_uid) == 19
        tag = c.case_id.split("-")[-1].lower()
        assert tag not in c.case_uid
    assert load_curated(CURATED)[0].case_uid == cases[0].case_uid
    assert len({c.case_uid for c in cases}) == 15


def _write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text("schema: bloodpanel-cases/1\ncases:\n" + body, encoding="utf-8")
    return p


GOOD = """- id: X-1
  title: t
  specialty: haematology
  archetype: ida
  age: 30
  sex: female
  panel:
  - {analyte: Hemoglobin, value: 10.0, unit: g/dL, ref: "12.0-16.0"}
  expected_keywords: [anemia]
"""


def test_load_errors_name_the_case(tmp_path: Path) -> None:
    assert load_curated(_write(tmp_path, GOOD))[0].case_id == "X-1"
    with pytest.raises(UserError, match=r"cases\[0\] \(X-1\): panel\[0\]: unknown analyte"):
        load_curated(_write(tmp_path, GOOD.replace("Hemoglobin", "Unobtainium")))
    with pytest.raises(UserError, match="unknown specialty"):
        load_curated(_write(tmp_path, GOOD.replace("haematology", "astrology")))
    with pytest.raises(UserError, match="unreadable reference range"):
        load_curated(_write(tmp_path, GOOD.replace('"12.0-16.0"', '"about twelve"')))
    with pytest.raises(UserError, match="duplicate id"):
        load_curated(_write(tmp_path, GOOD + GOOD))
    with pytest.raises(UserError, match="'trap' is not true"):
        load_curated(_write(tmp_path, GOOD + "  hyperdiagnosis_flags: [x]\n"))
    with pytest.raises(UserError, match="not found"):
        load_curated(tmp_path / "missing.yaml")
