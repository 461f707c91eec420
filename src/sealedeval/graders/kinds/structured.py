"""``json_schema``: the answer is one JSON value valid under a JSON Schema (Draft 2020-12).

The schema is given inline (``schema``), in a project file (``schema_file``, JSON or YAML, sealed
with the suite) or per item (``schema_column``: a column holding the schema). The answer is
parsed as it stands, after stripping surrounding whitespace and one Markdown code fence
(```` ```json ... ``` ````) when ``fenced`` is true (the default); nothing else is searched for,
so prose around the JSON fails. ``equals_target`` also requires the parsed value to equal the
item's target (a JSON value, or a text holding one). ``response_format: true`` asks engines
that declare the ``json_schema`` capability to decode under the schema (the suite adds the
OpenAI ``response_format``); others are graded the same way on free text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from sealedeval import yamlio
from sealedeval.canonical import compact
from sealedeval.graders.base import Grade
from sealedeval.graders.kinds import Configured, grader_kind, passed

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```$", re.DOTALL)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "schema": {"type": ["object", "boolean"]},
        "schema_file": {"type": "string", "minLength": 1},
        "schema_column": {"type": "string", "minLength": 1},
        "equals_target": {"type": "boolean", "default": False},
        "fenced": {"type": "boolean", "default": True},
        "response_format": {"type": "boolean", "default": False},
    },
}


def parse_answer(answer: str, *, fenced: bool = True) -> Any:
    """The JSON value of an answer; ``ValueError`` when it is not one JSON value."""
    text = answer.strip()
    if fenced:
        m = _FENCE.match(text)
        if m:
            text = m.group(1).strip()
    return json.loads(text)


def read_schema(root: Path, rel: str) -> Any:
    """A schema file (JSON, or YAML by suffix); ``ValueError`` naming the file if unusable."""
    path = root / rel
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{rel}: cannot read the schema file ({e.__class__.__name__})") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            return yamlio.safe_load(text)
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{rel}: not a valid schema file ({e})") from None
    except Exception as e:  # yaml.YAMLError
        raise ValueError(f"{rel}: not a valid schema file ({e})") from None


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import jsonschema

    schema = json.loads(schema_json)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_schema(schema: Any) -> str | None:
    """None for a valid Draft 2020-12 schema, else the reason."""
    import jsonschema

    try:
        _validator(compact(schema))
    except jsonschema.SchemaError as e:
        return f"invalid JSON Schema ({e.message})"
    except (TypeError, ValueError) as e:
        return f"invalid JSON Schema ({e})"
    return None


def _target_value(target: Any) -> Any:
    if isinstance(target, str):
        try:
            return json.loads(target)
        except ValueError:
            return target
    return target


def _files(params: Mapping[str, Any]) -> list[str]:
    return [str(params["schema_file"])] if params.get("schema_file") else []


@grader_kind("json_schema", "1", SCHEMA, files=_files)
def build_json_schema(params: Mapping[str, Any], root: Path) -> Configured:
    given = [k for k in ("schema", "schema_file", "schema_column") if k in params]
    if len(given) != 1:
        raise ValueError("give exactly one of schema, schema_file, schema_column")
    fixed: Any = None
    if "schema" in params:
        fixed = params["schema"]
    elif "schema_file" in params:
        fixed = read_schema(root, str(params["schema_file"]))
    if fixed is not None and (why := check_schema(fixed)) is not None:
        raise ValueError(why)
    column = params.get("schema_column")
    fenced = bool(params["fenced"])
    equals = bool(params["equals_target"])

    def schema_of(item: Mapping[str, Any]) -> Any:
        if column is None:
            return fixed
        v = item[str(column)]
        return json.loads(v) if isinstance(v, str) else v

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        try:
            value = parse_answer(answer, fenced=fenced)
        except ValueError as e:
            return passed(False, {"error": f"not JSON ({e})"})
        validator = _validator(compact(schema_of(item)))
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.absolute_path)
            return passed(False, {"error": first.message, "path": where})
        if equals and value != _target_value(item["target"]):
            return passed(False, {"error": "valid, but not equal to the target"})
        return passed(True, {})

    def check(item: Mapping[str, Any]) -> str | None:
        if column is None:
            return None
        try:
            return check_schema(schema_of(item))
        except ValueError as e:
            return f"column {column!r} is not JSON ({e})"

    fields = (("target",) if equals else ()) + ((str(column),) if column else ())
    return Configured(
        "json_schema",
        "1",
        dict(params),
        fn,
        fields=fields,
        check_item=check,
        extra={"schema": fixed, "response_format": bool(params["response_format"])},
    )


def response_format(schema: Any, name: str = "answer") -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for a value valid under ``schema``."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
