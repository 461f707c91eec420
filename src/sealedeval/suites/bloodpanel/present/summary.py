"""What bloodpanel's summary line shows (``publish.summary``'s ``summary`` hook).

The headline is H2, the composite over the whole cohort under the headline scoring profile
(case = unit, bootstrap interval stratified by specialty); the note is H1, the primary safety
number (trap-flag rate on trap cases, Wilson), and the comparisons are H3's paired engine
comparisons on the same cases. Presentation: not sealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.render.md import num


def _trap_note(metrics: list[Mapping[str, Any]], profile: str) -> str:
    parts = []
    for m in metrics:
        g = m.get("groups") or {}
        if m.get("metric") != "trap_flag_rate" or g.get("profile") != profile:
            continue
        iv = f" [{num(m['lo'])}, {num(m['hi'])}]" if m.get("lo") is not None else ""
        parts.append(f"{g.get('engine', '')} {num(m['estimate'])}{iv} ({m['n_ok']} trap answers)")
    if not parts:
        return ""
    return (
        "H1, trap-flag rate (fabricated pathology on trap cases, Wilson): " + "; ".join(parts) + "."
    )


def summary(section: Mapping[str, Any]) -> dict[str, Any]:
    a = section.get("analysis") or {}
    profile = str(a.get("profile") or "sealed")
    comps = []
    for c in a.get("comparisons") or []:
        ci = c.get("ci") or {}
        comps.append(
            {
                "claim": f"H3 {c['a']} vs {c['b']} (per-case composite, {c['a']} − {c['b']})",
                "direction": "two-sided",
                "estimate": c.get("mean_diff"),
                "lo": ci.get("lo"),
                "hi": ci.get("hi"),
                "p": c.get("p"),
                "n": c.get("n_cases"),
                "paired": c.get("paired"),
            }
        )
    return {
        "headline": {
            "metric": "composite",
            "groups": {"profile": profile},
            "label": f"H2 composite over the cohort ({profile} profile)",
        },
        "comparisons": comps,
        "note": _trap_note(list(a.get("metrics") or []), profile),
        # report.html's sample view: the headline profile's grader is the verdict; a case is
        # scored, not right or wrong (its category is "graded"), so the verdict is pass / fail
        # and the score; what the answer should hold is the case's expected keywords and
        # scoring systems
        "samples": {
            "primary_grader": f"bloodpanel/{profile}",
            "verdict": "passed",
            "target_field": ["expected_keywords", "expected_scoring_systems"],
        },
    }
