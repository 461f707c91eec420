"""What a chat engine is sent for a bloodpanel case, and how its answer is read back.

The published harness rendered ``Case ID: BT-011-SLE`` and ``Panel type: Trap`` into the PDF it
sent, handing the engine the diagnosis and the fact that it was being tested for
over-diagnosis. Here the engine sees an opaque request id (the case's hashed ``case_uid``), age,
sex and the results table — nothing else — and ``leak_check`` refuses to let a prompt through if
any part of the answer key appears in it.

Message order serves the server's prompt cache: the system message (instructions and layout)
is byte-identical for every case, the case-specific table comes last.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sealedeval.graders.jsonparse import fenced_blocks, loads_object
from sealedeval.suites.bloodpanel import locales
from sealedeval.suites.bloodpanel.cases import Case
from sealedeval.suites.bloodpanel.layout import LAYOUT, SECTION_CODES
from sealedeval.suites.bloodpanel.matching import normalize, term_matcher

PROMPT_VERSION: Final = "1"

_ITEMS: Final = {"type": "array", "items": {"type": "string"}, "minItems": 1}

REPORT_JSON_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        **{
            code: {
                "type": "object",
                "properties": {sub: _ITEMS for sub, _ in subs},
                "required": [sub for sub, _ in subs],
                "additionalProperties": False,
            }
            for code, _, subs in LAYOUT
        },
        "differential": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "condition": {"type": "string"},
                    "probability": {"type": "number", "minimum": 0, "maximum": 100},
                },
                "required": ["condition", "probability"],
                "additionalProperties": False,
            },
        },
    },
    "required": [*SECTION_CODES, "differential"],
    "additionalProperties": False,
}
"""JSON Schema of the answer: 7 section objects of 16 string-array subsections + differential.

Strict-mode compatible (every object closes ``additionalProperties`` and requires all its
keys), so ``response_format()`` can pass it to an OpenAI-compatible server, whose grammar then
makes the structure impossible to get wrong even for a tiny model.
"""


BOUNDS: Final = {"max_items": 1, "max_chars": 80, "max_conditions": 4, "max_condition_chars": 40}
"""Length limits of ``bounded_schema``: one sentence of at most 80 characters per subsection and
at most four differential entries. The longest answer it admits is ~700 SmolLM2 tokens (keys,
16 × 80 characters, the differential), which fits ``max_tokens`` 900 beside a ~780-token prompt
in a 2,048-token context; at the embedded model's ~50 tokens/s that is under 15 s a case."""


def bounded_schema(
    max_items: int = BOUNDS["max_items"],
    max_chars: int = BOUNDS["max_chars"],
    max_conditions: int = BOUNDS["max_conditions"],
    max_condition_chars: int = BOUNDS["max_condition_chars"],
) -> dict[str, Any]:
    """``REPORT_JSON_SCHEMA`` with ``maxItems``/``maxLength`` on every array and string.

    For a grammar-constrained local model (llama.cpp honours both keywords): without limits a
    small model can fill a subsection until ``max_tokens`` and the report never closes (an
    error row: truncated). The structure, and so the rubric, is unchanged.
    """
    item = {"type": "string", "maxLength": max_chars}
    items = {"type": "array", "items": item, "minItems": 1, "maxItems": max_items}
    schema = json.loads(json.dumps(REPORT_JSON_SCHEMA))
    for code, _, subs in LAYOUT:
        schema["properties"][code]["properties"] = {sub: items for sub, _ in subs}
    diff = schema["properties"]["differential"]
    diff["maxItems"] = max_conditions
    diff["items"]["properties"]["condition"]["maxLength"] = max_condition_chars
    out: dict[str, Any] = schema
    return out


def response_format(name: str = "blood_panel_report", *, bounded: bool = False) -> dict[str, Any]:
    """``response_format`` for an OpenAI-compatible chat request (structured output).

    ``bounded`` uses ``bounded_schema`` (length limits; for the embedded llama.cpp engine).
    """
    schema = bounded_schema() if bounded else REPORT_JSON_SCHEMA
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def _layout_text() -> str:
    lines = []
    for code, _, subs in LAYOUT:
        lines.append(f'- "{code}": {{' + ", ".join(f'"{s}"' for s, _ in subs) + "}")
    return "\n".join(lines)


