"""Liver: acute hepatitis, alcohol-related and non-alcoholic fatty liver disease (De Ritis ratio,
FIB-4), and isolated unconjugated hyperbilirubinaemia (Gilbert's syndrome).

Enzyme levels are read as multiples of the laboratory's own upper limit (``Panel.times_uln``);
"above the upper limit" is a multiple above 1. ``liver`` runs after the glucose rules (metabolic
risk points to NAFLD) and before ``haematology`` (alcohol explains a macrocytosis); ``bilirubin``
runs after it, since a raised bilirubin that the liver rule explained is not Gilbert's.
"""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.calculators import de_ritis_ratio, fib4, fib4_band
from sealedeval.suites.bloodpanel.reference.haematology import MCV_MACROCYTIC_FL
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel

# De Ritis ratio (AST/ALT): below 1 a hepatocellular (viral, metabolic) pattern, above 2
# alcohol-related or muscle injury. De Ritis F et al., Clin Chim Acta 1957;2:70-4, as
# calculators.de_ritis_ratio documents it.
DE_RITIS_HEPATOCELLULAR: Final = 1
DE_RITIS_ALCOHOL_OR_MUSCLE: Final = 2

# FIB-4 is computed for adults only (age >= 18). No source is given in the code or the spec; the
# reference engine's own rule. Its risk bands are calculators.fib4_band's (NAFLD cut-offs 1.30 /
# 2.67, Shah AG et al., Clin Gastroenterol Hepatol 2009;7:1104-12; 2.0 from age 65, McPherson S
# et al., Am J Gastroenterol 2017;112:740-51); the referral text quotes the 2.67.
FIB4_MIN_AGE: Final = 18

# Transaminases (the larger of ALT and AST) at or above 10 times the upper limit: acute
# hepatocellular injury. No source is given in the code or the spec; the reference engine's own
# rule (the spec's BT-009-VIRHEP is far above it).
ACUTE_HEPATITIS_X_ULN: Final = 10

# Alcohol-related pattern: De Ritis >= 1.5, AST above its upper limit and GGT >= 2 times its
# upper limit. No source is given in the code or the spec; the reference engine's own rule.
ALCOHOL_DE_RITIS: Final = 1.5
ALCOHOL_GGT_X_ULN: Final = 2

# NAFLD (an ALT-predominant rise, De Ritis below 1, with metabolic risk): the primary diagnosis
# from ALT >= 1.5 times the upper limit (without diabetes), possible steatohepatitis (NASH) from
# ALT >= 2 times ("an ALT above twice the limit raises the question of steatohepatitis"). No
# source is given in the code or the spec; the reference engine's own rule.
NAFLD_PRIMARY_ALT_X_ULN: Final = 1.5
NASH_ALT_X_ULN: Final = 2

# Bilirubin counts as unconjugated when direct bilirubin is <= 0.3 mg/dL or under a fifth of the
# total (or indirect bilirubin is flagged high). No source is given in the code or the spec; the
# reference engine's own rule (spec, BT-014-GILBERT: "Isolated indirect hyperbilirubinemia").
UNCONJUGATED_DBIL_MG_DL: Final = 0.3
UNCONJUGATED_DBIL_FRACTION: Final = 0.2


