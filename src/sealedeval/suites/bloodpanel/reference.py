"""A deterministic, guideline-based interpreter: the suite's reference engine.

``reference_report(case)`` reads only the panel (values, units, reference ranges), age and sex —
never the answer key (``expected_keywords``, ``trap_flags``, ``archetype``, ``title``) — and writes
the full report in the keyed JSON shape of ``prompts.REPORT_JSON_SCHEMA``: 7 sections, the 16
V11 subsections, and a ``differential`` whose integer probabilities sum to 100.

Why it exists: it is the ceiling the rubric must allow (a correct report should score ~1.0 under
the sealed profile, or the rubric is miscalibrated), it exercises every calculator on every
case, and it is the engine for offline end-to-end runs. Each rule below cites the threshold it
applies; findings are derived from values, so changing the panel changes the conclusion (raise
BT-001's RBC to 6.0 and the Mentzer index falls below 13: thalassaemia trait enters the
differential).

Wording rules that keep a correct report from being graded as wrong: a diagnosis the panel does
not support is never named in the affirmative (only as a differential under 10 %, or after a
negation cue); an expected finding is stated before any negation in its clause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sealedeval.suites.bloodpanel.calculators import (
    HOMA_IR_CUTOFF,
    ascvd_pce,
    de_ritis_ratio,
    egfr_ckd_epi_2021,
    fib4,
    fib4_band,
    friedewald_total_cholesterol,
    homa_ir,
    kdigo_a_stage,
    kdigo_g_stage,
    mentzer_index,
    mentzer_reading,
    sle_eular_acr_2019,
    slicc_2012_lab,
)
from sealedeval.suites.bloodpanel.cases import Case, PanelRow
from sealedeval.suites.bloodpanel.layout import LAYOUT

REFERENCE_VERSION = "1"


@dataclass
class Finding:
    """One conclusion and everything the report says about it."""

    key: str
    name: str
    weight: float
    reason: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    implications: list[str] = field(default_factory=list)
    scores: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)
    severity: list[str] = field(default_factory=list)
    medical: list[str] = field(default_factory=list)
    lifestyle: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    referral: list[str] = field(default_factory=list)
    alternatives: list[tuple[str, float, str]] = field(default_factory=list)


def _fmt(x: float) -> str:
    """A value as a laboratory prints it (no trailing zeros)."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


