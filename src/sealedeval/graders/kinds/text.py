"""Answer-text graders against the item's target: ``exact``, ``includes``, ``numeric``, ``choice``.

* ``exact`` — the normalised answer equals the normalised target. Normalisation: Unicode NFKC,
  case folded (unless ``case_sensitive``), whitespace collapsed, and punctuation stripped from
  the ends (``punctuation: outer``, the default: "Paris." = "paris"), removed everywhere
  (``all``: replaced by a space, so "3.14" never equals "314") or kept (``keep``); ``articles``
  drops the words a / an / the. A list target lists acceptable alternatives.
* ``includes`` — the normalised target occurs in the normalised answer, on word boundaries by
  default ("4" is not included in "14").
* ``numeric`` — a number read from the answer (the ``last`` one by default, or the ``first``, or
  the ``only`` one: two different numbers then fail) is within ``tolerance`` (absolute) or
  ``relative`` (of the target) of the target; "1,234.5" reads as 1234.5, "50%" as 50.
* ``choice`` — a multiple-choice letter from ``options`` (default ``ABCD``): the whole answer is
  one letter ("B", "(b)", "B."), or it says "answer is B" / "answer: B", or it opens with a
  labelled option ("B) Paris", "(B) Paris"). Anything else is unparsed and fails; a standalone
  capital letter elsewhere in a sentence is not taken ("A cat" is not option A).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from sealedeval.graders.base import Grade
from sealedeval.graders.kinds import Configured, alternatives, grader_kind, passed, text_of

_NORMALISE_SCHEMA: dict[str, Any] = {
    "case_sensitive": {"type": "boolean", "default": False},
    "punctuation": {"enum": ["outer", "all", "keep"], "default": "outer"},
    "articles": {"type": "boolean", "default": False},
}

_ARTICLES = re.compile(r"(?i)\b(a|an|the)\b")


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def normalise(
    text: str, *, case_sensitive: bool = False, punctuation: str = "outer", articles: bool = False
) -> str:
    """The comparison form of a text (see the module docstring)."""
    s = unicodedata.normalize("NFKC", text)
    if not case_sensitive:
        s = s.casefold()
    if punctuation == "all":
        s = "".join(" " if _is_punct(ch) else ch for ch in s)
    if articles:
        s = _ARTICLES.sub(" ", s)
    s = " ".join(s.split())
    if punctuation == "outer":
        i, j = 0, len(s)
        while i < j and (_is_punct(s[i]) or s[i].isspace()):
            i += 1
        while j > i and (_is_punct(s[j - 1]) or s[j - 1].isspace()):
            j -= 1
        s = s[i:j]
    return s


def _norm_opts(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "case_sensitive": bool(params["case_sensitive"]),
        "punctuation": str(params["punctuation"]),
        "articles": bool(params["articles"]),
    }


def _object(props: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": dict(props)}


# -- exact --------------------------------------------------------------------------------------


@grader_kind("exact", "1", _object(_NORMALISE_SCHEMA))
def build_exact(params: Mapping[str, Any], root: Path) -> Configured:
    opts = _norm_opts(params)

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        got = normalise(answer, **opts)
        for t in alternatives(item["target"]):
            if got == normalise(text_of(t), **opts):
                return passed(True, {"matched": text_of(t)})
        return passed(False, {"normalised": got})

    return Configured("exact", "1", dict(params), fn, fields=("target",))


# -- includes -----------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _bounded(needle: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(needle) + r"(?!\w)")


@grader_kind(
    "includes",
    "1",
    _object(
        _NORMALISE_SCHEMA
        | {
            "word_boundary": {"type": "boolean", "default": True},
            "all": {
                "type": "boolean",
                "default": False,
                "description": "a list target: every alternative must occur (default: any one)",
            },
        }
    ),
)
def build_includes(params: Mapping[str, Any], root: Path) -> Configured:
    opts = _norm_opts(params)
    bounded = bool(params["word_boundary"])
    need_all = bool(params["all"])

    def found(hay: str, needle: str) -> bool:
        if not needle:
            return False
        return bool(_bounded(needle).search(hay)) if bounded else needle in hay

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        hay = normalise(answer, **opts)
        targets = [text_of(t) for t in alternatives(item["target"])]
        hits = [t for t in targets if found(hay, normalise(t, **opts))]
        ok = len(hits) == len(targets) if need_all else bool(hits)
        return passed(ok, {"found": hits})

    return Configured("includes", "1", dict(params), fn, fields=("target",))


# -- numeric ------------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
    r"|(?<![\w.])[-+−]?\.\d+(?:[eE][-+]?\d+)?(?![\w])"
)


def numbers(text: str) -> list[float]:
    """Every number in a text, in order ("1,234.5" → 1234.5; a Unicode minus reads as minus)."""
    out = []
    for m in _NUMBER.finditer(text):
        s = m.group().replace(",", "").replace("−", "-")
        try:
            v = float(s)
        except ValueError:  # pragma: no cover - the pattern only matches floats
            continue
        if math.isfinite(v):
            out.append(v)
    return out


def as_number(value: Any) -> float | None:
    """A target as a number: a JSON number, or a text that is exactly one number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        found = numbers(value)
        if len(found) == 1 and _NUMBER.fullmatch(value.strip()):
            return found[0]
    return None


