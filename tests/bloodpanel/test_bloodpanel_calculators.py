"""Calculators against published worked examples and the equations' own identities."""

from __future__ import annotations

import math

import pytest

from sealedeval.suites.bloodpanel.calculators import (
    ascvd_pce,
    ascvd_risk_category,
    de_ritis_ratio,
    egfr_ckd_epi_2021,
    fib4,
    fib4_band,
    friedewald_total_cholesterol,
    homa_ir,
    homa_ir_mmol,
    kdigo_a_stage,
    kdigo_g_stage,
    mentzer_index,
    mentzer_reading,
    sle_eular_acr_2019,
    slicc_2012_lab,
)


def test_mentzer_seed_and_case_notes() -> None:
    # Mentzer, Lancet 1973: MCV/RBC, >13 iron deficiency, <13 thalassaemia trait. The seed's
    # BT-001 (MCV 72.4, RBC 4.1) gives "about 17.7"; BT-007's note gives 65.8/6.2 "about 10.6".
    assert round(mentzer_index(72.4, 4.1), 1) == 17.7
    assert round(mentzer_index(65.8, 6.2), 1) == 10.6
    assert mentzer_reading(17.7) == "iron deficiency"
    assert mentzer_reading(10.6) == "thalassaemia trait"
    assert mentzer_reading(13.0) == "equivocal"
    with pytest.raises(ValueError):
        mentzer_index(72.4, 0.0)


def test_fib4_sterling_formula() -> None:
    # Sterling et al., Hepatology 2006: age x AST / (PLT [10^9/L] x sqrt(ALT)).
    assert fib4(50, 40, 25, 200) == pytest.approx(2.0)  # 50*40/(200*5)
    assert fib4(46, 58, 96, 178) == pytest.approx(46 * 58 / (178 * math.sqrt(96)))
    assert round(fib4(46, 58, 96, 178), 2) == 1.53  # BT-004
    assert fib4_band(1.2, 50) == "low" and fib4_band(1.5, 50) == "indeterminate"
    assert fib4_band(1.5, 70) == "low"  # McPherson 2017: cut-off 2.0 from age 65
    assert fib4_band(3.0, 50) == "high" and fib4_band(3.0, 50, "sterling") == "indeterminate"
    assert fib4_band(1.40, 50, "sterling") == "low"


def test_homa_ir_matthews() -> None:
    # Matthews 1985: glucose (mmol/L) x insulin (uU/mL) / 22.5; 405 for glucose in mg/dL.
    assert homa_ir_mmol(5.0, 4.5) == pytest.approx(1.0)
    assert homa_ir(90.0, 4.5) == pytest.approx(1.0)  # 5 mmol/L = 90 mg/dL at the 18 factor
    assert round(homa_ir(96, 21), 2) == 4.98  # BT-008 note: "HOMA-IR ~= 4.97"
    assert round(homa_ir(142, 22), 1) == 7.7  # BT-003 note: "HOMA-IR ~= 7.7"


def test_de_ritis() -> None:
    assert de_ritis_ratio(980, 1420) == pytest.approx(0.690, abs=1e-3)  # BT-009: <1
    assert de_ritis_ratio(120, 50) == pytest.approx(2.4)


def test_ckd_epi_2021_identities_and_examples() -> None:
    # Inker et al., NEJM 2021: 142 x min(Scr/k,1)^a x max(Scr/k,1)^-1.200 x 0.9938^age
    # [x 1.012 female]; k 0.7/0.9, a -0.241/-0.302 (as stated by the NKF, kidney.org).
    assert egfr_ckd_epi_2021(0.9, 40, "male") == pytest.approx(142 * 0.9938**40)
    assert egfr_ckd_epi_2021(0.7, 40, "female") == pytest.approx(142 * 0.9938**40 * 1.012)
    # Each slope: doubling creatinine above k multiplies by 2^-1.2; halving below by 0.5^a.
    assert egfr_ckd_epi_2021(1.8, 50, "male") / egfr_ckd_epi_2021(0.9, 50, "male") == (
        pytest.approx(2**-1.2)
    )
    assert egfr_ckd_epi_2021(0.35, 50, "female") / egfr_ckd_epi_2021(0.7, 50, "female") == (
        pytest.approx(0.5**-0.241)
    )
    assert egfr_ckd_epi_2021(0.45, 50, "male") / egfr_ckd_epi_2021(0.9, 50, "male") == (
        pytest.approx(0.5**-0.302)
    )
    # Hand-worked: 60-year-old man, creatinine 1.0 mg/dL -> 86 (the NKF calculator's value).
    assert round(egfr_ckd_epi_2021(1.0, 60, "male")) == 86
    # BT-005: 62-year-old man, creatinine 1.9 -> 39.4 (the panel printed 38): G3b.
    assert egfr_ckd_epi_2021(1.9, 62, "male") == pytest.approx(39.39, abs=0.01)
    with pytest.raises(ValueError):
        egfr_ckd_epi_2021(1.0, 12, "male")


@pytest.mark.parametrize(
    ("egfr", "stage"),
    [
        (120, "G1"),
        (90, "G1"),
        (89.9, "G2"),
        (60, "G2"),
        (59.9, "G3a"),
        (45, "G3a"),
        (44.9, "G3b"),
        (30, "G3b"),
        (29.9, "G4"),
        (15, "G4"),
        (14.9, "G5"),
    ],
)
def test_kdigo_g(egfr: float, stage: str) -> None:
    assert kdigo_g_stage(egfr) == stage