def liver(p: Panel) -> list[Finding]:
    alt, ast = p.v("alt"), p.v("ast")
    out: list[Finding] = []
    scores: list[str] = []
    ratio = de_ritis_ratio(ast, alt) if alt and ast else None
    if ratio is not None:
        scores.append(
            f"De Ritis ratio (AST/ALT) = {ratio:.2f}: "
            + (
                f"below {DE_RITIS_HEPATOCELLULAR}, a hepatocellular (non-alcoholic, viral or "
                "metabolic) pattern."
                if ratio < DE_RITIS_HEPATOCELLULAR
                else f"above {DE_RITIS_ALCOHOL_OR_MUSCLE}, typical of alcohol-related or muscle "
                "injury."
                if ratio > DE_RITIS_ALCOHOL_OR_MUSCLE
                else f"between {DE_RITIS_HEPATOCELLULAR} and {DE_RITIS_ALCOHOL_OR_MUSCLE}."
            )
        )
    plt = p.v("plt")
    f4 = None
    if alt and ast and plt and p.age >= FIB4_MIN_AGE:
        f4 = fib4(p.age, ast, alt, plt)
        scores.append(
            f"FIB-4 = age x AST / (platelets x sqrt(ALT)) = {f4:.2f}: "
            f"{fib4_band(f4, p.age)} risk of advanced fibrosis."
        )
    p.facts["liver_scores"] = scores
    alt_x = p.times_uln("alt") or 0.0
    ast_x = p.times_uln("ast") or 0.0
    ggt_x = p.times_uln("ggt") or 0.0
    enz_max = max(alt_x, ast_x)

    if enz_max >= ACUTE_HEPATITIS_X_ULN:
        f = Finding(
            "acute_hepatitis",
            "acute viral hepatitis",
            68.0,
            f"transaminases above {ACUTE_HEPATITIS_X_ULN} times the upper limit",
            "Transaminases above ten times the upper limit (ALT "
            f"{alt_x:.0f}x, AST {ast_x:.0f}x): acute hepatocellular injury, most likely acute "
            "viral hepatitis.",
            evidence=[
                f"{p.show('alt')} and {p.show('ast')}: a hepatocellular pattern "
                "(transaminases far above ALP)."
            ],
            scores=scores,
            implications=[
                "Acute hepatitis needs the cause (viral serology) and watching of "
                "liver synthetic function (INR, bilirubin)."
            ],
            risks=[
                "Progression to acute liver failure is rare but signalled by a rising INR "
                "or encephalopathy."
            ],
            severity=["Severity is judged by INR and bilirubin, not by the transaminase level."],
            medical=[
                "Stop hepatotoxic drugs and alcohol; supportive care; repeat liver tests "
                "and INR in 2-3 days."
            ],
            tests=[
                "Viral serology: hepatitis A IgM, HBsAg and anti-HBc IgM, hepatitis C "
                "antibody and RNA, hepatitis E IgM; EBV and CMV; paracetamol level; "
                "autoimmune screen; liver ultrasound."
            ],
            referral=["Hepatology urgently if INR exceeds 1.5 or any confusion appears."],
            lifestyle=["No alcohol or paracetamol above 2 g/day until recovery; rest and fluids."],
            alternatives=[
                ("Drug-induced liver injury", 12.0, "medication history needed"),
                ("Autoimmune hepatitis", 6.0, "autoantibodies and IgG"),
                ("Ischaemic hepatitis", 3.0, "no shock reported"),
            ],
        )
        if p.v("tbil") is not None and p.high("tbil"):
            f.evidence.append(
                f"{p.show('tbil')}"
                + (
                    f" with {p.show('dbil')}: conjugated hyperbilirubinaemia (hepatocellular "
                    "jaundice)."
                    if p.v("dbil") is not None
                    else "."
                )
            )
        if p.high("inr"):
            f.evidence.append(f"{p.show('inr')}: mildly impaired synthetic function.")
        if p.high("lymph_pct"):
            f.evidence.append(
                f"{p.show('lymph_pct')}: relative lymphocytosis supports a viral cause."
            )
        for code in ("ggt", "alp"):
            if p.high(code):
                f.evidence.append(f"{p.show(code)}: a lesser cholestatic component.")
        out.append(f)
        p.facts["liver_explained"] = True
        return out

    alcohol_pattern = (
        ratio is not None and ratio >= ALCOHOL_DE_RITIS and ast_x > 1 and ggt_x >= ALCOHOL_GGT_X_ULN
    )
    if alcohol_pattern:
        p.facts["alcohol"] = True
        f = Finding(
            "ald",
            "alcohol-related liver disease",
            65.0,
            f"AST/ALT above {ALCOHOL_DE_RITIS:g} with a high GGT",
            f"AST-predominant transaminase rise (De Ritis {ratio:.1f}) with GGT {ggt_x:.1f} "
            "times the upper limit: alcohol-related liver disease.",
            evidence=[
                f"{p.show('ast')} above {p.show('alt')}.",
                f"{p.show('ggt')}: GGT is induced by alcohol.",
            ],
            scores=scores,
            implications=["Continued drinking risks alcoholic hepatitis and cirrhosis."],
            risks=["Progression to fibrosis and cirrhosis; pancreatitis; cardiomyopathy."],
            medical=["Structured alcohol history (AUDIT); thiamine; abstinence support."],
            tests=[
                "Liver ultrasound and elastography; repeat liver tests after 4-6 weeks of "
                "abstinence."
            ],
            referral=[
                "Hepatology if FIB-4 or elastography indicate advanced fibrosis; alcohol services."
            ],
            lifestyle=["Stop alcohol completely; balanced diet."],
            alternatives=[
                ("Non-alcoholic fatty liver disease (NAFLD)", 15.0, "if alcohol intake is low"),
                ("Drug-induced liver injury", 5.0, "medication history"),
            ],
        )
        if p.v("mcv") is not None and float(p.v("mcv") or 0) > MCV_MACROCYTIC_FL:
            f.evidence.append(f"{p.show('mcv')}: macrocytosis, a marker of alcohol excess.")
        out.append(f)
        p.facts["liver_explained"] = True
        return out

    metabolic = (
        p.high("tg")
        or p.facts.get("diabetes")
        or p.facts.get("prediabetes")
        or p.facts.get("insulin_resistance")
        or p.low("hdl")
    )
    if alt_x > 1 and (ratio is None or ratio < DE_RITIS_HEPATOCELLULAR) and metabolic:
        # A primary diagnosis only when ALT is clearly raised and nothing bigger explains it.
        weight = 60.0 if alt_x >= NAFLD_PRIMARY_ALT_X_ULN and not p.facts.get("diabetes") else 12.0
        nash = alt_x >= NASH_ALT_X_ULN
        f = Finding(
            "nafld",
            "non-alcoholic fatty liver disease (NAFLD/MASLD)"
            + (", possible steatohepatitis (NASH)" if nash else ""),
            weight,
            "ALT-predominant rise with metabolic risk factors",
            f"ALT-predominant transaminase rise ({p.show('alt')}) with metabolic risk factors: "
            "non-alcoholic fatty liver disease (NAFLD, fatty liver)"
            + (
                ", and an ALT above twice the limit raises the question of steatohepatitis (NASH)."
                if nash
                else "."
            ),
            evidence=[f"{p.show('alt')}" + (f" above {p.show('ast')}" if ast else "") + "."],
            scores=scores,
            implications=[
                "Fatty liver is the hepatic side of insulin resistance; fibrosis "
                "stage, not enzyme level, predicts outcome.",
                "Simple steatosis and steatohepatitis (NASH) look alike on blood tests; "
                "elastography or biopsy tells them apart.",
            ],
            risks=[
                "Progression to fibrosis and cirrhosis in a minority; cardiovascular "
                "disease is the main cause of death in NAFLD."
            ],
            medical=["Treat the metabolic drivers (weight, glucose, lipids)."],
            tests=[
                "Liver ultrasound; FIB-4 and, if indeterminate, elastography (FibroScan); "
                "viral hepatitis serology to exclude other causes."
            ],
            referral=["Hepatology if FIB-4 is above 2.67 or elastography shows advanced fibrosis."],
            lifestyle=[
                "Lose 7-10% of body weight; Mediterranean diet; avoid alcohol and "
                "fructose-sweetened drinks."
            ],
            alternatives=[
                ("Alcohol-related liver disease", 6.0, f"De Ritis below {DE_RITIS_HEPATOCELLULAR}"),
                ("Chronic viral hepatitis", 4.0, "serology needed"),
            ]
            if weight > 20
            else [],
        )
        for code in ("ggt", "alp", "tg"):
            if p.high(code):
                f.evidence.append(f"{p.show(code)}.")
        if f4 is not None and fib4_band(f4, p.age) != "low":
            f.tests.append("Elastography, because FIB-4 is not in the low-risk band.")
        out.append(f)
        p.facts["liver_explained"] = True
    return out