@grader_kind(
    "numeric",
    "1",
    _object(
        {
            "tolerance": {"type": "number", "minimum": 0, "default": 0},
            "relative": {"type": "number", "minimum": 0, "default": 0},
            "extract": {"enum": ["last", "first", "only"], "default": "last"},
        }
    ),
)
def build_numeric(params: Mapping[str, Any], root: Path) -> Configured:
    tol = float(params["tolerance"])
    rel = float(params["relative"])
    how = str(params["extract"])

    def pick(answer: str) -> float | None:
        found = numbers(answer)
        if not found:
            return None
        if how == "only":
            return found[0] if len(set(found)) == 1 else None
        return found[0] if how == "first" else found[-1]

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        got = pick(answer)
        if got is None:
            return passed(False, {"number": None})
        targets = [as_number(t) for t in alternatives(item["target"])]
        ok = any(t is not None and math.isclose(got, t, rel_tol=rel, abs_tol=tol) for t in targets)
        return passed(ok, {"number": got})

    def check(item: Mapping[str, Any]) -> str | None:
        for t in alternatives(item["target"]):
            if as_number(t) is None:
                return f"target {text_of(t)!r} is not a number"
        return None

    return Configured("numeric", "1", dict(params), fn, fields=("target",), check_item=check)


# -- choice -------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _choice_patterns(options: str) -> tuple[re.Pattern[str], ...]:
    cls = "[" + re.escape(options) + "]"
    cls_i = "[" + re.escape(options + options.lower()) + "]"
    return (
        re.compile(r"^\W*\(?(" + cls_i + r")\)?\W*$"),
        re.compile(
            r"\b[Aa]nswer\s*(?:[Ii][Ss]|:)?\s*[:\-]?\s*\**\(?(?:(" + cls + r")\)?(?!\w)"
            r"|(" + cls_i + r")\)?\**\s*(?:[.!)]|$))"
        ),
        re.compile(r"^\W*\(?(" + cls + r")[).:](?:\s|$)"),
    )


def parse_choice(answer: str, options: str = "ABCD") -> str | None:
    """The option letter an answer names, or None (see the module docstring)."""
    for pat in _choice_patterns(options):
        m = pat.search(answer.strip())
        if m:
            return next(g for g in m.groups() if g).upper()
    return None


@grader_kind(
    "choice",
    "1",
    _object(
        {
            "options": {
                "type": "string",
                "pattern": "^[A-Z]+$",
                "minLength": 2,
                "default": "ABCD",
                "description": "the option letters, in order",
            }
        }
    ),
)
def build_choice(params: Mapping[str, Any], root: Path) -> Configured:
    options = str(params["options"])

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        got = parse_choice(answer, options)
        want = {text_of(t).strip().upper() for t in alternatives(item["target"])}
        return passed(got is not None and got in want, {"choice": got})

    def check(item: Mapping[str, Any]) -> str | None:
        for t in alternatives(item["target"]):
            letter = text_of(t).strip().upper()
            if len(letter) != 1 or letter not in options:
                return f"target {text_of(t)!r} is not one of the options {', '.join(options)}"
        return None

    return Configured("choice", "1", dict(params), fn, fields=("target",), check_item=check)