SYSTEM: Final = (
    "You interpret laboratory blood panels for clinicians. Read the whole panel, weigh the "
    "competing explanations of the results against each other, and answer with one JSON "
    "object and nothing else.\n\n"
    "The object has one key per section; each section is an object whose keys are its "
    "subsections, and each subsection is an array of 1-4 short sentences:\n"
    f"{_layout_text()}\n"
    '- "differential": an array of {"condition": string, "probability": number}: the most '
    "likely explanation and the alternatives you weighed, probabilities in percent summing "
    "to 100.\n\n"
    "Rules: base every statement on the values given and quote them with units; where the "
    "values allow it, compute the validated clinical indices and risk equations that apply, "
    "name each one and give its result; name a condition as present only if the values "
    "support it, and give an unsupported alternative a low probability in the differential "
    "instead; say so plainly when the results call for reassurance rather than treatment."
)
"""Shared instructions (identical for every case, so a prompt cache can reuse them)."""


def render_table(case: Case) -> str:
    """The results as a markdown table (analyte, result, unit, reference range), printed for
    the case's label (``locales``: header language, decimal symbol, units)."""
    head = locales.scaffold(case).header
    rows = ["| " + " | ".join(head) + " |", "|---|---:|---|---|"]
    rows += [f"| {r.analyte} | {r.value} | {r.unit} | {r.ref} |" for r in locales.render_rows(case)]
    return "\n".join(rows)


def messages(case: Case) -> list[dict[str, str]]:
    """Chat messages for ``case``: shared system prompt, then request id, age, sex and table,
    in the case's label's language (``locales``; a ``ZZ`` or US case renders in English with
    conventional units, as before locale rendering)."""
    sc = locales.scaffold(case)
    sex = sc.female if case.sex == "female" else sc.male
    user = (
        f"{sc.request} {case.case_uid}\n{sc.age.format(age=case.age)}\n"
        f"{sc.sex.format(sex=sex)}\n\n{render_table(case)}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _data_text(case: Case) -> str:
    """Text the engine must see: the table cells as printed (analyte names may equal answer-key
    terms)."""
    return normalize(
        "\n".join(f"{r.analyte} | {r.unit} | {r.ref}" for r in locales.render_rows(case))
    )


def leak_check(case: Case, msgs: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a prompt that reveals any part of the answer key.

    Leaks: the human case id (``BT-011-SLE``) or title; the word "trap"; and any expected
    keyword, trap flag, scoring-system name, archetype or specialty name found (by the sealed
    matcher: synonyms, spelling variants, word boundaries) more often in the prompt than in
    the panel's own analyte names, units and ranges — "Ferritin" as a row of the table is data,
    "ferritin" in the instructions would be a hint.

    Raises:
        ValueError: Naming the case and what leaked.
    """
    raw = "\n".join(str(m.get("content", "")) for m in msgs)
    text = normalize(raw)
    data = _data_text(case)
    leaks: list[str] = []
    if case.case_id and case.case_id.lower() in raw.lower():
        leaks.append(f"case id {case.case_id!r}")
    if case.title and case.title.lower() in raw.lower():
        leaks.append("title")
    if re.search(r"(?<!\w)trap(?!\w)", text):
        leaks.append("the word 'trap'")
    terms = [
        *(("keyword", k) for k in case.expected_keywords),
        *(("trap flag", f) for f in case.trap_flags),
        *(("scoring system", s) for s in case.expected_scoring_systems),
        ("archetype", case.archetype.replace("_", " ")),
        ("specialty", case.specialty.replace("_", " ")),
    ]
    for kind, term in terms:
        if len(normalize(term).strip()) < 2:
            continue
        # TermMatcher finds exactly term_pattern's matches (see its docstring), ~30x faster:
        # this check runs on every rendered prompt, 100,000 of them in the full profile.
        m = term_matcher(term)
        if len(m.spans(text)) > len(m.spans(data)):
            leaks.append(f"{kind} {term!r}")
    if leaks:
        raise ValueError(f"bloodpanel case {case.case_id}: prompt leaks " + ", ".join(leaks))


def parse_report(text: str) -> dict[str, Any] | None:
    """The JSON object in an engine's answer, or None.

    Tolerates code fences (```json … ```), prose before or after the object, a UTF-8 BOM and
    raw control characters (newlines, tabs) inside strings;
    returns None (never raises) for anything that is not one JSON object, so a malformed
    answer is graded as such instead of crashing the run. Decoding and fences are the shared
    ``graders.jsonparse`` pieces; the order of candidates is this suite's sealed rule.
    """
    if not isinstance(text, str):
        return None
    s = text.lstrip("\ufeff").strip()
    candidates = [s]
    candidates += [b.strip() for b in fenced_blocks(s, languages="json|JSON|")]
    first, last = s.find("{"), s.rfind("}")
    if 0 <= first < last:
        candidates.append(s[first : last + 1])
    for c in candidates:
        # strict=False: a raw newline or tab inside a string (llama.cpp's JSON grammar lets
        # the embedded model write one) is formatting, not a different answer.
        obj = loads_object(c, strict=False)
        if obj is not None:
            return obj
    return None
