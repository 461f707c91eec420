"""Lipids and cardiovascular risk: dyslipidaemia graded by atherogenicity, with the 10-year
ASCVD risk of the pooled cohort equations (total cholesterol by Friedewald when not measured).

Runs after the glucose, metabolic-syndrome and thyroid rules: diabetes enters the risk equation,
and a dyslipidaemia secondary to hypothyroidism or part of diabetes is described but not made a
diagnosis of its own.
"""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.calculators import ascvd_pce, friedewald_total_cholesterol
from sealedeval.suites.bloodpanel.reference.metabolic import (
    METSYN_CRITERIA,
    METSYN_HDL_FEMALE_MG_DL,
    METSYN_HDL_MALE_MG_DL,
)
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel

# Friedewald is valid for triglycerides below 400 mg/dL (calculators.friedewald_total_cholesterol).
FRIEDEWALD_MAX_TG_MG_DL: Final = 400

# The pooled cohort equations are defined for ages 40-79: Goff DC Jr et al., 2013 ACC/AHA
# guideline on the assessment of cardiovascular risk, Circulation 2014;129(suppl 2):S49-73, as
# calculators.ascvd_pce cites and enforces it.
PCE_MIN_AGE: Final = 40
PCE_MAX_AGE: Final = 79

# A 10-year ASCVD risk at or above 7.5 % makes the dyslipidaemia atherogenic and calls for a
# high-intensity statin: the lower bound of the "intermediate" band of the 2018 AHA/ACC
# cholesterol guideline (calculators.ascvd_risk_category).
STATIN_ASCVD_PCT: Final = 7.5

# LDL >= 190 mg/dL: severe hypercholesterolaemia, consider familial hypercholesterolaemia. No
# source is given in the code or the spec; the reference engine's own rule.
SEVERE_LDL_MG_DL: Final = 190

# Atherogenic dyslipidaemia: LDL >= 160 mg/dL, ApoB >= 130 mg/dL, or triglycerides >= 200 mg/dL
# with a low HDL (the NCEP ATP III HDL floors of ``metabolic``). No source is given in the code or
# the spec; the reference engine's own rule.
ATHEROGENIC_LDL_MG_DL: Final = 160
ATHEROGENIC_APOB_MG_DL: Final = 130
ATHEROGENIC_TG_MG_DL: Final = 200

# Risk-enhancing factors, as the report names them: Lp(a) >= 125 nmol/L, hsCRP >= 2 mg/L, and
# metabolic syndrome or prediabetes. No source is given in the code or the spec (calculators.py
# cites the 2018 AHA/ACC cholesterol guideline for the risk bands only); the reference engine's
# own rule.
LPA_ENHANCER_NMOL_L: Final = 125
HSCRP_ENHANCER_MG_L: Final = 2


