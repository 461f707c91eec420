"""Locale rendering (issue 16 item 5): a case is shown to the engine in its label's language,
decimal symbol and units, and stored (and graded) the same whatever its label.

Properties that break if the code is wrong: every label renders as ``locales`` specifies; a
rendered value read back (decimal symbol, SI factor) is the stored value to the printed
precision; the rendered flag (value against rendered range) is the stored one; ZZ and US cases
render exactly as before; the same seed gives the same bytes; and grading — which reads the
stored case and the engine's answer, never the rendering — is unchanged by the label and still
reads decimal-comma numbers in an answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest

from sealedeval.suites.bloodpanel import locales
from sealedeval.suites.bloodpanel.analytes import ANALYTES
from sealedeval.suites.bloodpanel.cases import UNKNOWN_LABEL, Case, load_curated, parse_reference
from sealedeval.suites.bloodpanel.locales import (
    CLDR_LOCALE,
    CONVENTIONAL_LABELS,
    LANGUAGES,
    SI,
    locale_of,
    parse_number,
    render_rows,
    to_conventional,
)
from sealedeval.suites.bloodpanel.pdf import render_pdf
from sealedeval.suites.bloodpanel.prompts import leak_check, messages, render_table
from sealedeval.suites.bloodpanel.reference import reference_report
from sealedeval.suites.bloodpanel.rubric import grade_case
from sealedeval.suites.bloodpanel.synthetic import LABEL_COUNTS, synthetic_cases

ROOT = Path(__file__).resolve().parents[2]
LABELS = [code for code, _, _ in LABEL_COUNTS]


@pytest.fixture(scope="module")
def cohort() -> list[Case]:
    return list(synthetic_cases(600, 20260426))


def _as(case: Case, label: str) -> Case:
    return dataclasses.replace(case, label=label)


def test_every_label_has_a_locale_and_the_table_is_the_cldr_one() -> None:
    assert set(CLDR_LOCALE) == set(LABELS) and len(LABELS) == 127
    assert set(LABELS) > CONVENTIONAL_LABELS
    for label in LABELS:
        loc = locale_of(label)
        assert loc.decimal in (".", ",") and loc.units in ("SI", "conventional")
        assert loc.language == (loc.cldr_language if loc.cldr_language in LANGUAGES else "en")
    # Spot checks against CLDR 49 (likelySubtags; decimal symbol of <language>_<label>).
    assert CLDR_LOCALE["DE"] == ("de", ",") and CLDR_LOCALE["CH"] == ("de", ".")
    assert CLDR_LOCALE["MX"] == ("es", ".") and CLDR_LOCALE["AR"] == ("es", ",")
    assert CLDR_LOCALE["BR"] == ("pt", ",") and CLDR_LOCALE["BE"] == ("nl", ",")
    assert CLDR_LOCALE["GB"] == ("en", ".") and CLDR_LOCALE["ZA"] == ("en", ",")


@pytest.mark.parametrize(
    ("label", "language", "decimal", "units"),
    [
        ("US", "en", ".", "conventional"),
        ("DE", "de", ",", "conventional"),
        ("FR", "fr", ",", "conventional"),
        ("ES", "es", ",", "conventional"),
        ("MX", "es", ".", "conventional"),
        ("BR", "pt", ",", "conventional"),
        ("IT", "it", ",", "conventional"),
        ("TR", "tr", ",", "conventional"),
        ("GB", "en", ".", "SI"),
        ("NL", "en", ",", "SI"),
        ("CH", "de", ".", "SI"),
        ("CN", "zh", ".", "SI"),
        ("SA", "ar", ".", "SI"),
        ("SE", "en", ",", "SI"),
    ],
)
def test_a_label_renders_its_language_decimal_symbol_and_units(
    cohort: list[Case], label: str, language: str, decimal: str, units: str
) -> None:
    loc = locale_of(label)
    assert (loc.language, loc.decimal, loc.units) == (language, decimal, units)
    sc = LANGUAGES[language]
    for case in cohort[:60]:
        c = _as(case, label)
        user = messages(c)[1]["content"]
        sex = sc.female if c.sex == "female" else sc.male
        assert user.startswith(f"{sc.request} {c.case_uid}\n{sc.age.format(age=c.age)}\n")
        assert sc.sex.format(sex=sex) in user
        assert "| " + " | ".join(sc.header) + " |" in user
        for stored, shown in zip(c.panel, render_rows(c), strict=True):
            assert shown.analyte == stored.analyte
            si = SI.get(stored.code)
            assert shown.unit == (si.unit if si and units == "SI" else stored.unit)
            other = "." if decimal == "," else ","
            assert other not in shown.value and other not in shown.ref.replace("1:", "")
            assert f"| {shown.analyte} | {shown.value} | {shown.unit} | {shown.ref} |" in user


def test_zz_and_us_render_exactly_as_before_locale_rendering(cohort: list[Case]) -> None:
    curated = load_curated(ROOT / "data/bloodpanel/curated.yaml")
    for case in [*curated, *(_as(c, "US") for c in cohort[:100])]:
        rows = ["| Analyte | Result | Unit | Reference range |", "|---|---:|---|---|"]
        rows += [f"| {r.analyte} | {r.value:g} | {r.unit} | {r.ref} |" for r in case.panel]
        before = f"Request {case.case_uid}\nAge: {case.age} years\nSex: {case.sex}\n\n" + "\n".join(
            rows
        )
        assert messages(case)[1]["content"] == before
    assert all(c.label == UNKNOWN_LABEL for c in curated)


def _tolerance(code: str, loc: locales.Locale) -> float:
    """Half a unit of the printed last decimal, in the stored unit."""
    a = ANALYTES[code]
    si = SI.get(code)
    if si is not None and loc.units == "SI":
        return 0.5 * 10**-si.decimals / si.factor + 1e-9
    return 0.5 * 10**-a.decimals + 1e-9


@pytest.mark.parametrize("label", LABELS)
def test_rendered_values_read_back_to_the_stored_values(cohort: list[Case], label: str) -> None:
    loc = locale_of(label)
    for case in cohort[:: max(1, len(cohort) // 120)]:
        c = _as(case, label)
        for stored, shown in zip(c.panel, render_rows(c), strict=True):
            back = to_conventional(stored.code, parse_number(shown.value, loc), shown.unit)
            assert abs(back - stored.value) <= _tolerance(stored.code, loc), (label, shown)


def _flag(value: float, ref: str) -> str:
    low, high = parse_reference(ref)
    one_sided = ref.lstrip().startswith(("<", ">"))
    if low is not None and (value <= low if one_sided else value < low):
        return "low"
    if high is not None and (value >= high if one_sided else value > high):
        return "high"
    return "normal"


@pytest.mark.parametrize("label", ["GB", "NL", "DE", "CN"])
def test_the_rendered_range_flags_the_rendered_value_as_stored(
    cohort: list[Case], label: str
) -> None:
    """Converting the value and its range with one factor keeps high/low/normal, except where
    rounding puts the value exactly on a bound (then it may tip either way)."""
    loc = locale_of(label)
    ties = 0
    for case in cohort:
        for stored, shown in zip(case.panel, render_rows(_as(case, label)), strict=True):
            if ":" in shown.ref:
                continue
            v = parse_number(shown.value, loc)
            ref = shown.ref.replace(loc.decimal, ".") if loc.decimal != "." else shown.ref
            if _flag(v, ref) != stored.flag:
                bounds = [b for b in parse_reference(ref) if b is not None]
                assert v in bounds, (label, stored, shown)
                ties += 1
    assert ties <= 0.01 * sum(len(c.panel) for c in cohort)


def test_labels_no_longer_render_identically(cohort: list[Case]) -> None:
    case = next(c for c in cohort if c.archetype == "t2dm")
    renders = {render_table(_as(case, label)) for label in LABELS}
    combos = {(locale_of(x).language, locale_of(x).decimal, locale_of(x).units) for x in LABELS}
    assert len(renders) == len({(lang, d, u) for lang, d, u in combos}) > 10


def test_the_same_seed_gives_the_same_bytes() -> None:
    def digest(seed: int) -> str:
        h = hashlib.sha256()
        for c in synthetic_cases(400, seed):
            h.update(json.dumps(messages(c), ensure_ascii=False).encode())
        return h.hexdigest()

    assert digest(5) == digest(5) != digest(6)
    case = _as(next(iter(synthetic_cases(10, 5))), "DE")
    assert render_pdf(case.to_record()) == render_pdf(case.to_record())


@pytest.mark.slow
def test_every_localized_prompt_passes_the_leak_check(cohort: list[Case]) -> None:
    for case in cohort:
        for label in ("DE", "FR", "ES", "IT", "PT", "TR", "SA", "CN", "GB"):
            c = _as(case, label)
            leak_check(c, messages(c))


def test_the_stored_case_and_its_grade_do_not_depend_on_the_label(cohort: list[Case]) -> None:
    for case in cohort[:80]:
        answer = reference_report(case)
        base = grade_case(case, answer, 5.0, "sealed")
        for label in ("DE", "GB", "CN"):
            c = _as(case, label)
            rec = c.to_record()
            assert json.loads(rec["panel_json"]) == [r.to_dict() for r in case.panel]
            assert Case.from_record(rec) == c
            assert grade_case(c, answer, 5.0, "sealed") == base


def test_grading_reads_decimal_comma_probabilities_in_an_answer() -> None:
    """An engine shown decimal commas may answer with them: the sealed profile reads
    "92,5 %" as 92.5; kantesti-v11 stays the published scorer (it reads the "5 %" tails)."""
    curated = load_curated(ROOT / "data/bloodpanel/curated.yaml")
    gilbert = _as(next(c for c in curated if c.archetype == "gilbert"), "DE")
    items = ["Gilbert-Syndrom: 92,5 %", "Hämolyse: 5,0 %", "Hepatitis: 2,5 %"]
    resp = {"risk_factors": {"risk_factors_probabilities_of_diseases": items}}
    sealed = grade_case(gilbert, resp, 5.0, "sealed")
    assert sealed.prob_sum == pytest.approx(100.0) and sealed.prob_valid
    assert not sealed.trap_flags_hit
    v11 = grade_case(gilbert, resp, 5.0, "kantesti-v11")
    assert v11.prob_sum == pytest.approx(10.0) and not v11.prob_valid


def test_parse_number_refuses_the_other_decimal_symbol() -> None:
    with pytest.raises(ValueError, match="decimal symbol"):
        parse_number("5.5", locale_of("DE"))
    assert parse_number("5,5", locale_of("DE")) == 5.5
    assert parse_number("5.5", locale_of("GB")) == 5.5


def test_sql_rows_already_in_si_print_as_stored() -> None:
    case = next(iter(synthetic_cases(50, 3)))
    row = case.panel[0]
    si = SI.get(row.code)
    if si is None:  # pick a row with an SI form
        row = next(r for c in synthetic_cases(50, 3) for r in c.panel if r.code in SI)
        si = SI[row.code]
    already = dataclasses.replace(row, unit=si.unit)
    shown = locales.render_row(already, locale_of("GB"))
    assert shown.unit == si.unit and shown.value == f"{row.value:g}"
    assert re.fullmatch(r"[\d.]+", shown.value)
