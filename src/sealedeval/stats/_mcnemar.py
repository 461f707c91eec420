"""The mid-p McNemar test for paired binary outcomes (Fagerland, Lydersen & Laake 2013).

Fagerland MW, Lydersen S, Laake P. "The McNemar test for binary matched-pairs data: mid-p and
asymptotic are better than exact conditional." BMC Medical Research Methodology 13:91 (2013).
Their recommendation: the exact conditional McNemar test (our :func:`sign_test`) is
conservative, its actual size well below the nominal α for the small numbers of discordant
pairs typical of evals; the mid-p version keeps the exact binomial reference distribution but
counts only half the probability of the observed table, and its size stays close to α. The
exact test remains the headline p; the mid-p is printed beside it.
"""

from __future__ import annotations

from fractions import Fraction

from ._validate import as_count


def _lower_tail(m: int, n: int) -> tuple[int, int]:
    """``(Σ_{x<=m} C(n, x), C(n, m))`` in exact integers (the numerators over ``2**n``)."""
    tail = 0
    term = 1  # C(n, 0)
    for i in range(m + 1):
        tail += term
        if i < m:
            term = term * (n - i) // (i + 1)
    return tail, term


def mcnemar_midp(b: int, c: int) -> float:
    """Two-sided mid-p McNemar test on the discordant pairs ``b`` and ``c``.

    Fagerland et al. (2013), Eq. 3: with ``n = b + c``, ``m = min(b, c)`` and
    ``X ~ Bin(n, 1/2)`` (each discordant pair a fair coin under H0),
    ``mid-p = 2·P(X <= m) − P(X = m)``, i.e. the exact conditional p-value
    (:func:`sign_test`) minus the point probability of the observed split. It never exceeds 1
    (for ``m <= n/2``, ``2·P(X <= m) − P(X = m) = P(X <= m) + P(X > n − m) <= 1``), equals 1
    when ``b == c``, and is strictly below the exact p otherwise. Summed in exact integer
    arithmetic and rounded once, like the exact test.

    Example (the paper's worked example, b = 1, c = 7): exact p = 18/256 ≈ 0.0703,
    mid-p = 10/256 ≈ 0.0391. ``mcnemar_midp(10, 2) == 92/4096 ≈ 0.022461``.

    Degenerate cases: no discordant pairs (``b = c = 0``) → 1.0 (no evidence either way: the
    one possible table has probability 1, counted 2·1 − 1 = 1); one discordant pair (``n = 1``)
    → 0.5 (the exact test gives 1.0: mid-p is less conservative by construction, and one pair is
    still far from any rejection). Concordant pairs never enter.

    Args:
        b: Discordant pairs favouring A.
        c: Discordant pairs favouring B.

    Returns:
        Two-sided mid-p value in (0, 1]; symmetric in ``b`` and ``c``.

    Raises:
        TypeError: ``b`` or ``c`` is not an integer.
        ValueError: ``b`` or ``c`` is negative.
    """
    b_ = as_count(b, "b")
    c_ = as_count(c, "c")
    n = b_ + c_
    tail, point = _lower_tail(min(b_, c_), n)
    return float(Fraction(2 * tail - point, 2**n))
