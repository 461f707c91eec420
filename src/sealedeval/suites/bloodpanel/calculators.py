"""Clinical calculators a blood-panel interpreter should invoke, from published equations.

Every function takes conventional (US) units, as the curated panels print them, documents its
source, and raises ``ValueError`` on inputs the equation is not defined for (a zero platelet
count, a non-positive creatinine) rather than returning a number that looks valid. Where an
equation needs facts a lab panel cannot give (blood pressure, smoking), the defaults are stated
and the result records which ones were used, so a report can say so.

Sources:
    Mentzer WC. Differentiation of iron deficiency from thalassaemia trait. Lancet 1973;1:882.
    Sterling RK et al. FIB-4 index. Hepatology 2006;43:1317-25 (cut-offs 1.45/3.25); Shah AG et
        al. Clin Gastroenterol Hepatol 2009;7:1104-12 (NAFLD cut-offs 1.30/2.67); McPherson S et
        al. Am J Gastroenterol 2017;112:740-51 (lower cut-off 2.0 from age 65).
    Matthews DR et al. HOMA. Diabetologia 1985;28:412-9 (glucose mmol/L x insulin / 22.5, i.e.
        glucose mg/dL x insulin / 405).
    De Ritis F et al. Clin Chim Acta 1957;2:70-4 (AST/ALT).
    Inker LA et al. CKD-EPI 2021 creatinine equation without race. N Engl J Med
        2021;385:1737-49. KDIGO 2012 CKD guideline, Kidney Int Suppl 2013;3:1-150 (G and A).
    Goff DC Jr et al. 2013 ACC/AHA guideline on the assessment of cardiovascular risk
        (pooled cohort equations, Table A and the worked example). Circulation
        2014;129(suppl 2):S49-73. Risk categories: 2018 AHA/ACC cholesterol guideline.
    Aringer M et al. 2019 EULAR/ACR classification criteria for SLE. Arthritis Rheumatol
        2019;71:1400-12. Petri M et al. SLICC 2012 criteria. Arthritis Rheum 2012;64:2677-86.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

Sex = Literal["female", "male"]

MENTZER_CUTOFF: Final = 13.0
HOMA_IR_CUTOFF: Final = 2.5
"""HOMA-IR above which insulin resistance is usually reported (population cut-offs vary 2.5-2.9)."""


def _positive(name: str, x: float) -> float:
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


# --- haematology -------------------------------------------------------------------------------


def mentzer_index(mcv_fl: float, rbc_10e12_per_l: float) -> float:
    """Mentzer index = MCV (fL) / RBC count (10^12/L, equal to 10^6/uL).

    Above 13 favours iron deficiency, below 13 thalassaemia trait (Mentzer 1973); it screens,
    it does not diagnose (HbA2 and ferritin decide).
    """
    return _positive("MCV", mcv_fl) / _positive("RBC", rbc_10e12_per_l)


def mentzer_reading(index: float) -> Literal["iron deficiency", "thalassaemia trait", "equivocal"]:
    """What a Mentzer index favours (exactly 13 is equivocal)."""
    if index > MENTZER_CUTOFF:
        return "iron deficiency"
    if index < MENTZER_CUTOFF:
        return "thalassaemia trait"
    return "equivocal"


# --- liver ---------------------------------------------------------------------------------------


def fib4(age: float, ast_u_l: float, alt_u_l: float, platelets_10e9_per_l: float) -> float:
    """FIB-4 = age x AST / (platelets [10^9/L] x sqrt(ALT)) (Sterling 2006)."""
    return (_positive("age", age) * _positive("AST", ast_u_l)) / (
        _positive("platelets", platelets_10e9_per_l) * math.sqrt(_positive("ALT", alt_u_l))
    )


def fib4_band(
    value: float, age: float, cutoffs: Literal["nafld", "sterling"] = "nafld"
) -> Literal["low", "indeterminate", "high"]:
    """Risk of advanced fibrosis from FIB-4.

    ``nafld``: < 1.30 low (< 2.0 from age 65), > 2.67 high (Shah 2009, McPherson 2017);
    ``sterling``: < 1.45 low, > 3.25 high (the HIV/HCV derivation cohort).
    """
    if cutoffs == "nafld":
        low, high = (2.0 if age >= 65 else 1.30), 2.67
    else:
        low, high = 1.45, 3.25
    if value < low:
        return "low"
    if value > high:
        return "high"
    return "indeterminate"


def de_ritis_ratio(ast_u_l: float, alt_u_l: float) -> float:
    """AST/ALT. Below 1: hepatocellular (viral, metabolic); above 2: alcohol-related or muscle."""
    return _positive("AST", ast_u_l) / _positive("ALT", alt_u_l)


# --- glucose -------------------------------------------------------------------------------------


def homa_ir(glucose_mg_dl: float, insulin_uu_ml: float) -> float:
    """HOMA-IR = fasting glucose (mg/dL) x fasting insulin (uU/mL) / 405 (Matthews 1985)."""
    return _positive("glucose", glucose_mg_dl) * _positive("insulin", insulin_uu_ml) / 405.0


def homa_ir_mmol(glucose_mmol_l: float, insulin_uu_ml: float) -> float:
    """HOMA-IR with glucose in mmol/L: glucose x insulin / 22.5 (the original form)."""
    return _positive("glucose", glucose_mmol_l) * _positive("insulin", insulin_uu_ml) / 22.5


# --- kidney --------------------------------------------------------------------------------------


def egfr_ckd_epi_2021(creatinine_mg_dl: float, age: float, sex: Sex) -> float:
    """eGFR (mL/min/1.73 m2) by the race-free CKD-EPI 2021 creatinine equation (Inker 2021).

    142 x min(Scr/k, 1)^a x max(Scr/k, 1)^-1.200 x 0.9938^age [x 1.012 if female], with
    k = 0.7 (F) / 0.9 (M) and a = -0.241 (F) / -0.302 (M). Adults only.
    """
    scr = _positive("creatinine", creatinine_mg_dl)
    if not 18 <= age <= 120:
        raise ValueError(f"CKD-EPI is defined for adults aged 18-120, got {age!r}")
    kappa, alpha = (0.7, -0.241) if sex == "female" else (0.9, -0.302)
    ratio = scr / kappa
    egfr = (
        142.0
        * math.pow(min(ratio, 1.0), alpha)
        * math.pow(max(ratio, 1.0), -1.200)
        * math.pow(0.9938, age)
    )
    return egfr * 1.012 if sex == "female" else egfr


def kdigo_g_stage(egfr: float) -> str:
    """KDIGO GFR category: G1 >= 90, G2 60-89, G3a 45-59, G3b 30-44, G4 15-29, G5 < 15."""
    for bound, stage in ((90, "G1"), (60, "G2"), (45, "G3a"), (30, "G3b"), (15, "G4")):
        if egfr >= bound:
            return stage
    return "G5"


def kdigo_a_stage(acr_mg_g: float) -> str:
    """KDIGO albuminuria category from urine ACR (mg/g): A1 < 30, A2 30-300, A3 > 300."""
    if acr_mg_g < 30:
        return "A1"
    return "A2" if acr_mg_g <= 300 else "A3"


# --- lipids and cardiovascular risk --------------------------------------------------------------


def friedewald_total_cholesterol(ldl: float, hdl: float, tg: float) -> float:
    """Total cholesterol implied by Friedewald (LDL + HDL + TG/5, mg/dL; valid for TG < 400).

    Used when a panel reports LDL, HDL and TG but no total cholesterol, so the pooled cohort
    equations can still run; the result says it was estimated.
    """
    if tg >= 400:
        raise ValueError("Friedewald is not valid for triglycerides >= 400 mg/dL")
    return ldl + hdl + tg / 5.0


@dataclass(frozen=True, slots=True)
class _Pce:
    ln_age: float
    ln_age_sq: float
    ln_tc: float
    ln_age_ln_tc: float
    ln_hdl: float
    ln_age_ln_hdl: float
    ln_sbp_treated: float
    ln_age_ln_sbp_treated: float
    ln_sbp_untreated: float
    ln_age_ln_sbp_untreated: float
    smoker: float
    ln_age_smoker: float
    diabetes: float
    baseline_survival: float
    mean: float


# Goff et al. 2013, Table A (coefficients as printed).
_PCE: Final = {
    ("white", "female"): _Pce(
        -29.799,
        4.884,
        13.540,
        -3.114,
        -13.578,
        3.149,
        2.019,
        0.0,
        1.957,
        0.0,
        7.574,
        -1.665,
        0.661,
        0.9665,
        -29.18,
    ),
    ("black", "female"): _Pce(
        17.114,
        0.0,
        0.940,
        0.0,
        -18.920,
        4.475,
        29.291,
        -6.432,
        27.820,
        -6.087,
        0.691,
        0.0,
        0.874,
        0.9533,
        86.61,
    ),
    ("white", "male"): _Pce(
        12.344,
        0.0,
        11.853,
        -2.664,
        -7.990,
        1.769,
        1.797,
        0.0,
        1.764,
        0.0,
        7.837,
        -1.795,
        0.658,
        0.9144,
        61.18,
    ),
    ("black", "male"): _Pce(
        2.469,
        0.0,
        0.302,
        0.0,
        -0.307,
        0.0,
        1.916,
        0.0,
        1.809,
        0.0,
        0.549,
        0.0,
        0.645,
        0.8954,
        19.54,
    ),
}

PCE_DEFAULTS: Final[dict[str, float | bool | str]] = {
    "systolic_bp": 120.0,
    "treated_bp": False,
    "smoker": False,
    "diabetes": False,
    "race": "white",
}
"""Inputs assumed when the caller cannot give them (a lab panel rarely does).

