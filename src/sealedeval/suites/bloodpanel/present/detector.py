"""The detector section of the bloodpanel report: the over-diagnosis detector, measured.

Rendered from the analysis's ``detector`` block (``battery.detector_section``) only; nothing is
computed here: the development battery (top level) and the held-out battery (``held_out``),
each labelled with its role. Placed right after the trap figure it qualifies: a rate of
"answers asserting a trap flag" is only as good as the detector that decides what asserting
means.
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


ROLE_TITLES = {
    "development": "development battery (written with the detector)",
    "held_out": "held-out battery (written blind from the rules, never tuned on)",
}
"""How each battery is named in the report: the held-out one is the figure to trust."""


def _matrix_rows(profiles: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for prof, m in profiles.items():
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
    return rows


HEAD = ["profile", "TP", "FP", "FN", "TN", "precision [95% CI]", "recall [95% CI]"]


def _battery(b: Mapping[str, Any]) -> list[str]:
    role = str(b.get("role", "development"))
    langs = ", ".join(f"{k} {v}" for k, v in b["by_lang"].items())
    labels = ", ".join(f"{k} {v}" for k, v in b["by_label"].items())
    forms = ", ".join(f"{k} {v}" for k, v in b["by_form"].items())
    out = [
        f"#### {ROLE_TITLES.get(role, role).capitalize()}",
        "",
        f"`{b['battery']}`: {b['n']} pairs ({labels}; {langs}; forms: {forms}).",
        "",
        table(HEAD, _matrix_rows(b["profiles"])),
    ]
    blind = b.get("blind_measurement") or {}
    if blind.get("profiles"):
        same = all(
            b["profiles"].get(prof, {}).get("matrix") == m["matrix"]
            for prof, m in blind["profiles"].items()
        )
        commit = str(blind.get("detector_commit", ""))[:12]
        out += [
            "",
            f"First measurement, before any detector change it prompted (detector at commit "
            f"`{commit}`): "
            + (
                "identical to the table above, so the figure above is still blind."
                if same
                else "the table above is of a detector changed since, so only this one is blind:"
            ),
        ]
        if not same:
            out += ["", table(HEAD, _matrix_rows(blind["profiles"]))]
    for prof, m in b["profiles"].items():
        wrong = m["disagreements"]
        out += ["", f"Disagreements with the labels, {prof} ({role}): {len(wrong)}", ""]
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


def render(analysis: Mapping[str, Any]) -> list[str]:
    """Markdown lines of the detector section; none for an analysis without a measurement.

    The development battery first, then the held-out one (when the analysis has it), each with
    its confusion matrices and disagreements, each titled with its role: the development
    battery's figure is circular (written with the detector), the held-out one is not.
    """
    d = analysis.get("detector")
    if not d:
        return []
    out = [
        "### Over-diagnosis detector, measured on the assertion batteries",
        "",
        "Each profile's trap-flag rule run on labelled (text, condition) pairs, sealed with the "
        "rubric. Positive = the pair asserts the condition (an ambiguous pair counts as its "
        "lean); precision = share of fired flags that are real assertions, recall = share of "
        "assertions caught; Wilson 95% intervals. The development battery was written by the "
        "detector's author, so its figure is circular; the held-out battery was written blind "
        "from the labelling rules alone and committed before any detector ran on it.",
        "",
    ]
    out += _battery(d)
    if d.get("held_out"):
        out += _battery(d["held_out"])
    return out
