"""Harnesses' headline aggregations, re-derived from the per-sample values their logs keep
(sealed with the ``imported`` suite kind).

A harness reports one number per (task, metric); for most metrics it is the mean of per-sample
values, for some a corpus-level function of every sample's (reference, prediction) pair. Each
function here is the harness's own definition, written out so that importing needs no harness
install; tests check every one against the harness itself on the same items. An aggregation
not listed (corpus BLEU/chrF/TER, which need sacrebleu's tokenisers, a task's own Python
function, Brier score) is reported by the harness and not re-derived — said so, never guessed.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

#: lm-eval's default aggregation of each built-in metric (``METRIC_AGGREGATION_REGISTRY``,
#: lm_eval/api/metrics.py, 0.4.x), used when a task's ``metric_list`` does not name one.
LM_EVAL_DEFAULT_AGGREGATION = {
    "acc": "mean",
    "acc_norm": "mean",
    "acc_mutual_info": "mean",
    "acc_bytes": "mean",
    "acc_all": "mean",
    "exact_match": "mean",
    "likelihood": "mean",
    "perplexity": "perplexity",
    "word_perplexity": "weighted_perplexity",
    "byte_perplexity": "weighted_perplexity",
    "bits_per_byte": "bits_per_byte",
    "brier_score": "brier_score",
    "mcc": "matthews_corrcoef",
    "f1": "f1",
    "bleu": "bleu",
    "chrf": "chrf",
    "chrf++": "chrf++",
    "ter": "ter",
}


def _pairs(items: Sequence[Any]) -> list[tuple[Any, Any]] | None:
    out = []
    for it in items:
        if not isinstance(it, (list, tuple)) or len(it) != 2:
            return None
        out.append((it[0], it[1]))
    return out


def _numbers(items: Sequence[Any]) -> list[float] | None:
    out = []
    for it in items:
        if isinstance(it, bool) or not isinstance(it, (int, float)):
            return None
        out.append(float(it))
    return out


def _key(label: Any) -> str:
    return json.dumps(label, sort_keys=True)


def mean(items: Sequence[Any]) -> float | None:
    """lm-eval ``mean``: ``sum(arr) / len(arr)``."""
    xs = _numbers(items)
    return sum(xs) / len(xs) if xs else None


def median(items: Sequence[Any]) -> float | None:
    """lm-eval ``median``: ``sorted(arr)[len(arr) // 2]`` (the upper median)."""
    xs = _numbers(items)
    return sorted(xs)[len(xs) // 2] if xs else None


def perplexity(items: Sequence[Any]) -> float | None:
    """lm-eval ``perplexity``: ``exp(-mean(loglikelihoods))``."""
    m = mean(items)
    return math.exp(-m) if m is not None else None


def _weighted_mean(items: Sequence[Any]) -> float | None:
    pairs = _pairs(items)
    if not pairs:
        return None
    a = _numbers([p[0] for p in pairs])
    b = _numbers([p[1] for p in pairs])
    if a is None or b is None or sum(b) == 0:
        return None
    return sum(a) / sum(b)


def weighted_perplexity(items: Sequence[Any]) -> float | None:
    """lm-eval ``weighted_perplexity``: ``exp(-sum(loglik) / sum(weight))``."""
    w = _weighted_mean(items)
    return math.exp(-w) if w is not None else None


def bits_per_byte(items: Sequence[Any]) -> float | None:
    """lm-eval ``bits_per_byte``: ``-sum(loglik) / sum(bytes) / ln 2``."""
    w = _weighted_mean(items)
    return -w / math.log(2) if w is not None else None


def f1_binary(items: Sequence[Any]) -> float | None:
    """lm-eval ``f1`` (``f1_score``): scikit-learn's ``f1_score(golds, preds)`` with its
    defaults, binary with positive label 1 and 0 when undefined (no positive at all). Labels
    other than 0/1 make scikit-learn raise, so such a log cannot come from lm-eval: None."""
    pairs = _pairs(items)
    if not pairs or any(g not in (0, 1) or p not in (0, 1) for g, p in pairs):
        return None
    tp = sum(1 for g, p in pairs if g == 1 and p == 1)
    fp = sum(1 for g, p in pairs if g != 1 and p == 1)
    fn = sum(1 for g, p in pairs if g == 1 and p != 1)
    denom = 2 * tp + fp + fn
    return 2 * tp / denom if denom else 0.0


def matthews_corrcoef(items: Sequence[Any]) -> float | None:
    """lm-eval ``matthews_corrcoef``: scikit-learn's multiclass MCC from the confusion matrix
    (``(c·s − Σ p_k t_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²))``, 0 when a factor is 0)."""
    pairs = _pairs(items)
    if not pairs:
        return None
    golds = Counter(_key(g) for g, _ in pairs)
    preds = Counter(_key(p) for _, p in pairs)
    s = len(pairs)
    c = sum(1 for g, p in pairs if _key(g) == _key(p))
    labels = set(golds) | set(preds)
    cov_tp = c * s - sum(golds[k] * preds[k] for k in labels)
    cov_pp = s * s - sum(preds[k] ** 2 for k in labels)
    cov_tt = s * s - sum(golds[k] ** 2 for k in labels)
    if cov_pp * cov_tt == 0:
        return 0.0
    return cov_tp / math.sqrt(cov_tt * cov_pp)


LM_EVAL: dict[str, Callable[[Sequence[Any]], float | None]] = {
    "mean": mean,
    "median": median,
    "perplexity": perplexity,
    "weighted_perplexity": weighted_perplexity,
    "bits_per_byte": bits_per_byte,
    "f1": f1_binary,
    "matthews_corrcoef": matthews_corrcoef,
}
"""lm-eval aggregations re-derived here, by the name lm-eval registers them under."""


def sample_std(values: Sequence[float]) -> float:
    """Inspect ``std``: ``np.std(values, ddof=1)``, 0 for fewer than two values."""
    n = len(values)
    if n < 2:
        return 0.0
    m = sum(values) / n
    return math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1))


#: Inspect metrics over the per-sample (epoch-reduced) values, as inspect_ai/scorer/_metrics
#: defines them: ``accuracy`` and ``mean`` the mean, ``stderr`` ``std(ddof=1) / sqrt(n)``
#: (without ``cluster``), ``std`` and ``var`` with ``ddof=1``.
INSPECT: dict[str, Callable[[Sequence[float]], float | None]] = {
    "accuracy": lambda v: sum(v) / len(v) if v else None,
    "mean": lambda v: sum(v) / len(v) if v else None,
    "stderr": lambda v: sample_std(v) / math.sqrt(len(v)) if v else None,
    "std": lambda v: sample_std(v) if v else None,
    "var": lambda v: sample_std(v) ** 2 if v else None,
}


def aggregation_name(spec: Any) -> str:
    """A task config's ``aggregation``: a registered name, or a function's source (its name)."""
    if not isinstance(spec, str):
        return "custom"
    text = spec.strip()
    if text.startswith("def ") and "(" in text:
        # the task's own function: never taken for a registered one of the same name
        return f"{text[4 : text.index('(')].strip()} (the task's own function)"
    if text.startswith("!function"):
        return text.split()[-1]
    return text
