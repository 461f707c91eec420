"""Grade one bloodpanel response under a scoring profile (weights exactly as pre-registered).

composite = 0.35·structural + 0.55·clinical + latency, where
structural = 0.40·sections/7 + 0.60·subsections/16,
clinical = 0.70·keyword recall + 0.20·scoring-system recall + 0.10·[differential sums to 90-110]
− trap penalty (0.10 per fired flag, at most 0.30; clinical floored at 0), and
latency = 0.10 below 20 s, 0.05 below 40 s, else 0.

Two profiles share the weights and differ in how text is read:

* ``kantesti-v11`` reproduces the published V11 scorer bit for bit so its numbers can be checked:
  lower-case substring tests over titles, subtitles and items; the probability sum is every
  ``N%`` in the items of ``risk_factors/risk_factors_probabilities_of_diseases``; case scores
  rounded to 3 decimals. On the published responses it gives 0.9522, not the printed 0.9912.
* ``sealed`` (ours, the default) reads items only, with word boundaries, synonyms, British and
  American spellings and the negation/probability rule of ``matching`` (see its docstring and
  ``data/bloodpanel/SEALED_RULE.md``). The differential comes from the structured
  ``differential`` field when present, else from differential lines (``Label: N%``) of the
  probabilities subsection, else from differential lines anywhere in ``risk_factors``.
  Scores are not rounded.

Both profiles give an errored case (no response, or ``{"error": ...}``) composite 0 with
``status="error"``; aggregates report it (``n_error``) instead of dropping it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, NamedTuple

import yaml

from sealedeval import yamlio
from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.cases import Case, cases_by_id, load_curated
from sealedeval.suites.bloodpanel.layout import (
    DIFFERENTIAL_SUBSECTION,
    SECTION_CODES,
    SECTION_TITLES,
    SUBSECTION_CODES,
    SUBSECTION_TITLES,
)
from sealedeval.suites.bloodpanel.matching import (
    Document,
    Polarity,
    names_condition,
    normalize,
    parse_entries,
    parse_probability,
)

Profile = Literal["kantesti-v11", "sealed", "kantesti-su"]
PROFILES: Final[tuple[Profile, ...]] = ("kantesti-v11", "sealed")
"""The profiles every graded row is scored under."""
REGRADE_PROFILES: Final[tuple[Profile, ...]] = (*PROFILES, "kantesti-su")
"""Also ``kantesti-su``: the published second update's scorer, for regrading its run files."""
GRADER_VERSION: Final = {"kantesti-v11": "1", "sealed": "2", "kantesti-su": "1"}
"""Bumped whenever a profile's behaviour changes; every graded row names grader and version."""

W_STRUCTURAL, W_CLINICAL = 0.35, 0.55
W_SECTIONS, W_SUBSECTIONS = 0.40, 0.60
W_KEYWORDS, W_SCORING, W_PROBABILITY = 0.70, 0.20, 0.10
TRAP_PENALTY_PER_FLAG, TRAP_PENALTY_CAP = 0.10, 0.30
PROB_RANGE: Final = (90.0, 110.0)
LATENCY_FULL_S, LATENCY_HALF_S = 20.0, 40.0
LATENCY_FULL, LATENCY_HALF = 0.10, 0.05


def grader_name(profile: Profile) -> str:
    """``bloodpanel/<profile>@<version>``: what every graded row records as its grader."""
    return f"bloodpanel/{profile}@{GRADER_VERSION[profile]}"


_V11_PERCENT: Final = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%")


class Subsection(NamedTuple):
    """One subsection of a normalised report (a NamedTuple: built 16 times per graded case)."""

    code: str
    title: str
    items: tuple[str, ...]


class Section(NamedTuple):
    """One section of a normalised report."""

    code: str
    title: str
    subsections: tuple[Subsection, ...]


@dataclass(frozen=True, slots=True)
class Report:
    """A response in one shape, whatever shape the engine used.

    ``differential`` holds the structured ``(condition, probability %)`` pairs with a numeric
    probability (what the sum reads), empty when the response had none; ``stated`` every
    structured pair, a probability word ("high", "baja") at its nominal value (what the
    assertion rule reads).
    """

    sections: tuple[Section, ...]
    differential: tuple[tuple[str, float], ...] = ()
    stated: tuple[tuple[str, float], ...] = ()


_new_tuple: Final = tuple.__new__


def _item_text(it: Any) -> str:
    # As V11: a dict item contributes its "item" field, anything else its str().
    return str(it.get("item", "")) if isinstance(it, dict) else str(it)


