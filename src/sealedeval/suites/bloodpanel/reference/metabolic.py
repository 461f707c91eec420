"""Glucose metabolism and the metabolic syndrome: type 2 diabetes, prediabetes, insulin
resistance (HOMA-IR) and the laboratory criteria of NCEP ATP III.

These rules run first among the disease rules: the diabetes, prediabetes and insulin-resistance
facts they leave feed the liver (NAFLD), lipid and PCOS rules.
"""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.calculators import HOMA_IR_CUTOFF, homa_ir
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel, fmt

# Diagnostic glycaemia (HbA1c %, fasting glucose mg/dL): diabetes at HbA1c >= 6.5 or glucose
# >= 126, prediabetes at HbA1c 5.7-6.4 or glucose 100-125. The ADA criteria, as the report names
# them ("the ADA diagnostic threshold"); spec, "The 15 curated cases", BT-003-T2DM: "ADA-criteria
# T2DM (HbA1c 7.8%, FPG 142)".
HBA1C_DIABETES_PCT: Final = 6.5
GLUCOSE_DIABETES_MG_DL: Final = 126
HBA1C_PREDIABETES_PCT: Final = 5.7
GLUCOSE_PREDIABETES_MG_DL: Final = 100

# HbA1c above which a diabetic is above target (%): "the usual 7% target". No source is given in
# the code or the spec; the reference engine's own rule.
HBA1C_TARGET_PCT: Final = 7

# Metabolic syndrome, laboratory criteria of NCEP ATP III as the report names them (3 of 5 needed;
# waist and blood pressure are not on a panel): triglycerides >= 150 mg/dL, HDL < 40 mg/dL (men)
# or < 50 mg/dL (women), fasting glucose >= 100 mg/dL or diabetes. Spec, BT-003-T2DM: "meets >=3
# NCEP-ATP III criteria for metabolic syndrome".
METSYN_TG_MG_DL: Final = 150
METSYN_HDL_MALE_MG_DL: Final = 40
METSYN_HDL_FEMALE_MG_DL: Final = 50
METSYN_GLUCOSE_MG_DL: Final = 100
METSYN_CRITERIA: Final = 3

# Insulin resistance is HOMA-IR above calculators.HOMA_IR_CUTOFF (2.5; HOMA from Matthews DR et
# al., Diabetologia 1985;28:412-9; the cut-off's range 2.5-2.9 is noted there).


