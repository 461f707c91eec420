"""Unit tests of the configurable grader kinds (``sealedeval.graders.kinds``): each property is
one that a wrong implementation would fail."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.errors import UserError
from sealedeval.graders.kinds import Configured, get_kind, grader_kinds
from sealedeval.graders.kinds import verdict as jv
from sealedeval.graders.kinds.text import normalise, numbers, parse_choice

ROOT = Path(".")


def build(name: str, **params: Any) -> Configured:
    kind = get_kind(name)
    return kind.build(kind.check(params, f"graders.{name}"), ROOT)


def grade(g: Configured, target: Any, answer: str, **item: Any) -> bool:
    return g({"target": target, **item}, answer).passed


# ASCII words: ``upper()`` is not inverted by ``casefold()`` for every letter ("ı" → "I" → "i")
words = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=12)
phrases = st.lists(words, min_size=1, max_size=5).map(" ".join)


# -- registry ---------------------------------------------------------------------------------


def test_every_kind_is_registered_with_a_version() -> None:
    names = {"exact", "includes", "regex", "numeric", "choice", "json_schema", "judge"}
    assert names <= set(grader_kinds.names())
    for n in names:
        k = get_kind(n)
        assert k.name == n and k.version and k.module.startswith("sealedeval.graders.kinds.")


def test_unknown_kind_says_did_you_mean() -> None:
    with pytest.raises(UserError, match=r"unknown grader 'exactt'; did you mean 'exact'\?"):
        get_kind("exactt")


def test_parameters_are_checked_and_defaults_recorded() -> None:
    k = get_kind("numeric")
    assert k.check({}, "x") == {"tolerance": 0, "relative": 0, "extract": "last"}
    with pytest.raises(UserError, match=r"^g\.tolerance: -1 is less than the minimum of 0$"):
        k.check({"tolerance": -1}, "g")
    with pytest.raises(UserError, match="Additional properties are not allowed"):
        k.check({"tolerence": 1}, "g")


# -- exact ------------------------------------------------------------------------------------


@given(phrases)
def test_exact_accepts_the_target_in_any_case_spacing_and_outer_punctuation(t: str) -> None:
    g = build("exact")
    assert grade(g, t, t)
    assert grade(g, t, f"  {t.upper()}. ")
    assert grade(g, t, "\n" + "   ".join(t.split()) + '!"')


@given(phrases, words)
def test_exact_rejects_anything_more(t: str, extra: str) -> None:
    g = build("exact")
    assert not grade(g, t, f"{t} {extra}")
    assert not grade(g, t, "")


def test_exact_options() -> None:
    assert not grade(build("exact", case_sensitive=True), "Paris", "paris")
    assert grade(build("exact", articles=True), "Eiffel Tower", "The Eiffel tower")
    assert not grade(build("exact"), "Eiffel Tower", "The Eiffel tower")
    # inner punctuation counts unless removed; removing it never merges tokens
    assert not grade(build("exact"), "3.14", "314")
    assert not grade(build("exact", punctuation="all"), "3.14", "314")
    assert grade(build("exact", punctuation="all"), "U.S.A", "u s a")
    assert grade(build("exact"), ["Paris", "paris, france"], "Paris, France.")  # alternatives
    assert grade(build("exact"), 42, "42") and grade(build("exact"), 2.5, "2.5")


def test_normalise_is_idempotent_on_examples() -> None:
    for s in ["  Hello,  World! ", "« Ça va ? »", "ＡＢＣ", "..."]:
        n = normalise(s)
        assert normalise(n) == n


# -- includes ---------------------------------------------------------------------------------


@given(phrases, phrases, phrases)
def test_includes_finds_the_target_inside_an_answer(pre: str, t: str, post: str) -> None:
    g = build("includes")
    assert grade(g, t, f"{pre}, {t}; {post}")


@given(phrases)
def test_exact_pass_implies_includes_pass(t: str) -> None:
    assert grade(build("exact"), t, t) <= grade(build("includes"), t, t)


def test_includes_respects_word_boundaries_and_list_targets() -> None:
    assert not grade(build("includes"), "4", "The answer is 14.")
    assert grade(build("includes", word_boundary=False), "4", "The answer is 14.")
    assert grade(build("includes"), ["cat", "dog"], "a dog")
    assert not grade(build("includes", all=True), ["cat", "dog"], "a dog")
    assert grade(build("includes", all=True), ["cat", "dog"], "a dog and a cat")


# -- numeric ----------------------------------------------------------------------------------


@settings(max_examples=200)
@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.floats(0.001, 10))
def test_numeric_tolerance_is_a_closed_band(t: float, tol: float) -> None:
    g = build("numeric", tolerance=tol)
    assert grade(g, t, f"The answer is {t!r}.")
    assert grade(g, t, repr(t + tol * 0.5))
    assert not grade(g, t, repr(t + tol * 2.5))
    assert not grade(g, t, repr(t - tol * 2.5))


def test_numeric_reading() -> None:
    assert numbers("1,234.5 and −2 and 3e2, not v2 or 3x") == [1234.5, -2.0, 300.0]
    assert grade(build("numeric"), 1234.5, "It is 1,234.5")
    assert grade(build("numeric"), "42", "first 7, then 42")  # last by default
    assert not grade(build("numeric", extract="first"), "42", "first 7, then 42")
    assert not grade(build("numeric", extract="only"), "42", "7 or 42")
    assert grade(build("numeric", extract="only"), "42", "42, yes 42")
    assert grade(build("numeric", relative=0.01), 1000, "1009")
    assert not grade(build("numeric", relative=0.01), 1000, "1011")
    assert not grade(build("numeric"), 42, "forty-two")
    g = build("numeric")
    assert g.check_item is not None
    assert g.check_item({"target": "abc"}) == "target 'abc' is not a number"
    assert g.check_item({"target": "12"}) is None


# -- choice -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("B", "B"),
        ("(b)", "B"),
        ("C.", "C"),
        ("**D**", "D"),
        ("The answer is B.", "B"),
        ("Answer: c", "C"),
        ("answer is **A**", "A"),
        ("B) Paris", "B"),
        ("(C) Rome", "C"),
        ("A cat sat on the mat", None),
        ("I think so", None),
        ("E", None),
        ("", None),
    ],
)
def test_choice_parsing(answer: str, letter: str | None) -> None:
    assert parse_choice(answer) == letter


def test_choice_grades_and_checks_targets() -> None:
    g = build("choice")
    assert grade(g, "b", "The answer is B") and not grade(g, "B", "The answer is C")
    assert g.check_item is not None and g.check_item({"target": "E"}) is not None
    assert build("choice", options="ABCDE").check_item({"target": "E"}) is None  # type: ignore[misc]


# -- regex ------------------------------------------------------------------------------------


def test_regex_must_and_must_not() -> None:
    g = build("regex", must=[r"\bMonday\b"], must_not=[r"Thursday"])
    assert grade(g, None, "monday")
    assert not grade(g, None, "Monday or Thursday")
    assert not grade(g, None, "Sunday")
    assert build("regex", must=["abc"], ignore_case=False)({"target": None}, "ABC").passed is False


def test_regex_templates_escape_item_values_and_leave_quantifiers() -> None:
    g = build("regex", must=[r"\b{target}\b"])
    assert grade(g, "3.5", "it is 3.5 m")
    assert not grade(g, "3.5", "it is 305 m")  # the dot is literal
    assert grade(build("regex", must=["^{pat:raw}$"]), None, "aaa", pat="a+")
    assert grade(build("regex", must=[r"\d{3}-{target}"]), "x", "123-x")  # {3} is a quantifier
    assert grade(build("regex", must=["{target}"]), ["cat", "dog"], "hot dog")  # alternation
    assert build("regex", must=["{a}", "{target} {b:raw}"]).fields == ("a", "target", "b")


def test_regex_column_patterns_and_checks() -> None:
    g = build("regex", must_column="must", must_not_column="not")
    assert g.columns == ("must", "not") and g.fields == ()
    assert grade(g, None, "Vesi Dairy", must=["vesi"], **{"not": []})
    assert not grade(g, None, "Vesi or Harju", must="vesi", **{"not": ["harju"]})
    assert g.check_item is not None
    assert "no pattern" in str(g.check_item({"must": [], "not": None}))
    assert "bad pattern" in str(g.check_item({"must": ["("], "not": []}))
    with pytest.raises(ValueError, match="bad pattern"):
        build("regex", must=["(unclosed"])


def test_regex_equals_golden_regex_grader_on_golden_tasks() -> None:
    """Column patterns give exactly golden's ``regex`` verdicts (search, IGNORECASE)."""
    import yaml

    from sealedeval.graders import graders

    tasks = yaml.safe_load((Path(__file__).parents[2] / "data/golden/tasks.yaml").read_text())
    golden = graders.get("regex")
    mine = build("regex", must_column="must", must_not_column="mustNot")
    answers = [t["answer"] for t in tasks["tasks"]] + ["", "I don't know.", "Monday", "2.4.0"]
    for t in tasks["tasks"]:
        for a in answers:
            assert mine(t, a).passed == golden(t, a).passed, (t["id"], a)


