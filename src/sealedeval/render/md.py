"""Small Markdown helpers shared by every report section (fixed number formats: determinism)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def pct(x: Any, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    return f"{100 * float(x):.{digits}f}%"


def num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    return f"{float(x):.{digits}f}"


def rate_ci(r: Mapping[str, Any]) -> str:
    """'8/10 = 80.0% [49.0, 94.3]' — counts first, so a reader sees the denominator."""
    if not r.get("n"):
        return f"{r.get('k', 0)}/0 = n/a"
    lo, hi = r.get("lo"), r.get("hi")
    ci = f" [{num(100 * lo, 1)}, {num(100 * hi, 1)}]" if lo is not None and hi is not None else ""
    return f"{r['k']}/{r['n']} = {pct(r['rate'])}{ci}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += [
        "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |"
        for r in rows
    ]
    return "\n".join(out)