class _Panel:
    """Read access to a case's panel by canonical code, plus facts derived along the way."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.age = case.age
        self.sex = case.sex
        self.facts: dict[str, Any] = {}
        self._rows: dict[str, PanelRow] = {}
        self._flags: dict[str, str] = {}
        for r in case.panel:
            if r.code not in self._rows:  # first row wins, as in Case.value
                self._rows[r.code] = r
                self._flags[r.code] = r.flag
        self._shown: dict[str, str] = {}

    def v(self, code: str) -> float | None:
        r = self._rows.get(code)
        return r.value if r is not None else None

    def row(self, code: str) -> PanelRow | None:
        return self._rows.get(code)

    def high(self, code: str) -> bool:
        return self._flags.get(code) == "high"

    def low(self, code: str) -> bool:
        return self._flags.get(code) == "low"

    def normal(self, code: str) -> bool:
        return self._flags.get(code) == "normal"

    def uln(self, code: str) -> float | None:
        r = self._rows.get(code)
        return r.high if r is not None else None

    def times_uln(self, code: str) -> float | None:
        value, top = self.v(code), self.uln(code)
        return value / top if value is not None and top else None

    def show(self, code: str) -> str:
        """``"ALT 96 U/L (reference <41)"`` (cached: reports quote a value several times)."""
        text = self._shown.get(code)
        if text is None:
            r = self._rows.get(code)
            if r is None:
                return code
            unit = f" {r.unit}" if r.unit else ""
            ref = f" (reference {r.ref})" if r.ref else ""
            text = f"{r.analyte} {_fmt(r.value)}{unit}{ref}"
            self._shown[code] = text
        return text


# --- haematology -------------------------------------------------------------------------------


def _red_cells(p: _Panel) -> list[Finding]:
    hb, mcv = p.v("hb"), p.v("mcv")
    if hb is None and mcv is None:
        return []
    out: list[Finding] = []
    anaemia = p.low("hb")
    p.facts["anaemia"] = anaemia
    ferritin = p.v("ferritin")
    iron_low = ferritin is not None and (ferritin < 30 or p.low("ferritin"))
    rbc = p.v("rbc")
    rbc_note = ""
    if rbc is None and hb is not None and p.v("mch"):
        rbc = hb * 10.0 / float(p.v("mch") or 1.0)
        rbc_note = " (RBC estimated as Hb/MCH because the panel has no RBC count)"
    mentzer = mentzer_index(mcv, rbc) if mcv is not None and rbc else None
    hba2_high = p.high("hba2")
    severity = ""
    if anaemia and hb is not None:
        severity = "severe" if hb < 8 else "moderate" if hb < 11 else "mild"

    if mcv is not None and mcv < 80:
        scores = []
        if mentzer is not None:
            scores.append(
                f"Mentzer index (MCV/RBC) = {mentzer:.1f}{rbc_note}: "
                f"{'above' if mentzer > 13 else 'below'} 13, which favours "
                f"{mentzer_reading(mentzer)}."
            )
        if hba2_high:
            f = Finding(
                "beta_thal_trait",
                "beta-thalassaemia trait (minor)",
                88.0,
                f"{p.show('hba2')} with microcytosis",
                f"Microcytic indices ({p.show('mcv')}) with a raised HbA2 establish "
                "beta-thalassaemia trait (beta-thalassaemia minor).",
                evidence=[
                    f"Microcytic, hypochromic red cells: {p.show('mcv')}"
                    + (f", {p.show('mch')}" if p.v("mch") else "")
                    + ".",
                    f"{p.show('hba2')} is above 3.5%, the diagnostic threshold for "
                    "beta-thalassaemia trait.",
                ],
                scores=scores,
                implications=[
                    "Beta-thalassaemia trait is a carrier state: lifelong, usually "
                    "mild, and important for family planning."
                ],
                risks=[
                    "A partner who also carries a beta-globin variant gives a 25% chance per "
                    "pregnancy of thalassaemia major."
                ],
                severity=["The microcytosis is genetic and stable; the anaemia, if any, is mild."],
                medical=[
                    "Avoid empirical iron: iron stores are adequate and extra iron only "
                    "accumulates."
                ],
                tests=[
                    "Haemoglobin electrophoresis (or HPLC) to confirm and quantify HbA2 and "
                    "HbF; partner testing before pregnancy."
                ],
                referral=[
                    "Genetic counselling for family planning; haematology if the partner "
                    "is a carrier."
                ],
                lifestyle=[
                    "A normal, balanced diet; no iron supplements unless iron deficiency is proven."
                ],
                alternatives=[
                    ("Alpha-thalassaemia trait", 5.0, "HbA2 raised, so less likely"),
                    ("Iron deficiency anaemia", 4.0 if not iron_low else 25.0, "ferritin decides"),
                ],
            )
            if p.v("ferritin") is not None and not iron_low:
                f.evidence.append(f"{p.show('ferritin')}: iron stores are replete.")
            if p.high("rbc"):
                f.evidence.append(
                    f"{p.show('rbc')}: a high red-cell count with small cells is "
                    "typical of thalassaemia trait."
                )
            if p.normal("rdw"):
                f.evidence.append(f"{p.show('rdw')}: uniform red cells, as in thalassaemia trait.")
            out.append(f)
            p.facts["microcytic_explained"] = True
        elif iron_low:
            thal_possible = mentzer is not None and mentzer < 13
            f = Finding(
                "ida",
                "iron deficiency anaemia" if anaemia else "iron deficiency",
                70.0,
                f"{p.show('ferritin')} with microcytosis",
                f"Microcytic {'anaemia' if anaemia else 'indices'} with depleted iron stores: "
                f"{'iron deficiency anaemia' if anaemia else 'iron deficiency'}"
                + (f" ({severity})." if severity else "."),
                evidence=[
                    f"{p.show('ferritin')}: iron stores are depleted (ferritin below "
                    "30 ng/mL is diagnostic of iron deficiency).",
                    f"Microcytic indices: {p.show('mcv')}"
                    + (f", {p.show('mch')}." if p.v("mch") else "."),
                ],
                scores=scores,
                implications=[
                    "Iron deficiency needs a cause: in adults, blood loss (menstrual "
                    "or gastrointestinal) until proven otherwise."
                ],
                risks=[
                    "Untreated iron deficiency anaemia causes fatigue, reduced exercise "
                    "tolerance and, in pregnancy, adverse outcomes."
                ],
                severity=[f"Haemoglobin {_fmt(hb or 0)} g/dL: {severity} anaemia."]
                if severity
                else [],
                medical=[
                    "Oral iron (e.g. ferrous sulfate 65 mg elemental iron on alternate "
                    "days), recheck haemoglobin and ferritin after 8-12 weeks."
                ],
                tests=[
                    "Coeliac serology and faecal occult blood or endoscopy according to age "
                    "and symptoms to find the source of iron loss."
                ],
                referral=["Gastroenterology if there is no obvious source, or if aged over 50."],
                lifestyle=[
                    "Iron-rich foods (red meat, legumes, dark leafy greens) with vitamin "
                    "C; avoid tea or coffee with meals."
                ],
                alternatives=[
                    (
                        "Thalassaemia trait (coexisting)",
                        30.0 if thal_possible else 3.0,
                        "Mentzer index below 13" if thal_possible else "Mentzer index above 13",
                    ),
                    ("Anaemia of chronic disease", 4.0, "ferritin is low, not high"),
                ],
            )
            for code, text in (
                ("rdw", "anisocytosis, typical of iron deficiency"),
                (
                    "tsat",
                    "transferrin saturation below 20% confirms iron-restricted red-cell production",
                ),
                ("iron", "serum iron is low"),
                ("tibc", "binding capacity rises as stores fall"),
            ):
                if p.v(code) is not None and (p.high(code) or p.low(code) or code == "tibc"):
                    f.evidence.append(f"{p.show(code)}: {text}.")
            if p.v("rdw") is not None and not p.high("rdw"):
                f.evidence.append(f"{p.show('rdw')}.")
            if thal_possible and mentzer is not None:
                f.evidence.append(
                    f"The Mentzer index of {mentzer:.1f} is below 13, so thalassaemia trait is "
                    "considered alongside iron deficiency: check HbA2 by haemoglobin "
                    "electrophoresis once iron is replete."
                )
                f.tests.append(
                    "Haemoglobin electrophoresis for thalassaemia trait after iron "
                    "repletion (iron deficiency lowers HbA2)."
                )
            out.append(f)
            p.facts["microcytic_explained"] = True
        elif mentzer is not None and mentzer < 13:
            out.append(
                Finding(
                    "thal_trait",
                    "thalassaemia trait",
                    60.0,
                    "Mentzer index below 13",
                    f"Microcytosis ({p.show('mcv')}) with a Mentzer index of {mentzer:.1f} "
                    "points to thalassaemia trait.",
                    evidence=[f"{p.show('mcv')} with a high red-cell count."],
                    scores=scores,
                    tests=["Haemoglobin electrophoresis (HbA2, HbF) and ferritin."],
                    referral=["Haematology if electrophoresis is abnormal."],
                    alternatives=[
                        ("Iron deficiency anaemia", 20.0, "ferritin not measured"),
                        ("Anaemia of chronic disease", 5.0, "no inflammatory markers"),
                    ],
                )
            )
            p.facts["microcytic_explained"] = True

    if mcv is not None and mcv > 100:
        b12 = p.v("b12")
        if b12 is not None and (b12 < 200 or p.low("b12")):
            f = Finding(
                "b12",
                "vitamin B12 deficiency with megaloblastic anaemia"
                if anaemia
                else "vitamin B12 deficiency",
                62.0,
                f"{p.show('b12')} with macrocytosis",
                f"Macrocytic {'anaemia' if anaemia else 'indices'} ({p.show('mcv')}) with low "
                "vitamin B12: megaloblastic anaemia from B12 (cobalamin) deficiency.",
                evidence=[
                    f"{p.show('b12')}: deficient.",
                    f"{p.show('mcv')}: macrocytic red cells.",
                ],
                implications=[
                    "B12 deficiency can damage the nervous system (subacute combined "
                    "degeneration) if untreated, even before anaemia is severe."
                ],
                risks=[
                    "Neurological deficit, cognitive decline and falls in older adults; "
                    "pernicious anaemia carries a raised gastric cancer risk."
                ],
                severity=[f"Haemoglobin {_fmt(hb or 0)} g/dL: {severity} anaemia."]
                if severity
                else [],
                medical=[
                    "Hydroxocobalamin 1 mg intramuscularly on alternate days for two "
                    "weeks, then every 2-3 months; oral B12 if absorption is intact."
                ],
                tests=[
                    "Intrinsic factor and parietal cell antibodies for pernicious anaemia; "
                    "reticulocyte count and potassium after starting treatment."
                ],
                referral=[
                    "Haematology if the response is incomplete; gastroenterology for "
                    "endoscopy if pernicious anaemia is confirmed."
                ],
                lifestyle=[
                    "B12-rich foods (meat, fish, eggs, dairy); fortified foods on a "
                    "plant-based diet."
                ],
                alternatives=[
                    (
                        "Pernicious anaemia (autoimmune cause of the B12 deficiency)",
                        22.0 if p.age >= 50 else 10.0,
                        "most common cause after 50",
                    ),
                    ("Myelodysplastic syndrome", 4.0, "macrocytosis with cytopenia"),
                    ("Folate deficiency", 2.0 if p.normal("folate") else 10.0, "folate level"),
                ],
            )
            for code, text in (
                ("mma", "methylmalonic acid is raised: tissue B12 deficiency"),
                ("homocysteine", "homocysteine is raised, as in B12 or folate deficiency"),
                ("folate", "folate is adequate, so folate deficiency does not explain the picture"),
                ("ldh", "LDH is raised by ineffective (intramedullary) erythropoiesis"),
                ("ibil", "indirect bilirubin rises for the same reason"),
            ):
                if p.v(code) is not None:
                    f.evidence.append(f"{p.show(code)}: {text}.")
            if p.v("homocysteine") is None:
                f.tests.append("Homocysteine and methylmalonic acid to confirm tissue deficiency.")
            out.append(f)
        else:
            out.append(
                Finding(
                    "macrocytosis",
                    "macrocytosis",
                    20.0 if not p.facts.get("alcohol") else 0.0,
                    f"{p.show('mcv')}",
                    f"Macrocytosis ({p.show('mcv')}).",
                    evidence=[f"{p.show('mcv')}: macrocytic red cells."],
                    tests=[
                        "Vitamin B12, folate, reticulocytes, TSH and liver tests for the cause "
                        "of the macrocytosis."
                    ],
                )
            )

    if anaemia and out:
        lines = [f"{p.show('hb')}: {severity} anaemia."] + (
            [f"{p.show('hct')}."] if p.v("hct") is not None else []
        )
        out[0].evidence[:0] = lines

    if (
        anaemia
        and mcv is not None
        and 80 <= mcv <= 100
        and ferritin is not None
        and (ferritin >= 100 or not p.low("ferritin"))
        and (p.high("crp") or p.high("esr") or p.high("hscrp"))
        and not p.facts.get("ckd")
    ):
        f = Finding(
            "acd",
            "anaemia of chronic disease (anaemia of inflammation)",
            65.0,
            "normocytic anaemia, normal or high ferritin, raised inflammatory markers",
            f"Normocytic anaemia ({p.show('hb')}) with preserved ferritin and raised "
            "inflammatory markers: anaemia of chronic disease (anaemia of inflammation).",
            evidence=[
                f"{p.show('mcv')}: normocytic.",
                f"{p.show('ferritin')}: ferritin is normal or high, an acute-phase "
                "reactant that rises with inflammation.",
            ],
            implications=[
                "The anaemia follows the underlying inflammation; its cause is the priority."
            ],
            medical=[
                "Treat the underlying inflammatory condition; iron only if absolute "
                "iron deficiency is shown."
            ],
            tests=[
                "Search for the inflammatory source: clinical review, urinalysis, chest "
                "imaging as indicated; soluble transferrin receptor if iron status is "
                "unclear."
            ],
            referral=["Internal medicine or rheumatology according to the source."],
            alternatives=[
                (
                    "Iron deficiency anaemia (coexisting)",
                    8.0,
                    "ferritin above 100 makes it unlikely",
                ),
                ("Anaemia of chronic kidney disease", 4.0, "check eGFR"),
            ],
        )
        for code in ("crp", "esr", "hscrp", "tsat", "iron"):
            if p.v(code) is not None and (p.high(code) or p.low(code)):
                f.evidence.append(f"{p.show(code)}.")
        out.append(f)
    return out


# --- thyroid -----------------------------------------------------------------------------------


def _thyroid(p: _Panel) -> list[Finding]:
    tsh = p.v("tsh")
    if tsh is None:
        return []
    ft4 = p.v("ft4")
    if p.high("tsh"):
        overt = ft4 is not None and p.low("ft4")
        autoimmune = p.high("anti_tpo") or p.high("anti_tg")
        name = ("Hashimoto's thyroiditis with " if autoimmune else "") + (
            "overt primary hypothyroidism" if overt else "subclinical hypothyroidism"
        )
        f = Finding(
            "hypothyroid",
            name,
            75.0 if overt else 55.0,
            f"{p.show('tsh')}" + (" with low free T4" if overt else ""),
            f"Raised TSH ({p.show('tsh')})"
            + (f" with low {p.show('ft4')}" if overt else "")
            + (
                ": primary hypothyroidism"
                + (
                    " from Hashimoto's thyroiditis (chronic autoimmune thyroiditis)."
                    if autoimmune
                    else "."
                )
            ),
            evidence=[f"{p.show('tsh')}: the pituitary is driving a failing thyroid."],
            implications=[
                "Hypothyroidism slows metabolism and raises LDL cholesterol; it is readily treated."
            ],
            risks=["Untreated overt hypothyroidism worsens lipids, fatigue, weight and fertility."],
            severity=["Overt (free T4 low)." if overt else "Subclinical (free T4 normal)."],
            medical=[
                "Levothyroxine about 1.6 microgram/kg/day (lower start if older or "
                "with heart disease), TSH after 6-8 weeks."
            ]
            if overt
            else [
                "Repeat TSH and free T4 in 6-8 weeks; treat if TSH stays above 10 mIU/L or "
                "symptoms or pregnancy."
            ],
            tests=["TSH and free T4 6-8 weeks after any dose change."],
            referral=[
                "Endocrinology if pregnant or planning pregnancy, or if TSH does not normalise."
            ],
            lifestyle=["Take levothyroxine on an empty stomach, apart from calcium or iron."],
            alternatives=[
                ("Non-thyroidal illness or recovery phase", 4.0, "TSH pattern"),
                ("Central (secondary) hypothyroidism", 2.0, "TSH is high, not low"),
            ],
        )
        if ft4 is not None:
            f.evidence.append(f"{p.show('ft4')}" + (": low." if overt else ": within range."))
        if p.v("ft3") is not None:
            f.evidence.append(f"{p.show('ft3')}.")
        if autoimmune:
            for code in ("anti_tpo", "anti_tg"):
                if p.high(code):
                    f.evidence.append(
                        f"{p.show(code)}: thyroid autoantibodies are positive, "
                        "the hallmark of Hashimoto's thyroiditis."
                    )
        else:
            f.tests.append("Anti-TPO antibodies to test for Hashimoto's thyroiditis.")
        p.facts["hypothyroid"] = True
        return [f]
    if p.low("tsh") and ft4 is not None and p.high("ft4"):
        graves = p.high("trab")
        f = Finding(
            "hyperthyroid",
            "Graves' disease (primary hyperthyroidism)" if graves else "primary hyperthyroidism",
            75.0,
            f"{p.show('tsh')} with high free T4",
            f"Suppressed TSH with high {p.show('ft4')}: overt hyperthyroidism"
            + (
                ", with TSH receptor antibodies (TRAb) positive: Graves' disease."
                if graves
                else "."
            ),
            evidence=[f"{p.show('tsh')}: suppressed.", f"{p.show('ft4')}: raised."],
            implications=["Hyperthyroidism raises the risk of atrial fibrillation and bone loss."],
            risks=["Atrial fibrillation, osteoporosis and, rarely, thyroid storm if untreated."],
            medical=[
                "Beta-blocker for symptoms; antithyroid drug (carbimazole or "
                "methimazole) under specialist supervision."
            ],
            tests=[
                "Full blood count and liver tests before antithyroid drugs; thyroid "
                "scintigraphy if TRAb is negative."
            ],
            referral=["Endocrinology."],
            alternatives=[
                ("Toxic nodular goitre", 8.0 if graves else 20.0, "TRAb"),
                (
                    "Painless or subacute thyroiditis",
                    5.0 if graves else 15.0,
                    "TRAb and uptake scan",
                ),
            ],
        )
        if p.v("ft3") is not None:
            f.evidence.append(f"{p.show('ft3')}.")
        if graves:
            f.evidence.append(f"{p.show('trab')}: TSH receptor antibodies are positive.")
        return [f]
    return []


# --- glucose, insulin resistance, metabolic syndrome -------------------------------------------


def _glucose(p: _Panel) -> list[Finding]:
    glu, a1c, ins = p.v("glucose"), p.v("hba1c"), p.v("insulin")
    out: list[Finding] = []
    homa = homa_ir(glu, ins) if glu is not None and ins is not None else None
    resistant = homa is not None and homa > HOMA_IR_CUTOFF
    p.facts["homa"] = homa
    p.facts["insulin_resistance"] = resistant
    diabetic = (a1c is not None and a1c >= 6.5) or (glu is not None and glu >= 126)
    prediabetic = not diabetic and (
        (a1c is not None and a1c >= 5.7) or (glu is not None and glu >= 100)
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
        both = a1c is not None and a1c >= 6.5 and glu is not None and glu >= 126
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
                    f"{p.show('hba1c')}: at or above 6.5%, the ADA diagnostic threshold."
                    if a1c is not None and a1c >= 6.5
                    else "",
                    f"{p.show('glucose')}: at or above 126 mg/dL."
                    if glu is not None and glu >= 126
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
                f"HbA1c {_fmt(a1c)}%: above the usual 7% target."
                if a1c and a1c > 7
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
                        if a1c is not None and a1c >= 5.7
                        else "",
                        f"{p.show('glucose')}: 100-125 mg/dL is impaired fasting glucose."
                        if glu is not None and glu >= 100
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


def _metabolic_syndrome(p: _Panel) -> list[Finding]:
    crit = []
    if p.v("tg") is not None and float(p.v("tg") or 0) >= 150:
        crit.append(f"triglycerides {_fmt(float(p.v('tg') or 0))} mg/dL (>= 150)")
    hdl = p.v("hdl")
    if hdl is not None and hdl < (40 if p.sex == "male" else 50):
        crit.append(f"HDL {_fmt(hdl)} mg/dL (< {40 if p.sex == 'male' else 50})")
    glu = p.v("glucose")
    if (glu is not None and glu >= 100) or p.facts.get("diabetes"):
        crit.append("fasting glucose >= 100 mg/dL or diabetes")
    p.facts["metabolic_criteria"] = len(crit)
    if len(crit) < 3:
        return []
    return [
        Finding(
            "metabolic_syndrome",
            "metabolic syndrome",
            15.0,
            "3 NCEP ATP III criteria",
            f"Metabolic syndrome: {len(crit)} NCEP ATP III criteria are met on laboratory values "
            "alone (" + "; ".join(crit) + ").",
            evidence=[
                "NCEP ATP III metabolic syndrome needs 3 of 5 criteria; the three laboratory "
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


# --- liver -------------------------------------------------------------------------------------


def _liver(p: _Panel) -> list[Finding]:
    alt, ast = p.v("alt"), p.v("ast")
    out: list[Finding] = []
    scores: list[str] = []
    ratio = de_ritis_ratio(ast, alt) if alt and ast else None
    if ratio is not None:
        scores.append(
            f"De Ritis ratio (AST/ALT) = {ratio:.2f}: "
            + (
                "below 1, a hepatocellular (non-alcoholic, viral or metabolic) pattern."
                if ratio < 1
                else "above 2, typical of alcohol-related or muscle injury."
                if ratio > 2
                else "between 1 and 2."
            )
        )
    plt = p.v("plt")
    f4 = None
    if alt and ast and plt and p.age >= 18:
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

    if enz_max >= 10:
        f = Finding(
            "acute_hepatitis",
            "acute viral hepatitis",
            68.0,
            "transaminases above 10 times the upper limit",
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

    alcohol_pattern = ratio is not None and ratio >= 1.5 and ast_x > 1 and ggt_x >= 2
    if alcohol_pattern:
        p.facts["alcohol"] = True
        f = Finding(
            "ald",
            "alcohol-related liver disease",
            65.0,
            "AST/ALT above 1.5 with a high GGT",
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
        if p.v("mcv") is not None and float(p.v("mcv") or 0) > 100:
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
    if alt_x > 1 and (ratio is None or ratio < 1) and metabolic:
        # A primary diagnosis only when ALT is clearly raised and nothing bigger explains it.
        weight = 60.0 if alt_x >= 1.5 and not p.facts.get("diabetes") else 12.0
        nash = alt_x >= 2
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
                ("Alcohol-related liver disease", 6.0, "De Ritis below 1"),
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


def _bilirubin(p: _Panel) -> list[Finding]:
    if not p.high("tbil") or p.facts.get("liver_explained"):
        return []
    tbil, dbil = float(p.v("tbil") or 0), p.v("dbil")
    unconjugated = (dbil is not None and (dbil <= 0.3 or dbil / tbil < 0.2)) or p.high("ibil")
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


# --- kidney ------------------------------------------------------------------------------------


def _kidney(p: _Panel) -> list[Finding]:
    scr, reported = p.v("creatinine"), p.v("egfr")
    computed = egfr_ckd_epi_2021(scr, p.age, p.sex) if scr and p.age >= 18 else None
    egfr = reported if reported is not None else computed
    acr = p.v("acr")
    if egfr is None and acr is None:
        return []
    lines = []
    if computed is not None:
        lines.append(
            f"eGFR by the CKD-EPI 2021 creatinine equation (race-free) = "
            f"{computed:.0f} mL/min/1.73m2 from {p.show('creatinine')}"
            + (f"; the laboratory reported {_fmt(reported)}." if reported is not None else ".")
        )
    g = kdigo_g_stage(egfr) if egfr is not None else None
    a = kdigo_a_stage(acr) if acr is not None else None
    if g is not None:
        lines.append(f"KDIGO GFR category {g}" + (f", albuminuria category {a}" if a else "") + ".")
    p.facts["kidney_lines"] = lines
    p.facts["egfr"] = egfr
    reduced = egfr is not None and egfr < 60
    albumin = acr is not None and acr >= 30
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
            if albumin and acr is not None and acr <= 300
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
            + ("high" if (g in ("G3b", "G4", "G5") or a == "A3") else "moderate")
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


# --- lipids and cardiovascular risk ------------------------------------------------------------


def _lipids(p: _Panel) -> list[Finding]:
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
    if tc_use is None and ldl is not None and hdl is not None and tg is not None and tg < 400:
        tc_use = friedewald_total_cholesterol(ldl, hdl, tg)
        est = f" (total cholesterol {tc_use:.0f} mg/dL estimated as LDL + HDL + TG/5)"
    pce_percent = None
    if tc_use is not None and hdl is not None and 40 <= p.age <= 79:
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
            "from age 40 to 79, so they are not used here."
        )
    if not abnormal:
        p.facts["lipid_lines"] = risk_lines
        return []
    enhancers = []
    if p.v("lpa") is not None and float(p.v("lpa") or 0) >= 125:
        enhancers.append(f"{p.show('lpa')} (>= 125 nmol/L)")
    if p.v("hscrp") is not None and float(p.v("hscrp") or 0) >= 2:
        enhancers.append(f"{p.show('hscrp')} (>= 2 mg/L)")
    if p.facts.get("prediabetes") or p.facts.get("metabolic_criteria", 0) >= 3:
        enhancers.append("metabolic syndrome or prediabetes")
    severe = ldl is not None and ldl >= 190
    secondary = p.facts.get("hypothyroid")
    # Atherogenic: LDL >= 160 mg/dL, ApoB >= 130 mg/dL, the high-TG/low-HDL pattern, or a
    # 10-year risk >= 7.5 %; otherwise a mild lipid abnormality, not a primary diagnosis.
    hdl_low = hdl is not None and hdl < (40 if p.sex == "male" else 50)
    atherogenic = (
        severe
        or (ldl is not None and ldl >= 160)
        or (p.v("apob") is not None and float(p.v("apob") or 0) >= 130)
        or (tg is not None and tg >= 200 and hdl_low)
        or (pce_percent or 0) >= 7.5
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
            f"Severe hypercholesterolaemia ({p.show('ldl')}, >= 190 mg/dL): consider "
            "familial hypercholesterolaemia."
        ]
        if severe
        else [],
        medical=[
            "High-intensity statin (e.g. atorvastatin 40-80 mg) aiming at an LDL "
            "reduction of at least 50%; add ezetimibe if the target is not reached."
        ]
        if (pce_percent or 0) >= 7.5 or severe or p.facts.get("diabetes")
        else [
            "Lifestyle first; discuss statin therapy with the risk estimate and risk-enhancing "
            "factors."
        ],
        tests=[
            "Fasting lipid profile in 6-12 weeks after any change; ApoB and Lp(a) once if "
            "not measured; coronary artery calcium score if the decision is uncertain."
        ],
        referral=[
            "Lipid clinic if LDL stays above 190 mg/dL or familial "
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


# --- bone and minerals -------------------------------------------------------------------------


def _vitamin_d(p: _Panel) -> list[Finding]:
    vd = p.v("vitd")
    if vd is None:
        return []
    if vd >= 30:
        p.facts["vitd_line"] = f"{p.show('vitd')}: vitamin D sufficient."
        return []
    if vd >= 20:
        p.facts["vitd_line"] = (
            f"{p.show('vitd')}: vitamin D insufficiency (20-29 ng/mL); "
            "modest supplementation is reasonable."
        )
        return []
    pth_high = p.high("pth")
    f = Finding(
        "vitd",
        "severe vitamin D deficiency" if vd < 12 else "vitamin D deficiency",
        55.0,
        f"25-OH vitamin D {_fmt(vd)} ng/mL",
        f"{'Severe v' if vd < 12 else 'V'}itamin D deficiency ({p.show('vitd')})"
        + (
            " with secondary hyperparathyroidism (PTH raised to defend calcium)."
            if pth_high
            else "."
        ),
        evidence=[
            f"{p.show('vitd')}: below 20 ng/mL is deficiency"
            + (", below 12 ng/mL severe." if vd < 12 else ".")
        ],
        implications=[
            "Low vitamin D reduces calcium absorption; PTH rises and releases calcium from bone."
        ],
        risks=["Osteomalacia, osteoporosis and fractures; muscle weakness and falls."],
        medical=[
            "Colecalciferol loading (e.g. 50,000 IU weekly for 8 weeks) then 1,000-2,000 "
            "IU daily; adequate dietary calcium (1,000-1,200 mg/day)."
        ],
        tests=[
            "25-OH vitamin D, calcium and PTH after 3 months; bone density (DXA) if other "
            "fracture risks."
        ],
        referral=[
            "Endocrinology if PTH or calcium do not normalise with repletion (to "
            "exclude primary hyperparathyroidism)."
        ],
        lifestyle=[
            "Safe sun exposure, oily fish, eggs and fortified foods; weight-bearing exercise."
        ],
        alternatives=[
            ("Primary hyperparathyroidism", 4.0, "calcium is not high"),
            ("Malabsorption (e.g. coeliac disease)", 6.0, "coeliac serology"),
        ],
    )
    if pth_high:
        f.name = f.name + " with secondary hyperparathyroidism"
        f.evidence.append(
            f"{p.show('pth')}: raised PTH with calcium not raised: secondary hyperparathyroidism."
        )
    for code, text in (
        ("calcium", "calcium low or low-normal"),
        ("ica", "ionised calcium low"),
        ("phosphate", "phosphate"),
        ("alp", "ALP raised from increased bone turnover (osteomalacia risk)"),
        ("magnesium", "magnesium, needed for PTH action"),
    ):
        if p.v(code) is not None:
            f.evidence.append(f"{p.show(code)}: {text}.")
    if p.high("alp"):
        p.facts["alp_bone"] = True
    return [f]


# --- uric acid ---------------------------------------------------------------------------------


def _urate(p: _Panel) -> list[Finding]:
    ua = p.v("uric_acid")
    if ua is None or not (ua > 6.8 or p.high("uric_acid")):
        return []
    inflamed = p.high("crp") or p.high("esr")
    f = Finding(
        "hyperuricaemia",
        "hyperuricaemia with gout risk" + (" (possible gout flare)" if inflamed else ""),
        60.0,
        f"uric acid {_fmt(ua)} mg/dL above the 6.8 mg/dL saturation point",
        f"Hyperuricaemia ({p.show('uric_acid')}): uric acid above 6.8 mg/dL, the point at "
        "which urate crystallises, which is the cause of gout"
        + ("; raised ESR/CRP suggest an active inflammatory flare." if inflamed else "."),
        evidence=[f"{p.show('uric_acid')}: above the urate saturation point (6.8 mg/dL)."],
        implications=[
            "Hyperuricaemia is the necessary condition for gout and associates "
            "with metabolic syndrome and kidney stones."
        ],
        risks=["Gout flares, tophi, urate nephropathy and kidney stones; cardiovascular risk."],
        medical=[
            "If gout is confirmed (clinical picture or joint aspiration): urate-lowering "
            "therapy (allopurinol, target below 6 mg/dL) with flare prophylaxis; treat a "
            "flare with colchicine, an NSAID or a corticosteroid."
        ],
        tests=[
            "Joint aspiration for monosodium urate crystals if a joint is inflamed; repeat "
            "uric acid after 2-4 weeks; renal function."
        ],
        referral=["Rheumatology for recurrent or tophaceous gout."],
        lifestyle=[
            "Less beer, spirits, red meat, shellfish and fructose drinks; weight loss; hydration."
        ],
        alternatives=[
            (
                "Septic arthritis (if a joint is hot and swollen)",
                3.0,
                "raised inflammatory markers",
            ),
            ("Calcium pyrophosphate arthritis", 4.0, "crystal analysis"),
        ],
    )
    for code in ("esr", "crp"):
        if p.high(code):
            f.evidence.append(f"{p.show(code)}: raised inflammatory marker.")
    return [f]


# --- immunology --------------------------------------------------------------------------------


def _sle(p: _Panel) -> list[Finding]:
    ana = p.v("ana")
    if ana is None:
        return []
    dsdna, sm = p.high("anti_dsdna"), p.high("anti_sm")
    low_c3, low_c4 = p.low("c3"), p.low("c4")
    eular = sle_eular_acr_2019(
        ana_titer=ana,
        wbc_10e9_per_l=p.v("wbc"),
        platelets_10e9_per_l=p.v("plt"),
        proteinuria_g_per_24h=p.v("uprot24"),
        low_c3=low_c3,
        low_c4=low_c4,
        anti_dsdna=dsdna,
        anti_smith=sm,
    )
    slicc = slicc_2012_lab(
        proteinuria_g_per_24h=p.v("uprot24"),
        wbc_10e9_per_l=p.v("wbc"),
        lymphocytes_10e9_per_l=p.v("lymph_abs"),
        platelets_10e9_per_l=p.v("plt"),
        ana_positive=ana >= 80,
        anti_dsdna=dsdna,
        anti_smith=sm,
        low_complement=low_c3 or low_c4,
    )
    if not (ana >= 80 and (dsdna or sm)):
        return []
    domains = "; ".join(f"{k}: {c} ({v})" for k, (c, v) in eular.domains.items())
    scores = [
        f"2019 EULAR/ACR classification criteria: entry criterion ANA 1:{_fmt(ana)} met; "
        f"{eular.points} points ({domains}); "
        + (
            "classified as SLE (>= 10 points with a clinical criterion)."
            if eular.classified
            else "below the classification threshold on laboratory data alone."
        ),
        f"SLICC 2012 criteria countable from the panel: {slicc.total} "
        f"({', '.join(slicc.clinical + slicc.immunologic)}); "
        + (
            "classification met (>= 4 with clinical and immunologic)."
            if slicc.classified
            else "classification not met on laboratory data."
        ),
    ]
    nephritis = p.v("uprot24") is not None and float(p.v("uprot24") or 0) > 0.5
    f = Finding(
        "sle",
        "systemic lupus erythematosus (SLE)"
        + (" with suspected lupus nephritis" if nephritis else ""),
        70.0,
        "ANA with anti-dsDNA/anti-Smith and low complement",
        f"High-titre ANA (1:{_fmt(ana)}) with SLE-specific antibodies"
        + (" and low complement" if low_c3 or low_c4 else "")
        + ": systemic lupus erythematosus (SLE), an autoimmune multisystem disease.",
        evidence=[
            f"{p.show(c)}."
            for c in ("ana", "anti_dsdna", "anti_sm", "c3", "c4")
            if p.v(c) is not None
        ],
        scores=scores,
        implications=[
            "Anti-dsDNA with low complement (hypocomplementaemia) signals active "
            "lupus, particularly renal."
        ],
        risks=[
            "Lupus nephritis and progression to chronic kidney disease; infections; "
            "premature cardiovascular disease; thrombosis."
        ],
        severity=[
            "Active disease with probable renal involvement." if nephritis else "Active serology."
        ],
        medical=[
            "Hydroxychloroquine for all; corticosteroids and immunosuppression "
            "(mycophenolate) guided by organ involvement; sun protection."
        ],
        tests=[
            "Urine protein/creatinine ratio and sediment, renal biopsy if proteinuria "
            "exceeds 0.5 g/day; antiphospholipid antibodies; direct Coombs test."
        ],
        referral=["Rheumatology urgently; nephrology for the renal biopsy."],
        lifestyle=["Sun protection, no smoking, vaccinations before immunosuppression."],
        alternatives=[
            ("Mixed connective tissue disease", 4.0, "anti-RNP not measured"),
            ("Drug-induced lupus", 3.0, "anti-dsDNA argues for idiopathic SLE"),
        ],
    )
    for code, text in (
        ("wbc", "leukopenia"),
        ("lymph_abs", "lymphopenia"),
        ("plt", "thrombocytopenia"),
        ("uprot24", "proteinuria"),
        ("creatinine", "creatinine"),
        ("esr", "ESR"),
        ("crp", "CRP"),
    ):
        if p.v(code) is not None and (p.high(code) or p.low(code)):
            f.evidence.append(f"{p.show(code)}: {text}.")
    if nephritis:
        f.alternatives.append(
            (
                "Lupus nephritis class III/IV (renal involvement of SLE)",
                12.0,
                "proteinuria above 0.5 g/24h",
            )
        )
    p.facts["sle"] = True
    return [f]


def _ra(p: _Panel) -> list[Finding]:
    ccp, rf = p.v("anti_ccp"), p.v("rf")
    if ccp is None and rf is None:
        return []
    if not (p.high("anti_ccp") or p.high("rf")):
        return []
    ccp_x = p.times_uln("anti_ccp") or 0.0
    rf_x = p.times_uln("rf") or 0.0
    sero = 3 if max(ccp_x, rf_x) > 3 else 2
    acute = 1 if (p.high("crp") or p.high("esr")) else 0
    f = Finding(
        "ra",
        "seropositive rheumatoid arthritis",
        70.0,
        "anti-CCP and/or rheumatoid factor with raised acute-phase reactants",
        "Positive anti-CCP antibodies and/or rheumatoid factor"
        + (" with raised acute-phase reactants" if acute else "")
        + ": seropositive rheumatoid arthritis, an autoimmune inflammatory arthritis, if "
        "synovitis is present.",
        evidence=[f"{p.show(c)}." for c in ("anti_ccp", "rf", "crp", "esr") if p.v(c) is not None],
        scores=[
            f"2010 ACR/EULAR classification criteria, laboratory part: serology "
            f"{sero} points, acute-phase reactants {acute} point; with joint involvement "
            "(up to 5 points) a total of 6 or more classifies rheumatoid arthritis."
        ],
        implications=[
            "Anti-CCP positivity predicts erosive disease; early treatment prevents joint damage."
        ],
        risks=["Joint erosion and disability; cardiovascular disease; interstitial lung disease."],
        medical=[
            "Methotrexate as first-line DMARD with short-term glucocorticoid bridging, "
            "after hepatitis B/C screening and chest X-ray."
        ],
        tests=[
            "Hand and foot X-rays; hepatitis B and C serology; full blood count and liver "
            "tests before methotrexate."
        ],
        referral=["Rheumatology within 6 weeks of symptom onset."],
        lifestyle=["No smoking (smoking drives anti-CCP positive disease); regular exercise."],
        alternatives=[
            ("Psoriatic arthritis", 5.0, "seropositivity argues against"),
            ("Systemic lupus erythematosus", 3.0, "ANA not measured"),
        ],
    )
    return [f]


# --- reproductive endocrinology ------------------------------------------------------------------


def _pcos(p: _Panel) -> list[Finding]:
    if p.sex != "female":
        return []
    androgen = p.high("testosterone") or p.high("free_testosterone")
    lh, fsh = p.v("lh"), p.v("fsh")
    ratio = lh / fsh if lh and fsh else None
    amh_high = p.high("amh")
    if not androgen or not (amh_high or (ratio is not None and ratio > 2)):
        return []
    f = Finding(
        "pcos",
        "polycystic ovary syndrome (PCOS)",
        78.0,
        "biochemical hyperandrogenism with high AMH / LH:FSH",
        "Biochemical hyperandrogenism with a raised AMH"
        + (f" and an LH/FSH ratio of {ratio:.1f}" if ratio is not None else "")
        + ": polycystic ovary syndrome (PCOS) by the Rotterdam criteria (hyperandrogenism "
        "plus polycystic ovarian morphology, AMH as its surrogate)"
        + (", with insulin resistance." if p.facts.get("insulin_resistance") else "."),
        evidence=[
            f"{p.show(c)}."
            for c in ("testosterone", "free_testosterone", "shbg", "lh", "fsh", "amh")
            if p.v(c) is not None
        ],
        implications=[
            "Hyperandrogenism with insulin resistance drives anovulation and "
            "long-term metabolic risk."
        ],
        risks=[
            "Type 2 diabetes, dyslipidaemia, endometrial hyperplasia (unopposed "
            "oestrogen), subfertility."
        ],
        medical=[
            "Combined oral contraceptive for cycle control and hyperandrogenism, or "
            "metformin for insulin resistance; letrozole if pregnancy is desired."
        ],
        tests=[
            "Pelvic ultrasound for ovarian morphology; oral glucose tolerance test; lipid "
            "profile; TSH."
        ],
        referral=["Gynaecology or reproductive endocrinology."],
        lifestyle=[
            "5-10% weight loss restores ovulation in many; regular exercise; low "
            "glycaemic index diet."
        ],
        alternatives=[
            (
                "Non-classic congenital adrenal hyperplasia",
                3.0 if p.normal("ohp17") else 15.0,
                "17-OH progesterone",
            ),
            ("Hyperprolactinaemia", 2.0 if p.normal("prolactin") else 10.0, "prolactin"),
            ("Androgen-secreting tumour", 2.0, "testosterone below 150 ng/dL"),
        ],
    )
    for code, text in (
        (
            "ohp17",
            "17-OH progesterone is within range, which makes non-classic "
            "congenital adrenal hyperplasia unlikely",
        ),
        ("prolactin", "prolactin within range"),
        ("dheas", "DHEA-S, the adrenal androgen"),
    ):
        if p.v(code) is not None:
            f.evidence.append(f"{p.show(code)}: {text}.")
    if p.facts.get("homa") is not None:
        f.scores.append(
            f"HOMA-IR {p.facts['homa']:.1f}: "
            + (
                "insulin resistance despite normal glucose."
                if p.facts.get("insulin_resistance")
                else "no insulin resistance."
            )
        )
    return [f]


# --- muscle ------------------------------------------------------------------------------------


def _muscle(p: _Panel) -> list[Finding]:
    ck = p.v("ck")
    if ck is None or not p.high("ck"):
        return []
    ck_x = p.times_uln("ck") or 0.0
    liver_ok = all(p.v(c) is None or p.normal(c) for c in ("ggt", "alp", "tbil"))
    kidney_ok = p.v("creatinine") is None or p.normal("creatinine")
    if ck_x >= 5 or not liver_ok or not kidney_ok:
        return []
    ast, alt = p.v("ast"), p.v("alt")
    pattern = ast is not None and alt is not None and ast >= alt
    return [
        Finding(
            "exercise_ck",
            "exercise-related creatine kinase rise (benign, muscle origin)",
            88.0,
            "CK below 5 times the upper limit with AST above ALT and normal GGT/ALP/bilirubin",
            f"Creatine kinase {ck_x:.1f} times the upper limit ({p.show('ck')})"
            + (f" with AST above ALT ({p.show('ast')}, {p.show('alt')})" if pattern else "")
            + " and normal GGT, ALP and bilirubin: the enzymes come from skeletal muscle, the "
            "usual benign, transient finding after strenuous exercise.",
            evidence=[
                f"{p.show('ck')}: muscle enzyme.",
                "AST is also a muscle enzyme; ALT, GGT and ALP stay within range when the "
                "liver is not the source.",
            ]
            + [
                f"{p.show(c)}."
                for c in ("ast", "alt", "ggt", "alp", "creatinine")
                if p.v(c) is not None
            ],
            implications=[
                "A benign, self-limiting muscle enzyme release; the liver is not the source."
            ],
            risks=[
                "Little risk: the CK is below five times the upper limit and the creatinine is "
                "within range."
            ],
            severity=["Benign and transient."],
            medical=["Reassurance; review statins or other drugs that raise CK if taken."],
            tests=[
                "Repeat CK, AST and ALT after 7 days without strenuous exercise; they should "
                "return to the reference range."
            ],
            referral=["No referral unless the CK stays high at rest or weakness appears."],
            lifestyle=[
                "Build up training gradually, hydrate well, and rest 2-3 days before "
                "repeat blood tests."
            ],
            alternatives=[
                ("Drug-related CK rise (e.g. statin)", 5.0, "medication history"),
                ("Intramuscular injection or minor muscle trauma", 5.0, "history"),
                ("Macro-CK (benign laboratory variant)", 2.0, "persistent CK at rest"),
            ],
        )
    ]


# --- a normal panel ----------------------------------------------------------------------------


def _normal_panel(p: _Panel) -> list[Finding]:
    rows = p.case.panel
    if any(r.flag != "normal" for r in rows):
        return []
    return [
        Finding(
            "normal",
            "healthy screening profile: every result within its reference range",
            94.0,
            f"all {len(rows)} results within their reference ranges",
            f"All {len(rows)} results are within their reference ranges: a normal, unremarkable "
            "panel consistent with a healthy adult.",
            evidence=[f"{p.show(r.code)}: within the reference range." for r in rows],
            implications=[
                "Normal results give reassurance; screening is repeated at routine intervals."
            ],
            risks=[
                "Cardiometabolic markers are favourable; the main risks are those a blood panel "
                "cannot see (blood pressure, smoking, family history)."
            ],
            severity=["Nothing in this panel needs treatment."],
            medical=[
                "No medication is indicated by these results; continue routine preventive care."
            ],
            tests=[
                "Routine screening at the usual interval (e.g. lipids and glucose every 3-5 "
                "years), sooner if symptoms appear."
            ],
            referral=["No specialist referral is needed."],
            lifestyle=[
                "Keep up a balanced diet, regular physical activity, good sleep and no smoking."
            ],
            alternatives=[
                (
                    "A condition this panel does not measure",
                    6.0,
                    "a screening panel only covers what it measures",
                )
            ],
        )
    ]


DETECTORS: tuple[Callable[[_Panel], list[Finding]], ...] = (
    _normal_panel,
    _glucose,
    _metabolic_syndrome,
    _thyroid,
    _kidney,
    _liver,
    _red_cells,
    _bilirubin,
    _lipids,
    _vitamin_d,
    _urate,
    _sle,
    _ra,
    _pcos,
    _muscle,
)
"""Order matters: glucose status feeds metabolic syndrome, liver and lipids; kidney status
feeds anaemia; alcohol (liver) feeds macrocytosis."""


def _run(case: Case) -> tuple[list[Finding], _Panel]:
    p = _Panel(case)
    out: list[Finding] = []
    for detect in DETECTORS:
        out.extend(detect(p))
    out.sort(key=lambda f: -f.weight)
    return out, p


def findings(case: Case) -> list[Finding]:
    """Every finding the rules derive from ``case``'s panel, strongest first."""
    return _run(case)[0]


