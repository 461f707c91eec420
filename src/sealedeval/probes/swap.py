"""Attribute swap (pure): the same tasks with one attribute varied, compared paired.

Each task is asked twice — base and swapped attribute, everything else equal. Accuracy of each
variant carries a Wilson interval; the comparison is the exact two-sided sign test on the tasks
where the two variants disagree (b = base right & swapped wrong, c = the reverse). Ten tasks can
show a gross asymmetry, not rule a bias out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval import stats


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else float("nan"), "lo": lo, "hi": hi}


def swap_table(pairs: Mapping[str, tuple[bool, bool]]) -> dict[str, Any]:
    """``pairs``: task id → (base correct, swapped correct), tasks where both completed."""
    n = len(pairs)
    base_only = sum(1 for b, s in pairs.values() if b and not s)
    swapped_only = sum(1 for b, s in pairs.values() if s and not b)
    return {
        "n_pairs": n,
        "base": _rate(sum(1 for b, _ in pairs.values() if b), n),
        "swapped": _rate(sum(1 for _, s in pairs.values() if s), n),
        "base_only": base_only,
        "swapped_only": swapped_only,
        "p": stats.sign_test(base_only, swapped_only),
        "per_task": {k: [b, s] for k, (b, s) in sorted(pairs.items())},
    }
