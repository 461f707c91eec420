"""How a case is rendered for its label: language, decimal separator and units (spec: "labels
exercise locale handling (units, decimal commas, languages)").

The synthetic cohort's 127 ISO 3166-1 alpha-2 labels are properties of generated cases, not
users; the seed says they exist "to test locale handling" and names no rule, so the rule is ours
and stated here. A case is *stored* once, in the conventional units of ``analytes`` (what the
calculators, the reference interpreter and the rubric read: nothing downstream of the answer
changes with the label). What an engine is *shown* — the chat prompt's user message and the PDF
— is rendered by ``render_rows`` / ``scaffold`` for the case's label:

* **Language** — the label's likely language by Unicode CLDR (``likelySubtags``: DE → de,
  BR → pt, CH → de, BE → nl, MA → ar, …; ``CLDR_LOCALE``) when it is one we render
  (``LANGUAGES``: English plus the eight languages of the seed's planned language-stratified
  subcohorts — Turkish, German, Spanish, French, Italian, Portuguese, Arabic, Mandarin), else
  English. What is translated is the message scaffold (request, age, sex, table header); analyte
  names stay as printed (international abbreviations), and the shared system prompt stays
  byte-identical for every case (prompt cache).
* **Decimal separator** — the CLDR decimal symbol (Latin digits) of the label's own likely
  locale (``de_DE`` ",", ``de_CH`` ".", ``es_MX`` ".", ``es_AR`` ","), even where the text falls
  back to English: a Dutch or Polish case is English text with decimal commas.
* **Units** — ``CONVENTIONAL_LABELS`` (the US, Latin America and the countries where mass units
  persist in laboratory reports: Germany, Austria, Belgium, France, Italy, Spain, Portugal,
  Greece, Türkiye, Japan, Korea, Taiwan, India, Israel, Egypt) print the stored conventional
  units; every other label prints SI units (the system the World Health Assembly recommended for
  medicine, resolution WHA30.39, 1977). The split is our assignment — practice varies by
  laboratory and analyte — chosen so that every combination occurs among the most represented
  labels: DE comma + conventional, MX point + conventional, NL comma + SI, GB point + SI.

SI conversion factors (``SI``) are those of the AMA Manual of Style, 11th ed., §17.5 (SI
conversion table); HbA1c is converted to IFCC mmol/mol by the IFCC-NGSP master equation
(IFCC = 10.929 × (NGSP − 2.15); Hoelzel W et al. Clin Chem 2004;50:166-74); insulin by 6.00
pmol/L per µIU/mL (Knopp JL et al. J Diabetes Sci Technol 2019;13:597-600). Reference ranges are
converted bound by bound with the value's factor and printed decimals. A row whose stored unit is
not the analyte's conventional one (an SQL row already in SI) is printed as stored.

Deterministic: a pure function of the case (no clock, no environment locale); the same case gives
the same bytes. The CLDR facts are frozen here (CLDR 49 via Babel 2.19.0, read once when this table
was written) so no library version can change a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from sealedeval.suites.bloodpanel.analytes import ANALYTES
from sealedeval.suites.bloodpanel.cases import UNKNOWN_LABEL, Case, PanelRow

LOCALE_VERSION: Final = 1
"""Bumped whenever a rendering rule changes (part of what is sealed with the suite)."""

CLDR_LOCALE: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "US": ("en", "."),
        "BR": ("pt", ","),
        "ES": ("es", ","),
        "IT": ("it", ","),
        "DE": ("de", ","),
        "FR": ("fr", ","),
        "PT": ("pt", ","),
        "TR": ("tr", ","),
        "GB": ("en", "."),
        "MX": ("es", "."),
        "NL": ("nl", ","),
        "CH": ("de", "."),
        "BE": ("nl", ","),
        "PL": ("pl", ","),
        "AU": ("en", "."),
        "AT": ("de", ","),
        "SE": ("sv", ","),
        "IN": ("hi", "."),
        "GR": ("el", ","),
        "CA": ("en", "."),
        "IE": ("en", "."),
        "JP": ("ja", "."),
        "RO": ("ro", ","),
        "AR": ("es", ","),
        "DK": ("da", ","),
        "KR": ("ko", "."),
        "CO": ("es", ","),
        "SG": ("en", "."),
        "CL": ("es", ","),
        "NZ": ("en", "."),
        "AE": ("ar", "."),
        "SA": ("ar", "."),
        "EG": ("ar", "."),
        "ZA": ("en", ","),
        "NG": ("en", "."),
        "KE": ("sw", "."),
        "MA": ("ar", ","),
        "DZ": ("ar", ","),
        "TN": ("ar", ","),
        "IL": ("he", "."),
        "JO": ("ar", "."),
        "LB": ("ar", ","),
        "QA": ("ar", "."),
        "KW": ("ar", "."),
        "BH": ("ar", "."),
        "OM": ("ar", "."),
        "IQ": ("ar", "."),
        "PK": ("ur", "."),
        "BD": ("bn", "."),
        "LK": ("si", "."),
        "NP": ("ne", "."),
        "MY": ("ms", "."),
        "TH": ("th", "."),
        "VN": ("vi", ","),
        "PH": ("fil", "."),
        "ID": ("id", ","),
        "CN": ("zh", "."),
        "HK": ("zh", "."),
        "TW": ("zh", "."),
        "UA": ("uk", ","),
        "CZ": ("cs", ","),
        "SK": ("sk", ","),
        "HU": ("hu", ","),
        "BG": ("bg", ","),
        "HR": ("hr", ","),
        "SI": ("sl", ","),
        "RS": ("sr", ","),
        "BA": ("bs", ","),
        "ME": ("sr", ","),
        "MK": ("mk", ","),
        "AL": ("sq", ","),
        "LT": ("lt", ","),
        "LV": ("lv", ","),
        "EE": ("et", ","),
        "FI": ("fi", ","),
        "NO": ("nb", ","),
        "IS": ("is", ","),
        "LU": ("fr", ","),
        "MT": ("mt", "."),
        "CY": ("el", ","),
        "PE": ("es", "."),
        "VE": ("es", ","),
        "EC": ("es", ","),
        "UY": ("es", ","),
        "PY": ("gn", "."),
        "BO": ("es", ","),
        "CR": ("es", ","),
        "PA": ("es", "."),
        "GT": ("es", "."),
        "HN": ("es", "."),
        "SV": ("es", "."),
        "DO": ("es", "."),
        "PR": ("es", "."),
        "JM": ("en", "."),
        "TT": ("en", "."),
        "GH": ("ak", "."),
        "ET": ("am", "."),
        "TZ": ("sw", "."),
        "UG": ("sw", "."),
        "CI": ("fr", ","),
        "SN": ("wo", ","),
        "CM": ("fr", ","),
        "AO": ("pt", ","),
        "ZW": ("sn", "."),
        "ZM": ("en", "."),
        "MZ": ("pt", ","),
        "BW": ("en", "."),
        "NA": ("af", ","),
        "RW": ("rw", ","),
        "KZ": ("ru", ","),
        "UZ": ("uz", ","),
        "GE": ("ka", ","),
        "AM": ("hy", ","),
        "AZ": ("az", ","),
        "MD": ("ro", ","),
        "MN": ("mn", "."),
        "KH": ("km", "."),
        "LA": ("lo", ","),
        "MM": ("my", "."),
        "MU": ("fr", ","),
        "BY": ("ru", ","),
        "IR": ("fa", "."),
        "LY": ("ar", ","),
        "BN": ("ms", ","),
        "FJ": ("en", "."),
        "KG": ("ky", ","),
        "TJ": ("tg", ","),
    }
)
"""Label → (CLDR likely language, CLDR decimal symbol of ``<language>_<label>``, Latin digits)."""

CONVENTIONAL_LABELS: Final = frozenset(
    {
        # The US and Latin America
        *("US", "BR", "MX", "AR", "CO", "CL", "PE", "VE", "EC", "UY", "PY", "BO"),
        *("CR", "PA", "GT", "HN", "SV", "DO", "PR"),
        # Where mass units persist in laboratory reports
        *("DE", "AT", "BE", "FR", "IT", "ES", "PT", "GR", "TR", "JP", "KR", "TW", "IN"),
        *("IL", "EG"),
    }
)
"""Labels whose cases print conventional (US) units; every other label prints SI units."""


@dataclass(frozen=True, slots=True)
class Scaffold:
    """The translated words of a case's user message."""

    request: str
    age: str
    """Format with ``{age}``."""
    sex: str
    """Format with ``{sex}`` (one of ``female`` / ``male``)."""
    female: str
    male: str
    header: tuple[str, str, str, str]
    """Analyte, result, unit, reference range."""


