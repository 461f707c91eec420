"""``regex``: every ``must`` pattern matches the answer, no ``must_not`` pattern does.

The semantics of golden's regex grader (Python ``re``, ``search``, case-insensitive unless
``ignore_case: false``), with the patterns coming from the config, from item columns, or both:

* ``must`` / ``must_not``: lists of pattern *templates*. ``{column}`` inserts the item's value
  escaped (``{target}`` matches the target literally; a list value matches any of its elements),
  ``{column:raw}`` inserts it as a regex. Only ``{identifier}`` is a placeholder, so regex
  quantifiers (``\\d{3}``, ``{2,5}``) are left alone; ``{{column}}`` is a literal ``{column}``.
* ``must_column`` / ``must_not_column``: an item column holding a pattern or a list of patterns
  (used as written, no placeholders): one rule per item, as golden's ``tasks.yaml`` has.

An item with no pattern at all (empty templates and columns) is a configuration error: a grader
that passes everything measures nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from sealedeval.graders.base import Grade
from sealedeval.graders.kinds import Configured, grader_kind, passed, text_of

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]\w*)\}\}|\{([A-Za-z_]\w*)(?::(raw))?\}")


def template_fields(template: str) -> list[str]:
    """The item columns a pattern template names, in order, without repeats."""
    out: list[str] = []
    for m in PLACEHOLDER.finditer(template):
        name = m.group(2)
        if name and name not in out:
            out.append(name)
    return out


def _insert(value: Any, raw: bool) -> str:
    values = value if isinstance(value, list) else [value]
    parts = [text_of(v) if raw else re.escape(text_of(v)) for v in values]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def expand(template: str, item: Mapping[str, Any]) -> str:
    """A pattern template filled from the item (see the module docstring)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return "{" + m.group(1) + "}"
        return _insert(item[m.group(2)], bool(m.group(3)))

    return PLACEHOLDER.sub(sub, template)


@lru_cache(maxsize=8192)
def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _column_patterns(item: Mapping[str, Any], column: str | None) -> list[str]:
    if not column:
        return []
    v = item.get(column)
    if v is None or v == "":
        return []
    return [str(p) for p in v] if isinstance(v, list) else [str(v)]


_PATTERNS = {"type": "array", "items": {"type": "string", "minLength": 1}, "default": []}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "must": _PATTERNS,
        "must_not": _PATTERNS,
        "must_column": {"type": "string", "minLength": 1},
        "must_not_column": {"type": "string", "minLength": 1},
        "ignore_case": {"type": "boolean", "default": True},
    },
}


@grader_kind("regex", "1", SCHEMA)
def build_regex(params: Mapping[str, Any], root: Path) -> Configured:
    must: Sequence[str] = list(params["must"])
    must_not: Sequence[str] = list(params["must_not"])
    must_col = params.get("must_column")
    must_not_col = params.get("must_not_column")
    flags = re.IGNORECASE if params["ignore_case"] else 0
    fields: list[str] = []
    for t in [*must, *must_not]:
        fields += [f for f in template_fields(t) if f not in fields]
        try:  # a syntax error in a template is a config error, found before any item is read
            re.compile(PLACEHOLDER.sub("x", t), flags)
        except re.error as e:
            raise ValueError(f"bad pattern {t!r} ({e})") from None

    def rules(item: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        yes = [expand(t, item) for t in must] + _column_patterns(item, must_col)
        no = [expand(t, item) for t in must_not] + _column_patterns(item, must_not_col)
        return yes, no

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        yes, no = rules(item)
        missing = [p for p in yes if not _compile(p, flags).search(answer)]
        hit = [p for p in no if _compile(p, flags).search(answer)]
        return passed(not missing and not hit, {"missing": missing, "forbidden": hit})

    def check(item: Mapping[str, Any]) -> str | None:
        yes, no = rules(item)
        if not yes and not no:
            return "no pattern to grade with (must / must_not are empty)"
        for p in [*yes, *no]:
            try:
                _compile(p, flags)
            except re.error as e:
                return f"bad pattern {p!r} ({e})"
        return None

    # a pattern column must exist in the file, but may be empty on an item (golden's mustNot
    # often is); an item with no pattern at all fails ``check``
    columns = tuple(c for c in (must_col, must_not_col) if c)
    return Configured(
        "regex", "1", dict(params), fn, fields=tuple(fields), check_item=check, columns=columns
    )
