"""Rubric: exact V11 reproduction on the published responses, the sealed figure, the weights."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import shared_fixture

from sealedeval.suites.bloodpanel.cases import Case, load_curated
from sealedeval.suites.bloodpanel.compare import sealed_vs_v11_markdown
from sealedeval.suites.bloodpanel.layout import LAYOUT, SECTION_CODES, SUBSECTION_CODES
from sealedeval.suites.bloodpanel.rubric import (
    aggregate,
    grade_case,
    latency_points,
    normalize_response,
    regrade_kantesti,
)

ROOT = Path(__file__).resolve().parents[2]
CURATED = ROOT / "data" / "bloodpanel" / "curated.yaml"
RESPONSES = "responses_v11_full.json"
SCORECARD = "published_v11_scorecard.csv"


def v11_file(name: str) -> Path:
    """A file of the published V11 run (third-party data in ../shared/fixtures/kantesti-v11)."""
    return shared_fixture("kantesti-v11", name) / name


# What the published V11 code gives where the publication printed something else.
V11_CORRECTED = {
    "BT-014-GILBERT": 0.835,
    "BT-015-HEALTHY": 0.739,
    "BT-011-SLE": 0.877,
    "BT-008-PCOS": 0.932,
}


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_curated(CURATED)


@pytest.fixture(scope="module")
def v11(cases: list[Case]) -> dict[str, Any]:
    return regrade_kantesti(v11_file(RESPONSES), "kantesti-v11", cases)


@pytest.fixture(scope="module")
def sealed(cases: list[Case]) -> dict[str, Any]:
    return regrade_kantesti(v11_file(RESPONSES), "sealed", cases, explain=True)


def test_v11_profile_reproduces_0_9522(v11: dict[str, Any]) -> None:
    agg = v11["aggregate"]
    assert agg["n"] == 15 and agg["n_error"] == 0
    assert round(agg["composite"], 4) == 0.9522
    assert round(agg["structural"], 4) == 0.9951
    assert round(agg["clinical"], 4) == 0.9283


def test_v11_profile_every_case(v11: dict[str, Any]) -> None:
    with v11_file(SCORECARD).open(encoding="utf-8") as fh:
        published = {r["case_id"]: r for r in csv.DictReader(fh)}
    got = {r["case_id"]: r for r in v11["cases"]}
    assert set(got) == set(published)
    for cid, row in published.items():
        expected = V11_CORRECTED.get(cid, float(row["composite_score"]))
        assert got[cid]["composite"] == expected, cid
        if cid not in V11_CORRECTED:
            assert got[cid]["structural"] == float(row["structural_score"]), cid
            assert got[cid]["clinical"] == float(row["clinical_score"]), cid
            assert got[cid]["engine_path"] == row["engine_path"]
    assert got["BT-014-GILBERT"]["trap_flags_hit"] == [
        "hepatitis",
        "cirrhosis",
        "hemolytic anemia",
        "liver failure",
        "liver disease",
        "biliary obstruction",
    ]
    assert got["BT-015-HEALTHY"]["trap_flags_hit"] == [
        "diabetes",
        "anemia",
        "hypothyroidism",
        "deficiency",
    ]
    assert got["BT-011-SLE"]["prob_sum"] == 75.0 and got["BT-011-SLE"]["scoring_hit"] == 1
    assert got["BT-008-PCOS"]["prob_sum"] == 0.0 and got["BT-008-PCOS"]["subsections_hit"] == 15
    assert got["BT-007-THAL"]["prob_sum"] == 105.6  # V11 adds "HbA2 5.6%" into the sum
    assert sum(len(r["trap_flags_hit"]) for r in v11["cases"]) == 10  # "10 of 13 flags"


def test_sealed_profile_figure(sealed: dict[str, Any]) -> None:
    agg = sealed["aggregate"]
    assert round(agg["composite"], 4) == 0.9879
    assert round(agg["structural"], 4) == 0.9950
    assert round(agg["clinical"], 4) == 0.9933
    got = {r["case_id"]: r for r in sealed["cases"]}
    assert got["BT-014-GILBERT"]["composite"] == pytest.approx(1.0)
    assert got["BT-015-HEALTHY"]["composite"] == pytest.approx(1.0)
    assert got["BT-015-HEALTHY"]["keywords_hit"] == 4  # "within normal ... limits"
    assert got["BT-011-SLE"]["composite"] == pytest.approx(0.35 * 0.9625 + 0.55 * 0.9 + 0.1)
    assert got["BT-008-PCOS"]["composite"] == pytest.approx(0.35 * 0.9625 + 0.55 + 0.1)
    assert got["BT-007-THAL"]["prob_sum"] == 100.0
    assert all(r["trap_flags_hit"] == [] for r in sealed["cases"])
    details = json.loads(got["BT-008-PCOS"]["details"])
    assert details["prob_source"] == "risk_factors_severity_probabilities"


def test_sealed_vs_v11_markdown_is_current(cases: list[Case]) -> None:
    text = sealed_vs_v11_markdown(v11_file(RESPONSES), cases)
    checked_in = (ROOT / "data" / "bloodpanel" / "SEALED_VS_V11.md").read_text(encoding="utf-8")
    assert text == checked_in, "regenerate data/bloodpanel/SEALED_VS_V11.md"
    assert "| sealed | 0.9879 |" in text and "| kantesti-v11 (published rules) | 0.9522 |" in text


def keyed(items: str = "filler text", **extra: Any) -> dict[str, Any]:
    """A complete keyed-form response whose every subsection holds ``items``."""
    resp: dict[str, Any] = {code: {sub: [items] for sub, _ in subs} for code, _, subs in LAYOUT}
    resp.update(extra)
    return resp


def case_with(cases: list[Case], cid: str) -> Case:
    return next(c for c in cases if c.case_id == cid)


def test_weights_exactly(cases: list[Case]) -> None:
    c = case_with(cases, "BT-004-NAFLD")  # 3 keywords, 2 scoring systems, no flags
    text = "NAFLD with fatty liver; FIB-4 computed."
    r = grade_case(
        c, keyed(text, differential=[{"condition": "NAFLD", "probability": 95}]), 10.0, "sealed"
    )
    assert r.structural == 1.0
    assert r.clinical == pytest.approx(0.7 * 2 / 3 + 0.2 * 1 / 2 + 0.1)
    assert r.composite == pytest.approx(0.35 + 0.55 * r.clinical + 0.1)
    # Drop one section (2 subsections) and one more subsection.
    resp = keyed(text, differential=[{"condition": "NAFLD", "probability": 95}])
    del resp["conclusion"]
    del resp["recommendations"]["recommendations_medical"]
    r2 = grade_case(c, resp, 30.0, "sealed")
    assert (r2.sections_hit, r2.subsections_hit) == (6, 13)
    assert r2.structural == pytest.approx(0.4 * 6 / 7 + 0.6 * 13 / 16)
    assert r2.latency == 0.05
    assert r2.composite == pytest.approx(0.35 * r2.structural + 0.55 * r2.clinical + 0.05)


def test_trap_penalty_capped_and_clinical_floored(cases: list[Case]) -> None:
    c = case_with(cases, "BT-015-HEALTHY")
    text = "Diabetes, anaemia, hypothyroidism, dyslipidaemia and hepatitis are present."
    r = grade_case(c, keyed(text), 5.0, "sealed")
    assert len(r.trap_flags_hit) == 5 and r.trap_penalty == pytest.approx(0.3)
    assert r.keywords_hit == 0 and r.clinical == 0.0  # 0 + 0.2 + 0 − 0.3 floored at 0
    ok = grade_case(c, keyed("No diabetes, no anaemia; all results are normal and healthy."), 5.0)
    assert ok.trap_flags_hit == () and ok.trap_penalty == 0.0


def test_latency_thresholds() -> None:
    assert [latency_points(x) for x in (0.0, 19.99, 20.0, 39.99, 40.0, None, math.nan)] == [
        0.1,
        0.1,
        0.05,
        0.05,
        0.0,
        0.0,
        0.0,
    ]


def test_probability_sources(cases: list[Case]) -> None:
    c = case_with(cases, "BT-004-NAFLD")
    frac = grade_case(
        c,
        keyed(
            "x",
            differential=[
                {"condition": "NAFLD", "probability": 0.7},
                {"condition": "Other", "probability": 0.3},
            ],
        ),
        1.0,
    )
    assert frac.prob_sum == pytest.approx(100.0) and frac.prob_valid
    resp = keyed("x")
    resp["risk_factors"]["risk_factors_probabilities_of_diseases"] = [
        "NAFLD: 80% — ALT 96 U/L, triglycerides 232 mg/dL",
        "Viral hepatitis (10%)",
        "Drug-induced liver injury: 10%",
    ]
    assert grade_case(c, resp, 1.0).prob_sum == 100.0
    assert grade_case(c, resp, 1.0, "kantesti-v11").prob_sum == 100.0
    assert not grade_case(c, keyed("x"), 1.0).prob_valid


def test_v11_quirks_kept_only_in_v11(cases: list[Case]) -> None:
    c = case_with(cases, "BT-011-SLE")
    text = "A hassle; abnormal lupus-like complement; autoimmune; anti-dsDNA; EULAR."
    v11 = grade_case(c, keyed(text), 1.0, "kantesti-v11")
    sealed = grade_case(c, keyed(text), 1.0, "sealed")
    assert v11.keywords_hit == 5  # "sle" found inside "hassle"
    assert sealed.keywords_hit == 4


def test_errors_scored_zero_and_counted(cases: list[Case]) -> None:
    c = cases[0]
    for resp in (None, {"error": True, "error_message": "timeout"}):
        for profile in ("sealed", "kantesti-v11"):
            r = grade_case(c, resp, 3.0, profile)  # type: ignore[arg-type]
            assert r.status == "error" and r.composite == 0.0
    good = grade_case(c, keyed("x"), 1.0)
    agg = aggregate([good, grade_case(c, None, None)])
    assert agg["n"] == 2 and agg["n_error"] == 1 and not agg["complete"]
    assert agg["composite"] == good.composite
    assert agg["composite_errors_as_zero"] == pytest.approx(good.composite / 2)
    with pytest.raises(ValueError, match="unknown bloodpanel profile"):
        grade_case(c, keyed("x"), 1.0, "lenient")  # type: ignore[arg-type]


def test_both_response_shapes_read_alike(cases: list[Case]) -> None:
    keyed_resp = keyed("Iron deficiency anaemia; ferritin, MCV and RDW; Mentzer 17.7.")
    listed = {
        "sections": [
            {
                "title": t,
                "shortcode": code,
                "subsections": [
                    {
                        "subtitle": st,
                        "shortcode": sub,
                        "items": [{"item": keyed_resp[code][sub][0]}],
                    }
                    for sub, st in subs
                ],
            }
            for code, t, subs in LAYOUT
        ]
    }
    a, b = normalize_response(keyed_resp), normalize_response(listed)
    assert [s.code for s in a.sections] == list(SECTION_CODES)
    assert [sub.code for s in b.sections for sub in s.subsections] == list(SUBSECTION_CODES)
    for profile in ("sealed", "kantesti-v11"):
        ra = grade_case(cases[0], keyed_resp, 1.0, profile)  # type: ignore[arg-type]
        rb = grade_case(cases[0], listed, 1.0, profile)  # type: ignore[arg-type]
        assert (ra.composite, ra.keywords_hit) == (rb.composite, rb.keywords_hit)
    assert grade_case(cases[0], keyed_resp, 1.0).keywords_hit == 4
