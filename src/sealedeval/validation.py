"""One-line JSON-Schema errors, shared by the config loader and the engine kinds' options.

The first violation, deepest path first, as ``WHERE: key.path: message``, with the closest
allowed key for a key the schema does not take (a typo such as ``temperture`` is the usual
cause), as the registry's errors do for unknown names.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from sealedeval.errors import UserError


def validate(data: Any, schema: Mapping[str, Any], where: str) -> None:
    """Raise a one-line UserError for the first schema violation (deepest path first)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), e.message))
    if errors:
        e = errors[0]
        path = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise UserError(f"{where}: {path}: {e.message}{did_you_mean(e)}")


def did_you_mean(e: Any) -> str:
    """For a key the schema does not allow: the closest allowed key at that place (a typo such
    as ``temperture`` is the usual cause), as the registry's errors do for unknown names."""
    if e.validator != "additionalProperties" or not isinstance(e.instance, Mapping):
        return ""
    allowed = [str(k) for k in (e.schema.get("properties") or {})]
    unexpected = sorted(str(k) for k in e.instance if k not in allowed)
    for key in unexpected:
        close = difflib.get_close_matches(key, allowed, n=1)
        if close:
            which = "" if len(unexpected) == 1 else f" for {key!r}"
            return f"; did you mean {close[0]!r}{which}?"
    return ""
