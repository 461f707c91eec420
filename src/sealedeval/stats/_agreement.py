"""Agreement between two raters (e.g. an LLM judge and a human) on the same items."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

from ._validate import check_same_length


def _counts(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int, int]:
    """Return ``(n, agreements, Σ_label n_a(label)·n_b(label))`` as exact integers."""
    check_same_length(a, b, "a/b")
    try:
        ca = Counter(a)
        cb = Counter(b)
    except TypeError as exc:
        raise ValueError(f"labels must be hashable: {exc}") from None
    agree = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    chance = sum(count * cb[label] for label, count in ca.items())
    return len(a), agree, chance


def agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Observed agreement ``p_o``: the share of items on which the two raters give the same label.

    Report it beside :func:`cohen_kappa`: ``p_o`` alone is inflated when one label dominates.

    Example: 2×2 counts (judge pass ∧ human pass 40, pass ∧ fail 10, fail ∧ pass 5,
    fail ∧ fail 45) → 0.85.

    Degenerate cases: no items → nan.

    Args:
        a: Labels from rater A (any hashable labels).
        b: Labels from rater B, aligned with ``a``.

    Returns:
        ``p_o`` in [0, 1], or nan.

    Raises:
        ValueError: Lengths differ or a label is unhashable.
    """
    n, agree, _ = _counts(a, b)
    if n == 0:
        return math.nan
    return agree / n


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa: agreement between two raters corrected for chance.

    ``κ = (p_o − p_e) / (1 − p_e)`` with ``p_o`` the observed agreement and
    ``p_e = Σ_label p_A(label) · p_B(label)`` the agreement expected if the raters labelled
    independently with their own marginal rates (Cohen 1960). Works for any number of labels of
    any hashable type. Computed from exact integer counts as
    ``(n·agree − Σ n_A n_B) / (n² − Σ n_A n_B)``, so ``p_e == 1`` is detected exactly.

    Example: 2×2 counts (40, 10, 5, 45) → ``p_o = 0.85``, ``p_e = 0.50``, ``κ = 0.70``.

    Degenerate cases: no items → nan; ``p_e == 1`` (both raters always give the same single
    label) → nan, since chance already explains all agreement and κ is 0/0 — not a spurious 1.0.

    Args:
        a: Labels from rater A.
        b: Labels from rater B, aligned with ``a``.

    Returns:
        κ in [−1, 1], or nan.

    Raises:
        ValueError: Lengths differ or a label is unhashable.
    """
    n, agree, chance = _counts(a, b)
    denom = n * n - chance
    if n == 0 or denom == 0:
        return math.nan
    return (n * agree - chance) / denom
