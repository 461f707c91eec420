"""Canonical JSON: the byte format of everything we publish.

Two builds from the same raw runs must be byte-identical, so keys are sorted, separators fixed,
floats rounded to a fixed number of significant digits (platform float noise in the last bits
must not reach the file), NaN/inf written as ``null`` (JSON has no NaN; a missing estimate is
reported as null, never as a made-up number), and the file ends with one newline.
"""

from __future__ import annotations

import json
import math
from types import ModuleType
from typing import Any, TextIO

_orjson: ModuleType | None
try:  # a declared dependency (DVC needs it too); the stdlib path gives the same bytes
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

FLOAT_DIGITS = 10


def normalise(obj: Any) -> Any:
    """Return a JSON-ready copy with floats rounded and non-finite floats as None."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            return None
        r = float(f"{obj:.{FLOAT_DIGITS}g}")
        if not math.isfinite(r):  # rounding up past the largest float: keep the value itself
            return obj
        return 0.0 if r == 0 else r
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return normalise(obj.item())
    if isinstance(obj, dict):
        return {str(k): normalise(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [normalise(v) for v in obj]
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def dumps(obj: Any) -> str:
    """Canonical JSON text (sorted keys, 2-space indent, trailing newline)."""
    return (
        json.dumps(normalise(obj), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


def dump(obj: Any, fh: TextIO) -> None:
    """``dumps(obj)`` written to ``fh`` as it is encoded: the same text without holding it
    (a 97 MB analysis document was ~0.7 GB more as one string and its encoder's pieces)."""
    json.dump(normalise(obj), fh, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    fh.write("\n")


_encode_compact = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def _plain(obj: Any) -> Any:
    """``normalise`` with a fast path for exact str/int/bool/None/dict/list/tuple (what chat
    messages and response bodies are made of); anything else, floats included, goes through
    ``normalise`` itself, so the result is the same object tree."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is dict:
        return {(k if type(k) is str else str(k)): _plain(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [_plain(v) for v in obj]
    return normalise(obj)


class _NotPlain(Exception):
    """A value orjson would write differently from ``json`` (a float, a huge int, a subclass)."""


def _strict(obj: Any) -> Any:
    """``_plain`` for trees orjson writes byte-identically to ``json``, else ``_NotPlain``.

    orjson spells floats its own way outside the range where Python's ``repr`` has no exponent
    (``1e16`` for ``1e+16``, ``0.00001`` for ``1e-05``, ``1e15`` for ``1000000000000000.0``)
    and refuses integers beyond 64 bits, so such a float, a big int or any non-builtin value
    sends the tree to the stdlib encoder. Floats are rounded as ``normalise`` rounds them first;
    in 1e-4 <= |x| < 1e15 both libraries write the shortest round-trip digits alike. Strings
    (escapes, non-ASCII) and key order (UTF-8 byte order is code-point order) agree too;
    tests/run checks the equality on generated trees.
    """
    t = type(obj)
    if t is str or t is bool or obj is None:
        return obj
    if t is int:
        if -(2**63) <= obj < 2**64:
            return obj
        raise _NotPlain
    if t is float:
        r = normalise(obj)
        if r is None or r == 0 or 1e-4 <= abs(r) < 1e15:
            return r
        raise _NotPlain
    if t is dict:
        return {(k if type(k) is str else str(k)): _strict(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [_strict(v) for v in obj]
    raise _NotPlain


def compact(obj: Any) -> str:
    """Canonical single-line JSON, for hashing and for JSON columns in Parquet.

    On the per-call path (request keys, raw rows, HTTP bodies) this runs for every engine call,
    and a golden prompt is ~4 KB: the stdlib encoder took ~30 µs for it, orjson ~6. So a tree of
    strings, ints, bools and None goes through orjson, anything else through one reused stdlib
    encoder after the ``normalise`` fast path. Either way the bytes are those of
    ``json.dumps(normalise(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    (tests/run pins the equality).
    """
    if _orjson is not None:
        try:
            return str(_orjson.dumps(_strict(obj), option=_orjson.OPT_SORT_KEYS).decode())
        except (_NotPlain, TypeError):  # a float somewhere, a lone surrogate, deep nesting
            pass
    return str(_encode_compact(_plain(obj)))
