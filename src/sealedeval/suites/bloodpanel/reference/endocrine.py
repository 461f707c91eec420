"""Endocrinology: primary hypo- and hyperthyroidism (Hashimoto's, Graves') and polycystic ovary
syndrome.

The thyroid rules read the laboratory's own high/low flags only (raised TSH, low or high free
T4, positive antibodies): no threshold of their own.
"""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel

# LH/FSH ratio above which it supports PCOS when AMH is not raised (with biochemical
# hyperandrogenism, which is required). No source is given in the code or the spec (the spec's
# BT-008-PCOS note calls a ratio of ~3.1 "elevated"); the reference engine's own rule. The
# Rotterdam criteria the report names do not use the ratio.
LH_FSH_RATIO_PCOS: Final = 2


def thyroid(p: Panel) -> list[Finding]:
    tsh = p.v("tsh")
    if tsh is None:
        return []
    ft4 = p.v("ft4")
    if p.high("tsh"):
        overt = ft4 is not None and p.low("ft4")
        autoimmune = p.high("anti_tpo") or p.high("anti_tg")
        name = ("Hashimoto's thyroiditis with " if autoimmune else "") + (
            "overt primary hypothyroidism" if overt else "subclinical hypothyroidism"
        )
        f = Finding(
            "hypothyroid",
            name,
            75.0 if overt else 55.0,
            f"{p.show('tsh')}" + (" with low free T4" if overt else ""),
            f"Raised TSH ({p.show('tsh')})"
            + (f" with low {p.show('ft4')}" if overt else "")
            + (
                ": primary hypothyroidism"
                + (
                    " from Hashimoto's thyroiditis (chronic autoimmune thyroiditis)."
                    if autoimmune
                    else "."
                )
            ),
            evidence=[f"{p.show('tsh')}: the pituitary is driving a failing thyroid."],
            implications=[
                "Hypothyroidism slows metabolism and raises LDL cholesterol; it is readily treated."
            ],
            risks=["Untreated overt hypothyroidism worsens lipids, fatigue, weight and fertility."],
            severity=["Overt (free T4 low)." if overt else "Subclinical (free T4 normal)."],
            medical=[
                "Levothyroxine about 1.6 microgram/kg/day (lower start if older or "
                "with heart disease), TSH after 6-8 weeks."
            ]
            if overt
            else [
                "Repeat TSH and free T4 in 6-8 weeks; treat if TSH stays above 10 mIU/L or "
                "symptoms or pregnancy."
            ],
            tests=["TSH and free T4 6-8 weeks after any dose change."],
            referral=[
                "Endocrinology if pregnant or planning pregnancy, or if TSH does not normalise."
            ],
            lifestyle=["Take levothyroxine on an empty stomach, apart from calcium or iron."],
            alternatives=[
                ("Non-thyroidal illness or recovery phase", 4.0, "TSH pattern"),
                ("Central (secondary) hypothyroidism", 2.0, "TSH is high, not low"),
            ],
        )
        if ft4 is not None:
            f.evidence.append(f"{p.show('ft4')}" + (": low." if overt else ": within range."))
        if p.v("ft3") is not None:
            f.evidence.append(f"{p.show('ft3')}.")
        if autoimmune:
            for code in ("anti_tpo", "anti_tg"):
                if p.high(code):
                    f.evidence.append(
                        f"{p.show(code)}: thyroid autoantibodies are positive, "
                        "the hallmark of Hashimoto's thyroiditis."
                    )
        else:
            f.tests.append("Anti-TPO antibodies to test for Hashimoto's thyroiditis.")
        p.facts["hypothyroid"] = True
        return [f]
    if p.low("tsh") and ft4 is not None and p.high("ft4"):
        graves = p.high("trab")
        f = Finding(
            "hyperthyroid",
            "Graves' disease (primary hyperthyroidism)" if graves else "primary hyperthyroidism",
            75.0,
            f"{p.show('tsh')} with high free T4",
            f"Suppressed TSH with high {p.show('ft4')}: overt hyperthyroidism"
            + (
                ", with TSH receptor antibodies (TRAb) positive: Graves' disease."
                if graves
                else "."
            ),
            evidence=[f"{p.show('tsh')}: suppressed.", f"{p.show('ft4')}: raised."],
            implications=["Hyperthyroidism raises the risk of atrial fibrillation and bone loss."],
            risks=["Atrial fibrillation, osteoporosis and, rarely, thyroid storm if untreated."],
            medical=[
                "Beta-blocker for symptoms; antithyroid drug (carbimazole or "
                "methimazole) under specialist supervision."
            ],
            tests=[
                "Full blood count and liver tests before antithyroid drugs; thyroid "
                "scintigraphy if TRAb is negative."
            ],
            referral=["Endocrinology."],
            alternatives=[
                ("Toxic nodular goitre", 8.0 if graves else 20.0, "TRAb"),
                (
                    "Painless or subacute thyroiditis",
                    5.0 if graves else 15.0,
                    "TRAb and uptake scan",
                ),
            ],
        )
        if p.v("ft3") is not None:
            f.evidence.append(f"{p.show('ft3')}.")
        if graves:
            f.evidence.append(f"{p.show('trab')}: TSH receptor antibodies are positive.")
        return [f]
    return []