def _differential(found: list[Finding]) -> list[tuple[str, int, str]]:
    """Integer percentages summing to 100 (largest remainder), strongest first."""
    raw: dict[str, tuple[float, str]] = {}
    for f in found:
        if f.weight > 0:
            raw[f.name[0].upper() + f.name[1:]] = (f.weight, f.reason)
    for f in found:
        for name, w, why in f.alternatives:
            if name not in raw and w > 0:
                raw[name] = (w, why)
    if not raw:
        raw["No specific disease pattern identified"] = (100.0, "no rule matched")
    total = sum(w for w, _ in raw.values())
    exact = [(name, 100.0 * w / total, why) for name, (w, why) in raw.items()]
    floors = [(name, int(x), x - int(x), why) for name, x, why in exact]
    left = 100 - sum(fl for _, fl, _, _ in floors)
    order = sorted(range(len(floors)), key=lambda i: (-floors[i][2], i))
    pct = [fl for _, fl, _, _ in floors]
    for i in order[:left]:
        pct[i] += 1
    out = [(floors[i][0], pct[i], floors[i][3]) for i in range(len(floors)) if pct[i] > 0]
    out.sort(key=lambda t: -t[1])
    return out


def _dedupe(xs: list[str]) -> list[str]:
    """Non-empty strings of ``xs``, first occurrence kept, in order (C-level: runs 9x a case)."""
    return list(dict.fromkeys(filter(None, xs)))


