"""Muscle: a benign, exercise-related creatine kinase rise (the enzymes come from muscle, not
the liver)."""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel

# A CK rise below 5 times the upper limit, with normal GGT, ALP, bilirubin and creatinine, is read
# as benign and exercise-related. No source is given in the code or the spec; the reference
# engine's own rule.
BENIGN_CK_MAX_X_ULN: Final = 5


def muscle(p: Panel) -> list[Finding]:
    ck = p.v("ck")
    if ck is None or not p.high("ck"):
        return []
    ck_x = p.times_uln("ck") or 0.0
    liver_ok = all(p.v(c) is None or p.normal(c) for c in ("ggt", "alp", "tbil"))
    kidney_ok = p.v("creatinine") is None or p.normal("creatinine")
    if ck_x >= BENIGN_CK_MAX_X_ULN or not liver_ok or not kidney_ok:
        return []
    ast, alt = p.v("ast"), p.v("alt")
    pattern = ast is not None and alt is not None and ast >= alt
    return [
        Finding(
            "exercise_ck",
            "exercise-related creatine kinase rise (benign, muscle origin)",
            88.0,
            f"CK below {BENIGN_CK_MAX_X_ULN} times the upper limit with AST above ALT and normal "
            "GGT/ALP/bilirubin",
            f"Creatine kinase {ck_x:.1f} times the upper limit ({p.show('ck')})"
            + (f" with AST above ALT ({p.show('ast')}, {p.show('alt')})" if pattern else "")
            + " and normal GGT, ALP and bilirubin: the enzymes come from skeletal muscle, the "
            "usual benign, transient finding after strenuous exercise.",
            evidence=[
                f"{p.show('ck')}: muscle enzyme.",
                "AST is also a muscle enzyme; ALT, GGT and ALP stay within range when the "
                "liver is not the source.",
            ]
            + [
                f"{p.show(c)}."
                for c in ("ast", "alt", "ggt", "alp", "creatinine")
                if p.v(c) is not None
            ],
            implications=[
                "A benign, self-limiting muscle enzyme release; the liver is not the source."
            ],
            risks=[
                "Little risk: the CK is below five times the upper limit and the creatinine is "
                "within range."
            ],
            severity=["Benign and transient."],
            medical=["Reassurance; review statins or other drugs that raise CK if taken."],
            tests=[
                "Repeat CK, AST and ALT after 7 days without strenuous exercise; they should "
                "return to the reference range."
            ],
            referral=["No referral unless the CK stays high at rest or weakness appears."],
            lifestyle=[
                "Build up training gradually, hydrate well, and rest 2-3 days before "
                "repeat blood tests."
            ],
            alternatives=[
                ("Drug-related CK rise (e.g. statin)", 5.0, "medication history"),
                ("Intramuscular injection or minor muscle trauma", 5.0, "history"),
                ("Macro-CK (benign laboratory variant)", 2.0, "persistent CK at rest"),
            ],
        )
    ]