# --- reproductive endocrinology ----------------------------------------------------------------


def pcos(p: Panel) -> list[Finding]:
    if p.sex != "female":
        return []
    androgen = p.high("testosterone") or p.high("free_testosterone")
    lh, fsh = p.v("lh"), p.v("fsh")
    ratio = lh / fsh if lh and fsh else None
    amh_high = p.high("amh")
    if not androgen or not (amh_high or (ratio is not None and ratio > LH_FSH_RATIO_PCOS)):
        return []
    f = Finding(
        "pcos",
        "polycystic ovary syndrome (PCOS)",
        78.0,
        "biochemical hyperandrogenism with high AMH / LH:FSH",
        "Biochemical hyperandrogenism with a raised AMH"
        + (f" and an LH/FSH ratio of {ratio:.1f}" if ratio is not None else "")
        + ": polycystic ovary syndrome (PCOS) by the Rotterdam criteria (hyperandrogenism "
        "plus polycystic ovarian morphology, AMH as its surrogate)"
        + (", with insulin resistance." if p.facts.get("insulin_resistance") else "."),
        evidence=[
            f"{p.show(c)}."
            for c in ("testosterone", "free_testosterone", "shbg", "lh", "fsh", "amh")
            if p.v(c) is not None
        ],
        implications=[
            "Hyperandrogenism with insulin resistance drives anovulation and "
            "long-term metabolic risk."
        ],
        risks=[
            "Type 2 diabetes, dyslipidaemia, endometrial hyperplasia (unopposed "
            "oestrogen), subfertility."
        ],
        medical=[
            "Combined oral contraceptive for cycle control and hyperandrogenism, or "
            "metformin for insulin resistance; letrozole if pregnancy is desired."
        ],
        tests=[
            "Pelvic ultrasound for ovarian morphology; oral glucose tolerance test; lipid "
            "profile; TSH."
        ],
        referral=["Gynaecology or reproductive endocrinology."],
        lifestyle=[
            "5-10% weight loss restores ovulation in many; regular exercise; low "
            "glycaemic index diet."
        ],
        alternatives=[
            (
                "Non-classic congenital adrenal hyperplasia",
                3.0 if p.normal("ohp17") else 15.0,
                "17-OH progesterone",
            ),
            ("Hyperprolactinaemia", 2.0 if p.normal("prolactin") else 10.0, "prolactin"),
            ("Androgen-secreting tumour", 2.0, "testosterone below 150 ng/dL"),
        ],
    )
    for code, text in (
        (
            "ohp17",
            "17-OH progesterone is within range, which makes non-classic "
            "congenital adrenal hyperplasia unlikely",
        ),
        ("prolactin", "prolactin within range"),
        ("dheas", "DHEA-S, the adrenal androgen"),
    ):
        if p.v(code) is not None:
            f.evidence.append(f"{p.show(code)}: {text}.")
    if p.facts.get("homa") is not None:
        f.scores.append(
            f"HOMA-IR {p.facts['homa']:.1f}: "
            + (
                "insulin resistance despite normal glucose."
                if p.facts.get("insulin_resistance")
                else "no insulin resistance."
            )
        )
    return [f]
