"""Canonical JSON: the byte format of everything we publish.

Two builds from the same raw runs must be byte-identical, so keys are sorted, separators fixed,
floats rounded to a fixed number of significant digits (platform float noise in the last bits
must not reach the file), NaN/inf written as ``null`` (JSON has no NaN; a missing estimate is
reported as null, never as a made-up number), and the file ends with one newline.
"""

from __future__ import annotations

import json
import math
from typing import Any

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


def compact(obj: Any) -> str:
    """Canonical single-line JSON, for hashing and for JSON columns in Parquet."""
    return json.dumps(
        normalise(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
