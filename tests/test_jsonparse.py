"""The shared JSON reader (graders.jsonparse) and the three graders that use it.

They share decoding, fences and brace matching; they differ only in their sealed forgiveness,
and these tests pin each difference so a change to the shared code that moved one would fail.
"""

from __future__ import annotations

from sealedeval.graders.jsonparse import extract_json_object, fenced_blocks, loads_object
from sealedeval.graders.judge import parse_verdict
from sealedeval.suites.bloodpanel.prompts import parse_report


def test_loads_object_takes_one_object_only() -> None:
    assert loads_object('{"a": 1}') == {"a": 1}
    assert loads_object("[1]") is None and loads_object("nope") is None
    assert loads_object('{"a": "x\ny"}') is None  # a raw newline in a string: strict
    assert loads_object('{"a": "x\ny"}', strict=False) == {"a": "x\ny"}


def test_fenced_blocks_respect_the_language_pattern() -> None:
    text = '```json\n{"a": 1}\n``` and ```python\n{"b": 2}\n```'
    assert [b.strip() for b in fenced_blocks(text)] == ['{"a": 1}', '{"b": 2}']
    assert next(b.strip() for b in fenced_blocks(text, "json|JSON|")) == '{"a": 1}'
    assert fenced_blocks(text, "json|JSON|")[1].startswith("python")


def test_the_three_readers_on_the_same_answers() -> None:
    clean = '{"verdict": "PASS"}'
    assert extract_json_object(clean).data == parse_report(clean) == {"verdict": "PASS"}
    assert parse_verdict(clean) == "PASS"
    prose = 'Sure! {"verdict": "FAIL", "why": "a } inside"} hope that helps'
    got = extract_json_object(prose)
    assert got.ok and got.extra_text and got.data == {"verdict": "FAIL", "why": "a } inside"}
    assert parse_report(prose) == got.data  # first { to last }
    truncated = '{"verdict": "PASS", "why": "cut'
    repaired = extract_json_object(truncated)
    assert repaired.ok and repaired.repaired  # grounding repairs a truncated object ...
    assert parse_report(truncated) is None  # ... bloodpanel grades it as malformed
    trailing = '{"a": 1,}'
    assert extract_json_object(trailing).repaired and parse_report(trailing) is None
