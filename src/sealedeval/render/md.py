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


P_FLOOR = 0.001
"""p-values below this print as ``< 0.001``: the convention of the APA Publication Manual
(7th ed., 6.36) and of most journals. A p of 0.0004 printed to three decimals read ``0.000``,
which says "impossible", and more digits claim a precision an exact test on tens of items
does not have."""


def pval(p: Any, digits: int = 3) -> str:
    """A p-value's digits: ``0.043``, ``< 0.001`` below ``P_FLOOR``, ``n/a`` when missing."""
    if p is None:
        return "n/a"
    x = float(p)
    if x < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return f"{x:.{digits}f}"


def p_text(p: Any, label: str = "p", digits: int = 3) -> str:
    """``p = 0.043``, ``p < 0.001``, ``adjusted p = 0.250``: the one way every report prints a
    p-value in prose (``label`` names which p)."""
    v = pval(p, digits)
    return f"{label} {v}" if v.startswith("<") else f"{label} = {v}"


def p_compact(p: Any, digits: int = 3) -> str:
    """``p=0.043`` or ``p<0.001``: ``p_text`` for figure labels and tight table cells."""
    v = pval(p, digits)
    return f"p{v.replace(' ', '')}" if v.startswith("<") else f"p={v}"


NOT_PRICED = "not priced"
"""What a cost cell says for an engine without a price: "$0.000000" read as "free"."""

PRICE_FIELDS = (
    "price_in_per_mtok",
    "price_out_per_mtok",
    "price_cache_write_per_mtok",
    "price_cache_read_per_mtok",
)
"""An engine identity's prices (``config.EngineConfig``, ``engines.schemas``): all zero or
absent means nobody gave the engine a price."""


def priced(identity: Mapping[str, Any] | None) -> bool:
    """Whether an engine identity (result.json's ``engines[e]``) has any price above zero."""
    if not identity:
        return False
    return any(float(identity.get(k) or 0) > 0 for k in PRICE_FIELDS)


def price_text(identity: Mapping[str, Any]) -> str:
    """An engine's prices per million tokens in / out, or ``not priced``."""
    if not priced(identity):
        return NOT_PRICED
    return f"${identity.get('price_in_per_mtok', 0)} / ${identity.get('price_out_per_mtok', 0)}"


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
