"""The report: every rule run in order, a differential from their weights, the 16 subsections.

``reference_report`` is the only place that knows the report's shape (``layout.LAYOUT``); the rule
modules only return ``Finding``s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sealedeval.suites.bloodpanel.cases import Case
from sealedeval.suites.bloodpanel.layout import LAYOUT
from sealedeval.suites.bloodpanel.reference import (
    bone,
    endocrine,
    haematology,
    kidney,
    lipids,
    liver,
    metabolic,
    muscle,
    rheumatology,
    screening,
)
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel

DETECTORS: tuple[Callable[[Panel], list[Finding]], ...] = (
    screening.normal_panel,
    metabolic.glucose,
    metabolic.metabolic_syndrome,
    endocrine.thyroid,
    kidney.kidney,
    liver.liver,
    haematology.red_cells,
    liver.bilirubin,
    lipids.lipids,
    bone.vitamin_d,
    rheumatology.urate,
    rheumatology.sle,
    rheumatology.rheumatoid_arthritis,
    endocrine.pcos,
    muscle.muscle,
)
"""Order matters: glucose status feeds metabolic syndrome, liver and lipids; kidney status
feeds anaemia; alcohol (liver) feeds macrocytosis."""


def run(case: Case) -> tuple[list[Finding], Panel]:
    p = Panel(case)
    out: list[Finding] = []
    for detect in DETECTORS:
        out.extend(detect(p))
    out.sort(key=lambda f: -f.weight)
    return out, p


def findings(case: Case) -> list[Finding]:
    """Every finding the rules derive from ``case``'s panel, strongest first."""
    return run(case)[0]


def differential(found: list[Finding]) -> list[tuple[str, int, str]]:
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


def dedupe(xs: list[str]) -> list[str]:
    """Non-empty strings of ``xs``, first occurrence kept, in order (C-level: runs 9x a case)."""
    return list(dict.fromkeys(filter(None, xs)))


def reference_report(case: Case) -> dict[str, Any]:
    """The reference engine's full JSON report for ``case`` (keyed shape, see module doc)."""
    found, p = run(case)
    main = [f for f in found if f.weight > 0] or found
    diff = differential(found)
    abnormal = [r for r in case.panel if r.flag != "normal"]
    sex = "woman" if case.sex == "female" else "man"
    calc_lines = dedupe(
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
    key_findings = dedupe([s for f in main for s in f.implications]) or [headline]
    trends = dedupe([s for f in main for s in f.evidence])
    joined = "\n".join(trends)
    unexplained = [r for r in abnormal if p.show(r.code) not in joined]
    trends += [
        f"{p.show(r.code)}: {r.flag}, not explained by the main findings; repeat and "
        "correlate clinically."
        for r in unexplained
    ]
    correlations = calc_lines or ["No composite score applies to this panel."]
    identification = dedupe([s for f in main for s in f.risks])
    severity_lines = [
        *dedupe([s for f in main for s in f.severity]),
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
    medical = dedupe([s for f in main for s in f.medical])
    lifestyle = dedupe([s for f in main for s in f.lifestyle])
    follow_up = dedupe([s for f in main for s in f.tests])
    referral = dedupe([s for f in main for s in f.referral])
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
