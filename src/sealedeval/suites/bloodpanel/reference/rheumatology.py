"""Rheumatology and immunology: hyperuricaemia (gout risk), systemic lupus erythematosus
(2019 EULAR/ACR and SLICC 2012 from the panel) and seropositive rheumatoid arthritis (the
laboratory part of the 2010 ACR/EULAR criteria)."""

from __future__ import annotations

from typing import Final

from sealedeval.suites.bloodpanel.calculators import sle_eular_acr_2019, slicc_2012_lab
from sealedeval.suites.bloodpanel.reference.panel import Finding, Panel, fmt

# Uric acid above 6.8 mg/dL, "the point at which urate crystallises" (the report's own words).
# No source is given in the code or the spec; the reference engine's own rule.
URATE_SATURATION_MG_DL: Final = 6.8

# ANA titre from which it counts as positive (1:80): the entry criterion of the 2019 EULAR/ACR
# classification criteria (Aringer M et al., Arthritis Rheumatol 2019;71:1400-12), as
# calculators.sle_eular_acr_2019 applies it.
ANA_POSITIVE_TITRE: Final = 80

# Proteinuria above 0.5 g/24 h suggests lupus nephritis: the renal domain of the 2019 EULAR/ACR
# criteria (calculators.sle_eular_acr_2019, "proteinuria > 0.5 g/24h").
NEPHRITIS_PROTEINURIA_G_24H: Final = 0.5

# Rheumatoid arthritis, serology and acute-phase points of the 2010 ACR/EULAR classification
# criteria as the report names them: high-positive (above 3 times the upper limit) 3 points,
# low-positive 2, an abnormal CRP or ESR 1. No further source is given in the code or the spec.
RA_HIGH_POSITIVE_X_ULN: Final = 3
RA_HIGH_POSITIVE_POINTS: Final = 3
RA_LOW_POSITIVE_POINTS: Final = 2
RA_ACUTE_PHASE_POINTS: Final = 1


def urate(p: Panel) -> list[Finding]:
    ua = p.v("uric_acid")
    if ua is None or not (ua > URATE_SATURATION_MG_DL or p.high("uric_acid")):
        return []
    inflamed = p.high("crp") or p.high("esr")
    f = Finding(
        "hyperuricaemia",
        "hyperuricaemia with gout risk" + (" (possible gout flare)" if inflamed else ""),
        60.0,
        f"uric acid {fmt(ua)} mg/dL above the {URATE_SATURATION_MG_DL} mg/dL saturation point",
        f"Hyperuricaemia ({p.show('uric_acid')}): uric acid above {URATE_SATURATION_MG_DL} "
        "mg/dL, the point at "
        "which urate crystallises, which is the cause of gout"
        + ("; raised ESR/CRP suggest an active inflammatory flare." if inflamed else "."),
        evidence=[
            f"{p.show('uric_acid')}: above the urate saturation point "
            f"({URATE_SATURATION_MG_DL} mg/dL)."
        ],
        implications=[
            "Hyperuricaemia is the necessary condition for gout and associates "
            "with metabolic syndrome and kidney stones."
        ],
        risks=["Gout flares, tophi, urate nephropathy and kidney stones; cardiovascular risk."],
        medical=[
            "If gout is confirmed (clinical picture or joint aspiration): urate-lowering "
            "therapy (allopurinol, target below 6 mg/dL) with flare prophylaxis; treat a "
            "flare with colchicine, an NSAID or a corticosteroid."
        ],
        tests=[
            "Joint aspiration for monosodium urate crystals if a joint is inflamed; repeat "
            "uric acid after 2-4 weeks; renal function."
        ],
        referral=["Rheumatology for recurrent or tophaceous gout."],
        lifestyle=[
            "Less beer, spirits, red meat, shellfish and fructose drinks; weight loss; hydration."
        ],
        alternatives=[
            (
                "Septic arthritis (if a joint is hot and swollen)",
                3.0,
                "raised inflammatory markers",
            ),
            ("Calcium pyrophosphate arthritis", 4.0, "crystal analysis"),
        ],
    )
    for code in ("esr", "crp"):
        if p.high(code):
            f.evidence.append(f"{p.show(code)}: raised inflammatory marker.")
    return [f]


# --- immunology --------------------------------------------------------------------------------


