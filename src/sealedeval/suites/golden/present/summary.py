"""What golden's summary line shows (``publish.summary``'s ``summary`` hook).

The headline is greedy accuracy on the base branch (regex must/mustNot grader, one unit per
task, Wilson interval), the number the suite's plan names first. The comparisons are the
planned paired sign tests: engines against each other on the base branch, then each engine's
branches against each other; ``+x/−y`` counts the tasks only the first / only the second got
right, which is all an exact sign test uses; the ``stats.comparisons`` record each carries adds
the paired difference with its interval, the Holm-adjusted p and the MDE. Presentation: not
sealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _claim(c: Mapping[str, Any], prefix: str = "") -> str:
    return f"{prefix}{c['a']} vs {c['b']} (+{c['a_only']}/−{c['b_only']} tasks)"


def summary(section: Mapping[str, Any]) -> dict[str, Any]:
    a = section.get("analysis") or {}
    base = str((a.get("design") or {}).get("base_branch") or "A")
    comps: list[dict[str, Any]] = []
    for c in a.get("comparisons") or []:
        comps.append(
            {
                "claim": _claim(c, f"branch {base}: "),
                "direction": "two-sided",
                "p": c.get("p"),
                "n": c.get("n_items"),
                "paired": c.get("paired"),
            }
        )
    engines = a.get("engines") or {}
    for eng, e in engines.items():
        for c in e.get("branch_comparisons") or []:
            comps.append(
                {
                    "claim": _claim(c, f"{eng}: branch "),
                    "direction": "two-sided",
                    "p": c.get("p"),
                    "n": c.get("n_items"),
                    "paired": c.get("paired"),
                }
            )
    return {
        "headline": {
            "metric": "greedy_accuracy",
            "groups": {"branch": base},
            "label": f"greedy accuracy, branch {base} (regex grader, per task)",
        },
        "comparisons": comps,
        # report.html's sample view: the regex grader decides each answer's category (the
        # headline's verdict); a task's ``answer`` is its reference fact
        "samples": {"primary_grader": "regex", "target_field": "answer"},
    }
