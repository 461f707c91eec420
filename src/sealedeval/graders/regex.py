"""Regex must / mustNot, and per-fact partial credit.

``must``: every pattern must match somewhere (search, case-insensitive); ``mustNot``: none may —
naming three files including the right one is not an answer. ``facts`` gives partial credit
(share of fact patterns matched) to report beside the all-or-nothing verdict, because k facts
scored all-or-nothing fall like p^k.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sealedeval.graders.base import Grade, grader


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _patterns(item: Mapping[str, Any], key: str) -> Sequence[str]:
    value = item.get(key) or []
    return [value] if isinstance(value, str) else list(value)


def check(
    answer: str, must: Sequence[str], must_not: Sequence[str]
) -> tuple[bool, list[str], list[str]]:
    """(passed, missing must patterns, matched mustNot patterns)."""
    missing = [p for p in must if not _compile(p).search(answer)]
    hit = [p for p in must_not if _compile(p).search(answer)]
    return (not missing and not hit), missing, hit


@grader("regex", "1")
def regex(item: Mapping[str, Any], answer: str) -> Grade:
    ok, missing, hit = check(answer, _patterns(item, "must"), _patterns(item, "mustNot"))
    return Grade(1.0 if ok else 0.0, ok, {"missing": missing, "forbidden": hit})


@grader("facts", "1")
def facts(item: Mapping[str, Any], answer: str) -> Grade:
    pats = _patterns(item, "facts") or _patterns(item, "must")
    hits = [bool(_compile(p).search(answer)) for p in pats]
    share = sum(hits) / len(hits) if hits else 0.0
    return Grade(share, all(hits) and bool(hits), {"facts": len(hits), "hit": sum(hits)})
