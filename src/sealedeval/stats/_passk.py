"""pass@k and pass^k from ``n`` trials with ``c`` successes, per task and averaged over tasks.

``pass_at_k`` / ``pass_hat_k`` give one ``k``; ``pass_k_curves`` / ``mean_pass_k_curves`` give
every ``k = 1..k_max`` in one pass over the counts (a benchmark repeating rows reaches thousands
of trials per task, where one ``k`` at a time is quadratic in the trials).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction

from ._validate import as_count


def _check(n: int, c: int, k: int) -> tuple[int, int, int]:
    n_ = as_count(n, "n")
    c_ = as_count(c, "c")
    k_ = as_count(k, "k")
    if c_ > n_:
        raise ValueError(f"c must be <= n, got c={c_}, n={n_}")
    if k_ < 1:
        raise ValueError(f"k must be >= 1, got {k_}")
    return n_, c_, k_


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: probability that at least one of ``k`` trials succeeds.

    Chen et al. (2021, Codex), estimated from ``n >= k`` trials of which ``c`` succeeded:
    ``pass@k = 1 − C(n−c, k) / C(n, k)``, i.e. one minus the chance that a ``k``-subset drawn
    without replacement from the ``n`` trials holds no success. It is unbiased, unlike the
    plug-in ``1 − (1 − c/n)^k``. Computed in Chen et al.'s numerically stable product form:
    1 if ``n − c < k``, else ``1 − Π_{i=n−c+1..n} (1 − k/i)``.

    Examples: ``n=10, c=3, k=5`` → 0.9166666667 (plug-in would give 0.831930);
    ``n=10, c=3, k=8`` → 1.0; ``c=0`` → 0.0.

    Degenerate cases: ``n < k`` → nan (fewer than ``k`` trials: pass@k is not estimable, and
    reporting 1.0 or the plug-in would be a guess).

    Args:
        n: Number of valid trials.
        c: Number of successful trials, ``0 <= c <= n``.
        k: Budget of attempts, ``k >= 1``.

    Returns:
        pass@k in [0, 1], non-decreasing in ``k``; or nan.

    Raises:
        TypeError: An argument is not an integer.
        ValueError: A negative argument, ``c > n``, or ``k < 1``.
    """
    n_, c_, k_ = _check(n, c, k)
    if n_ < k_:
        return math.nan
    if n_ - c_ < k_:
        return 1.0
    prod = 1.0
    for i in range(n_ - c_ + 1, n_ + 1):
        prod *= 1.0 - k_ / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: probability that all ``k`` i.i.d. trials succeed (reliability).

    τ-bench (Yao et al., 2024): ``pass^k = C(c, k) / C(n, k)``, the chance that a ``k``-subset
    drawn without replacement from the ``n`` trials holds only successes; an unbiased estimate
    of ``p^k`` for the task's success rate ``p``. Computed exactly with integer binomials.

    Example: ``n=10, c=5, k=3`` → 10/120 = 0.0833333; ``c < k`` → 0.0.

    Degenerate cases: ``n < k`` → nan (fewer than ``k`` trials).

    Args:
        n: Number of valid trials.
        c: Number of successful trials, ``0 <= c <= n``.
        k: Number of trials that must all succeed, ``k >= 1``.

    Returns:
        pass^k in [0, 1], non-increasing in ``k``; or nan.

    Raises:
        TypeError: An argument is not an integer.
        ValueError: A negative argument, ``c > n``, or ``k < 1``.
    """
    n_, c_, k_ = _check(n, c, k)
    if n_ < k_:
        return math.nan
    return float(Fraction(math.comb(c_, k_), math.comb(n_, k_)))


def pass_k_curves(n: int, c: int, k_max: int) -> tuple[list[float], list[float]]:
    """pass@k and pass^k for every ``k = 1..k_max`` from one task's counts, in O(``k_max``).

    Both ratios are running products over ``k``:
    ``C(n−c, k)/C(n, k) = Π_{j<k} (n−c−j)/(n−j)`` (the chance that a ``k``-subset holds no
    success, so pass@k is one minus it) and ``C(c, k)/C(n, k) = Π_{j<k} (c−j)/(n−j)`` (pass^k).
    A factor reaches 0 exactly once ``k`` passes ``n−c`` (resp. ``c``) and the product stays 0,
    which gives :func:`pass_at_k`'s 1.0 and :func:`pass_hat_k`'s 0.0. Each factor is one
    correctly rounded division of exact integers, so the ``k``-th value carries a relative
    error of at most about ``2k`` units in the last place (≈ 1e-12 at ``k`` = 4,500): the same
    numbers as the per-``k`` functions to that precision (tested), at ``O(1)`` per ``k``.

    Degenerate cases: entries for ``k > n`` are nan (see :func:`pass_at_k`).

    Args:
        n: Number of valid trials.
        c: Number of successful trials, ``0 <= c <= n``.
        k_max: Largest ``k``, ``k_max >= 1``.

    Returns:
        ``(pass_at, pass_hat)``: lists of length ``k_max``; index ``k − 1`` holds ``k``'s value.

    Raises:
        TypeError: An argument is not an integer.
        ValueError: A negative argument, ``c > n``, or ``k_max < 1``.
    """
    at: list[float] = []
    hat: list[float] = []
    for a, h in _curve(*_check(n, c, k_max)):
        at.append(a)
        hat.append(h)
    return at, hat


def _curve(n: int, c: int, k_max: int) -> Iterator[tuple[float, float]]:
    """``(pass@k, pass^k)`` for ``k = 1..k_max``, one ``k`` at a time (validated counts)."""
    miss = hit = 1.0
    for j in range(min(n, k_max)):  # k = j + 1
        # max(.., 0): past n−c (c) the factor would turn negative and the product −0.0
        miss *= max(n - c - j, 0) / (n - j)
        hit *= max(c - j, 0) / (n - j)
        yield 1.0 - miss, hit
    for _ in range(k_max - min(n, k_max)):
        yield math.nan, math.nan


def mean_pass_k_curves(
    results: Mapping[str, Sequence[int]], k_max: int
) -> tuple[list[float], list[float]]:
    """Benchmark pass@k and pass^k for every ``k = 1..k_max``: one count per task, one
    :func:`pass_k_curves` per task, then the unweighted mean over tasks per ``k``.

    The same numbers as :func:`mean_pass_at_k` / :func:`mean_pass_hat_k` for each ``k`` (to the
    precision of :func:`pass_k_curves`), nan where they are nan (a task with fewer than ``k``
    trials, or no tasks), with the same validation; in O(trials + tasks × ``k_max``).

    Returns:
        ``(pass_at, pass_hat)``: lists of length ``k_max``; index ``k − 1`` holds ``k``'s mean.

    Raises:
        TypeError: ``k_max`` is not an integer.
        ValueError: ``k_max < 1`` or an outcome is not boolean (0/1).
    """
    k_max_ = as_count(k_max, "k_max")
    if k_max_ < 1:
        raise ValueError(f"k_max must be >= 1, got {k_max_}")
    # every task's curve advanced one k at a time: the tasks' values of one k are all that is
    # held (a benchmark repeating rows to ~500,000 trials per task held every task's curves,
    # ~0.7 GB, ``benchmarks/scale.py --n 10000000``)
    curves = [
        _curve(*_check(len(trials), _successes(task, trials), k_max_))
        for task, trials in results.items()
    ]
    if not curves:
        return [math.nan] * k_max_, [math.nan] * k_max_
    at: list[float] = []
    hat: list[float] = []
    for column in zip(*curves, strict=True):
        at.append(_mean([a for a, _ in column]))
        hat.append(_mean([h for _, h in column]))
    return at, hat


def _mean(values: Sequence[float]) -> float:
    """The mean over tasks (``math.fsum``), nan if any is nan."""
    return math.nan if any(math.isnan(v) for v in values) else math.fsum(values) / len(values)


def _successes(task: str, trials: Sequence[int]) -> int:
    c = 0
    for j, outcome in enumerate(trials):
        if outcome not in (0, 1):  # True == 1, False == 0; rejects NaN, 0.5, None
            raise ValueError(f"results[{task!r}][{j}] must be a bool, got {outcome!r}")
        c += bool(outcome)
    return c


def _mean_over_tasks(
    results: Mapping[str, Sequence[int]], k: int, per_task: Callable[[int, int, int], float]
) -> float:
    k_ = as_count(k, "k")
    if k_ < 1:
        raise ValueError(f"k must be >= 1, got {k_}")
    scores: list[float] = []
    for task, trials in results.items():
        scores.append(per_task(len(trials), _successes(task, trials), k_))
    if not scores or any(math.isnan(s) for s in scores):
        return math.nan
    return math.fsum(scores) / len(scores)


def mean_pass_at_k(results: Mapping[str, Sequence[int]], k: int) -> float:
    """Benchmark pass@k: :func:`pass_at_k` per task, then the unweighted mean over tasks.

    Each task contributes equally whatever its number of trials (the task, not the trial, is
    the unit).

    Degenerate cases: the mean is nan if *any* task has fewer than ``k`` trials (its pass@k is
    undefined and silently dropping or filling it would bias the mean) and nan for an empty
    mapping. Filter or re-run such tasks explicitly.

    Args:
        results: Task id → per-trial outcomes (``True`` = success).
        k: Budget of attempts, ``k >= 1``.

    Returns:
        Mean pass@k over tasks, or nan.

    Raises:
        TypeError: ``k`` is not an integer.
        ValueError: ``k < 1`` or an outcome is not boolean (0/1).
    """
    return _mean_over_tasks(results, k, pass_at_k)


def mean_pass_hat_k(results: Mapping[str, Sequence[int]], k: int) -> float:
    """Benchmark pass^k: :func:`pass_hat_k` per task, then the unweighted mean over tasks.

    Degenerate cases: nan if any task has fewer than ``k`` trials, and for an empty mapping
    (see :func:`mean_pass_at_k`).

    Args:
        results: Task id → per-trial outcomes (``True`` = success).
        k: Number of trials that must all succeed, ``k >= 1``.

    Returns:
        Mean pass^k over tasks, or nan.

    Raises:
        TypeError: ``k`` is not an integer.
        ValueError: ``k < 1`` or an outcome is not boolean (0/1).
    """
    return _mean_over_tasks(results, k, pass_hat_k)