# -- json_schema ------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@given(st.text(max_size=8), st.integers(0, 200))
def test_json_schema_accepts_valid_values_fenced_or_not(name: str, age: int) -> None:
    g = build("json_schema", schema=SCHEMA)
    doc = json.dumps({"name": name, "age": age})
    assert grade(g, None, doc) and grade(g, None, f"```json\n{doc}\n```")


def test_json_schema_rejects_invalid_values_and_prose() -> None:
    g = build("json_schema", schema=SCHEMA)
    assert not grade(g, None, '{"name": "x", "age": -1}')
    assert not grade(g, None, '{"name": "x"}')
    assert not grade(g, None, 'Here: {"name": "x", "age": 1}')
    res = g({"target": None}, '{"name": "x", "age": "old"}')
    assert res.details["path"] == "age" and "integer" in res.details["error"]
    assert not grade(
        build("json_schema", schema=SCHEMA, fenced=False), None, '```\n{"name": "x", "age": 1}\n```'
    )


def test_json_schema_sources_and_target(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("type: array\nitems: {type: integer}\n")
    kind = get_kind("json_schema")
    g = kind.build(kind.check({"schema_file": "s.yaml", "equals_target": True}, "g"), tmp_path)
    assert g.needs_target and kind.files({"schema_file": "s.yaml"}) == ["s.yaml"]
    assert grade(g, [1, 2], "[1, 2]") and grade(g, "[1, 2]", "[1,2]")
    assert not grade(g, [1, 2], "[2, 1]")
    col = build("json_schema", schema_column="schema")
    assert grade(col, None, "3", schema={"type": "integer"})
    assert not grade(col, None, '"3"', schema='{"type": "integer"}')
    with pytest.raises(ValueError, match="exactly one of"):
        build("json_schema")
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        build("json_schema", schema={"type": "nonsense"})


# -- judge ------------------------------------------------------------------------------------


def test_judge_reads_stored_verdicts_with_swap_and_agree() -> None:
    g = build("judge", engine="j", rubric="Correct and complete.", swap=True)
    assert g.needs_target and g.extra["orders"] == jv.ORDERS
    both = '{"verdict": "PASS"}'
    assert g({"target": "x", "judge_replies": [both, "PASS, clearly"]}, "a").passed
    res = g({"target": "x", "judge_replies": [both, '{"verdict": "FAIL"}']}, "a")
    assert not res.passed and res.details["consistent"] is False
    res = g({"target": "x", "judge_replies": [both, None]}, "a")
    assert not res.passed and res.details["verdicts"] == ["PASS", "MISSING"]
    assert res.details["consistent"] is None
    assert not g({"target": "x", "judge_replies": ["hmm", "hmm"]}, "a").passed  # UNPARSED
    one = build("judge", engine="j", rubric="r", reference=False)
    assert not one.needs_target and one({"judge_replies": ["PASS"]}, "a").passed


def test_judge_prompt_swaps_the_candidate_position() -> None:
    last = jv.messages("R", "Q?", "ref", "cand", "candidate-last")[1]["content"]
    first = jv.messages("R", "Q?", "ref", "cand", "candidate-first")[1]["content"]
    assert last.index("Question") < last.index("Reference") < last.index("Candidate")
    assert first.index("Candidate") < first.index("Question") < first.index("Reference")
    assert "Reference" not in jv.messages("R", "Q?", None, "c", "candidate-last")[1]["content"]
    assert jv.reference_verdict("Vesi Dairy", "It is Vesi Dairy.") == "PASS"
    assert jv.reference_verdict("Vesi", "Vesimäki") == "FAIL"
    assert jv.reference_verdict(None, "anything") == "PASS"


def test_judge_rubric_file(tmp_path: Path) -> None:
    kind = get_kind("judge")
    (tmp_path / "r.md").write_text("Be strict.\n")
    p = kind.check({"engine": "j", "rubric_file": "r.md", "labels": "l.jsonl"}, "g")
    assert kind.files(p) == ["r.md", "l.jsonl"]
    assert kind.build(p, tmp_path).extra["rubric"] == "Be strict.\n"
    with pytest.raises(ValueError, match="exactly one of rubric"):
        kind.build(kind.check({"engine": "j"}, "g"), tmp_path)
    with pytest.raises(UserError, match="'engine' is a required property"):
        kind.check({"rubric": "x"}, "g")


def test_no_kind_grades_an_empty_answer_as_passing() -> None:
    cases = [
        (build("exact"), "x"),
        (build("includes"), "x"),
        (build("numeric"), 1),
        (build("choice"), "A"),
        (build("regex", must=["{target}"]), "x"),
        (build("json_schema", schema=SCHEMA), None),
    ]
    for g, target in cases:
        assert not grade(g, target, ""), g.name
        assert re.match(r"^\d+$", g.version)
