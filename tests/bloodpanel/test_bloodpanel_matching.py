"""The sealed rule: normalisation, word boundaries, negation, low-probability differentials."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import shared_fixture

from sealedeval.suites.bloodpanel.matching import (
    Document,
    Polarity,
    normalize,
    parse_entry,
    polarities,
)

ROOT = Path(__file__).resolve().parents[2]
CURATED = ROOT / "data" / "bloodpanel" / "curated.yaml"
V11 = "responses_v11_full.json"

RULE = ROOT / "data" / "bloodpanel" / "SEALED_RULE.md"


def _examples() -> list[tuple[str, str, str, str]]:
    rows = []
    section = RULE.read_text(encoding="utf-8").split("## Examples", 1)[1]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("Text", "---") and not set(cells[0]) <= {"-"}:
            rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


def test_rule_document_has_examples() -> None:
    assert len(_examples()) >= 15


@pytest.mark.parametrize(("text", "term", "status", "fires"), _examples())
def test_documented_examples_hold(text: str, term: str, status: str, fires: str) -> None:
    doc = Document([text])
    st = doc.status(term)
    assert st is not None and st.name.lower() == status
    assert doc.fires(term) is (fires == "yes")


def test_brief_sentences() -> None:
    assert polarities("excludes haemolytic anaemia", "hemolytic anemia") == [Polarity.NEGATED]
    assert polarities("no evidence of hepatitis", "hepatitis") == [Polarity.NEGATED]
    assert polarities("Hypothyroidism: 2%", "hypothyroidism") == [Polarity.LOW_PROBABILITY]
    assert polarities("consistent with haemolytic anaemia", "hemolytic anemia") == [
        Polarity.AFFIRMED
    ]
    assert polarities("Hepatitis (probability 40%)", "hepatitis") == [Polarity.AFFIRMED]


def test_spelling_and_boundaries() -> None:
    assert normalize("Anaemia, haemolytic, β-thalassaemia, dyslipidaemia") == (
        "anemia, hemolytic, beta thalassemia, dyslipidemia"
    )
    assert normalize("Raised ALT") == "raised alt"  # no -ise/-ize rewriting of ordinary words
    assert polarities("The panel is abnormal.", "normal") == []
    assert polarities("Muscle aches and a hassle.", "sle") == []
    assert polarities("eGFR 95 by CKD-EPI 2021.", "kidney disease") == []
    assert polarities("HbA1c is in the prediabetes range.", "diabetes") == []
    assert polarities("Anti-dsDNA is high.", "anti-dsdna") == [Polarity.AFFIRMED]
    assert polarities("Results are within normal limits.", "within reference") == [
        Polarity.AFFIRMED
    ]


def test_negation_scope_ends_at_clause_terminators() -> None:
    assert polarities("No anaemia, but the ferritin suggests iron deficiency.", "deficiency") == [
        Polarity.AFFIRMED
    ]
    assert polarities("Not only anaemia is present.", "anemia") == [Polarity.AFFIRMED]
    # A list after a cue is covered (commas do not end the scope).
    assert polarities("Without hepatitis, cirrhosis, or biliary obstruction.", "cirrhosis") == [
        Polarity.NEGATED
    ]
    # A cue reaches the whole clause (ConText), capped at PRE_WINDOW words.
    from sealedeval.suites.bloodpanel.matching import PRE_WINDOW

    far = "No " + " ".join(["word"] * 16) + " hepatitis."
    assert polarities(far, "hepatitis") == [Polarity.NEGATED]
    beyond = "No " + " ".join(["word"] * (PRE_WINDOW + 1)) + " hepatitis."
    assert polarities(beyond, "hepatitis") == [Polarity.AFFIRMED]


def test_probability_in_prose_and_structured_differential() -> None:
    assert polarities("The estimated probability of hepatitis is 4%.", "hepatitis") == [
        Polarity.LOW_PROBABILITY
    ]
    assert polarities("The estimated probability of hepatitis is 40%.", "hepatitis") == [
        Polarity.AFFIRMED
    ]
    # A lab percentage in the clause is not a probability without a probability word.
    assert polarities("HbA1c of 5.2% argues for diabetes.", "diabetes") == [Polarity.AFFIRMED]
    doc = Document([], [("Hepatitis", 4.0), ("Gilbert syndrome", 96.0)])
    assert doc.status("hepatitis") is Polarity.LOW_PROBABILITY and not doc.fires("hepatitis")
    assert Document([], [("Hepatitis", 12.0)]).fires("hepatitis")


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("Beta thalassemia minor: 98% — confirmed", ("beta thalassemia minor", 98.0)),
        (
            "Type 2 Diabetes Mellitus (10-year risk): 15% — x",
            ("type 2 diabetes mellitus (10 year risk)", 15.0),
        ),
        ("hepatitis (probability 40%)", ("hepatitis", 40.0)),
        ("- Anaemia of inflammation: 12,5 %", ("anemia of inflammation", 12.5)),
        ("the 55% probability for lupus nephritis is derived from", None),
        ("the hba2 level of 5.6% is above the 99th percentile", None),
    ],
)
def test_parse_entry(item: str, expected: tuple[str, float] | None) -> None:
    assert parse_entry(normalize(item)) == expected


def test_document_mentions_carry_snippets() -> None:
    doc = Document(["First sentence. No evidence of hepatitis here.", "Hepatitis: 3%"])
    ms = doc.mentions("hepatitis")
    assert [m.polarity for m in ms] == [Polarity.NEGATED, Polarity.LOW_PROBABILITY]
    assert "no evidence of hepatitis" in ms[0].snippet and ms[1].probability == 3.0
    assert re.search("first", ms[0].snippet) is None  # the snippet stays in its sentence


def test_every_synonym_has_a_literal_anchor() -> None:
    from sealedeval.suites.bloodpanel.matching import term_matcher
    from sealedeval.suites.bloodpanel.vocabulary import SYNONYMS

    for key in SYNONYMS:
        m = term_matcher(key)
        assert all(len(a) >= 2 for a in m.anchors), key


def test_fast_matcher_equals_plain_regex() -> None:
    """The anchor-prefiltered matcher finds exactly what a word-bounded finditer finds."""
    import json

    from sealedeval.suites.bloodpanel.matching import term_matcher, term_pattern
    from sealedeval.suites.bloodpanel.vocabulary import SYNONYMS

    doc = json.loads((shared_fixture("kantesti-v11", V11) / V11).read_text(encoding="utf-8"))
    texts = [normalize(json.dumps(c["response"])) for c in doc["cases"]]
    texts.append(normalize("Abnormal normal; anaemic anemia; hba1c/a1c; ckd-epi ckd; x-ray sle."))
    for key in [*SYNONYMS, "gout", "viral", "ferritin"]:
        fast, slow = term_matcher(key), term_pattern(key)
        for t in texts:
            assert fast.spans(t) == [m.span() for m in slow.finditer(t)], key


def test_normalize_dashes_and_hyphens() -> None:
    assert normalize("Anti-dsDNA — high – very") == "anti dsdna ; high ; very"
    assert normalize("A - B") == "a ; b"
    assert normalize("Oesophageal haemorrhage, leucopenia, fibre") == (
        "esophageal hemorrhage, leukopenia, fiber"
    )
    assert normalize("Mixed\tspacing  here") == "mixed spacing here"


def test_scope_stops_at_sentence_and_dash() -> None:
    assert polarities("No hepatitis. Cirrhosis is present.", "cirrhosis") == [Polarity.AFFIRMED]
    assert polarities("No anaemia — diabetes is present.", "diabetes") == [Polarity.AFFIRMED]
    assert polarities("No anaemia, and no diabetes.", "diabetes") == [Polarity.NEGATED]
    assert polarities("Notably, hepatitis is present.", "hepatitis") == [Polarity.AFFIRMED]
    assert polarities("It cannot be excluded that hepatitis is present.", "hepatitis") == [
        Polarity.AFFIRMED
    ]


def _fixture_reports() -> list[tuple[list[str], tuple[str, ...]]]:
    """(items, answer-key terms) of each published V11 response (real engine prose)."""
    import json

    from sealedeval.suites.bloodpanel.cases import cases_by_id, load_curated
    from sealedeval.suites.bloodpanel.rubric import normalize_response

    by_id = cases_by_id(load_curated(CURATED))
    doc = json.loads((shared_fixture("kantesti-v11", V11) / V11).read_text(encoding="utf-8"))
    out = []
    for entry in doc["cases"]:
        case = by_id[entry["summary"]["case_id"]]
        report = normalize_response(entry["response"])
        items = [it for s in report.sections for sub in s.subsections for it in sub.items]
        terms = (*case.expected_keywords, *case.expected_scoring_systems, *case.trap_flags)
        out.append((items, terms))
    return out


def test_fast_paths_agree_with_the_definitions() -> None:
    # Document normalises item by item and memoises per-line statuses across documents; both
    # must give exactly what normalising the joined text and taking the strongest mention give.
    extra = ("anemia", "hepatitis", "diabetes", "liver disease", "normal", "deficiency")
    tricky = [
        "Haemolytic anaemia - excluded",
        "ΟΔΟΣ\u0301 — no hepatitis",
        "no hepatitis, but cirrhosis is present; anaemia: 4%",
        "  spaced  -  text  ",
        "Hepatitis (probability 40%)\nno evidence of diabetes",
    ]
    reports = [*_fixture_reports(), (tricky, extra)]
    for _ in range(2):  # the second pass reads every line from the memo
        for items, terms in reports:
            doc = Document(items)
            assert doc.text == normalize("\n".join(items))
            for term in (*terms, *extra):
                strongest = min((m.polarity for m in doc.mentions(term)), default=None)
                assert doc.status(term) == strongest, term
            assert doc.statuses([*terms, *extra]) == [doc.status(t) for t in (*terms, *extra)]
    same_line = Document(["No hepatitis but cirrhosis is present."])
    assert same_line.statuses(["hepatitis", "cirrhosis"]) == [Polarity.NEGATED, Polarity.AFFIRMED]


def test_normalize_folds_accents_ranges_and_written_percents() -> None:
    assert normalize("Hämolytische Anämie, hépatite, Straße") == (
        "hamolytische anamie, hepatite, strasse"
    )
    assert normalize("Hepatitis 1-3%, cirrhosis 2–4 %") == "hepatitis 1 to 3%, cirrhosis 2 to 4 %"
    assert normalize("Diabetes: 5 percent; 3 por ciento; 2 Prozent") == ("diabetes: 5%; 3%; 2%")
    assert normalize("pero sí una deficiencia; si") == "pero yes una deficiencia; si"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (4, (4.0, True)),
        ("60%", (60.0, True)),
        ("12,5 %", (12.5, True)),
        ("1-3%", (3.0, True)),
        ("high", (50.0, False)),
        ("baja", (5.0, False)),
        ("élevée", (50.0, False)),
        ("n/a", None),
        (True, None),
    ],
)
def test_parse_probability(value: object, expected: tuple[float, bool] | None) -> None:
    from sealedeval.suites.bloodpanel.matching import parse_probability

    assert parse_probability(value) == expected


def test_parse_probability_reads_a_bound_as_below_it() -> None:
    from sealedeval.suites.bloodpanel.matching import parse_probability

    got = parse_probability("<5%")
    assert got is not None and got[0] < 5.0 and got[1]


def test_parse_entries_reads_several_entries_per_line_and_refuses_prose() -> None:
    from sealedeval.suites.bloodpanel.matching import parse_entries

    assert parse_entries(
        normalize("Gilbert syndrome 92%, haemolytic anaemia 3%, hepatitis 5%")
    ) == [
        ("gilbert syndrome", 92.0),
        ("hemolytic anemia", 3.0),
        ("hepatitis", 5.0),
    ]
    assert parse_entries(normalize("Differential: cirrhosis 55% | hepatitis 5-15%")) == [
        ("cirrhosis", 55.0),
        ("hepatitis", 10.0),
    ]
    assert parse_entries(normalize("HbA1c of 5.2% and TSAT 30% argue for nothing")) == []


def test_a_structured_word_probability_is_read_for_the_flag_not_the_sum() -> None:
    from sealedeval.suites.bloodpanel.rubric import normalize_response, sealed_document

    report = normalize_response(
        {
            "differential": [
                {"condition": "Hepatitis", "probability": "high"},
                {"condition": "Gilbert", "probability": 90},
            ]
        }
    )
    assert report.differential == (("Gilbert", 90.0),)
    assert sealed_document(report).fires("hepatitis")
