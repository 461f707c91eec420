"""Synthetic bloodpanel cohort: up to 100,000 clinically coherent cases from a seed.

The published second update scored 100,000 cases from a private SQL table with no generator;
this module is the generator. ``synthetic_cases(n, seed)`` streams ``Case`` objects:

* **Labels** — 127 ISO 3166-1 alpha-2 country labels with the spec's counts at n = 100,000
  (``LABEL_COUNTS``): top ten US 10,500, BR 9,500, ES 9,000, IT 8,000, DE 7,800, FR 7,400,
  PT 5,800, TR 3,400, GB 2,900, MX 2,500; Europe 57.7 %, Americas 25.4 %, Asia-Pacific 6.2 %,
  named Middle East/Africa 3.4 % and a long tail of 97 labels with 7.3 % (75-76 cases each).
  The seed does not name the 20 other labels among the 30 most represented nor the 97 tail
  labels; the choice here (``LABEL_COUNTS``) keeps every stated total. Türkiye is counted as
  Middle East (UN M49 "Western Asia"), which makes the named Middle East/Africa share exactly
  its 3,400 cases.
* **Specialties** — the spec's claimed counts (``SPECIALTY_COUNTS``). They sum to 100,100, not
  100,000 (a discrepancy in the publication), so they are used as weights: at n = 100,100 the
  counts are exactly the claimed ones, at n = 100,000 each is within 24 of its claim.
* **Allocation** — largest-remainder (Hamilton) apportionment in exact integer arithmetic, so
  the counts at any n are exact, deterministic and sum to n; labels and specialties are then
  placed by independent seeded permutations, so per-label results are not confounded by
  specialty.
* **Cases** — each specialty draws uniformly among its archetypes: the 15 curated patterns plus
  six of ours (anaemia of chronic disease, Graves' disease, prediabetes, alcohol-related liver
  disease, rheumatoid arthritis, and an exercise-induced CK rise trap). Values are drawn with
  numpy around each pattern and clipped to bounds that keep the pattern (and physiology):
  derived quantities are computed, not drawn (haematocrit = RBC x MCV, MCH from MCHC, transferrin
  saturation = iron / TIBC, indirect bilirubin = total − direct, total cholesterol by
  Friedewald, creatinine from a target eGFR by inverting CKD-EPI 2021). Age and sex follow each
  archetype (PCOS is female, gout mostly male, B12 deficiency older …). Internal medicine holds
  the over-diagnosis traps, as in the spec.

Determinism: allocation comes from ``SeedSequence([GENERATOR_VERSION, seed, n])``, the values of
each block of ``CHUNK`` cases from ``SeedSequence([GENERATOR_VERSION, seed, n, block])`` — same
seed and n, same cases, on any machine; blocks can be generated independently (``start`` /
``stop``) for parallel runs. ``case_uid`` = ``"bp-"`` + sha256 of version, seed, n and index
(truncated to 16 hex digits). n is part of the uid because the allocation is exact at each n, so
index i of a 1,000-case cohort is a different case from index i of a 100,000-case cohort.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from sealedeval.suites.bloodpanel.analytes import ANALYTES
from sealedeval.suites.bloodpanel.cases import Case, PanelRow, Sex, parse_reference

GENERATOR_VERSION: Final = 1
CHUNK: Final = 1024
_N_NORMAL: Final = 24
_N_UNIFORM: Final = 6

# --- labels ------------------------------------------------------------------------------------

_NAMED: Final[tuple[tuple[str, int, str], ...]] = (
    # Top ten, as stated.
    ("US", 10_500, "americas"),
    ("BR", 9_500, "americas"),
    ("ES", 9_000, "europe"),
    ("IT", 8_000, "europe"),
    ("DE", 7_800, "europe"),
    ("FR", 7_400, "europe"),
    ("PT", 5_800, "europe"),
    ("TR", 3_400, "middle_east_africa"),
    ("GB", 2_900, "europe"),
    ("MX", 2_500, "americas"),
    # The other 20 of the 30 most represented (our choice; each below MX's 2,500).
    ("NL", 2_400, "europe"),
    ("CH", 2_300, "europe"),
    ("BE", 2_200, "europe"),
    ("PL", 2_100, "europe"),
    ("AU", 2_000, "asia_pacific"),
    ("AT", 1_900, "europe"),
    ("SE", 1_600, "europe"),
    ("IN", 1_500, "asia_pacific"),
    ("GR", 1_400, "europe"),
    ("CA", 1_300, "americas"),
    ("IE", 1_200, "europe"),
    ("JP", 1_100, "asia_pacific"),
    ("RO", 1_000, "europe"),
    ("AR", 700, "americas"),
    ("DK", 700, "europe"),
    ("KR", 700, "asia_pacific"),
    ("CO", 500, "americas"),
    ("SG", 500, "asia_pacific"),
    ("CL", 400, "americas"),
    ("NZ", 400, "asia_pacific"),
)
_TAIL: Final[tuple[str, ...]] = (
    "AE",
    "SA",
    "EG",
    "ZA",
    "NG",
    "KE",
    "MA",
    "DZ",
    "TN",
    "IL",
    "JO",
    "LB",
    "QA",
    "KW",
    "BH",
    "OM",
    "IQ",
    "PK",
    "BD",
    "LK",
    "NP",
    "MY",
    "TH",
    "VN",
    "PH",
    "ID",
    "CN",
    "HK",
    "TW",
    "UA",
    "CZ",
    "SK",
    "HU",
    "BG",
    "HR",
    "SI",
    "RS",
    "BA",
    "ME",
    "MK",
    "AL",
    "LT",
    "LV",
    "EE",
    "FI",
    "NO",
    "IS",
    "LU",
    "MT",
    "CY",
    "PE",
    "VE",
    "EC",
    "UY",
    "PY",
    "BO",
    "CR",
    "PA",
    "GT",
    "HN",
    "SV",
    "DO",
    "PR",
    "JM",
    "TT",
    "GH",
    "ET",
    "TZ",
    "UG",
    "CI",
    "SN",
    "CM",
    "AO",
    "ZW",
    "ZM",
    "MZ",
    "BW",
    "NA",
    "RW",
    "KZ",
    "UZ",
    "GE",
    "AM",
    "AZ",
    "MD",
    "MN",
    "KH",
    "LA",
    "MM",
    "MU",
    "BY",
    "IR",
    "LY",
    "BN",
    "FJ",
    "KG",
    "TJ",
)
_TAIL_TOTAL: Final = 7_300


def _tail_counts() -> list[int]:
    base, extra = divmod(_TAIL_TOTAL, len(_TAIL))
    return [base + (1 if i < extra else 0) for i in range(len(_TAIL))]


LABEL_COUNTS: Final[tuple[tuple[str, int, str], ...]] = _NAMED + tuple(
    (code, count, "long_tail") for code, count in zip(_TAIL, _tail_counts(), strict=True)
)
"""(ISO label, cases at n = 100,000, region), 127 entries summing to 100,000."""

SPECIALTY_COUNTS: Final[tuple[tuple[str, int], ...]] = (
    ("endocrinology", 23_900),
    ("metabolic", 21_900),
    ("haematology", 15_400),
    ("hepatology", 12_400),
    ("internal_medicine", 9_000),
    ("cardiology", 7_500),
    ("rheumatology", 6_000),
    ("nephrology", 4_000),
)
"""The spec's claimed counts at "100k" (they sum to 100,100; used as weights)."""


