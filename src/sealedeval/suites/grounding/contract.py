"""The track-A answer contract: one JSON object, its schema, a tolerant parser and item scoring.

The contract is deliberately small (five flat fields) so a 135M-parameter model can fill it
under a grammar constraint, and the same schema doubles as an OpenAI ``response_format``.
Parsing is tolerant (code fences, prose around the object, trailing commas, a truncated final
brace) because the spec reports parse success as a result in itself: the parser must separate
"the model produced no usable object" from "the model produced a wrong answer", and never
guess a value out of free text.

Metrics (spec, track A):

* M1: the returned value equals the reference answer (answerable items);
* M2: the answer names both the id and the version of the definition in force (answerable);
* M5: the answer refuses (unanswerable items);
* M7: the returned value equals the competing definition's answer (answerable items) — a lower
  bound on interpretation error, not a measure of it;
* unjustified abstention: a refusal on an answerable item, recorded separately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sealedeval.graders.jsonparse import ParseResult, extract_json_object
from sealedeval.suites.grounding.catalog import values_equal
from sealedeval.suites.grounding.items import Item

__all__ = [
    "ANSWER_INSTRUCTION",
    "ANSWER_SCHEMA",
    "SCORER_VERSION",
    "Answer",
    "ParseResult",
    "extract_json_object",
    "normalise_def_id",
    "parse_answer",
    "parse_number",
    "parse_version",
    "response_format",
    "score_item",
]

SCORER_VERSION = "grounding-track-a/1"
"""Recorded on every graded row so an old run can be re-scored by the same rules."""

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"type": ["number", "null"]},
        "definition_id": {"type": ["string", "null"]},
        "version": {"type": ["integer", "null"]},
        "refusal": {"type": "boolean"},
        "reason": {"type": "string"},
    },
    "required": ["value", "definition_id", "version", "refusal", "reason"],
    "additionalProperties": False,
}
"""JSON Schema of the answer; every field required (OpenAI strict mode demands it)."""

ANSWER_INSTRUCTION = (
    'Reply with one JSON object: {"value": number or null, "definition_id": string or null, '
    '"version": integer or null, "refusal": true or false, "reason": string}. Put only the '
    'number in "value". If you used a definition record, give its id and version; otherwise '
    'null. If the data cannot answer the question, set "refusal": true, "value": null and say '
    'why in "reason".'
)


def response_format(
    schema: dict[str, Any] | None = None,
    name: str = "grounding_answer",
) -> dict[str, Any]:
    """The OpenAI ``response_format`` value that constrains output to ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": True, "schema": schema or ANSWER_SCHEMA},
    }


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_number(value: object) -> float | None:
    """A numeric answer, or None. Strings may carry ``$``, ``USD`` and thousands separators,
    but must contain exactly one number: a value is never guessed out of a sentence."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        cleaned = re.sub(r"(?<=\d),(?=\d{3}\b)", "", value)
        cleaned = cleaned.replace("$", " ").replace("USD", " ")
        found = _NUMBER.findall(cleaned)
        if len(found) == 1:
            return float(found[0])
    return None


def parse_version(value: object) -> int | None:
    """A version number from ``2``, ``2.0``, ``"2"``, ``"v2"`` or ``"version 2"``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(?:v|version\s*)?(\d+)(?:\.0)?\s*", value, re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def normalise_def_id(value: str) -> str:
    """Compare ids case- and separator-insensitively (``msc_active customer`` → ``MSC-ACTIVE-
    CUSTOMER``), so M2 measures naming the definition, not typing it."""
    return re.sub(r"[\s_\-]+", "-", value.strip().upper()).strip("-")


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no"):
        return False
    return None


_ALIASES = {
    "value": ("value", "answer", "result"),
    "definition_id": ("definition_id", "definition", "def_id", "id"),
    "version": ("version", "definition_version"),
    "refusal": ("refusal", "refuse", "refused"),
    "reason": ("reason", "explanation"),
}


@dataclass(frozen=True)
class Answer:
    """A parsed track-A answer.

    Attributes:
        parse_ok: A JSON object was found (the spec's "parse success").
        contract_ok: All five fields were present with the contract's types.
        refusal: True only when the object says so (a null value alone is not a refusal).
    """

    parse_ok: bool
    contract_ok: bool
    value: float | None
    definition_id: str | None
    version: int | None
    refusal: bool
    reason: str
    error: str | None = None


def parse_answer(raw: str) -> Answer:
    """Parse raw model output into an :class:`Answer`; never raises."""
    found = extract_json_object(raw)
    if not found.ok or found.data is None:
        return Answer(False, False, None, None, None, False, "", found.error)
    lowered = {str(k).strip().lower(): v for k, v in found.data.items()}
    fields: dict[str, object] = {}
    for name, keys in _ALIASES.items():
        for k in keys:
            if k in lowered:
                fields[name] = lowered[k]
                break
    value = parse_number(fields.get("value"))
    def_raw = fields.get("definition_id")
    def_id = (def_raw.strip() or None) if isinstance(def_raw, str) else None
    version = parse_version(fields.get("version"))
    if def_id is not None and version is None:
        m = re.fullmatch(r"(.+?)\s*(?:@|\s)v?(\d+)", def_id, re.IGNORECASE)
        if m:
            def_id, version = m.group(1), int(m.group(2))
    refusal = _as_bool(fields.get("refusal"))
    reason_raw = fields.get("reason")
    reason = reason_raw if isinstance(reason_raw, str) else ""
    raw_value = fields.get("value")
    contract_ok = (
        set(_ALIASES) <= set(found.data)
        and (
            raw_value is None
            or (isinstance(raw_value, int | float) and not isinstance(raw_value, bool))
        )
        and (def_raw is None or isinstance(def_raw, str))
        and (fields.get("version") is None or isinstance(fields.get("version"), int))
        and isinstance(fields.get("refusal"), bool)
        and isinstance(reason_raw, str)
    )
    return Answer(True, bool(contract_ok), value, def_id, version, bool(refusal), reason)


def score_item(item: Item, parsed: Answer) -> dict[str, Any]:
    """Per-response metrics of one track-A answer, exactly as the spec defines them.

    Not-applicable metrics are None (M1/M2/M7/unjustified abstention on unanswerable items, M5
    on answerable ones), so an average over a column uses the spec's denominator. A parse
    failure scores 0 on every applicable metric (it is neither a right answer nor a refusal).
    A refusal scores 0 on M1 and M7 whatever value accompanies it.
    """
    row: dict[str, Any] = {
        "item_id": item.item_id,
        "family": item.family,
        "scorer": SCORER_VERSION,
        "parse_ok": parsed.parse_ok,
        "contract_ok": parsed.contract_ok,
        "refused": parsed.parse_ok and parsed.refusal,
        "m1": None,
        "m2": None,
        "m5": None,
        "m7": None,
        "unjustified_abstention": None,
    }
    answered = parsed.parse_ok and not parsed.refusal and parsed.value is not None
    if item.answerable:
        assert item.reference_value is not None and item.competing_value is not None
        assert item.in_force is not None
        row["m1"] = int(answered and values_equal(parsed.value or 0.0, item.reference_value))
        row["m7"] = int(answered and values_equal(parsed.value or 0.0, item.competing_value))
        row["m2"] = int(
            parsed.parse_ok
            and parsed.definition_id is not None
            and normalise_def_id(parsed.definition_id) == item.in_force.def_id
            and parsed.version == item.in_force.version
        )
        row["unjustified_abstention"] = int(parsed.parse_ok and parsed.refusal)
    else:
        row["m5"] = int(parsed.parse_ok and parsed.refusal)
    return row
