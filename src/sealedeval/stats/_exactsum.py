"""A float sum taken a batch at a time that equals ``math.fsum`` of every value."""

from __future__ import annotations

import math
from collections.abc import Iterable


class ExactSum:
    """``math.fsum`` of values given a batch at a time, equal to ``math.fsum`` of them all
    whatever the batches.

    Why: an analysis that reads rows a stretch at a time must give the numbers of one that
    reads them whole (the audit re-derives them whole and compares bytes), and the fsum of the
    stretches' fsums can differ from the fsum of every value in the last bit. Each batch's
    exact sum is kept as non-overlapping doubles instead: its fsum, then the fsum of what that
    left, until nothing is left (each step ~53 bits finer, so a few steps for sums of like
    magnitude); ``value`` is the correctly rounded sum of those parts, which is the correctly
    rounded sum of every value.

    Example: ``ExactSum`` fed ``[0.1] * 10`` in batches of 3, 6 and 1 gives ``1.0``, as
    ``math.fsum([0.1] * 10)`` does; the sum of the three batches' fsums is
    ``1.0000000000000002``.

    Degenerate cases: no value → 0.0; an infinite or NaN value makes the sum infinite or NaN,
    as fsum does (fsum's errors for ``inf - inf`` or an overflowing sum are raised as it
    raises them).
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[float] = []

    def add(self, values: Iterable[float]) -> None:
        """Add a batch of values."""
        batch = list(values)
        taken: list[float] = []
        while True:
            part = math.fsum(batch + taken)
            if part == 0.0:
                return
            self._parts.append(part)
            if not math.isfinite(part):
                return
            taken.append(-part)

    @property
    def value(self) -> float:
        """The correctly rounded sum of every value added."""
        return math.fsum(self._parts)
