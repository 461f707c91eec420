"""Synthetic cohort: exact distributions, determinism, plausibility, coherence, reference score."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np
import pytest

from sealedeval.suites.bloodpanel.analytes import ANALYTES
from sealedeval.suites.bloodpanel.calculators import egfr_ckd_epi_2021
from sealedeval.suites.bloodpanel.cases import SPECIALTIES, Case
from sealedeval.suites.bloodpanel.prompts import leak_check, messages
from sealedeval.suites.bloodpanel.reference import reference_report
from sealedeval.suites.bloodpanel.rubric import grade_case
from sealedeval.suites.bloodpanel.synthetic import (
    ARCHETYPES,
    LABEL_COUNTS,
    SPECIALTY_COUNTS,
    allocate,
    largest_remainder,
    synthetic_cases,
)

TOP10 = {
    "US": 10_500,
    "BR": 9_500,
    "ES": 9_000,
    "IT": 8_000,
    "DE": 7_800,
    "FR": 7_400,
    "PT": 5_800,
    "TR": 3_400,
    "GB": 2_900,
    "MX": 2_500,
}
CLAIMED = {
    "endocrinology": 23_900,
    "metabolic": 21_900,
    "haematology": 15_400,
    "hepatology": 12_400,
    "internal_medicine": 9_000,
    "cardiology": 7_500,
    "rheumatology": 6_000,
    "nephrology": 4_000,
}


@pytest.fixture(scope="module")
def cohort() -> list[Case]:
    return list(synthetic_cases(20_000, 20260426))


def test_largest_remainder() -> None:
    assert largest_remainder([1, 1, 1], 10) == [4, 3, 3]  # ties go to the earlier entry
    assert largest_remainder([2, 1], 3) == [2, 1]
    for n in (0, 1, 7, 999, 100_000):
        assert sum(largest_remainder([c for _, c, _ in LABEL_COUNTS], n)) == n
    with pytest.raises(ValueError):
        largest_remainder([0, 0], 5)


def test_label_table_matches_spec() -> None:
    codes = [c for c, _, _ in LABEL_COUNTS]
    assert len(codes) == 127 == len(set(codes))
    assert all(re.fullmatch(r"[A-Z]{2}", c) for c in codes)
    assert sum(c for _, c, _ in LABEL_COUNTS) == 100_000
    by_region: Counter[str] = Counter()
    for _, count, region in LABEL_COUNTS:
        by_region[region] += count
    assert by_region == {
        "europe": 57_700,
        "americas": 25_400,
        "asia_pacific": 6_200,
        "middle_east_africa": 3_400,
        "long_tail": 7_300,
    }
    tail = [c for _, c, r in LABEL_COUNTS if r == "long_tail"]
    assert len(tail) == 97 and set(tail) == {75, 76}
    ranked = sorted(LABEL_COUNTS, key=lambda t: -t[1])
    assert {c: n for c, n, _ in ranked[:10]} == TOP10
    assert ranked[10][1] < 2_500  # the top ten are unambiguous
    assert len([1 for _, n, r in LABEL_COUNTS if r != "long_tail"]) == 30


def test_counts_at_100k_are_the_spec_numbers() -> None:
    labels, specs = allocate(100_000, 20260426)
    label_counts = np.bincount(labels, minlength=len(LABEL_COUNTS))
    assert {LABEL_COUNTS[i][0]: int(n) for i, n in enumerate(label_counts)} == {
        c: n for c, n, _ in LABEL_COUNTS
    }
    spec = {SPECIALTY_COUNTS[i][0]: int(n) for i, n in enumerate(np.bincount(specs))}
    assert sum(spec.values()) == 100_000
    # The claimed counts sum to 100,100; at 100,000 each is within 24 of its claim ...
    assert all(abs(spec[k] - v) <= 24 for k, v in CLAIMED.items()), spec
    assert spec["internal_medicine"] == 8_991
    # ... and at 100,100 they are exactly the claim.
    _, specs2 = allocate(100_100, 20260426)
    assert {SPECIALTY_COUNTS[i][0]: int(n) for i, n in enumerate(np.bincount(specs2))} == CLAIMED


def test_generator_follows_the_allocation(cohort: list[Case]) -> None:
    labels, specs = allocate(20_000, 20260426)
    assert [c.label for c in cohort] == [LABEL_COUNTS[i][0] for i in labels]
    assert [c.specialty for c in cohort] == [SPECIALTY_COUNTS[i][0] for i in specs]
    counts = Counter(c.label for c in cohort)
    expect = largest_remainder([n for _, n, _ in LABEL_COUNTS], 20_000)
    assert all(counts[code] == expect[i] for i, (code, _, _) in enumerate(LABEL_COUNTS))
    assert set(c.specialty for c in cohort) == set(SPECIALTIES)


def test_deterministic_and_seed_dependent() -> None:
    a = list(synthetic_cases(1_500, 3))
    b = list(synthetic_cases(1_500, 3))
    c = list(synthetic_cases(1_500, 4))
    assert a == b
    assert [x.to_record() for x in a] == [x.to_record() for x in b]
    assert [x.case_uid for x in a] != [x.case_uid for x in c]
    assert sum(x.panel != y.panel for x, y in zip(a, c, strict=True)) > 1_400
    # Slices (used for parallel generation) equal the same span of the full stream.
    assert list(synthetic_cases(1_500, 3, start=1_000, stop=1_100)) == a[1_000:1_100]
    assert list(synthetic_cases(1_500, 3, start=0, stop=0)) == []
    with pytest.raises(ValueError):
        list(synthetic_cases(10, 3, start=5, stop=11))


def test_uids_stable_opaque_unique(cohort: list[Case]) -> None:
    uids = [c.case_uid for c in cohort]
    assert len(set(uids)) == len(uids)
    assert all(re.fullmatch(r"bp-[0-9a-f]{16}", u) for u in uids)
    assert next(synthetic_cases(20_000, 20260426)).case_uid == uids[0]


def test_every_value_physiologically_plausible(cohort: list[Case]) -> None:
    for case in cohort:
        for r in case.panel:
            lo, hi = ANALYTES[r.code].plausible
            assert lo <= r.value <= hi, (case.case_id, r)
            assert r.ref == ANALYTES[r.code].ref(case.sex)


def test_values_are_coherent(cohort: list[Case]) -> None:
    for c in cohort:
        v = {r.code: r.value for r in c.panel}
        if {"rbc", "mcv", "hct"} <= v.keys():
            assert abs(v["hct"] - v["rbc"] * v["mcv"] / 10) < 0.5
        if {"iron", "tibc", "tsat"} <= v.keys():
            assert abs(v["tsat"] - 100 * v["iron"] / v["tibc"]) < 0.6
        if {"ibil", "dbil", "tbil"} <= v.keys():
            assert abs(v["ibil"] - (v["tbil"] - v["dbil"])) < 0.11
        if {"tc", "ldl", "hdl", "tg"} <= v.keys():
            assert abs(v["tc"] - (v["ldl"] + v["hdl"] + v["tg"] / 5)) < 1.5
        if {"egfr", "creatinine"} <= v.keys():
            computed = egfr_ckd_epi_2021(v["creatinine"], c.age, c.sex)
            assert abs(computed - v["egfr"]) < 2.5, c.case_id


def test_patterns_age_sex_and_traps(cohort: list[Case]) -> None:
    arch = {a.key: a for a in ARCHETYPES}
    by: defaultdict[str, list[Case]] = defaultdict(list)
    for c in cohort:
        by[c.archetype].append(c)
        lo, hi = arch[c.archetype].ages
        assert lo <= c.age <= hi
        assert c.is_trap == (c.specialty == "internal_medicine") == bool(c.trap_flags)
    assert len(by) == 21
    assert all(c.sex == "female" for c in by["pcos"])
    assert sum(c.sex == "male" for c in by["gout"]) / len(by["gout"]) > 0.8
    for c in by["healthy"]:
        assert all(r.flag == "normal" for r in c.panel), c.case_id
    for c in by["gilbert"]:
        assert {r.code for r in c.panel if r.flag != "normal"} == {"tbil", "ibil"}
    for c in by["ida"]:
        assert float(c.value("mcv") or 0) / float(c.value("rbc") or 1) > 13  # Mentzer > 13
        assert c.row("ferritin") is not None and c.row("ferritin").flag == "low"  # type: ignore[union-attr]
    for c in by["thal"]:
        assert float(c.value("mcv") or 0) / float(c.value("rbc") or 1) < 13
        assert c.row("hba2").flag == "high"  # type: ignore[union-attr]


def test_reference_scores_high_and_never_fires_traps(cohort: list[Case]) -> None:
    sample = cohort[::13]  # ~1,500 cases across all archetypes
    scores = [grade_case(c, reference_report(c), 0.0, "sealed") for c in sample]
    assert sum(s.composite for s in scores) / len(scores) >= 0.95
    assert all(s.trap_flags_hit == () for s in scores)
    assert min(s.composite for s in scores) >= 0.9


def test_synthetic_prompts_do_not_leak(cohort: list[Case]) -> None:
    seen: set[str] = set()
    for c in cohort:
        if c.archetype in seen:
            continue
        seen.add(c.archetype)
        leak_check(c, messages(c))
        assert c.label not in messages(c)[1]["content"].split()
    assert len(seen) == 21


def test_records_round_trip(cohort: list[Case]) -> None:
    for c in cohort[:200]:
        assert Case.from_record(c.to_record()) == c