LANGUAGES: Final[Mapping[str, Scaffold]] = MappingProxyType(
    {
        "en": Scaffold(
            "Request",
            "Age: {age} years",
            "Sex: {sex}",
            "female",
            "male",
            ("Analyte", "Result", "Unit", "Reference range"),
        ),
        "de": Scaffold(
            "Anforderung",
            "Alter: {age} Jahre",
            "Geschlecht: {sex}",
            "weiblich",
            "männlich",
            ("Analyt", "Ergebnis", "Einheit", "Referenzbereich"),
        ),
        "es": Scaffold(
            "Solicitud",
            "Edad: {age} años",
            "Sexo: {sex}",
            "femenino",
            "masculino",
            ("Analito", "Resultado", "Unidad", "Intervalo de referencia"),
        ),
        "fr": Scaffold(
            "Demande",
            "Âge : {age} ans",
            "Sexe : {sex}",
            "féminin",
            "masculin",
            ("Analyte", "Résultat", "Unité", "Valeurs de référence"),
        ),
        "it": Scaffold(
            "Richiesta",
            "Età: {age} anni",
            "Sesso: {sex}",
            "femminile",
            "maschile",
            ("Analita", "Risultato", "Unità", "Intervallo di riferimento"),
        ),
        "pt": Scaffold(
            "Pedido",
            "Idade: {age} anos",
            "Sexo: {sex}",
            "feminino",
            "masculino",
            ("Analito", "Resultado", "Unidade", "Valores de referência"),
        ),
        "tr": Scaffold(
            "İstek",
            "Yaş: {age}",
            "Cinsiyet: {sex}",
            "kadın",
            "erkek",
            ("Tetkik", "Sonuç", "Birim", "Referans aralığı"),
        ),
        "ar": Scaffold(
            "الطلب",
            "العمر: {age} سنة",
            "الجنس: {sex}",
            "أنثى",
            "ذكر",
            ("التحليل", "النتيجة", "الوحدة", "المعدل المرجعي"),
        ),
        "zh": Scaffold(
            "申请",
            "年龄：{age} 岁",
            "性别：{sex}",
            "女",
            "男",
            ("检验项目", "结果", "单位", "参考范围"),
        ),
    }
)
"""Languages a case is rendered in (English plus the seed's eight planned subcohort languages)."""