def largest_remainder(weights: Sequence[int], n: int) -> list[int]:
    """Hamilton apportionment of ``n`` over integer ``weights``: exact, sums to ``n``.

    Each share gets ``floor(n·w/W)``; the seats left go to the largest remainders, ties to the
    earlier entry. Integer arithmetic only, so no float rounding can change a count.

    Raises:
        ValueError: Negative ``n`` or weights, or all weights zero.
    """
    if n < 0 or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("largest_remainder needs n >= 0 and non-negative, non-zero weights")
    total = sum(weights)
    floors = [n * w // total for w in weights]
    rema = [n * w % total for w in weights]
    left = n - sum(floors)
    for i in sorted(range(len(weights)), key=lambda i: (-rema[i], i))[:left]:
        floors[i] += 1
    return floors


# --- archetypes --------------------------------------------------------------------------------


class _Draw:
    """Pre-drawn randomness of one case, consumed in order by an archetype generator."""

    __slots__ = ("_i", "_j", "_u", "_z")

    def __init__(self, z: list[float], u: list[float]) -> None:
        self._z, self._u, self._i, self._j = z, u, 0, 0

    def z(self) -> float:
        self._i += 1
        return self._z[self._i - 1]

    def u(self) -> float:
        self._j += 1
        return self._u[self._j - 1]

    def g(self, mu: float, sd: float, lo: float, hi: float) -> float:
        """Normal around ``mu`` clipped to ``[lo, hi]``."""
        return min(hi, max(lo, mu + sd * self.z()))

    def lg(self, median: float, sigma: float, lo: float, hi: float) -> float:
        """Log-normal around ``median`` clipped to ``[lo, hi]``."""
        return min(hi, max(lo, median * math.exp(sigma * self.z())))


Values = dict[str, float]
Generator = Callable[[_Draw, Sex, int], Values]


@dataclass(frozen=True, slots=True)
class Archetype:
    """A clinical pattern the generator varies.

    Attributes:
        key: Archetype id (``ida``; curated cases use the same keys).
        specialty: Specialty it belongs to.
        title: Human title (never sent to an engine).
        female: Probability that a case is female.
        ages: Inclusive age range.
        keywords, scoring, flags: The answer key (as in the curated cases).
        generate: Values by canonical analyte code, in report order.
    """

    key: str
    specialty: str
    title: str
    female: float
    ages: tuple[int, int]
    keywords: tuple[str, ...]
    scoring: tuple[str, ...]
    flags: tuple[str, ...]
    generate: Generator

    @property
    def is_trap(self) -> bool:
        return bool(self.flags)


def _egfr_to_creatinine(egfr: float, age: int, sex: Sex) -> float:
    """Creatinine (mg/dL) that gives ``egfr`` by CKD-EPI 2021 (the equation inverted)."""
    kappa, alpha = (0.7, -0.241) if sex == "female" else (0.9, -0.302)
    k = egfr / (142.0 * 0.9938**age * (1.012 if sex == "female" else 1.0))
    ratio = k ** (1.0 / alpha) if k >= 1.0 else k ** (-1.0 / 1.2)
    return float(ratio * kappa)


def _ida(d: _Draw, sex: Sex, age: int) -> Values:
    mcv = d.g(71, 4, 60, 78)
    rbc = min(d.g(4.0, 0.3, 3.3, 4.7), mcv / 13.5)  # Mentzer > 13 is the pattern
    mch = mcv * d.g(0.31, 0.01, 0.29, 0.325)
    iron = d.g(30, 8, 10, 45)
    tibc = d.g(430, 30, 360, 520)
    return {
        "hb": rbc * mch / 10,
        "hct": rbc * mcv / 10,
        "rbc": rbc,
        "mcv": mcv,
        "mch": mch,
        "rdw": d.g(17.5, 1.5, 15.0, 22.0),
        "ferritin": d.g(7, 3, 2, 14),
        "iron": iron,
        "tibc": tibc,
        "tsat": 100 * iron / tibc,
    }


def _b12(d: _Draw, sex: Sex, age: int) -> Values:
    mcv = d.g(110, 5, 102, 125)
    hb = d.g(10.0, 1.0, 7.5, 11.5 if sex == "female" else 12.5)
    mch = mcv * d.g(0.335, 0.01, 0.32, 0.35)
    rbc = hb * 10 / mch
    return {
        "hb": hb,
        "hct": rbc * mcv / 10,
        "mcv": mcv,
        "mch": mch,
        "rdw": d.g(16.5, 1.2, 14.8, 20.0),
        "b12": d.g(140, 30, 60, 190),
        "folate": d.g(8, 2.5, 4.5, 18),
        "homocysteine": d.g(25, 6, 16, 50),
        "mma": d.g(0.75, 0.2, 0.45, 2.0),
        "ldh": d.g(420, 100, 260, 900),
        "ibil": d.g(1.4, 0.3, 1.05, 2.5),
    }


def _thal(d: _Draw, sex: Sex, age: int) -> Values:
    mcv = d.g(65, 3.5, 58, 72)
    rbc = max(d.g(6.1, 0.35, 5.4, 6.6 if sex == "female" else 7.0), mcv / 12.5)
    mch = mcv * d.g(0.30, 0.01, 0.28, 0.32)
    return {
        "hb": rbc * mch / 10,
        "hct": rbc * mcv / 10,
        "rbc": rbc,
        "mcv": mcv,
        "mch": mch,
        "mchc": 100 * mch / mcv,
        "rdw": d.g(13.6, 0.6, 12.0, 14.4),
        "ferritin": d.g(110, 40, 40 if sex == "female" else 50, 250),
        "iron": d.g(105, 20, 60, 160),
        "hba2": d.g(5.2, 0.5, 3.9, 6.5),
        "hbf": d.g(1.5, 0.8, 0.2, 4.0),
    }


def _acd(d: _Draw, sex: Sex, age: int) -> Values:
    hb = d.g(10.5, 0.8, 8.5, 11.7 if sex == "female" else 12.7)
    mcv = d.g(86, 4, 81, 95)
    mch = mcv * d.g(0.33, 0.008, 0.315, 0.345)
    tibc = d.g(220, 25, 160, 260)
    iron = min(d.g(35, 8, 15, 48), 0.18 * tibc)
    return {
        "hb": hb,
        "hct": hb * 10 / mch * mcv / 10,
        "mcv": mcv,
        "mch": mch,
        "ferritin": d.g(350, 150, 120, 900),
        "iron": iron,
        "tibc": tibc,
        "tsat": 100 * iron / tibc,
        "crp": d.g(3.5, 1.5, 1.0, 10.0),
        "esr": d.g(55, 15, 25, 110),
    }


def _hashimoto(d: _Draw, sex: Sex, age: int) -> Values:
    overt = d.u() < 0.75
    return {
        "tsh": d.g(14, 5, 6, 40) if overt else d.g(7.5, 1.2, 5.0, 9.9),
        "ft4": d.g(0.65, 0.08, 0.4, 0.78) if overt else d.g(1.0, 0.12, 0.85, 1.3),
        "ft3": d.g(2.1, 0.2, 1.6, 2.6) if overt else d.g(2.9, 0.3, 2.4, 3.6),
        "anti_tpo": d.g(500, 200, 120, 1500),
        "anti_tg": d.g(250, 100, 60, 900),
        "tc": d.g(235, 20, 205, 290),
    }


def _graves(d: _Draw, sex: Sex, age: int) -> Values:
    return {
        "tsh": d.g(0.02, 0.015, 0.005, 0.08),
        "ft4": d.g(3.0, 0.7, 2.0, 5.5),
        "ft3": d.g(8.5, 2.0, 5.0, 15.0),
        "trab": d.g(8, 4, 2.5, 30),
    }


def _pcos(d: _Draw, sex: Sex, age: int) -> Values:
    return {
        "lh": d.g(17, 3.5, 13, 28),
        "fsh": d.g(5.8, 0.8, 4.0, 7.5),
        "testosterone": d.g(80, 12, 72, 120),
        "free_testosterone": d.g(7.5, 1.5, 4.5, 12),
        "dheas": d.g(300, 80, 120, 420),
        "shbg": d.g(24, 6, 12, 40),
        "prolactin": d.g(14, 4, 5, 23),
        "ohp17": d.g(1.0, 0.3, 0.3, 1.8),
        "glucose": d.g(92, 5, 80, 98),
        "insulin": d.g(20, 4, 14, 30),
        "hba1c": d.g(5.3, 0.15, 4.9, 5.6),
        "amh": d.g(7, 1.5, 4.5, 12),
    }


def _vitamin_d(d: _Draw, sex: Sex, age: int) -> Values:
    hi_cr = 1.05 if sex == "female" else 1.25
    return {
        "vitd": d.g(11, 3.5, 4, 18),
        "pth": d.g(95, 20, 68, 160),
        "calcium": d.g(8.5, 0.2, 8.0, 9.2),
        "ica": d.g(1.09, 0.03, 1.0, 1.16),
        "phosphate": d.g(2.7, 0.3, 2.2, 3.4),
        "alp": d.g(140, 20, 132, 200),
        "magnesium": d.g(1.9, 0.12, 1.7, 2.2),
        "creatinine": min(hi_cr, _egfr_to_creatinine(d.g(82, 10, 65, 105), age, sex)),
        "tsh": d.g(2.0, 0.6, 0.8, 3.5),
    }


def _t2dm(d: _Draw, sex: Sex, age: int) -> Values:
    a1c = d.g(7.8, 0.8, 6.6, 10.5)
    glucose = d.g(0.95 * (28.7 * a1c - 46.7), 12, 130, 260)
    return {
        "glucose": glucose,
        "hba1c": a1c,
        "insulin": d.g(20, 5, 12, 35),
        "tg": d.g(250, 50, 160, 390),
        "hdl": d.g(35, 3, 27, 38) if sex == "male" else d.g(42, 3, 32, 48),
        "ldl": d.g(150, 25, 100, 200),
        "alt": d.g(55, 12, 42, 90),
        "ggt": d.g(70, 15, 61, 120),
    }


def _gout(d: _Draw, sex: Sex, age: int) -> Values:
    egfr = d.g(80, 10, 62, 105)
    return {
        "uric_acid": d.g(9.5, 0.9, 7.6, 12.5) if sex == "male" else d.g(8.5, 0.8, 7.0, 11),
        "creatinine": _egfr_to_creatinine(egfr, age, sex),
        "egfr": egfr,
        "urea": d.g(35, 6, 20, 43),
        "esr": d.g(32, 8, 16 if sex == "male" else 21, 70),
        "crp": d.g(1.6, 0.5, 0.6, 3.5),
        "tg": d.g(200, 30, 151, 300),
        "glucose": d.g(107, 5, 100, 118),
        "alt": d.g(40, 6, 25, 55),
    }


def _prediabetes(d: _Draw, sex: Sex, age: int) -> Values:
    ldl, hdl, tg = (
        d.g(125, 15, 90, 160),
        d.g(46, 6, 34, 60) if sex == "female" else d.g(42, 5, 32, 55),
        d.g(160, 30, 100, 240),
    )
    return {
        "glucose": d.g(110, 7, 101, 124),
        "hba1c": d.g(6.0, 0.2, 5.7, 6.4),
        "insulin": d.g(16, 4, 11, 28),
        "tc": ldl + hdl + tg / 5,
        "ldl": ldl,
        "hdl": hdl,
        "tg": tg,
    }


def _nafld(d: _Draw, sex: Sex, age: int) -> Values:
    alt = d.g(95, 25, 62, 200)
    return {
        "alt": alt,
        "ast": alt * d.g(0.62, 0.08, 0.45, 0.85),
        "ggt": d.g(100, 30, 61, 200),
        "alp": d.g(120, 20, 70, 160),
        "tbil": d.g(0.8, 0.2, 0.3, 1.2),
        "plt": d.g(220, 40, 150, 350),
        "albumin": d.g(4.2, 0.25, 3.6, 4.9),
        "tg": d.g(220, 40, 160, 380),
    }


def _viral_hepatitis(d: _Draw, sex: Sex, age: int) -> Values:
    alt = d.g(1300, 400, 600, 3000)
    tbil = d.g(6.0, 2.5, 2.0, 15.0)
    return {
        "alt": alt,
        "ast": alt * d.g(0.7, 0.1, 0.5, 0.92),
        "ggt": d.g(140, 40, 70, 300),
        "alp": d.g(160, 30, 110, 260),
        "tbil": tbil,
        "dbil": tbil * d.g(0.62, 0.06, 0.5, 0.75),
        "inr": d.g(1.25, 0.1, 1.0, 1.6),
        "albumin": d.g(3.7, 0.25, 3.2, 4.4),
        "wbc": d.g(4.3, 0.6, 3.2, 6.0),
        "lymph_pct": d.g(48, 6, 36, 62),
    }


def _ald(d: _Draw, sex: Sex, age: int) -> Values:
    alt = d.g(55, 15, 30, 90)
    return {
        "alt": alt,
        "ast": alt * d.g(2.2, 0.3, 1.6, 3.0),
        "ggt": d.g(250, 80, 130, 600),
        "alp": d.g(120, 25, 70, 190),
        "tbil": d.g(1.3, 0.4, 0.5, 2.5),
        "mcv": d.g(102, 3, 96, 110),
        "plt": d.g(160, 40, 90, 260),
        "albumin": d.g(3.9, 0.3, 3.2, 4.6),
    }


def _ckd(d: _Draw, sex: Sex, age: int) -> Values:
    egfr = d.g(38, 9, 16, 58)
    return {
        "creatinine": _egfr_to_creatinine(egfr, age, sex),
        "egfr": egfr,
        "urea": d.g(60, 12, 44, 110),
        "potassium": d.g(5.1, 0.3, 4.3, 5.9),
        "phosphate": d.g(4.6, 0.4, 3.8, 5.8),
        "acr": d.lg(150, 0.7, 35, 1200),
        "hb": d.g(11.3, 0.8, 9.5, 11.8 if sex == "female" else 12.8),
    }


def _ascvd(d: _Draw, sex: Sex, age: int) -> Values:
    ldl = d.g(180, 20, 150, 240)
    hdl = d.g(34, 3, 26, 38) if sex == "male" else d.g(42, 3, 32, 48)
    tg = d.g(230, 40, 155, 390)
    tc = ldl + hdl + tg / 5
    return {
        "tc": tc,
        "ldl": ldl,
        "hdl": hdl,
        "tg": tg,
        "non_hdl": tc - hdl,
        "apob": ldl * d.g(0.78, 0.05, 0.68, 0.9),
        "lpa": d.lg(80, 0.8, 10, 400),
        "hscrp": d.g(3.8, 1.5, 1.0, 12),
        "glucose": d.g(103, 6, 88, 118),
        "hba1c": d.g(5.8, 0.25, 5.2, 6.3),
    }


def _sle(d: _Draw, sex: Sex, age: int) -> Values:
    titres = (160.0, 320.0, 640.0, 1280.0, 2560.0)
    return {
        "ana": titres[min(4, int(d.u() * 5))],
        "anti_dsdna": d.g(250, 120, 60, 800),
        "anti_sm": d.g(50, 25, 22, 200),
        "c3": d.g(60, 12, 35, 85),
        "c4": d.g(7, 2, 3, 9.4),
        "esr": d.g(65, 20, 25, 120),
        "crp": d.g(1.5, 0.8, 0.6, 5.0),
        "wbc": d.g(3.3, 0.4, 2.2, 3.9),
        "lymph_abs": d.g(0.8, 0.15, 0.4, 0.99),
        "plt": d.g(130, 35, 60, 200),
        "uprot24": d.g(1.8, 0.9, 0.6, 4.5),
        "creatinine": _egfr_to_creatinine(d.g(80, 12, 62, 115), age, sex),
    }


def _ra(d: _Draw, sex: Sex, age: int) -> Values:
    return {
        "anti_ccp": d.g(150, 80, 25, 500),
        "rf": d.g(80, 40, 16, 300),
        "crp": d.g(2.0, 0.8, 0.6, 5.0),
        "esr": d.g(45, 12, 25, 100),
        "plt": d.g(330, 60, 200, 440),
    }


def _gilbert(d: _Draw, sex: Sex, age: int) -> Values:
    tbil = d.g(2.3, 0.5, 1.4, 4.0)
    dbil = d.g(0.2, 0.05, 0.1, 0.3)
    return {
        "tbil": tbil,
        "dbil": dbil,
        "ibil": tbil - dbil,
        "alt": d.g(22, 6, 10, 38),
        "ast": d.g(23, 5, 12, 36),
        "ggt": d.g(25, 8, 10, 50),
        "alp": d.g(80, 15, 50, 120),
        "albumin": d.g(4.5, 0.2, 3.9, 4.9),
        "hb": d.g(13.8, 0.6, 12.4, 15.6) if sex == "female" else d.g(15.0, 0.7, 13.4, 16.6),
        "retic": d.g(1.1, 0.3, 0.6, 2.0),
        "haptoglobin": d.g(110, 30, 50, 180),
        "ldh": d.g(170, 25, 120, 230),
    }


def _healthy(d: _Draw, sex: Sex, age: int) -> Values:
    hdl = d.g(60, 8, 50, 85) if sex == "female" else d.g(52, 7, 43, 75)
    tg = d.g(90, 25, 45, 140)
    ldl = min(d.g(98, 15, 60, 125), 195 - hdl - tg / 5)  # keeps total cholesterol < 200
    return {
        "hb": d.g(13.6, 0.7, 12.4, 15.5) if sex == "female" else d.g(15.0, 0.7, 13.5, 16.5),
        "wbc": d.g(6.5, 1.2, 4.8, 10.0),
        "plt": d.g(260, 45, 170, 420),
        "glucose": d.g(88, 6, 74, 97),
        "hba1c": d.g(5.2, 0.18, 4.6, 5.5),
        "tc": ldl + hdl + tg / 5,
        "hdl": hdl,
        "ldl": ldl,
        "tg": tg,
        "alt": d.g(20, 6, 8, 38),
        "ast": d.g(21, 5, 10, 36),
        "creatinine": d.g(0.8, 0.1, 0.63, 1.0) if sex == "female" else d.g(1.0, 0.1, 0.75, 1.2),
        "tsh": d.g(1.9, 0.7, 0.6, 3.6),
        "vitd": d.g(40, 8, 31, 70),
        "ferritin": d.g(60, 25, 20, 140) if sex == "female" else d.g(120, 50, 30, 300),
    }


def _exercise(d: _Draw, sex: Sex, age: int) -> Values:
    ck_uln = 192.0 if sex == "female" else 308.0
    return {
        "ck": ck_uln * d.g(2.5, 0.8, 1.3, 4.5),
        "ast": d.g(55, 10, 42, 80),
        "alt": d.g(32, 5, 18, 40),
        "ggt": d.g(25, 8, 10, 50),
        "alp": d.g(80, 15, 50, 120),
        "tbil": d.g(0.7, 0.2, 0.3, 1.1),
        "ldh": d.g(210, 25, 150, 245),
        "creatinine": d.g(0.85, 0.08, 0.65, 1.05) if sex == "female" else d.g(1.05, 0.1, 0.8, 1.25),
        "hb": d.g(13.8, 0.6, 12.4, 15.6) if sex == "female" else d.g(15.0, 0.7, 13.4, 16.6),
    }


_GILBERT_FLAGS: Final = (
    "hepatitis",
    "cirrhosis",
    "hemolytic anemia",
    "liver failure",
    "liver disease",
    "biliary obstruction",
)
_HEALTHY_FLAGS: Final = (
    "diabetes",
    "anemia",
    "hypothyroidism",
    "dyslipidemia",
    "hepatitis",
    "kidney disease",
    "deficiency",
)

ARCHETYPES: Final[tuple[Archetype, ...]] = (
    Archetype(
        "ida",
        "haematology",
        "Iron deficiency anaemia",
        0.85,
        (18, 75),
        ("iron deficiency anemia", "ferritin", "mcv", "rdw"),
        ("mentzer",),
        (),
        _ida,
    ),
    Archetype(
        "b12",
        "haematology",
        "Vitamin B12 deficiency / megaloblastic anaemia",
        0.6,
        (55, 88),
        ("b12", "megaloblastic", "macrocytic", "homocysteine"),
        (),
        (),
        _b12,
    ),
    Archetype(
        "thal",
        "haematology",
        "Beta-thalassaemia trait",
        0.5,
        (18, 60),
        ("thalassemia", "hba2", "electrophoresis", "microcytic"),
        ("mentzer",),
        (),
        _thal,
    ),
    Archetype(
        "acd",
        "haematology",
        "Anaemia of chronic disease",
        0.5,
        (45, 85),
        ("anemia of chronic disease", "ferritin", "inflammation", "normocytic"),
        (),
        (),
        _acd,
    ),
    Archetype(
        "hashimoto",
        "endocrinology",
        "Hashimoto's thyroiditis",
        0.9,
        (25, 70),
        ("hashimoto", "thyroiditis", "anti-tpo", "tsh", "hypothyroid"),
        (),
        (),
        _hashimoto,
    ),
    Archetype(
        "pcos",
        "endocrinology",
        "PCOS with insulin resistance",
        1.0,
        (18, 38),
        ("pcos", "polycystic", "hyperandrogenism", "insulin resistance"),
        ("homa-ir",),
        (),
        _pcos,
    ),
    Archetype(
        "vitamin_d",
        "endocrinology",
        "Vitamin D deficiency with secondary hyperparathyroidism",
        0.7,
        (40, 85),
        ("vitamin d", "hyperparathyroidism", "calcium", "pth"),
        (),
        (),
        _vitamin_d,
    ),
    Archetype(
        "graves",
        "endocrinology",
        "Graves' disease",
        0.8,
        (20, 60),
        ("graves", "hyperthyroid", "tsh", "trab"),
        (),
        (),
        _graves,
    ),
    Archetype(
        "t2dm",
        "metabolic",
        "Type 2 diabetes with metabolic syndrome",
        0.4,
        (40, 75),
        ("type 2 diabetes", "metabolic syndrome", "hba1c", "insulin resistance"),
        ("homa-ir", "ascvd"),
        (),
        _t2dm,
    ),
    Archetype(
        "gout",
        "metabolic",
        "Hyperuricaemia with gout risk",
        0.1,
        (30, 70),
        ("hyperuricemia", "gout", "uric acid"),
        (),
        (),
        _gout,
    ),
    Archetype(
        "prediabetes",
        "metabolic",
        "Prediabetes with insulin resistance",
        0.5,
        (35, 70),
        ("prediabetes", "hba1c", "insulin resistance"),
        ("homa-ir",),
        (),
        _prediabetes,
    ),
    Archetype(
        "nafld",
        "hepatology",
        "NAFLD / NASH",
        0.35,
        (30, 65),
        ("nafld", "fatty liver", "steatohepatitis"),
        ("fib-4", "de ritis"),
        (),
        _nafld,
    ),
    Archetype(
        "viral_hepatitis",
        "hepatology",
        "Acute viral hepatitis",
        0.4,
        (18, 45),
        ("acute hepatitis", "transaminase", "hepatocellular", "viral"),
        ("de ritis",),
        (),
        _viral_hepatitis,
    ),
    Archetype(
        "ald",
        "hepatology",
        "Alcohol-related liver disease",
        0.25,
        (35, 70),
        ("alcohol-related liver disease", "ggt", "ast"),
        ("de ritis", "fib-4"),
        (),
        _ald,
    ),
    Archetype(
        "ckd",
        "nephrology",
        "Chronic kidney disease G3-G4",
        0.4,
        (50, 85),
        ("chronic kidney disease", "egfr", "albuminuria"),
        ("ckd-epi",),
        (),
        _ckd,
    ),
    Archetype(
        "ascvd",
        "cardiology",
        "Atherogenic dyslipidaemia, high cardiovascular risk",
        0.3,
        (45, 75),
        ("dyslipidemia", "cardiovascular risk", "ldl", "apob"),
        ("ascvd",),
        (),
        _ascvd,
    ),
    Archetype(
        "sle",
        "rheumatology",
        "Systemic lupus erythematosus",
        0.9,
        (18, 50),
        ("lupus", "sle", "autoimmune", "anti-dsdna", "complement"),
        ("slicc", "eular"),
        (),
        _sle,
    ),
    Archetype(
        "ra",
        "rheumatology",
        "Seropositive rheumatoid arthritis",
        0.75,
        (30, 70),
        ("rheumatoid arthritis", "anti-ccp", "rheumatoid factor", "autoimmune"),
        ("eular",),
        (),
        _ra,
    ),
    Archetype(
        "gilbert",
        "internal_medicine",
        "Gilbert's syndrome [trap]",
        0.3,
        (16, 40),
        ("gilbert", "unconjugated", "benign"),
        (),
        _GILBERT_FLAGS,
        _gilbert,
    ),
    Archetype(
        "healthy",
        "internal_medicine",
        "Healthy adult screening [trap]",
        0.5,
        (20, 60),
        ("normal", "unremarkable", "within reference", "healthy"),
        (),
        _HEALTHY_FLAGS,
        _healthy,
    ),
    Archetype(
        "exercise",
        "internal_medicine",
        "Exercise-induced CK rise [trap]",
        0.3,
        (18, 40),
        ("exercise", "creatine kinase", "muscle", "benign"),
        (),
        ("hepatitis", "liver disease", "rhabdomyolysis", "myositis", "kidney injury"),
        _exercise,
    ),
)
"""Every archetype the generator draws from (the 15 curated keys plus six of ours)."""

BY_SPECIALTY: Final = {
    s: tuple(a for a in ARCHETYPES if a.specialty == s) for s, _ in SPECIALTY_COUNTS
}


# --- rows --------------------------------------------------------------------------------------

_ROW_CACHE: dict[
    tuple[str, str], tuple[str, str, str, float | None, float | None, int, float, float]
] = {}
_ROWS: dict[tuple[str, str, float], PanelRow] = {}
_ROWS_MAX: Final = 1 << 18


def _row(code: str, value: float, sex: Sex) -> PanelRow:
    key = (code, sex)
    spec = _ROW_CACHE.get(key)
    if spec is None:
        a = ANALYTES[code]
        ref = a.ref(sex)
        low, high = parse_reference(ref)
        spec = (a.name, a.unit, ref, low, high, a.decimals, *a.plausible)
        _ROW_CACHE[key] = spec
    name, unit, ref, low, high, decimals, lo, hi = spec
    v = float(round(min(hi, max(lo, value)), decimals))
    # Rows are immutable and values are rounded to the printed decimals, so one row object
    # serves every case that prints the same value (most do: ~1,000 distinct values per
    # analyte): building a frozen dataclass is most of a generated case's cost. Zero is not
    # shared (-0.0 == 0.0 would merge two printed forms).
    rkey = (code, sex, v)
    row = _ROWS.get(rkey)
    if row is None:
        row = PanelRow(name, code, v, unit, ref, low, high)
        if v:
            if len(_ROWS) >= _ROWS_MAX:
                _ROWS.clear()
            _ROWS[rkey] = row
    return row


def _uid(seed: int, n: int, index: int) -> str:
    h = hashlib.sha256(f"bloodpanel/synthetic/v{GENERATOR_VERSION}/{seed}/{n}/{index}".encode())
    return "bp-" + h.hexdigest()[:16]


def allocate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Label index and specialty index of every case of the ``n``-case cohort.

    Counts are ``largest_remainder`` of ``LABEL_COUNTS`` / ``SPECIALTY_COUNTS`` at ``n``; the
    order is two independent seeded permutations (indices into those tables).
    """
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([GENERATOR_VERSION, seed, n])))
    label_counts = largest_remainder([c for _, c, _ in LABEL_COUNTS], n)
    spec_counts = largest_remainder([c for _, c in SPECIALTY_COUNTS], n)
    labels = rng.permutation(np.repeat(np.arange(len(LABEL_COUNTS), dtype=np.int16), label_counts))
    specs = rng.permutation(np.repeat(np.arange(len(SPECIALTY_COUNTS), dtype=np.int8), spec_counts))
    return labels, specs


def synthetic_cases(
    n: int, seed: int, *, start: int = 0, stop: int | None = None
) -> Iterator[Case]:
    """Stream cases ``start .. stop-1`` of the ``n``-case cohort generated from ``seed``.

    Args:
        n: Cohort size (allocation of labels and specialties is exact at this n).
        seed: Non-negative integer seed.
        start: First index to yield (for parallel generation of disjoint slices).
        stop: One past the last index (default ``n``).

    Raises:
        ValueError: Negative n or seed, or a slice outside ``0..n``.
    """
    if n < 0 or seed < 0:
        raise ValueError("synthetic_cases needs n >= 0 and seed >= 0")
    stop = n if stop is None else stop
    if not 0 <= start <= stop <= n:
        raise ValueError(f"slice {start}:{stop} outside 0:{n}")
    if start == stop:
        return
    labels, specs = allocate(n, seed)
    for block in range(start // CHUNK, (stop - 1) // CHUNK + 1):
        rng = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence([GENERATOR_VERSION, seed, n, block]))
        )
        size = min(CHUNK, n - block * CHUNK)
        z_rows = rng.standard_normal((size, _N_NORMAL)).tolist()
        u_rows = rng.random((size, _N_UNIFORM)).tolist()
        for j in range(size):
            i = block * CHUNK + j
            if i < start or i >= stop:
                continue
            yield _make_case(i, n, seed, int(labels[i]), int(specs[i]), z_rows[j], u_rows[j])


def _make_case(
    i: int, n: int, seed: int, label_ix: int, spec_ix: int, z: list[float], u: list[float]
) -> Case:
    specialty = SPECIALTY_COUNTS[spec_ix][0]
    options = BY_SPECIALTY[specialty]
    arch = options[min(len(options) - 1, int(u[0] * len(options)))]
    sex: Sex = "female" if u[1] < arch.female else "male"
    lo, hi = arch.ages
    age = lo + min(hi - lo, int(u[2] * (hi - lo + 1)))
    draw = _Draw(z, u[3:])
    values = arch.generate(draw, sex, age)
    panel = tuple(_row(code, v, sex) for code, v in values.items())
    uid = _uid(seed, n, i)
    return Case(
        case_uid=uid,
        case_id=f"S{seed}-{i:06d}-{arch.key.upper()}",
        label=LABEL_COUNTS[label_ix][0],
        specialty=specialty,
        age=age,
        sex=sex,
        panel=panel,
        expected_keywords=arch.keywords,
        expected_scoring_systems=arch.scoring,
        trap_flags=arch.flags,
        is_trap=arch.is_trap,
        archetype=arch.key,
        title=f"{arch.title} — {age}{sex[0].upper()}",
        source=f"synthetic/v{GENERATOR_VERSION}",
    )
