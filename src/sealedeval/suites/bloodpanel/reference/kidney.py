"""Kidney: chronic kidney disease staged by KDIGO from eGFR (reported, else CKD-EPI 2021) and
urine albumin/creatinine ratio.

The CKD fact this rule leaves tells ``haematology`` not to call a normocytic anaemia one of
inflammation; the eGFR and KDIGO lines it computes are quoted even when the kidney is normal.
"""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.calculators import (
    egfr_ckd_epi_2021,
    kdigo_a_stage,
    kdigo_g_stage,
)
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel, fmt

# The CKD-EPI equation is applied to adults only (age >= 18). No source is given in the code or
# the spec; the reference engine's own rule (the equation is Inker LA et al., N Engl J Med
# 2021;385:1737-49, as calculators.egfr_ckd_epi_2021 cites it).
CKD_EPI_MIN_AGE: Final = 18

# Chronic kidney disease: eGFR < 60 mL/min/1.73m2 (KDIGO G3a and worse) or albuminuria, urine ACR
# >= 30 mg/g (A2 and worse); ACR above 300 mg/g is severely increased (A3). KDIGO 2012 CKD
# guideline, Kidney Int Suppl 2013;3:1-150, whose G and A categories calculators.kdigo_g_stage and
# kdigo_a_stage implement.
CKD_EGFR: Final = 60
CKD_ACR_MG_G: Final = 30
SEVERE_ACR_MG_G: Final = 300

# The categories the report calls "high" risk on the KDIGO heat map (the rest "moderate"): G3b,
# G4, G5 or A3. As the code's own text names it ("risk on the KDIGO heat map"), from the KDIGO 2012
# guideline above; the rule is the reference engine's simplification of the map.
HIGH_RISK_G: Final = ("G3b", "G4", "G5")
HIGH_RISK_A: Final = ("A3",)


def kidney(p: Panel) -> list[Finding]:
    scr, reported = p.v("creatinine"), p.v("egfr")
    computed = egfr_ckd_epi_2021(scr, p.age, p.sex) if scr and p.age >= CKD_EPI_MIN_AGE else None
    egfr = reported if reported is not None else computed
    acr = p.v("acr")
    if egfr is None and acr is None:
        return []
    lines = []
    if computed is not None:
        lines.append(
            f"eGFR by the CKD-EPI 2021 creatinine equation (race-free) = "
            f"{computed:.0f} mL/min/1.73m2 from {p.show('creatinine')}"
            + (f"; the laboratory reported {fmt(reported)}." if reported is not None else ".")
        )
    g = kdigo_g_stage(egfr) if egfr is not None else None
    a = kdigo_a_stage(acr) if acr is not None else None
    if g is not None:
        lines.append(f"KDIGO GFR category {g}" + (f", albuminuria category {a}" if a else "") + ".")
    p.facts["kidney_lines"] = lines
    p.facts["egfr"] = egfr
    reduced = egfr is not None and egfr < CKD_EGFR
    albumin = acr is not None and acr >= CKD_ACR_MG_G
    if not (reduced or albumin):
        return []
    p.facts["ckd"] = True
    stage = f"{g}{a or ''}" if g else str(a)
    f = Finding(
        "ckd",
        f"chronic kidney disease, KDIGO {stage}",
        70.0,
        f"eGFR {egfr:.0f}" if egfr is not None else f"ACR {acr}",
        "Reduced eGFR" * reduced
        + (" with " if reduced and albumin else "")
        + ("albuminuria" if albumin else "")
        + f": chronic kidney disease, KDIGO {stage} "
        "(if present for more than 3 months).",
        evidence=[
            f"eGFR {egfr:.0f} mL/min/1.73m2 (KDIGO {g})." if egfr is not None else "",
            f"{p.show('acr')}: moderately increased albuminuria (KDIGO {a})."
            if albumin and acr is not None and acr <= SEVERE_ACR_MG_G
            else f"{p.show('acr')}: severely increased albuminuria (KDIGO {a})."
            if albumin
            else "Urine albuminuria was not measured.",
        ],
        scores=lines,
        implications=[
            "Chronic kidney disease raises cardiovascular risk and needs drug-dose review."
        ],
        risks=[
            "Progression to kidney failure, hyperkalaemia, mineral-bone disorder and "
            "cardiovascular events."
        ],
        severity=[
            f"KDIGO {stage}: "
            + ("high" if (g in HIGH_RISK_G or a in HIGH_RISK_A) else "moderate")
            + " risk on the KDIGO heat map."
        ],
        medical=[
            "ACE inhibitor or ARB if albuminuric, SGLT2 inhibitor, blood pressure "
            "below 130/80, statin; avoid NSAIDs; adjust renally cleared drugs."
        ],
        tests=[
            "Repeat eGFR and urine albumin/creatinine ratio within 3 months to confirm "
            "chronicity; renal ultrasound; bicarbonate, calcium, PTH."
        ],
        referral=["Nephrology if eGFR is below 30, ACR above 300 mg/g, or eGFR falls fast."],
        lifestyle=[
            "Salt below 5 g/day, avoid high-potassium foods while potassium is raised, no smoking."
        ],
        alternatives=[
            ("Acute kidney injury", 8.0, "a single measurement cannot exclude it"),
            ("Diabetic kidney disease", 4.0, "glucose not measured"),
        ],
    )
    for code, text in (
        ("potassium", "hyperkalaemia from reduced excretion"),
        ("phosphate", "phosphate retention: early mineral-bone disorder"),
        ("urea", "urea retention"),
        ("hb", "anaemia of chronic kidney disease (reduced erythropoietin)"),
    ):
        if p.v(code) is not None and (p.high(code) or (code == "hb" and p.low(code))):
            f.evidence.append(f"{p.show(code)}: {text}.")
    return [f]
