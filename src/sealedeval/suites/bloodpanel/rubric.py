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
from typing import Any, Final, Literal, NamedTuple

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

Profile = Literal["kantesti-v11", "sealed"]
PROFILES: Final[tuple[Profile, ...]] = ("kantesti-v11", "sealed")
GRADER_VERSION: Final = {"kantesti-v11": "1", "sealed": "2"}
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
    if profile not in PROFILES:
        raise ValueError(f"unknown bloodpanel profile {profile!r} (known: {', '.join(PROFILES)})")
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


def regrade_kantesti(
    path: str | Path,
    profile: Profile = "kantesti-v11",
    cases: Sequence[Case] | None = None,
    *,
    explain: bool = False,
) -> dict[str, Any]:
    """Re-score a published V11 run file ``{engine, suite, version, cases: [{summary, response}]}``.

    Latency comes from each ``summary.elapsed_sec``; the case key from ``summary.case_id``.

    Returns:
        ``{profile, grader, engine, suite, version, cases: [CaseScore records + engine_path],
        aggregate: {composite, structural, clinical, latency, n, n_ok, n_error, …},
        per_category: {V11 category: aggregate}}``.

    Raises:
        UserError: Unreadable file, wrong shape, or a case id not among ``cases``.
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
    by_id = cases_by_id(cases if cases is not None else load_curated(default_curated_path()))
    scores: list[CaseScore] = []
    records: list[dict[str, Any]] = []
    categories: dict[str, list[CaseScore]] = {}
    for i, entry in enumerate(doc["cases"]):
        summary = entry.get("summary") if isinstance(entry, dict) else None
        if not isinstance(summary, dict) or "case_id" not in summary:
            raise UserError(f"{p}: cases[{i}]: missing summary.case_id")
        cid = str(summary["case_id"])
        if cid not in by_id:
            raise UserError(f"{p}: cases[{i}]: unknown case id {cid!r}")
        case = by_id[cid]
        elapsed = summary.get("elapsed_sec")
        latency_s = float(elapsed) if isinstance(elapsed, (int, float)) else None
        score = grade_case(case, entry.get("response"), latency_s, profile, explain=explain)
        scores.append(score)
        categories.setdefault(case.v11_category or case.specialty, []).append(score)
        records.append(score.to_record() | {"engine_path": str(summary.get("engine_path", ""))})
    return {
        "profile": profile,
        "grader": grader_name(profile),
        "source": p.name,
        "engine": doc.get("engine"),
        "suite": doc.get("suite"),
        "version": doc.get("version"),
        "cases": records,
        "aggregate": aggregate(scores),
        "per_category": {k: aggregate(v) for k, v in categories.items()},
    }
