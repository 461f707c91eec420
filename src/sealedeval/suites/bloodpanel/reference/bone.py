"""Bone and minerals: vitamin D status and secondary hyperparathyroidism."""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel, fmt

# 25-OH vitamin D (ng/mL): >= 30 sufficient, 20-29 insufficiency (a line, not a finding), < 20
# deficiency, < 12 severe deficiency. No source is given in the code; the spec's BT-012-VITD
# prints the range 30-100 and calls 11 ng/mL "severe deficiency".
VITD_SUFFICIENT_NG_ML: Final = 30
VITD_DEFICIENT_NG_ML: Final = 20
VITD_SEVERE_NG_ML: Final = 12


def vitamin_d(p: Panel) -> list[Finding]:
    vd = p.v("vitd")
    if vd is None:
        return []
    if vd >= VITD_SUFFICIENT_NG_ML:
        p.facts["vitd_line"] = f"{p.show('vitd')}: vitamin D sufficient."
        return []
    if vd >= VITD_DEFICIENT_NG_ML:
        p.facts["vitd_line"] = (
            f"{p.show('vitd')}: vitamin D insufficiency (20-29 ng/mL); "
            "modest supplementation is reasonable."
        )
        return []
    pth_high = p.high("pth")
    f = Finding(
        "vitd",
        "severe vitamin D deficiency" if vd < VITD_SEVERE_NG_ML else "vitamin D deficiency",
        55.0,
        f"25-OH vitamin D {fmt(vd)} ng/mL",
        f"{'Severe v' if vd < VITD_SEVERE_NG_ML else 'V'}itamin D deficiency ({p.show('vitd')})"
        + (
            " with secondary hyperparathyroidism (PTH raised to defend calcium)."
            if pth_high
            else "."
        ),
        evidence=[
            f"{p.show('vitd')}: below {VITD_DEFICIENT_NG_ML} ng/mL is deficiency"
            + (f", below {VITD_SEVERE_NG_ML} ng/mL severe." if vd < VITD_SEVERE_NG_ML else ".")
        ],
        implications=[
            "Low vitamin D reduces calcium absorption; PTH rises and releases calcium from bone."
        ],
        risks=["Osteomalacia, osteoporosis and fractures; muscle weakness and falls."],
        medical=[
            "Colecalciferol loading (e.g. 50,000 IU weekly for 8 weeks) then 1,000-2,000 "
            "IU daily; adequate dietary calcium (1,000-1,200 mg/day)."
        ],
        tests=[
            "25-OH vitamin D, calcium and PTH after 3 months; bone density (DXA) if other "
            "fracture risks."
        ],
        referral=[
            "Endocrinology if PTH or calcium do not normalise with repletion (to "
            "exclude primary hyperparathyroidism)."
        ],
        lifestyle=[
            "Safe sun exposure, oily fish, eggs and fortified foods; weight-bearing exercise."
        ],
        alternatives=[
            ("Primary hyperparathyroidism", 4.0, "calcium is not high"),
            ("Malabsorption (e.g. coeliac disease)", 6.0, "coeliac serology"),
        ],
    )
    if pth_high:
        f.name = f.name + " with secondary hyperparathyroidism"
        f.evidence.append(
            f"{p.show('pth')}: raised PTH with calcium not raised: secondary hyperparathyroidism."
        )
    for code, text in (
        ("calcium", "calcium low or low-normal"),
        ("ica", "ionised calcium low"),
        ("phosphate", "phosphate"),
        ("alp", "ALP raised from increased bone turnover (osteomalacia risk)"),
        ("magnesium", "magnesium, needed for PTH action"),
    ):
        if p.v(code) is not None:
            f.evidence.append(f"{p.show(code)}: {text}.")
    if p.high("alp"):
        p.facts["alp_bone"] = True
    return [f]
