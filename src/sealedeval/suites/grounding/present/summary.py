"""What grounding's summary line shows (``publish.summary``'s ``summary`` hook).

The headline is M1 (value = reference on answerable items, item means) in the schema-only
condition A and the structured-definitions condition C: the contrast the suite exists to
measure. The comparisons are the eight pre-declared paired tests (P1-P8) of every engine's
primary role, with their claimed direction; the verdicts follow from the sealed tests' p-values
(unadjusted, as the plan pre-declared, unless it applies a correction; the Holm-adjusted p of
each comparison's ``stats.comparisons`` record is shown beside). Presentation: not sealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.suites.grounding.conditions import CONDITION_NAMES, Condition

HEADLINE_CONDITIONS: tuple[Condition, ...] = ("A", "C")

# The plan's direction text ("C > A", "B not > A", "D not < C", "F = C") → publish.summary's
# direction names.
_DIRECTION = {
    ">": "greater",
    "<": "less",
    "not >": "not_greater",
    "not <": "not_less",
    "=": "equal",
}


def _direction(text: str, a: str, b: str) -> str:
    op = text.strip()
    if op.startswith(a):
        op = op[len(a) :]
    if op.endswith(b):
        op = op[: -len(b)]
    return _DIRECTION.get(op.strip(), "two-sided")


def summary(section: Mapping[str, Any]) -> dict[str, Any]:
    a = section.get("analysis") or {}
    engines = a.get("engines") or {}
    names = ", ".join(f"{c} = {CONDITION_NAMES[c]}" for c in HEADLINE_CONDITIONS)
    correction = (a.get("plan") or {}).get("correction") or {}
    comps = []
    for eng, e in engines.items():
        role = (e.get("roles") or {}).get("primary") or {}
        for c in role.get("comparisons") or []:
            who = f"{eng}: " if len(engines) > 1 else ""
            comps.append(
                {
                    "id": c["id"],
                    "claim": f"{who}{c['direction']} on {c['metric']} ({c['item_set']})",
                    "direction": _direction(str(c["direction"]), str(c["a"]), str(c["b"])),
                    "estimate": c.get("mean_diff"),
                    "p": c.get("p"),
                    "n": c.get("n_items"),
                    "paired": c.get("paired"),
                    # the seed plan pre-declared unadjusted tests: they decide, Holm is shown
                    "adjusted_decides": bool(correction.get("applied")),
                }
            )
    return {
        "headline": {
            "metric": "track_a.m1",
            "groups": {"role": "primary", "condition": list(HEADLINE_CONDITIONS)},
            "label": f"track A M1 (answer = reference, item means; {names})",
        },
        "comparisons": comps,
        "note": str(correction.get("statement") or ""),
        # report.html's sample view: an item's reference value is the answer it expects
        "samples": {"target_field": "reference_value"},
    }