def _items(raw: Any) -> tuple[str, ...]:
    """Item texts of a subsection (a list of strings, of ``{"item": ...}``, or one value)."""
    if not isinstance(raw, list):
        return (_item_text(raw),)
    items = tuple(raw)
    for it in items:
        if not isinstance(it, str):
            return tuple(_item_text(x) for x in raw)
    return items  # the schema's shape (all strings): no per-item work


def _as_float(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, str):
        m = re.fullmatch(r"\s*(\d+(?:[.,]\d+)?)\s*%?\s*", x)
        return float(m.group(1).replace(",", ".")) if m else None
    return None


def _differential(
    resp: Mapping[str, Any],
) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]]:
    """(numeric pairs, every pair) of the structured ``differential`` field (see ``Report``)."""
    raw = resp.get("differential")
    if not isinstance(raw, list):
        return (), ()
    parsed: list[tuple[str, float, bool]] = []
    for d in raw:
        if not isinstance(d, dict):
            continue
        name = d.get("condition") or d.get("diagnosis") or d.get("name")
        p = parse_probability(d.get("probability"))
        if isinstance(name, str) and name.strip() and p is not None:
            parsed.append((name.strip(), p[0], p[1]))
    numeric = [p for _, p, num in parsed if num]
    # Probabilities given as fractions (all <= 1, summing to about 1) are read as fractions.
    if numeric and all(p <= 1.0 for p in numeric) and 0.9 <= sum(numeric) <= 1.1:
        parsed = [(c, p * 100.0 if num else p, num) for c, p, num in parsed]
    return (
        tuple((c, p) for c, p, num in parsed if num),
        tuple((c, p) for c, p, _ in parsed),
    )


def normalize_response(resp: Mapping[str, Any]) -> Report:
    """Read either response shape into a ``Report``.

    Shapes: the V11 list form ``{"sections": [{title, shortcode, subsections: [{subtitle,
    shortcode, items: [{item}]}]}]}`` (the published engine), or our keyed form
    ``{"introduction": {"introduction_summary": ["…"], …}, …, "differential": [{condition,
    probability}]}`` (``prompts.REPORT_JSON_SCHEMA``; titles are then taken from ``layout``).
    Malformed parts are skipped, never raised on: a malformed answer scores low, it does not
    crash the run.
    """
    sections: list[Section] = []
    raw_sections = resp.get("sections")
    if isinstance(raw_sections, list):
        for s in raw_sections:
            if not isinstance(s, dict):
                continue
            subs = []
            for sub in s.get("subsections") or []:
                if isinstance(sub, dict):
                    items = _items(sub.get("items") or [])
                    subs.append(
                        Subsection(str(sub.get("shortcode")), str(sub.get("subtitle", "")), items)
                    )
            sections.append(Section(str(s.get("shortcode")), str(s.get("title", "")), tuple(subs)))
    else:
        # The keyed shape is what every schema-constrained engine and the reference engine
        # write (100,000 times in the full profile): tuples are built with ``tuple.__new__``,
        # which is what the NamedTuple constructors do, minus a Python frame per subsection.
        for code in SECTION_CODES:
            body = resp.get(code)
            if not isinstance(body, dict):
                continue
            subs = [
                _new_tuple(
                    Subsection,
                    (
                        sub_code if type(sub_code) is str else str(sub_code),
                        SUBSECTION_TITLES.get(str(sub_code), ""),
                        _items(items_raw),
                    ),
                )
                for sub_code, items_raw in body.items()
            ]
            sections.append(_new_tuple(Section, (code, SECTION_TITLES[code], tuple(subs))))
    return Report(tuple(sections), *_differential(resp))


