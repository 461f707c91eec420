"""A normal screening panel: every result within the laboratory's own reference range (no
threshold of its own)."""

from __future__ import annotations

from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel


def normal_panel(p: Panel) -> list[Finding]:
    rows = p.case.panel
    if any(r.flag != "normal" for r in rows):
        return []
    return [
        Finding(
            "normal",
            "healthy screening profile: every result within its reference range",
            94.0,
            f"all {len(rows)} results within their reference ranges",
            f"All {len(rows)} results are within their reference ranges: a normal, unremarkable "
            "panel consistent with a healthy adult.",
            evidence=[f"{p.show(r.code)}: within the reference range." for r in rows],
            implications=[
                "Normal results give reassurance; screening is repeated at routine intervals."
            ],
            risks=[
                "Cardiometabolic markers are favourable; the main risks are those a blood panel "
                "cannot see (blood pressure, smoking, family history)."
            ],
            severity=["Nothing in this panel needs treatment."],
            medical=[
                "No medication is indicated by these results; continue routine preventive care."
            ],
            tests=[
                "Routine screening at the usual interval (e.g. lipids and glucose every 3-5 "
                "years), sooner if symptoms appear."
            ],
            referral=["No specialist referral is needed."],
            lifestyle=[
                "Keep up a balanced diet, regular physical activity, good sleep and no smoking."
            ],
            alternatives=[
                (
                    "A condition this panel does not measure",
                    6.0,
                    "a screening panel only covers what it measures",
                )
            ],
        )
    ]
