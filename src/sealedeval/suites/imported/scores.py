"""Harness score values → numbers and verdicts (sealed with the ``imported`` suite kind).

Inspect AI's ``value_to_float`` conventions: ``C``/``I`` (correct/incorrect), ``P`` (partial,
0.5), ``N`` (no answer, 0), yes/no and true/false strings, booleans, numbers and numeric
strings. A value that is none of these (a dict or list of sub-scores) has no number: the row is
unscored for that scorer.
"""

from __future__ import annotations

import math
from typing import Any

_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def to_float(value: Any) -> float | None:
    """The score value as a number (Inspect's ``value_to_float``), or None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, str):
        s = value.strip()
        if s in _LETTERS:
            return _LETTERS[s]
        if s.lower() in _WORDS:
            return _WORDS[s.lower()]
        try:
            f = float(s)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def passed(value: Any, threshold: float) -> bool | None:
    """The verdict: the value as a number at least ``threshold`` (None: no number)."""
    f = to_float(value)
    return None if f is None else f >= threshold