@dataclass(frozen=True, slots=True)
class CaseScore:
    """Score of one response. Fractions are counts out of the case's totals."""

    case_uid: str
    case_id: str
    profile: str
    grader: str
    status: Literal["ok", "error"]
    composite: float
    structural: float
    clinical: float
    latency: float
    latency_s: float | None
    sections_hit: int
    subsections_hit: int
    keywords_hit: int
    keywords_total: int
    scoring_hit: int
    scoring_total: int
    prob_sum: float
    prob_valid: bool
    trap_flags_hit: tuple[str, ...]
    trap_penalty: float
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        """JSON-serialisable flat row (``details`` as a canonical JSON string)."""
        rec = asdict(self)
        rec["trap_flags_hit"] = list(self.trap_flags_hit)
        rec["details"] = json.dumps(
            self.details, sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
        return rec


def latency_points(latency_s: float | None) -> float:
    """0.10 below 20 s, 0.05 below 40 s, else (or unknown) 0."""
    if latency_s is None or not math.isfinite(latency_s):
        return 0.0
    if latency_s < LATENCY_FULL_S:
        return LATENCY_FULL
    if latency_s < LATENCY_HALF_S:
        return LATENCY_HALF
    return 0.0


def _structure(report: Report) -> tuple[int, int, float]:
    sec_codes = {s.code for s in report.sections}
    sub_codes = {sub.code for s in report.sections for sub in s.subsections}
    sec_hits = sum(1 for c in SECTION_CODES if c in sec_codes)
    sub_hits = sum(1 for c in SUBSECTION_CODES if c in sub_codes)
    structural = (sec_hits / len(SECTION_CODES)) * W_SECTIONS + (
        sub_hits / len(SUBSECTION_CODES)
    ) * W_SUBSECTIONS
    return sec_hits, sub_hits, structural


def _clinical(kw: float, ss: float, prob_ok: bool, penalty: float) -> float:
    raw = kw * W_KEYWORDS + ss * W_SCORING + (W_PROBABILITY if prob_ok else 0.0)
    return max(0.0, raw - penalty)


def _penalty(n_flags: int) -> float:
    return min(TRAP_PENALTY_CAP, TRAP_PENALTY_PER_FLAG * n_flags)


def _error_score(case: Case, profile: Profile, latency_s: float | None, why: str) -> CaseScore:
    return CaseScore(
        case.case_uid,
        case.case_id,
        profile,
        grader_name(profile),
        "error",
        0.0,
        0.0,
        0.0,
        0.0,
        latency_s,
        0,
        0,
        0,
        len(case.expected_keywords),
        0,
        len(case.expected_scoring_systems),
        0.0,
        False,
        (),
        0.0,
        {"error": why},
    )


def _grade_v11(case: Case, report: Report, latency_s: float | None) -> CaseScore:
    text = v11_text(report)
    sec_hits, sub_hits, structural = _structure(report)
    prob_sum = 0.0
    for s in report.sections:
        if s.code != "risk_factors":
            continue
        for sub in s.subsections:
            if sub.code == DIFFERENTIAL_SUBSECTION:
                for it in sub.items:
                    prob_sum += sum(float(x) for x in _V11_PERCENT.findall(it))
    prob_ok = PROB_RANGE[0] <= prob_sum <= PROB_RANGE[1]
    kws, sss = case.expected_keywords, case.expected_scoring_systems
    kw_hits = sum(1 for k in kws if k.lower() in text)
    ss_hits = sum(1 for k in sss if k.lower() in text)
    kw = kw_hits / max(1, len(kws))
    ss = ss_hits / max(1, len(sss)) if sss else 1.0
    flags = tuple(f for f in case.trap_flags if f.lower() in text)
    penalty = _penalty(len(flags))
    clinical = _clinical(kw, ss, prob_ok, penalty)
    lat = latency_points(latency_s)
    composite = structural * W_STRUCTURAL + clinical * W_CLINICAL + lat
    return CaseScore(
        case.case_uid,
        case.case_id,
        "kantesti-v11",
        grader_name("kantesti-v11"),
        "ok",
        round(composite, 3),
        round(structural, 3),
        round(clinical, 3),
        lat,
        latency_s,
        sec_hits,
        sub_hits,
        kw_hits,
        len(kws),
        ss_hits,
        len(sss),
        round(prob_sum, 1),
        prob_ok,
        flags,
        round(penalty, 3),
        {
            "missed_keywords": [k for k in kws if k.lower() not in text],
            "missed_scoring_systems": [k for k in sss if k.lower() not in text],
        },
    )


def _entries(items: Sequence[str]) -> list[tuple[str, float]]:
    return [e for it in items for e in parse_entries(normalize(it))]


NAMED_SHARE_MIN: Final = 0.5
"""Share of a differential's stated probability that must sit on entries naming a condition."""


def names_conditions(entries: Sequence[tuple[str, float]]) -> bool:
    """A differential names conditions: entries that name one (``matching.names_condition``)
    carry at least ``NAMED_SHARE_MIN`` of its stated probability, so "NAFLD 70%, other 30%"
    counts and "Hematology — primary signal: 76%, secondary pattern: 14%, other factors: 6%,
    incidental findings: 4%" (the published second update's differentials) does not, although
    it sums to 100. The sealed profile's 90-110 check counts only such a differential."""
    total = sum(p for _, p in entries)
    named = sum(p for c, p in entries if names_condition(c))
    return total > 0 and named >= NAMED_SHARE_MIN * total


def sealed_differential(report: Report) -> tuple[str, list[tuple[str, float]]]:
    """``(source, [(condition, probability %)])`` of the differential the sealed profile reads.

    Precedence: the structured ``differential`` field; else differential lines in the
    ``risk_factors_probabilities_of_diseases`` subsection (wherever it sits); else differential
    lines in any subsection of ``risk_factors`` (engines do mislabel subsections — the published
    PCOS and SLE answers put their differential under ``risk_factors_severity_probabilities``;
    the structural score already charges for the missing subsection, the differential is still
    read). ``("none", [])`` when there is none.
    """
    if report.differential:
        return "differential", list(report.differential)
    designated = [
        it
        for s in report.sections
        for sub in s.subsections
        if sub.code == DIFFERENTIAL_SUBSECTION
        for it in sub.items
    ]
    entries = _entries(designated)
    if entries:
        return DIFFERENTIAL_SUBSECTION, entries
    for s in report.sections:
        if s.code != "risk_factors":
            continue
        for sub in s.subsections:
            entries = _entries(sub.items)
            if entries:
                return sub.code, entries
    return "none", []


def sealed_document(report: Report) -> Document:
    """The ``Document`` the sealed profile reads a report through (items and differential)."""
    items = [it for s in report.sections for sub in s.subsections for it in sub.items]
    return Document(items, report.stated or report.differential)


def v11_text(report: Report) -> str:
    """The text V11's substring tests run on: titles, subtitles and items, lower-cased."""
    buf: list[str] = []
    for s in report.sections:
        buf.append(s.title)
        for sub in s.subsections:
            buf.append(sub.title)
            buf.extend(sub.items)
    return "\n".join(buf).lower()


def flags_fired(response: Mapping[str, Any], flags: Sequence[str], profile: Profile) -> list[bool]:
    """Whether each of ``flags`` fires on ``response`` under ``profile``, exactly as grading
    decides it (the assertion battery measures the detector through this function)."""
    if profile == "kantesti-su":
        text = _su_flatten(response.get("sections") or [])
        return [f.lower() in text for f in flags]
    report = normalize_response(response)
    if profile == "kantesti-v11":
        text = v11_text(report)
        return [f.lower() in text for f in flags]
    doc = sealed_document(report)
    return [st is Polarity.AFFIRMED for st in doc.statuses(flags)]


def _grade_sealed(case: Case, report: Report, latency_s: float | None, explain: bool) -> CaseScore:
    doc = sealed_document(report)
    sec_hits, sub_hits, structural = _structure(report)
    source, entries = sealed_differential(report)
    prob_sum = sum(p for _, p in entries)
    named = bool(entries) and names_conditions(entries)
    prob_ok = named and PROB_RANGE[0] <= prob_sum <= PROB_RANGE[1]
    kws, sss = case.expected_keywords, case.expected_scoring_systems
    # The whole answer key in one call (``Document.statuses`` memoises by term and line).
    found = doc.statuses((*kws, *sss, *case.trap_flags))
    nk, ns = len(kws), len(sss)
    kw_status = dict(zip(kws, found[:nk], strict=True))
    ss_status = dict(zip(sss, found[nk : nk + ns], strict=True))
    fl_status = dict(zip(case.trap_flags, found[nk + ns :], strict=True))
    kw_hits = sum(1 for st in kw_status.values() if st is not None and st <= Polarity.HYPOTHETICAL)
    ss_hits = sum(1 for st in ss_status.values() if st is not None and st <= Polarity.HYPOTHETICAL)
    flags = tuple(f for f, st in fl_status.items() if st is Polarity.AFFIRMED)
    kw = kw_hits / max(1, len(kws))
    ss = ss_hits / max(1, len(sss)) if sss else 1.0
    penalty = _penalty(len(flags))
    clinical = _clinical(kw, ss, prob_ok, penalty)
    lat = latency_points(latency_s)
    composite = structural * W_STRUCTURAL + clinical * W_CLINICAL + lat

    def name(st: Polarity | None) -> str:
        return "absent" if st is None else st.name.lower()

    details: dict[str, Any] = {
        "missed_keywords": [
            k for k, st in kw_status.items() if st is None or st > Polarity.HYPOTHETICAL
        ],
        "missed_scoring_systems": [
            k for k, st in ss_status.items() if st is None or st > Polarity.HYPOTHETICAL
        ],
        "prob_source": source,
        "prob_named": named,
    }
    if explain:
        details["keywords"] = {k: name(st) for k, st in kw_status.items()}
        details["scoring_systems"] = {k: name(st) for k, st in ss_status.items()}
        details["evidence"] = {
            k: next(
                (m.snippet[:240] for m in doc.mentions(k) if m.polarity <= Polarity.HYPOTHETICAL),
                "",
            )
            for k in (*kws, *sss)
        }
        details["prob_entries"] = [[c, p] for c, p in entries]
        flags_detail: dict[str, Any] = {}
        for f, st in fl_status.items():
            counts: dict[str, int] = {}
            examples: dict[str, str] = {}
            for m in doc.mentions(f):
                kind = m.polarity.name.lower()
                counts[kind] = counts.get(kind, 0) + 1
                examples.setdefault(kind, m.snippet)
            flags_detail[f] = {"status": name(st), "counts": counts, "examples": examples}
        details["flags"] = flags_detail
    return CaseScore(
        case.case_uid,
        case.case_id,
        "sealed",
        grader_name("sealed"),
        "ok",
        composite,
        structural,
        clinical,
        lat,
        latency_s,
        sec_hits,
        sub_hits,
        kw_hits,
        len(kws),
        ss_hits,
        len(sss),
        prob_sum,
        prob_ok,
        flags,
        penalty,
        details,
    )


# --- kantesti-su: the published second update's scorer ------------------------------------------

SU_SUBSECTIONS: Final = MappingProxyType(
    {
        "introduction": ("introduction_summary", "introduction_purpose"),
        "overall_health_assessment": (
            "overall_health_overview",
            "overall_health_strengths",
            "overall_health_concerns",
        ),
        "detailed_health_analysis": (
            "detailed_findings",
            "detailed_correlations",
            "detailed_severity",
        ),
        "risk_factors": ("risk_short_term", "risk_long_term"),
        "recommendations": ("recommendations_lifestyle", "recommendations_followup"),
        "further_evaluation": ("further_tests", "further_specialists"),
        "conclusion": ("conclusion_summary", "conclusion_disclaimer"),
    }
)
"""The second update's ``MANDATORY_SUBSECTION_SHORTCODES`` (benchmark_bloodtest.py at
emirhanai/kantesti-blood-test-benchmark a46f9f7, MIT): 16 shortcodes, but not V11's — its
README calls the rubric "byte-identical" to V11, its code is not. Its own published responses
use V11's shortcodes, so this list finds 3 of their 16 subsections."""
SU_SUBSECTION_CODES: Final = tuple(c for subs in SU_SUBSECTIONS.values() for c in subs)


def _su_flatten(value: Any) -> str:
    """The second update's ``_flatten_text``: every value of the nested response, lower-cased,
    joined by spaces (shortcodes and titles included)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, (int, float, bool)):
        return str(value).lower()
    if isinstance(value, list):
        return " ".join(_su_flatten(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_su_flatten(v) for v in value.values())
    return str(value).lower()


def _grade_su(case: Case, resp: Mapping[str, Any], latency_s: float | None) -> CaseScore:
    """The second update's ``score_case``, reproduced: its subsection list; the probability sum
    is every numeric ``probability`` field of an item (valid when in [90, 110] *or when there is
    none*); keyword and scoring-system recall 1.0 when the case lists none; the trap penalty
    only on trap cases; structural, clinical and composite rounded to 4 decimals."""
    raw = resp.get("sections")
    sections = [x for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []
    sec_codes = {str(x.get("shortcode") or "").lower() for x in sections}
    sub_codes: set[str] = set()
    prob_sum = 0.0
    for x in sections:
        for sub in x.get("subsections") or []:
            if not isinstance(sub, dict):
                continue
            code = str(sub.get("shortcode") or "").lower()
            if code:
                sub_codes.add(code)
            for it in sub.get("items") or []:
                p = it.get("probability") if isinstance(it, dict) else None
                if isinstance(p, (int, float)) and not isinstance(p, bool):
                    prob_sum += float(p)
    sec_hits = sum(1 for c in SECTION_CODES if c in sec_codes)
    sub_hits = sum(1 for c in SU_SUBSECTION_CODES if c in sub_codes)
    structural = round(
        W_SECTIONS * sec_hits / len(SECTION_CODES)
        + W_SUBSECTIONS * sub_hits / len(SU_SUBSECTION_CODES),
        4,
    )
    prob_ok = PROB_RANGE[0] <= prob_sum <= PROB_RANGE[1] if prob_sum > 0 else True
    text = _su_flatten(raw if raw is not None else [])
    kws, sss = case.expected_keywords, case.expected_scoring_systems
    kw_hits = sum(1 for k in kws if k.lower() in text)
    ss_hits = sum(1 for k in sss if k.lower() in text)
    kw = kw_hits / len(kws) if kws else 1.0
    ss = ss_hits / len(sss) if sss else 1.0
    score = W_KEYWORDS * kw + W_SCORING * ss + W_PROBABILITY * (1.0 if prob_ok else 0.0)
    flags: tuple[str, ...] = ()
    penalty = 0.0
    if case.is_trap and case.trap_flags:
        flags = tuple(f for f in case.trap_flags if f.lower() in text)
        penalty = _penalty(len(flags))
        score = max(0.0, score - penalty)
    clinical = round(score, 4)
    lat = latency_points(latency_s)
    composite = round(W_STRUCTURAL * structural + W_CLINICAL * clinical + lat, 4)
    return CaseScore(
        case.case_uid,
        case.case_id,
        "kantesti-su",
        grader_name("kantesti-su"),
        "ok",
        composite,
        structural,
        clinical,
        lat,
        latency_s,
        sec_hits,
        sub_hits,
        kw_hits,
        len(kws),
        ss_hits,
        len(sss),
        round(prob_sum, 1),
        prob_ok,
        flags,
        round(penalty, 2),
        {
            "missed_keywords": [k for k in kws if k.lower() not in text],
            "missed_scoring_systems": [k for k in sss if k.lower() not in text],
        },
    )


def grade_case(
    case: Case,
    response: Mapping[str, Any] | None,
    latency_s: float | None,
    profile: Profile = "sealed",
    *,
    explain: bool = False,
) -> CaseScore:
    """Grade one response to ``case``.

    Args:
        case: The case (its answer key is used, never shown to the engine).
        response: The parsed JSON answer, in either shape ``normalize_response`` reads; None or
            ``{"error": ...}`` marks an errored call.
        latency_s: Measured seconds for the latency component; None scores 0 latency.
        profile: ``"sealed"`` (default) or ``"kantesti-v11"``.
        explain: Sealed profile only: add per-term statuses and flag snippets to ``details``
            (slower; for reports, not for the 100k run).

    Raises:
        ValueError: Unknown profile.
    """
    if profile not in REGRADE_PROFILES:
        known = ", ".join(REGRADE_PROFILES)
        raise ValueError(f"unknown bloodpanel profile {profile!r} (known: {known})")
    if not isinstance(response, Mapping) or response.get("error"):
        why = (
            "no response"
            if response is None
            else str(
                response.get("error_message") or response.get("error")
                if isinstance(response, Mapping)
                else "response is not a JSON object"
            )
        )
        return _error_score(case, profile, latency_s, why)
    if profile == "kantesti-su":
        return _grade_su(case, response, latency_s)
    report = normalize_response(response)
    if profile == "kantesti-v11":
        return _grade_v11(case, report, latency_s)
    return _grade_sealed(case, report, latency_s, explain)


def aggregate(scores: Sequence[CaseScore]) -> dict[str, Any]:
    """Means over completed cases, with the error count beside them and a lower bound.

    ``composite_errors_as_zero`` scores errored cases 0 (a lower bound); ``complete`` is False
    while any case errored. Means are ``nan`` when no case completed.
    """
    ok = [s for s in scores if s.status == "ok"]
    n_ok = len(ok)

    def mean(xs: Sequence[float]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    return {
        "n": len(scores),
        "n_ok": n_ok,
        "n_error": len(scores) - n_ok,
        "complete": n_ok == len(scores),
        "composite": mean([s.composite for s in ok]),
        "structural": mean([s.structural for s in ok]),
        "clinical": mean([s.clinical for s in ok]),
        "latency": mean([s.latency for s in ok]),
        "composite_errors_as_zero": mean(
            [s.composite if s.status == "ok" else 0.0 for s in scores]
        ),
        "trap_flags_fired": sum(len(s.trap_flags_hit) for s in ok),
    }


def default_curated_path() -> Path:
    """``data/bloodpanel/curated.yaml`` of the source checkout this module was imported from.

    Raises:
        UserError: Not running from a checkout (e.g. an installed wheel): pass the path.
    """
    path = Path(__file__).resolve().parents[4] / "data" / "bloodpanel" / "curated.yaml"
    if not path.is_file():
        raise UserError(f"{path}: curated cases not found; pass the curated.yaml path explicitly")
    return path


KEY_SCHEMA: Final = "bloodpanel-answer-key/1"
_KEY_FIELDS: Final = frozenset(
    {
        "expected_keywords",
        "expected_scoring_systems",
        "trap_flags",
        "hyperdiagnosis_flags",
        "is_trap",
        "category",
        "specialty",
        "title",
        "label",
    }
)


def _str_list(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        raise UserError(f"{where}: expected a list of non-empty strings")
    return tuple(x.strip() for x in raw)


def load_key(path: str | Path) -> dict[str, Case]:
    """An answer key for a run whose cases are not ours (YAML or JSON).

    ``{schema: bloodpanel-answer-key/1, cases: {CASE_ID: {expected_keywords: [...],
    expected_scoring_systems: [...], trap_flags: [...], is_trap?, category?, specialty?,
    title?, label?}}}``; ``hyperdiagnosis_flags`` is accepted for ``trap_flags`` (the published
    harness's name); ``is_trap`` defaults to having flags. A key case has no panel: the rubric
    reads only its answer key.

    Raises:
        UserError: Unreadable file, wrong schema, an unknown field or a malformed value (the
            message names the file and the case id).
    """
    p = Path(path)
    try:
        doc = yamlio.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: answer key not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: cannot read answer key ({type(e).__name__}: {e})") from None
    except yaml.YAMLError as e:
        raise UserError(f"{p}: invalid YAML/JSON ({' '.join(str(e).split())})") from None
    if not isinstance(doc, dict) or doc.get("schema") != KEY_SCHEMA:
        raise UserError(f"{p}: expected schema: {KEY_SCHEMA}")
    raw = doc.get("cases")
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{p}: expected cases: {{CASE_ID: {{expected_keywords: [...], ...}}}}")
    out: dict[str, Case] = {}
    for cid, entry in raw.items():
        where = f"{p}: cases.{cid}"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: expected a mapping")
        unknown = sorted(set(entry) - _KEY_FIELDS)
        if unknown:
            raise UserError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")
        if "trap_flags" in entry and "hyperdiagnosis_flags" in entry:
            raise UserError(f"{where}: give trap_flags or hyperdiagnosis_flags, not both")
        flags = _str_list(
            entry.get("trap_flags", entry.get("hyperdiagnosis_flags")), f"{where}.trap_flags"
        )
        is_trap = entry.get("is_trap", bool(flags))
        if not isinstance(is_trap, bool):
            raise UserError(f"{where}.is_trap: expected true or false")
        category = str(entry.get("category") or ("Trap" if is_trap else ""))
        out[str(cid)] = Case(
            case_uid=str(cid),
            case_id=str(cid),
            label=str(entry.get("label") or "ZZ"),
            specialty=str(entry.get("specialty") or category.lower().replace(" ", "_")),
            age=0,
            sex="female",
            panel=(),
            expected_keywords=_str_list(
                entry.get("expected_keywords"), f"{where}.expected_keywords"
            ),
            expected_scoring_systems=_str_list(
                entry.get("expected_scoring_systems"), f"{where}.expected_scoring_systems"
            ),
            trap_flags=flags,
            is_trap=is_trap,
            archetype="",
            title=str(entry.get("title") or ""),
            v11_category=category,
            source=f"key:{p.name}",
        )
    return out


PUBLISHED_TOLERANCE: Final = 5e-4
"""A regraded case score "differs" from the one the run file printed beyond this (the
published harnesses round to 3 or 4 decimals)."""


def _published(summary: Mapping[str, Any]) -> float | None:
    x = summary.get("composite_score", summary.get("composite"))
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def regrade_kantesti(
    path: str | Path,
    profile: Profile = "kantesti-v11",
    cases: Sequence[Case] | None = None,
    *,
    explain: bool = False,
    key: Mapping[str, Case] | None = None,
    partial: bool = False,
) -> dict[str, Any]:
    """Re-score a published Kantesti run file, V11 or second update (100k).

    Both are ``{engine, suite, version, cases: [{summary, response}]}``; the second update adds
    ``sampled``, ``sample_size``, ``cases_total`` and per-summary fields (title, category,
    country, nationality, its own scores), uses ``KT-…`` ids and other subsection titles. Latency
    comes from each ``summary.elapsed_sec``; the case from ``summary.case_id``, looked up in
    ``key`` (an answer key, ``load_key``) when given, else among ``cases`` (default: the curated
    15). Every unknown id is reported at once; with ``partial`` the known ones are graded and
    the unknown ones listed (``unknown_ids``). A case id given twice is an error. Where the file
    printed its own case scores, ``published_composite`` sits beside each regraded one.

    Returns:
        ``{profile, grader, source, engine, suite, version, format, sampled, sample_size,
        cases_total, partial, unknown_ids, cases: [CaseScore records + engine_path,
        published_composite], aggregate: {composite, …, n, n_ok, n_error}, published: {…} |
        None, per_category}``.

    Raises:
        UserError: Unreadable file, wrong shape, a duplicate case id, or unknown case ids
            without ``partial``.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: run file not found") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{p}: invalid JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise UserError(f"{p}: expected {{engine, suite, version, cases: [...]}}")
    if key is not None:
        by_id: Mapping[str, Case] = key
    else:
        by_id = cases_by_id(cases if cases is not None else load_curated(default_curated_path()))
    entries: list[tuple[int, str, Mapping[str, Any], Any]] = []
    for i, entry in enumerate(doc["cases"]):
        summary = entry.get("summary") if isinstance(entry, dict) else None
        if not isinstance(summary, dict) or "case_id" not in summary:
            raise UserError(f"{p}: cases[{i}]: missing summary.case_id")
        entries.append((i, str(summary["case_id"]), summary, entry.get("response")))
    seen: dict[str, list[int]] = {}
    for i, cid, _, _ in entries:
        seen.setdefault(cid, []).append(i)
    dups = {cid: ix for cid, ix in seen.items() if len(ix) > 1}
    if dups:
        listed = "; ".join(
            f"{cid} at cases[{', '.join(map(str, ix))}]" for cid, ix in sorted(dups.items())
        )
        raise UserError(f"{p}: {len(dups)} duplicate case id(s): {listed}")
    unknown = [cid for _, cid, _, _ in entries if cid not in by_id]
    if unknown and not partial:
        where = "the answer key" if key is not None else "the curated cases (pass --key FILE)"
        raise UserError(
            f"{p}: {len(unknown)} of {len(entries)} case ids not in {where}: "
            f"{', '.join(unknown)} (--partial grades the known ones)"
        )
    scores: list[CaseScore] = []
    records: list[dict[str, Any]] = []
    categories: dict[str, list[CaseScore]] = {}
    published: list[tuple[float, CaseScore]] = []
    for _, cid, summary, response in entries:
        if cid not in by_id:
            continue
        case = by_id[cid]
        elapsed = summary.get("elapsed_sec")
        latency_s = float(elapsed) if isinstance(elapsed, (int, float)) else None
        score = grade_case(case, response, latency_s, profile, explain=explain)
        scores.append(score)
        cat = case.v11_category or str(summary.get("category") or "") or case.specialty
        categories.setdefault(cat, []).append(score)
        pub = _published(summary)
        rec = score.to_record() | {"engine_path": str(summary.get("engine_path", ""))}
        if pub is not None:
            rec["published_composite"] = pub
            if score.status == "ok":
                published.append((pub, score))
        records.append(rec)
    second_update = any(k in doc for k in ("sampled", "sample_size", "cases_total"))
    total = doc.get("cases_total")
    pub_block = None
    if published:
        pub_block = {
            "n": len(published),
            "composite": sum(x for x, _ in published) / len(published),
            "regraded_composite": sum(s.composite for _, s in published) / len(published),
            "n_differ": sum(1 for x, s in published if abs(x - s.composite) > PUBLISHED_TOLERANCE),
            "tolerance": PUBLISHED_TOLERANCE,
        }
    return {
        "profile": profile,
        "grader": grader_name(profile),
        "source": p.name,
        "engine": doc.get("engine"),
        "suite": doc.get("suite"),
        "version": doc.get("version"),
        "format": "kantesti-su" if second_update else "kantesti-v11",
        "sampled": bool(doc.get("sampled", False)),
        "sample_size": doc.get("sample_size"),
        "cases_total": total if isinstance(total, int) else len(entries),
        "key": None if key is None else "answer key",
        "partial": bool(unknown),
        "unknown_ids": unknown,
        "cases": records,
        "aggregate": aggregate(scores),
        "published": pub_block,
        "per_category": {k: aggregate(v) for k, v in categories.items()},
    }