def bilirubin(p: Panel) -> list[Finding]:
    if not p.high("tbil") or p.facts.get("liver_explained"):
        return []
    tbil, dbil = float(p.v("tbil") or 0), p.v("dbil")
    unconjugated = (
        dbil is not None
        and (dbil <= UNCONJUGATED_DBIL_MG_DL or dbil / tbil < UNCONJUGATED_DBIL_FRACTION)
    ) or p.high("ibil")
    enzymes_ok = all(p.v(c) is None or p.normal(c) for c in ("alt", "ast", "alp", "ggt"))
    red_cells_ok = all(p.v(c) is None or p.normal(c) for c in ("hb", "retic", "haptoglobin", "ldh"))
    if unconjugated and enzymes_ok and red_cells_ok:
        checked = [p.show(c) for c in ("haptoglobin", "ldh", "retic", "hb") if p.v(c) is not None]
        return [
            Finding(
                "gilbert",
                "Gilbert's syndrome",
                92.0,
                "isolated unconjugated hyperbilirubinaemia, normal enzymes and red-cell markers",
                f"Isolated unconjugated (indirect) hyperbilirubinaemia ({p.show('tbil')}) with "
                "normal liver enzymes and normal red-cell turnover markers: Gilbert's syndrome, a "
                "benign inherited variant of bilirubin conjugation (UGT1A1).",
                evidence=[
                    f"{p.show('tbil')}"
                    + (f", {p.show('dbil')}" if dbil is not None else "")
                    + (f", {p.show('ibil')}" if p.v("ibil") is not None else "")
                    + ": the rise is in unconjugated bilirubin.",
                    "Liver enzymes are within their reference ranges: "
                    + ", ".join(
                        p.show(c) for c in ("alt", "ast", "ggt", "alp") if p.v(c) is not None
                    )
                    + ".",
                    "Red-cell turnover markers are within their reference ranges: "
                    + ", ".join(checked)
                    + "."
                    if checked
                    else "",
                ],
                implications=[
                    "Gilbert's syndrome is benign and needs no treatment; it affects "
                    "about 5-10% of people."
                ],
                risks=[
                    "Bilirubin rises with fasting, illness or exertion; some drugs (irinotecan, "
                    "atazanavir) are handled more slowly."
                ],
                severity=["Benign: liver function and life expectancy are normal."],
                medical=["Reassurance; no treatment and no repeated imaging are needed."],
                tests=[
                    "Optional: repeat bilirubin fractionation, or UGT1A1 genotyping if the "
                    "diagnosis is in doubt."
                ],
                referral=["No specialist referral is needed."],
                lifestyle=["Regular meals (fasting raises bilirubin) and adequate hydration."],
                alternatives=[
                    ("Drug effect on bilirubin conjugation", 4.0, "medication history"),
                    ("Crigler-Najjar syndrome type II", 2.0, "bilirubin usually higher"),
                    ("Fasting-related rise in bilirubin", 2.0, "timing of the sample"),
                ],
            )
        ]
    return []
