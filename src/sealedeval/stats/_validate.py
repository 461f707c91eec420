"""Input checks shared by the statistics modules.

Every public function validates its input here so that malformed input fails loudly with a
``ValueError`` naming the argument, instead of producing a plausible-looking number.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence
from typing import SupportsIndex, TypeVar

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
K = TypeVar("K", bound=Hashable)


def as_count(value: SupportsIndex, name: str) -> int:
    """Return ``value`` as a non-negative Python int.

    Args:
        value: Anything ``operator.index`` accepts (int, numpy integer).
        name: Argument name used in the error message.

    Raises:
        TypeError: ``value`` is not an integer (e.g. a float such as ``3.0``).
        ValueError: ``value`` is negative.
    """
    try:
        count = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be >= 0, got {count}")
    return count


def as_float_array(
    values: Sequence[float] | npt.ArrayLike, name: str, *, allow_neg_inf: bool = False
) -> FloatArray:
    """Return ``values`` as a 1-D float64 array of finite numbers.

    Args:
        values: A sequence of numbers (bools count as 0/1).
        name: Argument name used in the error message.
        allow_neg_inf: Accept ``-inf`` (a log-probability of a zero-probability token).

    Raises:
        ValueError: ``values`` is not one-dimensional, or holds NaN / infinite values.
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    bad = np.isnan(arr) | (arr == np.inf)
    if not allow_neg_inf:
        bad |= arr == -np.inf
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{first}] is not a finite number: {arr[first]!r}")
    return arr


def check_same_length(a: Sequence[object], b: Sequence[object], names: str) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same length.

    Args:
        a: First sequence.
        b: Second sequence.
        names: The two argument names, e.g. ``"values/items"``, for the message.
    """
    if len(a) != len(b):
        raise ValueError(f"{names} must have the same length, got {len(a)} and {len(b)}")


def group_codes(labels: Sequence[K]) -> tuple[list[K], npt.NDArray[np.intp]]:
    """Encode labels as integer codes in order of first appearance.

    Args:
        labels: Hashable labels (any type, mixed types allowed).

    Returns:
        ``(uniques, codes)`` with ``uniques[codes[i]] == labels[i]``.

    Raises:
        ValueError: A label is unhashable.
    """
    index: dict[K, int] = {}
    codes = np.empty(len(labels), dtype=np.intp)
    for i, label in enumerate(labels):
        try:
            codes[i] = index.setdefault(label, len(index))
        except TypeError:
            raise ValueError(f"label {label!r} at position {i} is not hashable") from None
    return list(index), codes


def check_probability_level(level: float, name: str) -> float:
    """Return ``level`` as a float strictly between 0 and 1, else raise ``ValueError``."""
    lv = float(level)
    if not 0.0 < lv < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {level!r}")
    return lv