def lipids(p: Panel) -> list[Finding]:
    ldl, hdl, tg, tc = p.v("ldl"), p.v("hdl"), p.v("tg"), p.v("tc")
    if ldl is None and hdl is None and tc is None:
        return []
    abnormal = [
        c
        for c in ("tc", "ldl", "hdl", "tg", "non_hdl", "apob", "lpa")
        if p.v(c) is not None and (p.high(c) or p.low(c))
    ]
    risk_lines: list[str] = []
    est = ""
    tc_use = tc
    if (
        tc_use is None
        and ldl is not None
        and hdl is not None
        and tg is not None
        and tg < FRIEDEWALD_MAX_TG_MG_DL
    ):
        tc_use = friedewald_total_cholesterol(ldl, hdl, tg)
        est = f" (total cholesterol {tc_use:.0f} mg/dL estimated as LDL + HDL + TG/5)"
    pce_percent = None
    if tc_use is not None and hdl is not None and PCE_MIN_AGE <= p.age <= PCE_MAX_AGE:
        r = ascvd_pce(p.age, p.sex, tc_use, hdl, diabetes=bool(p.facts.get("diabetes")))
        pce_percent = r.percent
        assumed = ", ".join(d.replace("_", " ") for d in r.defaults_used)
        risk_lines.append(
            f"10-year ASCVD risk by the pooled cohort equations = {r.percent:.1f}% "
            f"({r.category} risk){est}; assumed because the panel cannot show them: "
            f"{assumed}."
        )
        p.facts["ascvd_percent"] = r.percent
    elif tc_use is not None and hdl is not None:
        p.facts["ascvd_note"] = (
            "The pooled cohort equations for 10-year ASCVD risk apply "
            f"from age {PCE_MIN_AGE} to {PCE_MAX_AGE}, so they are not used here."
        )
    if not abnormal:
        p.facts["lipid_lines"] = risk_lines
        return []
    enhancers = []
    if p.v("lpa") is not None and float(p.v("lpa") or 0) >= LPA_ENHANCER_NMOL_L:
        enhancers.append(f"{p.show('lpa')} (>= {LPA_ENHANCER_NMOL_L} nmol/L)")
    if p.v("hscrp") is not None and float(p.v("hscrp") or 0) >= HSCRP_ENHANCER_MG_L:
        enhancers.append(f"{p.show('hscrp')} (>= {HSCRP_ENHANCER_MG_L} mg/L)")
    if p.facts.get("prediabetes") or p.facts.get("metabolic_criteria", 0) >= METSYN_CRITERIA:
        enhancers.append("metabolic syndrome or prediabetes")
    severe = ldl is not None and ldl >= SEVERE_LDL_MG_DL
    secondary = p.facts.get("hypothyroid")
    # Atherogenic (the constants above), otherwise a mild lipid abnormality, not a primary
    # diagnosis.
    hdl_floor = METSYN_HDL_MALE_MG_DL if p.sex == "male" else METSYN_HDL_FEMALE_MG_DL
    hdl_low = hdl is not None and hdl < hdl_floor
    atherogenic = (
        severe
        or (ldl is not None and ldl >= ATHEROGENIC_LDL_MG_DL)
        or (p.v("apob") is not None and float(p.v("apob") or 0) >= ATHEROGENIC_APOB_MG_DL)
        or (tg is not None and tg >= ATHEROGENIC_TG_MG_DL and hdl_low)
        or (pce_percent or 0) >= STATIN_ASCVD_PCT
    )
    # Secondary to hypothyroidism or part of diabetes: described, but not a separate diagnosis.
    weight = 0.0 if secondary or p.facts.get("diabetes") else (60.0 if atherogenic else 15.0)
    if secondary:
        name = "dyslipidaemia secondary to hypothyroidism"
        tail = " Hypothyroidism raises LDL cholesterol; recheck lipids once euthyroid."
    elif atherogenic:
        name = "atherogenic dyslipidaemia with raised cardiovascular risk"
        tail = " Cardiovascular risk is raised."
    else:
        name = "mild dyslipidaemia"
        tail = " Cardiovascular risk is only modestly affected; see the 10-year estimate."
    f = Finding(
        "dyslipidaemia",
        name,
        weight,
        "raised atherogenic lipids" if atherogenic else "lipids slightly outside range",
        ("Dyslipidaemia: " + ", ".join(p.show(c) for c in abnormal) + ".") + tail,
        evidence=[f"{p.show(c)}." for c in abnormal],
        scores=risk_lines,
        implications=[
            "ApoB and non-HDL cholesterol count the atherogenic particles; LDL "
            "cholesterol is the treatment target."
        ],
        risks=["Cardiovascular risk: myocardial infarction and stroke over the next decade."],
        severity=[
            f"Severe hypercholesterolaemia ({p.show('ldl')}, >= {SEVERE_LDL_MG_DL} mg/dL): "
            "consider familial hypercholesterolaemia."
        ]
        if severe
        else [],
        medical=[
            "High-intensity statin (e.g. atorvastatin 40-80 mg) aiming at an LDL "
            "reduction of at least 50%; add ezetimibe if the target is not reached."
        ]
        if (pce_percent or 0) >= STATIN_ASCVD_PCT or severe or p.facts.get("diabetes")
        else [
            "Lifestyle first; discuss statin therapy with the risk estimate and risk-enhancing "
            "factors."
        ],
        tests=[
            "Fasting lipid profile in 6-12 weeks after any change; ApoB and Lp(a) once if "
            "not measured; coronary artery calcium score if the decision is uncertain."
        ],
        referral=[
            f"Lipid clinic if LDL stays above {SEVERE_LDL_MG_DL} mg/dL or familial "
            "hypercholesterolaemia is suspected."
        ],
        lifestyle=["Less saturated fat, more fibre, regular aerobic exercise, no smoking."],
        alternatives=[
            (
                "Familial hypercholesterolaemia",
                8.0 if severe else 2.0,
                "LDL level and family history",
            )
        ]
        if weight
        else [],
    )
    if enhancers:
        f.evidence.append("Risk-enhancing factors: " + "; ".join(enhancers) + ".")
    return [f]