def glucose(p: Panel) -> list[Finding]:
    glu, a1c, ins = p.v("glucose"), p.v("hba1c"), p.v("insulin")
    out: list[Finding] = []
    homa = homa_ir(glu, ins) if glu is not None and ins is not None else None
    resistant = homa is not None and homa > HOMA_IR_CUTOFF
    p.facts["homa"] = homa
    p.facts["insulin_resistance"] = resistant
    diabetic = (a1c is not None and a1c >= HBA1C_DIABETES_PCT) or (
        glu is not None and glu >= GLUCOSE_DIABETES_MG_DL
    )
    prediabetic = not diabetic and (
        (a1c is not None and a1c >= HBA1C_PREDIABETES_PCT)
        or (glu is not None and glu >= GLUCOSE_PREDIABETES_MG_DL)
    )
    p.facts["diabetes"] = diabetic
    p.facts["prediabetes"] = prediabetic
    homa_text = (
        f"HOMA-IR = glucose x insulin / 405 = {homa:.1f}: "
        f"{'above' if resistant else 'below'} {HOMA_IR_CUTOFF}, "
        f"{'insulin resistance' if resistant else 'no marked insulin resistance'}."
        if homa is not None
        else ""
    )
    if diabetic:
        both = (
            a1c is not None
            and a1c >= HBA1C_DIABETES_PCT
            and glu is not None
            and glu >= GLUCOSE_DIABETES_MG_DL
        )
        f = Finding(
            "t2dm",
            "type 2 diabetes mellitus",
            60.0,
            "HbA1c and fasting glucose at diabetic levels" if both else "diagnostic glycaemia",
            "Glycaemia in the diabetic range: type 2 diabetes mellitus"
            + (
                " (HbA1c and fasting glucose both diagnostic, which confirms it on one sample)."
                if both
                else " (confirm with a repeat test)."
            ),
            evidence=[
                x
                for x in (
                    f"{p.show('hba1c')}: at or above {HBA1C_DIABETES_PCT:g}%, the ADA diagnostic "
                    "threshold."
                    if a1c is not None and a1c >= HBA1C_DIABETES_PCT
                    else "",
                    f"{p.show('glucose')}: at or above {GLUCOSE_DIABETES_MG_DL} mg/dL."
                    if glu is not None and glu >= GLUCOSE_DIABETES_MG_DL
                    else "",
                )
                if x
            ],
            scores=[homa_text] if homa_text else [],
            implications=[
                "Type 2 diabetes with insulin resistance drives microvascular and "
                "cardiovascular risk."
            ],
            risks=[
                "Retinopathy, nephropathy, neuropathy and atherosclerotic cardiovascular disease."
            ],
            severity=[
                f"HbA1c {fmt(a1c)}%: above the usual {HBA1C_TARGET_PCT}% target."
                if a1c and a1c > HBA1C_TARGET_PCT
                else "Glycaemia near target."
            ],
            medical=[
                "Metformin with lifestyle change; consider an SGLT2 inhibitor or GLP-1 "
                "receptor agonist for cardiorenal protection; HbA1c every 3 months."
            ],
            tests=[
                "Urine albumin/creatinine ratio, eGFR, retinal screening, foot examination, "
                "full lipid profile."
            ],
            referral=["Diabetes education; dietitian; ophthalmology for retinal screening."],
            lifestyle=[
                "Weight loss of 5-10%, 150 minutes a week of moderate activity, fewer "
                "refined carbohydrates and sugary drinks."
            ],
            alternatives=[
                ("Latent autoimmune diabetes in adults", 3.0, "insulin resistance favours type 2")
            ],
        )
        if resistant:
            f.evidence.append(
                f"{p.show('insulin')} with glucose: HOMA-IR {homa:.1f}, insulin resistance."
            )
        out.append(f)
    elif prediabetic:
        out.append(
            Finding(
                "prediabetes",
                "prediabetes (impaired fasting glucose)",
                20.0,
                "HbA1c 5.7-6.4% or fasting glucose 100-125 mg/dL",
                "Glycaemia in the prediabetes range (impaired fasting glucose / raised HbA1c).",
                evidence=[
                    x
                    for x in (
                        f"{p.show('hba1c')}: 5.7-6.4% is prediabetes."
                        if a1c is not None and a1c >= HBA1C_PREDIABETES_PCT
                        else "",
                        f"{p.show('glucose')}: 100-125 mg/dL is impaired fasting glucose."
                        if glu is not None and glu >= GLUCOSE_PREDIABETES_MG_DL
                        else "",
                    )
                    if x
                ],
                scores=[homa_text] if homa_text else [],
                risks=[
                    "Progression to type 2 diabetes (about 5-10% a year) and higher "
                    "cardiovascular risk."
                ],
                medical=[
                    "Repeat HbA1c yearly; metformin may be considered if BMI >= 35 or "
                    "after gestational diabetes."
                ],
                tests=["HbA1c and fasting glucose in 12 months."],
                lifestyle=[
                    "Structured lifestyle programme: 7% weight loss and 150 minutes of "
                    "activity a week."
                ],
            )
        )
    elif resistant and homa is not None:
        out.append(
            Finding(
                "insulin_resistance",
                "insulin resistance with normoglycaemia",
                0.0,
                f"HOMA-IR {homa:.1f}",
                f"Normal glucose but HOMA-IR {homa:.1f}: insulin resistance.",
                evidence=[f"{p.show('insulin')} with {p.show('glucose')}."],
                scores=[homa_text],
                risks=["Insulin resistance precedes type 2 diabetes and fatty liver."],
                lifestyle=["Regular exercise and weight management improve insulin sensitivity."],
            )
        )
    elif glu is not None or a1c is not None:
        p.facts["normoglycaemia"] = True
        if homa_text:
            p.facts["homa_text"] = homa_text
    return out


def metabolic_syndrome(p: Panel) -> list[Finding]:
    crit = []
    if p.v("tg") is not None and float(p.v("tg") or 0) >= METSYN_TG_MG_DL:
        crit.append(f"triglycerides {fmt(float(p.v('tg') or 0))} mg/dL (>= {METSYN_TG_MG_DL})")
    hdl = p.v("hdl")
    hdl_floor = METSYN_HDL_MALE_MG_DL if p.sex == "male" else METSYN_HDL_FEMALE_MG_DL
    if hdl is not None and hdl < hdl_floor:
        crit.append(f"HDL {fmt(hdl)} mg/dL (< {hdl_floor})")
    glu = p.v("glucose")
    if (glu is not None and glu >= METSYN_GLUCOSE_MG_DL) or p.facts.get("diabetes"):
        crit.append(f"fasting glucose >= {METSYN_GLUCOSE_MG_DL} mg/dL or diabetes")
    p.facts["metabolic_criteria"] = len(crit)
    if len(crit) < METSYN_CRITERIA:
        return []
    return [
        Finding(
            "metabolic_syndrome",
            "metabolic syndrome",
            15.0,
            f"{METSYN_CRITERIA} NCEP ATP III criteria",
            f"Metabolic syndrome: {len(crit)} NCEP ATP III criteria are met on laboratory values "
            "alone (" + "; ".join(crit) + ").",
            evidence=[
                f"NCEP ATP III metabolic syndrome needs {METSYN_CRITERIA} of 5 criteria; the three "
                "laboratory "
                "criteria are met (" + "; ".join(crit) + "); waist and blood pressure would "
                "add to the count."
            ],
            implications=["Metabolic syndrome roughly doubles cardiovascular risk."],
            lifestyle=[
                "Mediterranean-style diet, less alcohol and sugar, regular aerobic exercise."
            ],
            tests=["Waist circumference and blood pressure to complete the criteria."],
        )
    ]
