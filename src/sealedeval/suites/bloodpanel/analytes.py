"""The analytes a blood panel may carry: one canonical code per analyte, printed names, units.

Why a table: the curated cases print names the way the published harness did ("HDL Cholesterol"
in one case, "HDL" in another; "Fasting Insulin" and "Insulin (fasting)"), and calculators and
the reference interpreter must find a value whatever the printed name. Each analyte also carries
the conventional unit every value is stored in (US conventional units, as in the published
cases), a reference range per sex, the number of decimals a laboratory prints, and a
*plausibility* interval: the widest range a living adult's value can take. The synthetic
generator never leaves that interval, and a test checks that it does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from sealedeval.errors import UserError


@dataclass(frozen=True, slots=True)
class Analyte:
    """One analyte in conventional units.

    Attributes:
        code: Canonical key used by calculators and the interpreter (``"hb"``, ``"ldl"``).
        name: Name printed on a generated report.
        unit: Unit every stored value is in.
        ref_female: Reference range printed for women (``"12.0-16.0"``, ``"<200"``).
        ref_male: Reference range printed for men.
        plausible: Closed interval a living adult's value can take; wider than any disease.
        decimals: Decimals a laboratory prints for this analyte.
        aliases: Other printed names that mean the same analyte.
    """

    code: str
    name: str
    unit: str
    ref_female: str
    ref_male: str
    plausible: tuple[float, float]
    decimals: int
    aliases: tuple[str, ...] = ()

    def ref(self, sex: str) -> str:
        """Reference range text for ``sex`` (``"female"`` or ``"male"``)."""
        return self.ref_female if sex == "female" else self.ref_male


def _a(
    code: str,
    name: str,
    unit: str,
    ref: str | tuple[str, str],
    plausible: tuple[float, float],
    decimals: int,
    *aliases: str,
) -> Analyte:
    female, male = (ref, ref) if isinstance(ref, str) else ref
    return Analyte(code, name, unit, female, male, plausible, decimals, tuple(aliases))


_TABLE: Final[tuple[Analyte, ...]] = (
    # Red cells and iron
    _a("hb", "Hemoglobin", "g/dL", ("12.0-16.0", "13.0-17.0"), (3.0, 22.0), 1, "Haemoglobin"),
    _a("hct", "Hematocrit", "%", ("36-46", "40-54"), (10.0, 70.0), 1, "Haematocrit"),
    _a("rbc", "RBC Count", "10^6/uL", ("4.0-5.2", "4.5-5.9"), (1.5, 8.0), 2, "RBC"),
    _a("mcv", "MCV", "fL", "80-100", (50.0, 130.0), 1),
    _a("mch", "MCH", "pg", "27-33", (14.0, 45.0), 1),
    _a("mchc", "MCHC", "g/dL", "32-36", (25.0, 38.0), 1),
    _a("rdw", "RDW", "%", "11.5-14.5", (10.0, 30.0), 1),
    _a("retic", "Reticulocytes", "%", "0.5-2.5", (0.1, 20.0), 1),
    _a("ferritin", "Ferritin", "ng/mL", ("15-150", "24-336"), (1.0, 3000.0), 0),
    _a("iron", "Serum Iron", "ug/dL", "50-170", (5.0, 300.0), 0),
    _a("tibc", "TIBC", "ug/dL", "240-450", (150.0, 600.0), 0),
    _a("tsat", "Transferrin Saturation", "%", "20-50", (1.0, 100.0), 1),
    _a("b12", "Vitamin B12", "pg/mL", "200-900", (30.0, 2000.0), 0),
    _a("folate", "Folate", "ng/mL", ">4.0", (0.5, 30.0), 1),
    _a("homocysteine", "Homocysteine", "umol/L", "<15", (2.0, 150.0), 1),
    _a("mma", "Methylmalonic Acid", "umol/L", "<0.40", (0.05, 10.0), 2),
    _a("ldh", "LDH", "U/L", "<250", (80.0, 5000.0), 0),
    _a("haptoglobin", "Haptoglobin", "mg/dL", "30-200", (1.0, 400.0), 0),
    _a("hba2", "HbA2", "%", "2.0-3.5", (1.0, 8.0), 1),
    _a("hbf", "HbF", "%", "<1.0", (0.0, 30.0), 1),
    # White cells and platelets
    _a("wbc", "WBC", "10^3/uL", "4.5-11.0", (0.5, 60.0), 1),
    _a("lymph_pct", "Lymphocytes %", "%", "20-40", (2.0, 90.0), 0),
    _a("lymph_abs", "Lymphocytes (abs)", "10^3/uL", "1.0-4.8", (0.1, 10.0), 1),
    _a("plt", "Platelets", "10^3/uL", "150-450", (10.0, 1000.0), 0),
    # Thyroid
    _a("tsh", "TSH", "mIU/L", "0.4-4.0", (0.005, 150.0), 2),
    _a("ft4", "Free T4", "ng/dL", "0.8-1.8", (0.1, 7.0), 2),
    _a("ft3", "Free T3", "pg/mL", "2.3-4.2", (0.5, 25.0), 1),
    _a("anti_tpo", "Anti-TPO", "IU/mL", "0-35", (0.0, 5000.0), 0),
    _a("anti_tg", "Anti-Tg", "IU/mL", "0-40", (0.0, 4000.0), 0),
    _a("trab", "TSH Receptor Antibodies", "IU/L", "<1.75", (0.0, 40.0), 2, "TRAb"),
    # Glucose and lipids
    _a("glucose", "Fasting Glucose", "mg/dL", "70-99", (40.0, 600.0), 0, "Glucose"),
    _a("hba1c", "HbA1c", "%", "<5.7", (3.5, 16.0), 1),
    _a("insulin", "Fasting Insulin", "uU/mL", "2-25", (0.5, 300.0), 0, "Insulin (fasting)"),
    _a("tc", "Total Cholesterol", "mg/dL", "<200", (80.0, 550.0), 0),
    _a("ldl", "LDL Cholesterol", "mg/dL", "<130", (20.0, 450.0), 0, "LDL"),
    _a("hdl", "HDL Cholesterol", "mg/dL", ">40", (10.0, 130.0), 0, "HDL"),
    _a("tg", "Triglycerides", "mg/dL", "<150", (25.0, 3000.0), 0),
    _a("non_hdl", "Non-HDL Cholesterol", "mg/dL", "<130", (40.0, 500.0), 0),
    _a("apob", "ApoB", "mg/dL", "<100", (20.0, 300.0), 0),
    _a("lpa", "Lipoprotein(a)", "nmol/L", "<75", (0.5, 600.0), 0),
    _a("hscrp", "hs-CRP", "mg/L", "<3.0", (0.1, 100.0), 1),
    # Liver
    _a("alt", "ALT", "U/L", "<41", (3.0, 6000.0), 0),
    _a("ast", "AST", "U/L", "<40", (5.0, 6000.0), 0),
    _a("ggt", "GGT", "U/L", "<60", (3.0, 3000.0), 0),
    _a("alp", "ALP", "U/L", "40-129", (15.0, 2000.0), 0),
    _a("tbil", "Total Bilirubin", "mg/dL", "0.2-1.2", (0.1, 40.0), 1),
    _a("dbil", "Direct Bilirubin", "mg/dL", "0.0-0.3", (0.0, 30.0), 1),
    _a("ibil", "Indirect Bilirubin", "mg/dL", "<1.0", (0.0, 30.0), 1),
    _a("albumin", "Albumin", "g/dL", "3.5-5.0", (1.5, 5.8), 1),
    _a("inr", "INR", "", "0.9-1.2", (0.8, 10.0), 1),
    # Kidney and electrolytes
    _a("creatinine", "Creatinine", "mg/dL", ("0.6-1.1", "0.7-1.3"), (0.3, 15.0), 2),
    _a("egfr", "eGFR", "mL/min/1.73m2", ">60", (3.0, 160.0), 0),
    _a("urea", "Urea", "mg/dL", "17-43", (5.0, 300.0), 0),
    _a("potassium", "Potassium", "mmol/L", "3.5-5.1", (2.0, 7.5), 1),
    _a("phosphate", "Phosphorus", "mg/dL", "2.5-4.5", (0.8, 12.0), 1, "Phosphate"),
    _a("acr", "Albumin/Creatinine Ratio", "mg/g", "<30", (0.0, 6000.0), 0, "UACR"),
    _a("uric_acid", "Uric Acid", "mg/dL", ("2.6-6.0", "3.5-7.2"), (1.0, 16.0), 1),
    # Bone and minerals
    _a("vitd", "25-OH Vitamin D", "ng/mL", "30-100", (2.0, 160.0), 0),
    _a("pth", "PTH", "pg/mL", "15-65", (3.0, 1500.0), 0),
    _a("calcium", "Calcium (total)", "mg/dL", "8.6-10.2", (6.0, 14.0), 1, "Calcium"),
    _a("ica", "Ionized Calcium", "mmol/L", "1.12-1.32", (0.8, 1.7), 2),
    _a("magnesium", "Magnesium", "mg/dL", "1.7-2.2", (0.8, 4.0), 1),
    # Inflammation and immunology
    _a("esr", "ESR", "mm/hr", ("<20", "<15"), (1.0, 140.0), 0),
    _a("crp", "CRP", "mg/dL", "<0.5", (0.01, 40.0), 1),
    _a("ana", "ANA (titer)", "1:x", "<1:80", (0.0, 5120.0), 0),
    _a("anti_dsdna", "Anti-dsDNA", "IU/mL", "<30", (0.0, 3000.0), 0),
    _a("anti_sm", "Anti-Smith", "U/mL", "<20", (0.0, 500.0), 0),
    _a("c3", "Complement C3", "mg/dL", "90-180", (10.0, 260.0), 0),
    _a("c4", "Complement C4", "mg/dL", "10-40", (1.0, 90.0), 0),
    _a("uprot24", "Urine Protein (24h)", "g/24h", "<0.15", (0.0, 25.0), 2),
    _a("rf", "Rheumatoid Factor", "IU/mL", "<14", (0.0, 1000.0), 0),
    _a("anti_ccp", "Anti-CCP", "U/mL", "<20", (0.0, 1000.0), 0),
    # Reproductive endocrinology
    _a("lh", "LH", "mIU/mL", "2.4-12.6", (0.3, 120.0), 1),
    _a("fsh", "FSH", "mIU/mL", "3.5-12.5", (0.3, 150.0), 1),
    _a("testosterone", "Total Testosterone", "ng/dL", ("15-70", "264-916"), (3.0, 1500.0), 0),
    _a("free_testosterone", "Free Testosterone", "pg/mL", ("0.5-4.2", "47-244"), (0.1, 300.0), 1),
    _a("dheas", "DHEA-S", "ug/dL", "35-430", (5.0, 1000.0), 0),
    _a("shbg", "SHBG", "nmol/L", ("18-144", "10-57"), (3.0, 250.0), 0),
    _a("prolactin", "Prolactin", "ng/mL", "4.8-23.3", (1.0, 500.0), 1),
    _a("ohp17", "17-OH Progesterone", "ng/mL", "<2.0", (0.05, 40.0), 1),
    _a("amh", "AMH", "ng/mL", "1.0-4.0", (0.01, 30.0), 1),
    # Muscle
    _a("ck", "Creatine Kinase", "U/L", ("26-192", "39-308"), (10.0, 100000.0), 0, "CK"),
)

ANALYTES: Final = MappingProxyType({a.code: a for a in _TABLE})
"""Canonical code → analyte."""

_BY_NAME: Final = MappingProxyType(
    {n.casefold(): a.code for a in _TABLE for n in (a.name, *a.aliases)}
)


def code_for(name: str, where: str = "panel") -> str:
    """Canonical code for a printed analyte name.

    Raises:
        UserError: The name is unknown; the message names ``where`` so a bad curated row is
            found in one look.
    """
    try:
        return _BY_NAME[name.strip().casefold()]
    except KeyError:
        raise UserError(f"{where}: unknown analyte {name!r}") from None