def reference_report(case: Case) -> dict[str, Any]:
    """The reference engine's full JSON report for ``case`` (keyed shape, see module doc)."""
    found, p = _run(case)
    main = [f for f in found if f.weight > 0] or found
    diff = _differential(found)
    abnormal = [r for r in case.panel if r.flag != "normal"]
    sex = "woman" if case.sex == "female" else "man"
    calc_lines = _dedupe(
        [s for f in found for s in f.scores]
        + list(p.facts.get("liver_scores", []))
        + list(p.facts.get("kidney_lines", []))
        + list(p.facts.get("lipid_lines", []))
        + ([p.facts["homa_text"]] if p.facts.get("homa_text") else [])
        + ([p.facts["ascvd_note"]] if p.facts.get("ascvd_note") else [])
        + ([p.facts["vitd_line"]] if p.facts.get("vitd_line") else [])
    )
    if main:
        headline = main[0].summary
    else:
        headline = "No rule-based pattern explains the results; see the detailed analysis."
    names = [f.name for f in main]
    intro_summary = [
        f"Laboratory panel of {len(case.panel)} results for a {case.age}-year-old {sex}; "
        + (
            f"{len(abnormal)} outside the reference range: "
            + ", ".join(p.show(r.code) for r in abnormal)
            + "."
            if abnormal
            else "all results are within their reference ranges."
        ),
        headline,
    ] + [f.summary for f in main[1:3]]
    purpose = [
        "This interpretation weighs the competing explanations of the results against each "
        "other and grades them by probability, using published thresholds and scores.",
        "Scores applied: "
        + (
            "; ".join(c.split(":")[0].split(" = ")[0] for c in calc_lines)
            if calc_lines
            else "none is applicable to this panel"
        )
        + ".",
    ]
    overview = [f.summary for f in main] or [headline]
    key_findings = _dedupe([s for f in main for s in f.implications]) or [headline]
    trends = _dedupe([s for f in main for s in f.evidence])
    joined = "\n".join(trends)
    unexplained = [r for r in abnormal if p.show(r.code) not in joined]
    trends += [
        f"{p.show(r.code)}: {r.flag}, not explained by the main findings; repeat and "
        "correlate clinically."
        for r in unexplained
    ]
    correlations = calc_lines or ["No composite score applies to this panel."]
    identification = _dedupe([s for f in main for s in f.risks])
    severity_lines = [
        *_dedupe([s for f in main for s in f.severity]),
        "Probabilities below are the rule-based weights of each explanation, normalised to "
        "sum to 100%.",
    ]
    prob_lines = [f"{name}: {pct}% — {why}" for name, pct, why in diff]
    above = [
        f"{p.show(r.code)} is {r.value / r.high:.1f} times the upper reference limit."
        for r in abnormal
        if r.flag == "high" and r.high
    ]
    below = [
        f"{p.show(r.code)} is {100 * r.value / r.low:.0f}% of the lower reference limit."
        for r in abnormal
        if r.flag == "low" and r.low
    ]
    percentile_lines = [
        "Each probability is the rule weight of the pattern divided by the sum over all "
        "patterns considered; alternatives under 10% are listed to show they were weighed.",
        *above[:6],
        *below[:4],
    ]
    medical = _dedupe([s for f in main for s in f.medical])
    lifestyle = _dedupe([s for f in main for s in f.lifestyle])
    follow_up = _dedupe([s for f in main for s in f.tests])
    referral = _dedupe([s for f in main for s in f.referral])
    conclusion = [f"Most likely: {diff[0][0]} ({diff[0][1]}%)."] + (
        [f"Also present: {', '.join(names[1:4])}."] if len(names) > 1 else []
    )
    final = (medical[:1] + follow_up[:1] + referral[:1]) or [
        "Routine follow-up at the usual interval."
    ]
    body: dict[str, list[str]] = {
        "introduction_summary": intro_summary,
        "introduction_purpose": purpose,
        "overall_health_assessment_overview": overview,
        "overall_health_assessment_key_findings": key_findings,
        "detailed_health_analysis_trends_parameters": trends or [headline],
        "detailed_health_analysis_correlations": correlations,
        "risk_factors_identification": identification or ["No specific risk identified."],
        "risk_factors_severity_probabilities": severity_lines,
        "risk_factors_probabilities_of_diseases": prob_lines,
        "risk_factors_explanations_percentiles": percentile_lines,
        "recommendations_medical": medical or ["No medication is indicated."],
        "recommendations_lifestyle_dietary": lifestyle or ["Balanced diet and regular activity."],
        "further_evaluation_follow_up": follow_up or ["Routine follow-up."],
        "further_evaluation_referral": referral or ["No referral needed."],
        "conclusion_summary": conclusion,
        "conclusion_final_recommendations": final,
    }
    report: dict[str, Any] = {code: {sub: body[sub] for sub, _ in subs} for code, _, subs in LAYOUT}
    report["differential"] = [{"condition": n, "probability": pct} for n, pct, _ in diff]
    return report
