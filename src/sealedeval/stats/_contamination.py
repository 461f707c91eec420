"""Contamination probes from per-token log-probabilities of a text under the model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ._validate import FloatArray, as_float_array


def _logprobs(logprobs: Sequence[float]) -> FloatArray:
    lp = as_float_array(logprobs, "logprobs", allow_neg_inf=True)
    if (lp > 0).any():
        first = int(np.flatnonzero(lp > 0)[0])
        raise ValueError(f"logprobs[{first}] = {lp[first]!r} is positive; not a log-probability")
    return lp


def mean_nll(logprobs: Sequence[float]) -> float:
    """Mean negative log-likelihood per token, ``−(1/T) Σ log p(x_t | x_<t)`` (in nats).

    Lower than comparable unseen text suggests the text was in the training data. Check the
    log-prob source first: at each position the greedy next token must carry the highest
    log-prob, otherwise the probe is built on misaligned numbers.

    Degenerate cases: no tokens → nan; a ``-inf`` log-prob (probability 0) → inf.

    Args:
        logprobs: Natural-log probabilities of the observed tokens, each ``<= 0``.

    Returns:
        The mean NLL, ``>= 0``, or nan.

    Raises:
        ValueError: A log-prob is NaN, ``+inf`` or positive.
    """
    lp = _logprobs(logprobs)
    if lp.size == 0:
        return math.nan
    return float(-np.mean(lp))


def perplexity(logprobs: Sequence[float]) -> float:
    """Per-token perplexity, ``exp(mean NLL)``.

    Example: log-probs ``[−0.1, −2.3, −0.05, −4.0, −0.7, −1.2, −0.3, −3.1, −0.02, −0.6]`` →
    3.4452622.

    Degenerate cases: no tokens → nan; a ``-inf`` log-prob → inf.

    Args:
        logprobs: Natural-log probabilities of the observed tokens, each ``<= 0``.

    Returns:
        The perplexity, ``>= 1``, or nan.

    Raises:
        ValueError: A log-prob is NaN, ``+inf`` or positive.
    """
    nll = mean_nll(logprobs)
    return nll if math.isnan(nll) else math.exp(nll)


def min_k_prob(logprobs: Sequence[float], ratio: float) -> float:
    """Min-K% Prob (Shi et al. 2023): mean NLL of the ``k`` least likely tokens.

    ``−mean`` of the ``k = max(1, floor(ratio · T))`` lowest token log-probs. A text seen in
    training has few very unlikely tokens, so a *low* score hints at contamination. ``ratio`` is
    read as the decimal the caller wrote (``Fraction(repr(ratio))``), so ``0.29 · 100`` gives
    ``k = 29``, not the 28 that binary floating point would.

    Examples (same log-probs as :func:`perplexity`): ratio 0.2 → 3.55; 0.5 → 2.26;
    0.05 → ``k = 1`` → 4.0.

    Degenerate cases: no tokens → nan.

    Args:
        logprobs: Natural-log probabilities of the observed tokens, each ``<= 0``.
        ratio: Share of tokens to keep, ``0 < ratio <= 1``.

    Returns:
        The Min-K% score, ``>= 0``, or nan.

    Raises:
        ValueError: ``ratio`` outside (0, 1], or a log-prob is NaN, ``+inf`` or positive.
    """
    if not (math.isfinite(ratio) and 0.0 < ratio <= 1.0):
        raise ValueError(f"ratio must be in (0, 1], got {ratio!r}")
    lp = _logprobs(logprobs)
    if lp.size == 0:
        return math.nan
    k = max(1, math.floor(Fraction(repr(float(ratio))) * lp.size))
    lowest = np.partition(lp, k - 1)[:k]
    return float(-np.mean(lowest))