def sle(p: Panel) -> list[Finding]:
    ana = p.v("ana")
    if ana is None:
        return []
    dsdna, sm = p.high("anti_dsdna"), p.high("anti_sm")
    low_c3, low_c4 = p.low("c3"), p.low("c4")
    eular = sle_eular_acr_2019(
        ana_titer=ana,
        wbc_10e9_per_l=p.v("wbc"),
        platelets_10e9_per_l=p.v("plt"),
        proteinuria_g_per_24h=p.v("uprot24"),
        low_c3=low_c3,
        low_c4=low_c4,
        anti_dsdna=dsdna,
        anti_smith=sm,
    )
    slicc = slicc_2012_lab(
        proteinuria_g_per_24h=p.v("uprot24"),
        wbc_10e9_per_l=p.v("wbc"),
        lymphocytes_10e9_per_l=p.v("lymph_abs"),
        platelets_10e9_per_l=p.v("plt"),
        ana_positive=ana >= ANA_POSITIVE_TITRE,
        anti_dsdna=dsdna,
        anti_smith=sm,
        low_complement=low_c3 or low_c4,
    )
    if not (ana >= ANA_POSITIVE_TITRE and (dsdna or sm)):
        return []
    domains = "; ".join(f"{k}: {c} ({v})" for k, (c, v) in eular.domains.items())
    scores = [
        f"2019 EULAR/ACR classification criteria: entry criterion ANA 1:{fmt(ana)} met; "
        f"{eular.points} points ({domains}); "
        + (
            "classified as SLE (>= 10 points with a clinical criterion)."
            if eular.classified
            else "below the classification threshold on laboratory data alone."
        ),
        f"SLICC 2012 criteria countable from the panel: {slicc.total} "
        f"({', '.join(slicc.clinical + slicc.immunologic)}); "
        + (
            "classification met (>= 4 with clinical and immunologic)."
            if slicc.classified
            else "classification not met on laboratory data."
        ),
    ]
    nephritis = (
        p.v("uprot24") is not None and float(p.v("uprot24") or 0) > NEPHRITIS_PROTEINURIA_G_24H
    )
    f = Finding(
        "sle",
        "systemic lupus erythematosus (SLE)"
        + (" with suspected lupus nephritis" if nephritis else ""),
        70.0,
        "ANA with anti-dsDNA/anti-Smith and low complement",
        f"High-titre ANA (1:{fmt(ana)}) with SLE-specific antibodies"
        + (" and low complement" if low_c3 or low_c4 else "")
        + ": systemic lupus erythematosus (SLE), an autoimmune multisystem disease.",
        evidence=[
            f"{p.show(c)}."
            for c in ("ana", "anti_dsdna", "anti_sm", "c3", "c4")
            if p.v(c) is not None
        ],
        scores=scores,
        implications=[
            "Anti-dsDNA with low complement (hypocomplementaemia) signals active "
            "lupus, particularly renal."
        ],
        risks=[
            "Lupus nephritis and progression to chronic kidney disease; infections; "
            "premature cardiovascular disease; thrombosis."
        ],
        severity=[
            "Active disease with probable renal involvement." if nephritis else "Active serology."
        ],
        medical=[
            "Hydroxychloroquine for all; corticosteroids and immunosuppression "
            "(mycophenolate) guided by organ involvement; sun protection."
        ],
        tests=[
            "Urine protein/creatinine ratio and sediment, renal biopsy if proteinuria "
            f"exceeds {NEPHRITIS_PROTEINURIA_G_24H} g/day; antiphospholipid antibodies; direct "
            "Coombs test."
        ],
        referral=["Rheumatology urgently; nephrology for the renal biopsy."],
        lifestyle=["Sun protection, no smoking, vaccinations before immunosuppression."],
        alternatives=[
            ("Mixed connective tissue disease", 4.0, "anti-RNP not measured"),
            ("Drug-induced lupus", 3.0, "anti-dsDNA argues for idiopathic SLE"),
        ],
    )
    for code, text in (
        ("wbc", "leukopenia"),
        ("lymph_abs", "lymphopenia"),
        ("plt", "thrombocytopenia"),
        ("uprot24", "proteinuria"),
        ("creatinine", "creatinine"),
        ("esr", "ESR"),
        ("crp", "CRP"),
    ):
        if p.v(code) is not None and (p.high(code) or p.low(code)):
            f.evidence.append(f"{p.show(code)}: {text}.")
    if nephritis:
        f.alternatives.append(
            (
                "Lupus nephritis class III/IV (renal involvement of SLE)",
                12.0,
                f"proteinuria above {NEPHRITIS_PROTEINURIA_G_24H} g/24h",
            )
        )
    p.facts["sle"] = True
    return [f]


def rheumatoid_arthritis(p: Panel) -> list[Finding]:
    ccp, rf = p.v("anti_ccp"), p.v("rf")
    if ccp is None and rf is None:
        return []
    if not (p.high("anti_ccp") or p.high("rf")):
        return []
    ccp_x = p.times_uln("anti_ccp") or 0.0
    rf_x = p.times_uln("rf") or 0.0
    sero = (
        RA_HIGH_POSITIVE_POINTS
        if max(ccp_x, rf_x) > RA_HIGH_POSITIVE_X_ULN
        else RA_LOW_POSITIVE_POINTS
    )
    acute = RA_ACUTE_PHASE_POINTS if (p.high("crp") or p.high("esr")) else 0
    f = Finding(
        "ra",
        "seropositive rheumatoid arthritis",
        70.0,
        "anti-CCP and/or rheumatoid factor with raised acute-phase reactants",
        "Positive anti-CCP antibodies and/or rheumatoid factor"
        + (" with raised acute-phase reactants" if acute else "")
        + ": seropositive rheumatoid arthritis, an autoimmune inflammatory arthritis, if "
        "synovitis is present.",
        evidence=[f"{p.show(c)}." for c in ("anti_ccp", "rf", "crp", "esr") if p.v(c) is not None],
        scores=[
            f"2010 ACR/EULAR classification criteria, laboratory part: serology "
            f"{sero} points, acute-phase reactants {acute} point; with joint involvement "
            "(up to 5 points) a total of 6 or more classifies rheumatoid arthritis."
        ],
        implications=[
            "Anti-CCP positivity predicts erosive disease; early treatment prevents joint damage."
        ],
        risks=["Joint erosion and disability; cardiovascular disease; interstitial lung disease."],
        medical=[
            "Methotrexate as first-line DMARD with short-term glucocorticoid bridging, "
            "after hepatitis B/C screening and chest X-ray."
        ],
        tests=[
            "Hand and foot X-rays; hepatitis B and C serology; full blood count and liver "
            "tests before methotrexate."
        ],
        referral=["Rheumatology within 6 weeks of symptom onset."],
        lifestyle=["No smoking (smoking drives anti-CCP positive disease); regular exercise."],
        alternatives=[
            ("Psoriatic arthritis", 5.0, "seropositivity argues against"),
            ("Systemic lupus erythematosus", 3.0, "ANA not measured"),
        ],
    )
    return [f]
