"""The detector section of the bloodpanel report: the over-diagnosis detector, measured.

Rendered from the analysis's ``detector`` block (``battery.detector_section``) only; nothing is
computed here. Placed right after the trap figure it qualifies: a rate of "answers asserting a
trap flag" is only as good as the detector that decides what asserting means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.render.md import rate_ci, table

MAX_LISTED = 40
"""Disagreements listed per profile in the report (every one is in result.json)."""


def _quote(text: str, limit: int = 110) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def render(analysis: Mapping[str, Any]) -> list[str]:
    """Markdown lines of the detector section; none for an analysis without a measurement."""
    d = analysis.get("detector")
    if not d:
        return []
    langs = ", ".join(f"{k} {v}" for k, v in d["by_lang"].items())
    labels = ", ".join(f"{k} {v}" for k, v in d["by_label"].items())
    out = [
        "### Over-diagnosis detector, measured on the assertion battery",
        "",
        f"Each profile's trap-flag rule run on the {d['n']} labelled (text, condition) pairs of "
        f"`{d['battery']}` ({labels}; {langs}; forms: "
        + ", ".join(f"{k} {v}" for k, v in d["by_form"].items())
        + "), sealed with the rubric. Positive = the pair asserts the condition (an ambiguous "
        "pair counts as its lean); precision = share of fired flags that are real assertions, "
        "recall = share of assertions caught; Wilson 95% intervals.",
        "",
    ]
    rows = []
    for prof, m in d["profiles"].items():
        x = m["matrix"]
        rows.append(
            [
                prof,
                x["tp"],
                x["fp"],
                x["fn"],
                x["tn"],
                rate_ci(m["precision"]),
                rate_ci(m["recall"]),
            ]
        )
    out.append(
        table(["profile", "TP", "FP", "FN", "TN", "precision [95% CI]", "recall [95% CI]"], rows)
    )
    for prof, m in d["profiles"].items():
        wrong = m["disagreements"]
        out += ["", f"Disagreements with the labels, {prof}: {len(wrong)}", ""]
        if not wrong:
            continue
        shown = wrong[:MAX_LISTED]
        out.append(
            table(
                ["pair", "kind", "condition", "label", "rule", "text"],
                [
                    [
                        w["id"],
                        "false flag" if w["kind"] == "fp" else "missed",
                        w["condition"],
                        w["label"] + (f" ({w['lean']})" if w["lean"] else ""),
                        w["rule"],
                        _quote(w["text"]),
                    ]
                    for w in shown
                ],
            )
        )
        if len(wrong) > len(shown):
            out += ["", f"… and {len(wrong) - len(shown)} more (all in result.json)."]
    out.append("")
    return out
