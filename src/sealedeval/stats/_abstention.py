"""Scoring that rewards abstaining ("I don't know") over confident errors."""

from __future__ import annotations

import math

from ._validate import as_count


def abstention_score(correct: int, wrong: int, abstained: int, t: float) -> float:
    """Mean score with confidence target ``t`` (Kalai et al. 2025).

    From "Why language models hallucinate": each answer scores +1 if correct, 0 for "I don't
    know" and ``−t/(1−t)`` if wrong, so answering is worth it only when the model's confidence
    exceeds ``t``; the total is divided by the number of items. ``t = 0`` is plain accuracy.
    (The paper's text pairs t = 0.75 with "penalty 2"; the formula gives 3, and the formula is
    used.) Report accuracy, error rate and abstention rate beside it.

    Example: 70 correct, 20 wrong, 10 abstained → 0.10 at ``t = 0.75``, 0.70 at ``t = 0``.

    Degenerate cases: no items → nan.

    Args:
        correct: Number of correct answers.
        wrong: Number of wrong answers.
        abstained: Number of abstentions.
        t: Confidence target, ``0 <= t < 1``.

    Returns:
        The mean score in ``[−t/(1−t), 1]``, or nan.

    Raises:
        TypeError: A count is not an integer.
        ValueError: A count is negative, or ``t`` is outside [0, 1).
    """
    n_right = as_count(correct, "correct")
    n_wrong = as_count(wrong, "wrong")
    n_idk = as_count(abstained, "abstained")
    if not 0.0 <= t < 1.0:
        raise ValueError(f"t must be in [0, 1), got {t!r}")
    total = n_right + n_wrong + n_idk
    if total == 0:
        return math.nan
    return (n_right - n_wrong * t / (1.0 - t)) / total