@dataclass(frozen=True, slots=True)
class SiUnit:
    """How one analyte prints in SI: unit, factor (SI = conventional × factor, plus ``offset``
    for the one affine conversion, HbA1c), decimals printed."""

    unit: str
    factor: float
    decimals: int
    offset: float = 0.0

    def convert(self, x: float) -> float:
        return x * self.factor + self.offset


def _si(unit: str, factor: float, decimals: int, offset: float = 0.0) -> SiUnit:
    return SiUnit(unit, factor, decimals, offset)


SI: Final[Mapping[str, SiUnit]] = MappingProxyType(
    {
        "hb": _si("g/L", 10.0, 0),
        "rbc": _si("10^12/L", 1.0, 2),
        "mchc": _si("g/L", 10.0, 0),
        "ferritin": _si("ug/L", 1.0, 0),
        "iron": _si("umol/L", 0.1791, 1),
        "tibc": _si("umol/L", 0.1791, 0),
        "b12": _si("pmol/L", 0.7378, 0),
        "folate": _si("nmol/L", 2.266, 1),
        "haptoglobin": _si("g/L", 0.01, 2),
        "wbc": _si("10^9/L", 1.0, 1),
        "lymph_abs": _si("10^9/L", 1.0, 1),
        "plt": _si("10^9/L", 1.0, 0),
        "ft4": _si("pmol/L", 12.87, 1),
        "ft3": _si("pmol/L", 1.536, 1),
        "glucose": _si("mmol/L", 0.0555, 1),
        "hba1c": _si("mmol/mol", 10.929, 0, -2.15 * 10.929),
        "insulin": _si("pmol/L", 6.0, 0),
        "tc": _si("mmol/L", 0.02586, 2),
        "ldl": _si("mmol/L", 0.02586, 2),
        "hdl": _si("mmol/L", 0.02586, 2),
        "non_hdl": _si("mmol/L", 0.02586, 2),
        "tg": _si("mmol/L", 0.01129, 2),
        "apob": _si("g/L", 0.01, 2),
        "tbil": _si("umol/L", 17.1, 0),
        "dbil": _si("umol/L", 17.1, 0),
        "ibil": _si("umol/L", 17.1, 0),
        "albumin": _si("g/L", 10.0, 0),
        "creatinine": _si("umol/L", 88.4, 0),
        "urea": _si("mmol/L", 0.1665, 1),
        "phosphate": _si("mmol/L", 0.3229, 2),
        "acr": _si("mg/mmol", 0.113, 1),
        "uric_acid": _si("umol/L", 59.48, 0),
        "vitd": _si("nmol/L", 2.496, 0),
        "pth": _si("pmol/L", 0.106, 1),
        "calcium": _si("mmol/L", 0.2495, 2),
        "magnesium": _si("mmol/L", 0.4114, 2),
        "crp": _si("mg/L", 10.0, 1),
        "c3": _si("g/L", 0.01, 2),
        "c4": _si("g/L", 0.01, 2),
        "testosterone": _si("nmol/L", 0.03467, 1),
        "free_testosterone": _si("pmol/L", 3.467, 0),
        "dheas": _si("umol/L", 0.02714, 1),
        "prolactin": _si("ug/L", 1.0, 1),
        "ohp17": _si("nmol/L", 3.026, 1),
        "amh": _si("pmol/L", 7.14, 1),
        "lh": _si("IU/L", 1.0, 1),
        "fsh": _si("IU/L", 1.0, 1),
    }
)
"""Analytes whose SI form differs from the conventional one (every other prints as stored)."""


