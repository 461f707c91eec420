"""Adjusted p-values for multiple comparisons."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._validate import FloatArray, as_float_array


def _pvalues(pvalues: Sequence[float]) -> FloatArray:
    p = as_float_array(pvalues, "pvalues")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("pvalues must lie in [0, 1]")
    return p


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values; controls the family-wise error rate.

    Sort ascending, ``adj_(i) = max_{j <= i} min(1, (m − j + 1) · p_(j))`` (1-based ranks),
    returned in the input order. Uniformly more powerful than Bonferroni under any dependence.
    Use for a few confirmatory tests. Reject ``H_i`` at level α iff ``adj_i <= α``.

    Example: ``[0.01, 0.04, 0.03, 0.005]`` → ``[0.03, 0.06, 0.06, 0.02]``.

    Degenerate cases: empty input → empty list.

    Args:
        pvalues: Raw p-values in [0, 1].

    Returns:
        Adjusted p-values, same order and length as the input.

    Raises:
        ValueError: A p-value is NaN or outside [0, 1].
    """
    p = _pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(v) for v in adjusted]


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg (1995) step-up adjusted p-values (q-values); controls the FDR.

    Sort ascending, ``adj_(i) = min_{j >= i} min(1, m · p_(j) / j)`` (1-based ranks), returned
    in the input order. Valid under independence or positive dependence. Use for exploratory
    grids (many labels × engines), where Holm would be too strict.

    Example: ``[0.01, 0.04, 0.03, 0.005]`` → ``[0.02, 0.04, 0.04, 0.02]``.

    Degenerate cases: empty input → empty list.

    Args:
        pvalues: Raw p-values in [0, 1].

    Returns:
        Adjusted p-values, same order and length as the input.

    Raises:
        ValueError: A p-value is NaN or outside [0, 1].
    """
    p = _pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return [float(v) for v in adjusted]