A systolic pressure of 120 mmHg untreated, non-smoker and non-diabetic are the guideline's
reference profile and bias the estimate *down* (never invent risk the panel does not show); the
"white" equations are the ones the guideline applies to every group other than African
American. Each default used is listed in ``AscvdResult.defaults_used``.
"""


@dataclass(frozen=True, slots=True)
class AscvdResult:
    """10-year hard ASCVD risk by the pooled cohort equations.

    Attributes:
        risk: Risk as a fraction (0.053 = 5.3 %).
        category: 2018 AHA/ACC band: low < 5 %, borderline 5-7.4 %, intermediate 7.5-19.9 %,
            high >= 20 %.
        defaults_used: Names of inputs taken from ``PCE_DEFAULTS``.
        clamped: Inputs moved into the equations' valid range (TC 130-320, HDL 20-100, SBP
            90-200), as ``name`` strings.
    """

    risk: float
    category: Literal["low", "borderline", "intermediate", "high"]
    defaults_used: tuple[str, ...]
    clamped: tuple[str, ...]

    @property
    def percent(self) -> float:
        """Risk in percent."""
        return 100.0 * self.risk


def ascvd_risk_category(percent: float) -> Literal["low", "borderline", "intermediate", "high"]:
    """2018 AHA/ACC risk band of a 10-year ASCVD risk in percent."""
    if percent < 5.0:
        return "low"
    if percent < 7.5:
        return "borderline"
    return "intermediate" if percent < 20.0 else "high"


def ascvd_pce(
    age: float,
    sex: Sex,
    total_cholesterol: float,
    hdl: float,
    *,
    systolic_bp: float | None = None,
    treated_bp: bool | None = None,
    smoker: bool | None = None,
    diabetes: bool | None = None,
    race: Literal["white", "black"] | None = None,
) -> AscvdResult:
    """10-year risk of a first hard ASCVD event (Goff 2013 pooled cohort equations).

    Arguments left as None take ``PCE_DEFAULTS`` and are recorded in ``defaults_used``.
    Cholesterol in mg/dL, systolic pressure in mmHg.

    Raises:
        ValueError: Age outside 40-79 (the equations are not defined there) or a non-positive
            lipid value.
    """
    if not 40 <= age <= 79:
        raise ValueError(f"pooled cohort equations are defined for ages 40-79, got {age!r}")
    _positive("total cholesterol", total_cholesterol)
    _positive("HDL", hdl)
    defaults: list[str] = []
    if systolic_bp is None:
        defaults.append("systolic_bp")
    if treated_bp is None:
        defaults.append("treated_bp")
    if smoker is None:
        defaults.append("smoker")
    if diabetes is None:
        defaults.append("diabetes")
    if race is None:
        defaults.append("race")
    sbp = float(PCE_DEFAULTS["systolic_bp"]) if systolic_bp is None else systolic_bp
    treated = bool(PCE_DEFAULTS["treated_bp"]) if treated_bp is None else treated_bp
    smokes = bool(PCE_DEFAULTS["smoker"]) if smoker is None else smoker
    dm = bool(PCE_DEFAULTS["diabetes"]) if diabetes is None else diabetes
    grp = "white" if race is None else race
    clamped: list[str] = []

    def clamp(name: str, x: float, lo: float, hi: float) -> float:
        if x < lo or x > hi:
            clamped.append(name)
        return min(max(x, lo), hi)

    tc = clamp("total_cholesterol", total_cholesterol, 130.0, 320.0)
    hd = clamp("hdl", hdl, 20.0, 100.0)
    sbp = clamp("systolic_bp", sbp, 90.0, 200.0)
    c = _PCE[(grp, sex)]
    la, lt, lh, ls = math.log(age), math.log(tc), math.log(hd), math.log(sbp)
    s = (
        c.ln_age * la
        + c.ln_age_sq * la * la
        + c.ln_tc * lt
        + c.ln_age_ln_tc * la * lt
        + c.ln_hdl * lh
        + c.ln_age_ln_hdl * la * lh
    )
    if treated:
        s += c.ln_sbp_treated * ls + c.ln_age_ln_sbp_treated * la * ls
    else:
        s += c.ln_sbp_untreated * ls + c.ln_age_ln_sbp_untreated * la * ls
    if smokes:
        s += c.smoker + c.ln_age_smoker * la
    if dm:
        s += c.diabetes
    risk = 1.0 - math.pow(c.baseline_survival, math.exp(s - c.mean))
    return AscvdResult(risk, ascvd_risk_category(100.0 * risk), tuple(defaults), tuple(clamped))


# --- systemic lupus erythematosus ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SleClassification:
    """2019 EULAR/ACR criteria as far as a laboratory panel can show them.

    Attributes:
        entry: ANA >= 1:80 (the entry criterion); without it nothing else is counted.
        points: Sum over domains of the highest-weighted criterion met in each.
        domains: Domain → (criterion, points) counted.
        clinical_met: Whether any clinical (not immunological) domain scored.
        classified: entry and points >= 10 and clinical_met.
        not_assessable: Clinical domains a blood panel cannot show (fever, skin, joints, serosa,
            neuropsychiatric, biopsy class) — a panel-only total is a lower bound.
    """

    entry: bool
    points: int
    domains: dict[str, tuple[str, int]]
    clinical_met: bool
    classified: bool
    not_assessable: tuple[str, ...]


def sle_eular_acr_2019(
    *,
    ana_titer: float | None,
    wbc_10e9_per_l: float | None = None,
    platelets_10e9_per_l: float | None = None,
    autoimmune_hemolysis: bool | None = None,
    proteinuria_g_per_24h: float | None = None,
    low_c3: bool | None = None,
    low_c4: bool | None = None,
    anti_dsdna: bool | None = None,
    anti_smith: bool | None = None,
    antiphospholipid: bool | None = None,
) -> SleClassification:
    """Lab-derivable part of the 2019 EULAR/ACR SLE classification (Aringer 2019).

    Weights: leukopenia < 4.0 x 10^9/L 3, thrombocytopenia < 100 x 10^9/L 4, autoimmune
    haemolysis 4 (haematologic domain: highest counts); proteinuria > 0.5 g/24 h 4 (renal);
    antiphospholipid antibodies 2; low C3 or low C4 3, both 4 (complement); anti-dsDNA or
    anti-Smith 6. Classified at >= 10 points with at least one clinical criterion, given the
    entry criterion ANA >= 1:80. Unknown inputs (None) count as not met.
    """
    entry = ana_titer is not None and ana_titer >= 80
    domains: dict[str, tuple[str, int]] = {}
    if entry:
        haem: list[tuple[str, int]] = []
        if wbc_10e9_per_l is not None and wbc_10e9_per_l < 4.0:
            haem.append(("leukopenia", 3))
        if platelets_10e9_per_l is not None and platelets_10e9_per_l < 100.0:
            haem.append(("thrombocytopenia", 4))
        if autoimmune_hemolysis:
            haem.append(("autoimmune hemolysis", 4))
        if haem:
            domains["hematologic"] = max(haem, key=lambda x: x[1])
        if proteinuria_g_per_24h is not None and proteinuria_g_per_24h > 0.5:
            domains["renal"] = ("proteinuria > 0.5 g/24h", 4)
        if antiphospholipid:
            domains["antiphospholipid antibodies"] = ("antiphospholipid antibodies", 2)
        if low_c3 and low_c4:
            domains["complement proteins"] = ("low C3 and low C4", 4)
        elif low_c3 or low_c4:
            domains["complement proteins"] = ("low C3 or low C4", 3)
        if anti_dsdna or anti_smith:
            domains["SLE-specific antibodies"] = ("anti-dsDNA or anti-Smith", 6)
    points = sum(p for _, p in domains.values())
    clinical = any(d in domains for d in ("hematologic", "renal"))
    return SleClassification(
        entry,
        points,
        domains,
        clinical,
        entry and points >= 10 and clinical,
        (
            "constitutional",
            "neuropsychiatric",
            "mucocutaneous",
            "serosal",
            "musculoskeletal",
            "renal biopsy class",
        ),
    )


@dataclass(frozen=True, slots=True)
class SliccCount:
    """SLICC 2012 criteria countable from a panel: met criteria by kind."""

    clinical: tuple[str, ...]
    immunologic: tuple[str, ...]

    @property
    def total(self) -> int:
        """Number of criteria met."""
        return len(self.clinical) + len(self.immunologic)

    @property
    def classified(self) -> bool:
        """>= 4 criteria with >= 1 clinical and >= 1 immunologic (biopsy route not assessable)."""
        return self.total >= 4 and bool(self.clinical) and bool(self.immunologic)


def slicc_2012_lab(
    *,
    proteinuria_g_per_24h: float | None = None,
    hemolytic_anemia: bool | None = None,
    wbc_10e9_per_l: float | None = None,
    lymphocytes_10e9_per_l: float | None = None,
    platelets_10e9_per_l: float | None = None,
    ana_positive: bool | None = None,
    anti_dsdna: bool | None = None,
    anti_smith: bool | None = None,
    antiphospholipid: bool | None = None,
    low_complement: bool | None = None,
    direct_coombs: bool | None = None,
) -> SliccCount:
    """Lab-derivable SLICC 2012 criteria (Petri 2012). Unknown inputs count as not met.

    Clinical: renal (>= 0.5 g protein/24 h), haemolytic anaemia, leukopenia < 4 or lymphopenia
    < 1 (x 10^9/L; one criterion), thrombocytopenia < 100. Immunologic: ANA, anti-dsDNA,
    anti-Sm, antiphospholipid, low complement, direct Coombs (without haemolytic anaemia).
    """
    clinical: list[str] = []
    if proteinuria_g_per_24h is not None and proteinuria_g_per_24h >= 0.5:
        clinical.append("renal")
    if hemolytic_anemia:
        clinical.append("hemolytic anemia")
    if (wbc_10e9_per_l is not None and wbc_10e9_per_l < 4.0) or (
        lymphocytes_10e9_per_l is not None and lymphocytes_10e9_per_l < 1.0
    ):
        clinical.append("leukopenia or lymphopenia")
    if platelets_10e9_per_l is not None and platelets_10e9_per_l < 100.0:
        clinical.append("thrombocytopenia")
    immunologic = [
        name
        for name, met in (
            ("ANA", ana_positive),
            ("anti-dsDNA", anti_dsdna),
            ("anti-Sm", anti_smith),
            ("antiphospholipid", antiphospholipid),
            ("low complement", low_complement),
            ("direct Coombs", bool(direct_coombs) and not hemolytic_anemia),
        )
        if met
    ]
    return SliccCount(tuple(clinical), tuple(immunologic))