@dataclass(frozen=True, slots=True)
class Locale:
    """How one label renders: CLDR language, rendered language, decimal symbol, unit system."""

    label: str
    cldr_language: str
    language: str
    decimal: str
    units: str
    """``"conventional"`` or ``"SI"``."""


def locale_of(label: str) -> Locale:
    """The rendering of ``label``; an unknown label or ``ZZ`` renders as today (English, ".",
    conventional units), so curated cases (``ZZ``) are unchanged."""
    if label == UNKNOWN_LABEL or label not in CLDR_LOCALE:
        return Locale(label, "en", "en", ".", "conventional")
    lang, dec = CLDR_LOCALE[label]
    units = "conventional" if label in CONVENTIONAL_LABELS else "SI"
    return Locale(label, lang, lang if lang in LANGUAGES else "en", dec, units)


def _num(text: str, loc: Locale) -> str:
    return text.replace(".", loc.decimal) if loc.decimal != "." else text


def fmt_value(x: float) -> str:
    """A stored value as the prompt has always printed it (``%g``)."""
    return f"{x:g}"


_BOUND = re.compile(r"-?\d+(?:\.\d+)?")


def _convert_ref(ref: str, si: SiUnit) -> str:
    if ":" in ref:  # a titre ("<1:80") has no SI form
        return ref

    def one(m: re.Match[str]) -> str:
        return f"{si.convert(float(m.group(0))):.{si.decimals}f}"

    # Ranges are "a-b": the "-" between two numbers is the separator, not a sign.
    parts = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*", ref)
    if parts:
        lo, hi = (float(parts.group(i)) for i in (1, 2))
        return f"{si.convert(lo):.{si.decimals}f}-{si.convert(hi):.{si.decimals}f}"
    return _BOUND.sub(one, ref)


@dataclass(frozen=True, slots=True)
class RenderedRow:
    """One printed row: analyte name, value, unit and reference range, as the engine sees it."""

    analyte: str
    value: str
    unit: str
    ref: str


def render_row(row: PanelRow, loc: Locale) -> RenderedRow:
    """``row`` printed for ``loc`` (see the module docstring)."""
    si = SI.get(row.code) if loc.units == "SI" else None
    a = ANALYTES.get(row.code)
    if si is not None and a is not None and row.unit == a.unit:
        value = f"{si.convert(row.value):.{si.decimals}f}"
        return RenderedRow(
            row.analyte, _num(value, loc), si.unit, _num(_convert_ref(row.ref, si), loc)
        )
    return RenderedRow(row.analyte, _num(fmt_value(row.value), loc), row.unit, _num(row.ref, loc))


def render_rows(case: Case) -> tuple[RenderedRow, ...]:
    """Every row of ``case`` printed for its label."""
    loc = locale_of(case.label)
    return tuple(render_row(r, loc) for r in case.panel)


def scaffold(case: Case) -> Scaffold:
    """The message scaffold in the case's rendered language."""
    return LANGUAGES[locale_of(case.label).language]


def parse_number(text: str, loc: Locale) -> float:
    """A printed number back to a float (the locale's decimal symbol; no grouping is printed).

    Raises:
        ValueError: Not a number in that locale.
    """
    t = text.strip()
    if loc.decimal != ".":
        if "." in t:
            raise ValueError(f"{text!r}: a '.' in a locale whose decimal symbol is {loc.decimal!r}")
        t = t.replace(loc.decimal, ".")
    return float(t)


def to_conventional(code: str, value: float, unit: str) -> float:
    """A printed value back in the stored conventional unit (``unit`` = the printed one)."""
    si = SI.get(code)
    if si is not None and unit == si.unit and unit != ANALYTES[code].unit:
        return (value - si.offset) / si.factor
    return value