def test_kdigo_a() -> None:
    assert [kdigo_a_stage(x) for x in (10, 29.9, 30, 120, 300, 301)] == [
        "A1",
        "A1",
        "A2",
        "A2",
        "A2",
        "A3",
    ]


@pytest.mark.parametrize(
    ("sex", "race", "published"),
    [
        ("female", "white", 2.1),
        ("female", "black", 3.0),
        ("male", "white", 5.3),
        ("male", "black", 6.1),
    ],
)
def test_pce_guideline_worked_example(sex: str, race: str, published: float) -> None:
    # Goff et al. 2013 ACC/AHA risk guideline, worked example (Table A): 55 years, TC 213,
    # HDL 50, untreated SBP 120, non-smoker, no diabetes -> 2.1 % (white woman), 3.0 %
    # (African-American woman), 5.3 % (white man), 6.1 % (African-American man). The guideline
    # rounds every term to 2 dp; exact logarithms give 2.05 / 3.03 / 5.38 / 6.07.
    r = ascvd_pce(
        55,
        sex,
        213,
        50,
        systolic_bp=120,
        treated_bp=False,  # type: ignore[arg-type]
        smoker=False,
        diabetes=False,
        race=race,
    )  # type: ignore[arg-type]
    assert abs(r.percent - published) < 0.1
    assert r.defaults_used == () and r.clamped == ()


def test_pce_defaults_recorded_and_direction() -> None:
    base = ascvd_pce(58, "male", 268, 32)
    assert set(base.defaults_used) == {"systolic_bp", "treated_bp", "smoker", "diabetes", "race"}
    explicit = ascvd_pce(
        58,
        "male",
        268,
        32,
        systolic_bp=120,
        treated_bp=False,
        smoker=False,
        diabetes=False,
        race="white",
    )
    assert explicit.risk == base.risk
    assert ascvd_pce(58, "male", 268, 32, smoker=True).risk > base.risk
    assert ascvd_pce(58, "male", 268, 32, diabetes=True).risk > base.risk
    assert ascvd_pce(58, "male", 400, 32).clamped == ("total_cholesterol",)
    with pytest.raises(ValueError, match="40-79"):
        ascvd_pce(35, "female", 178, 62)
    assert [ascvd_risk_category(x) for x in (4.9, 5.0, 7.4, 7.5, 19.9, 20.0)] == [
        "low",
        "borderline",
        "borderline",
        "intermediate",
        "intermediate",
        "high",
    ]


def test_friedewald() -> None:
    assert friedewald_total_cholesterol(168, 34, 278) == pytest.approx(257.6)
    with pytest.raises(ValueError):
        friedewald_total_cholesterol(100, 40, 450)


def test_eular_acr_2019_bt011() -> None:
    # Aringer et al. 2019, criteria table: ANA >= 1:80 entry; leukopenia 3 (thrombocytopenia
    # 4 needs < 100); proteinuria > 0.5 g/24h 4; low C3 and C4 4; anti-dsDNA/anti-Sm 6.
    r = sle_eular_acr_2019(
        ana_titer=640,
        wbc_10e9_per_l=3.2,
        platelets_10e9_per_l=118,
        proteinuria_g_per_24h=2.4,
        low_c3=True,
        low_c4=True,
        anti_dsdna=True,
        anti_smith=True,
    )
    assert r.entry and r.points == 3 + 4 + 4 + 6 and r.classified
    assert r.domains["hematologic"] == ("leukopenia", 3)
    # Highest criterion per domain only: thrombocytopenia (4) replaces leukopenia (3).
    r2 = sle_eular_acr_2019(ana_titer=160, wbc_10e9_per_l=3.0, platelets_10e9_per_l=80)
    assert r2.domains["hematologic"] == ("thrombocytopenia", 4) and r2.points == 4
    assert not r2.classified
    # Immunology alone never classifies (a clinical criterion is required).
    r3 = sle_eular_acr_2019(ana_titer=640, low_c3=True, low_c4=True, anti_dsdna=True)
    assert r3.points == 10 and not r3.clinical_met and not r3.classified
    # No entry criterion: nothing is counted.
    r4 = sle_eular_acr_2019(ana_titer=40, anti_dsdna=True, proteinuria_g_per_24h=3.0)
    assert not r4.entry and r4.points == 0 and not r4.classified
    one = sle_eular_acr_2019(ana_titer=80, low_c4=True, proteinuria_g_per_24h=0.6)
    assert one.points == 3 + 4


def test_slicc_2012_bt011() -> None:
    r = slicc_2012_lab(
        proteinuria_g_per_24h=2.4,
        wbc_10e9_per_l=3.2,
        lymphocytes_10e9_per_l=0.8,
        platelets_10e9_per_l=118,
        ana_positive=True,
        anti_dsdna=True,
        anti_smith=True,
        low_complement=True,
    )
    assert r.clinical == ("renal", "leukopenia or lymphopenia") and len(r.immunologic) == 4
    assert r.total == 6 and r.classified
    only_immuno = slicc_2012_lab(
        ana_positive=True, anti_dsdna=True, anti_smith=True, low_complement=True
    )
    assert only_immuno.total == 4 and not only_immuno.classified
