"""The paired permutation (sign-flip) test over items, for non-binary scores.

Kübler et al. (ICLR 2026) recommend it for comparing two systems on the same items when the
score is not 0/1 (judge grades, composites, F1): under H0 the two engines' item scores are
exchangeable within each item, so every item's difference ``d_i`` is as likely to carry either
sign, and the reference distribution of the mean difference is that of ``Σ s_i·d_i / n`` over
the ``2^n`` sign vectors ``s``. It needs neither normality (the paired t / normal interval) nor
a 0/1 score (the exact McNemar test), and uses the size of each difference, which the sign test
throws away. Replicates are averaged within the item first (the item is the unit).

Exact enumeration up to ``EXACT_MAX_N`` non-zero differences (``2^20`` ≈ 10⁶ sign vectors, a
fraction of a second); beyond that a seeded Monte Carlo sample of ``N_DRAWS`` sign vectors with
the ``(1 + hits) / (1 + draws)`` p-value of Phipson & Smyth (2010, "Permutation p-values should
never be zero", Stat Appl Genet Mol Biol 9:39), which is a valid (never anti-conservative)
p-value for a random subset of the permutations. The seed and the number of draws are part of
the result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from ._validate import as_count, as_float_array, check_same_length

EXACT_MAX_N: Final = 20
"""Up to this many non-zero item differences every one of the ``2^n`` sign flips is
enumerated (2^20 = 1,048,576 sums); beyond it, Monte Carlo."""
N_DRAWS: Final = 10_000
"""Monte Carlo sign vectors beyond ``EXACT_MAX_N``: the p-value's Monte Carlo standard error
is at most 0.005 (½/√10⁴), 0.0022 at p = 0.05."""
TIE_RTOL: Final = 1e-9
"""A permuted |sum| counts as "at least as extreme" when it is within ``TIE_RTOL · Σ|d_i|`` of
the observed one: item means are sums of floats, and an exact tie must not be lost to rounding
(SciPy's ``permutation_test`` uses a relative tolerance for the same reason)."""
_CHUNK_CELLS: Final = 1 << 21
"""Sign-matrix cells per chunk (16 MB of float64), so memory stays flat in n and draws."""

EXACT_METHOD: Final = "paired permutation test, exact (all 2^n sign flips of the item differences)"
MC_METHOD: Final = "paired permutation test, Monte Carlo sign flips (p = (1 + hits) / (1 + draws))"


@dataclass(frozen=True)
class PermutationTest:
    """The result of :func:`paired_permutation`; every number needed to redo it.

    Attributes:
        p: Two-sided p-value: share of sign flips with ``|Σ s_i d_i| >= |Σ d_i|``.
        difference: The observed mean difference ``mean(a − b)`` (nan without pairs).
        n: Pairs (items) entered, ties included.
        n_nonzero: Items with a non-zero difference (the only ones a flip changes).
        exact: True when all ``2^n_nonzero`` sign flips were enumerated.
        n_permutations: ``2^n_nonzero`` when exact, else the Monte Carlo draws.
        seed: The Monte Carlo seed (None when exact: nothing was drawn).
        method: One line naming the procedure (printed beside the p).
    """

    p: float
    difference: float
    n: int
    n_nonzero: int
    exact: bool
    n_permutations: int
    seed: int | None
    method: str


def _extreme_counts(signs: np.ndarray, absd: np.ndarray, bound: float) -> int:
    """How many rows of a 0/1 flip matrix give ``|Σ ± |d_i|| >= bound``.

    A row's sum is ``Σ|d| − 2·Σ_{flipped}|d_i|``; summed with ``np.sum`` row-wise (pairwise
    summation, no BLAS), so the count does not depend on a BLAS build or its threads.
    """
    flipped = (signs * absd).sum(axis=1)
    total = float(absd.sum())
    return int(np.count_nonzero(np.abs(total - 2.0 * flipped) >= bound))


def paired_permutation(
    a: Sequence[float],
    b: Sequence[float],
    *,
    exact_max_n: int = EXACT_MAX_N,
    n_draws: int = N_DRAWS,
    seed: int | None = None,
) -> PermutationTest:
    """Two-sided paired permutation test of ``mean(a − b) = 0`` over items.

    The statistic is the sum (equivalently the mean) of the item differences
    ``d_i = a_i − b_i``; the null distribution flips each difference's sign independently with
    probability ½. Items with ``d_i = 0`` are left out of the enumeration: flipping them changes
    nothing, so the p-value over ``2^n`` flips equals the one over ``2^n_nonzero``.
    ``p = #{s : |Σ s_i d_i| >= |Σ d_i|} / #flips`` (with the tolerance ``TIE_RTOL``). It
    equals SciPy's ``permutation_test(..., permutation_type='samples')`` two-sided p for the
    exact case (the sign-flip distribution is symmetric, so doubling the smaller tail and
    counting ``|T| >= |t|`` agree); SciPy is only the tests' reference, never called here.

    Beyond ``exact_max_n`` non-zero differences: ``n_draws`` sign vectors from
    ``numpy.random.Generator(PCG64(seed))`` (chunked, the chunk size fixed by ``n_nonzero``
    alone) and ``p = (1 + hits) / (1 + n_draws)`` (Phipson & Smyth 2010).

    Degenerate cases: no pairs → ``p = 1.0``, difference nan, exact with one (empty) flip;
    every pair tied → ``p = 1.0`` (exact: the only flip is the observation itself); n = 1 with
    a non-zero difference → ``p = 1.0`` (its two flips are equally extreme: one item can never
    reject).

    Args:
        a: Per-item scores of engine A (item means when there are replicates).
        b: Per-item scores of engine B, aligned with ``a``.
        exact_max_n: Largest number of non-zero differences enumerated exactly.
        n_draws: Monte Carlo sign vectors beyond ``exact_max_n`` (``>= 1``).
        seed: Monte Carlo seed (non-negative); required when the test is not exact.

    Returns:
        A :class:`PermutationTest`.

    Raises:
        ValueError: Lengths differ, a value is not finite, ``exact_max_n`` above 30 (2^30
            sums is not a test, it is a denial of service), ``n_draws < 1``, or Monte Carlo
            without a seed.
        TypeError: ``exact_max_n``, ``n_draws`` or ``seed`` is not an integer.
    """
    emax = as_count(exact_max_n, "exact_max_n")
    if emax > 30:
        raise ValueError(f"exact_max_n must be at most 30, got {emax}")
    draws = as_count(n_draws, "n_draws")
    if draws < 1:
        raise ValueError("n_draws must be >= 1")
    check_same_length(a, b, "a/b")
    d = as_float_array(a, "a") - as_float_array(b, "b")
    n = int(d.size)
    diff = float(np.mean(d)) if n else math.nan
    absd = np.abs(d[d != 0.0])
    m = int(absd.size)
    observed = abs(float(d.sum()))
    bound = observed - TIE_RTOL * float(absd.sum())
    if m <= emax:
        rows = max(1, _CHUNK_CELLS // max(m, 1))
        total = 1 << m
        bits = np.arange(m, dtype=np.int64)
        hits = 0
        for start in range(0, total, rows):
            r = np.arange(start, min(total, start + rows), dtype=np.int64)
            signs = ((r[:, np.newaxis] >> bits) & 1).astype(np.float64)
            hits += _extreme_counts(signs, absd, bound)
        return PermutationTest(
            p=min(1.0, hits / total),
            difference=diff,
            n=n,
            n_nonzero=m,
            exact=True,
            n_permutations=total,
            seed=None,
            method=EXACT_METHOD,
        )
    if seed is None:
        raise ValueError(
            f"{m} non-zero differences exceed exact_max_n = {emax}: a Monte Carlo "
            "permutation test needs a seed"
        )
    s = as_count(seed, "seed")
    rng = np.random.Generator(np.random.PCG64(s))
    rows = max(1, _CHUNK_CELLS // m)
    hits = 0
    for start in range(0, draws, rows):
        k = min(draws, start + rows) - start
        signs = rng.integers(0, 2, size=(k, m), dtype=np.int8).astype(np.float64)
        hits += _extreme_counts(signs, absd, bound)
    return PermutationTest(
        p=min(1.0, (1 + hits) / (1 + draws)),
        difference=diff,
        n=n,
        n_nonzero=m,
        exact=False,
        n_permutations=draws,
        seed=s,
        method=MC_METHOD,
    )
