"""Harnesses' headline aggregations, re-derived from the per-sample values their logs keep
(sealed with the ``imported`` suite kind).

A harness reports one number per (task, metric); for most metrics it is the mean of per-sample
values, for some a corpus-level function of every sample's (reference, prediction) pair. Each
function here is the harness's own definition, written out so that importing needs no harness
install; tests check every one against the harness itself on the same items. Corpus BLEU,
chrF, chrF++ and TER are lm-eval's calls of sacrebleu, whose tokenisers and smoothing are not
worth re-writing (and would drift from it): they are re-derived through sacrebleu itself when it
is installed (the ``imports`` extra), and its version is reported beside the number, since a
different sacrebleu may tokenise differently. An aggregation not listed (a task's own Python
function, Brier score), or a sacrebleu one without sacrebleu, is reported by the harness and
not re-derived — said so, never guessed.
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


def sacrebleu_version() -> str | None:
    """The installed sacrebleu's version, None when it cannot be imported: the BLEU/chrF/TER
    re-derivations depend on it, so the analysis records it next to their numbers."""
    try:
        import sacrebleu
    except ImportError:
        return None
    return str(sacrebleu.__version__)


def _sacreformat(items: Sequence[Any]) -> tuple[list[list[str]], list[str]] | None:
    """lm-eval's ``_sacreformat`` over the documents' (reference, prediction) pairs: sacrebleu
    wants the predictions as one list and the references transposed, one stream per reference
    position (a document's reference may be one string or a list of them; a prediction a
    string or a one-element list). Anything else (sacrebleu would raise, or lm-eval would
    iterate a string's characters as references) is not re-derived: None."""
    pairs = _pairs(items)
    if not pairs or len({isinstance(ref, str) for ref, _ in pairs}) != 1:
        return None  # references mixing strings and lists: lm-eval would mangle them
    refs: list[list[str]] = []
    preds: list[str] = []
    for ref, pred in pairs:
        ref_list = [ref] if isinstance(ref, str) else ref
        if isinstance(pred, list) and len(pred) == 1:
            pred = pred[0]
        if (
            not isinstance(ref_list, list)
            or not ref_list
            or not all(isinstance(r, str) for r in ref_list)
            or not isinstance(pred, str)
        ):
            return None
        refs.append(ref_list)
        preds.append(pred)
    # lm-eval's zip(*refs): as many reference streams as the document with the fewest
    return [list(stream) for stream in zip(*refs, strict=False)], preds


def _sacrebleu_corpus(kind: str, items: Sequence[Any]) -> float | None:
    formatted = _sacreformat(items)
    if formatted is None:
        return None
    try:
        import sacrebleu
    except ImportError:
        return None
    refs, preds = formatted
    if kind == "bleu":
        return float(sacrebleu.corpus_bleu(preds, refs).score)
    if kind == "chrf":
        return float(sacrebleu.corpus_chrf(preds, refs).score)
    if kind == "chrf++":
        return float(sacrebleu.corpus_chrf(preds, refs, word_order=2).score)
    return float(sacrebleu.corpus_ter(preds, refs).score)


def bleu(items: Sequence[Any]) -> float | None:
    """lm-eval ``bleu``: ``sacrebleu.corpus_bleu(preds, refs).score`` with sacrebleu's
    defaults (13a tokeniser, exponential smoothing), on a 0-100 scale."""
    return _sacrebleu_corpus("bleu", items)


def chrf(items: Sequence[Any]) -> float | None:
    """lm-eval ``chrf``: ``sacrebleu.corpus_chrf(preds, refs).score`` (char order 6, word
    order 0, beta 2)."""
    return _sacrebleu_corpus("chrf", items)


def chrfpp(items: Sequence[Any]) -> float | None:
    """lm-eval ``chrf++``: ``sacrebleu.corpus_chrf(preds, refs, word_order=2).score``."""
    return _sacrebleu_corpus("chrf++", items)


def ter(items: Sequence[Any]) -> float | None:
    """lm-eval ``ter``: ``sacrebleu.corpus_ter(preds, refs).score`` (lower is better)."""
    return _sacrebleu_corpus("ter", items)


SACREBLEU: dict[str, Callable[[Sequence[Any]], float | None]] = {
    "bleu": bleu,
    "chrf": chrf,
    "chrf++": chrfpp,
    "ter": ter,
}
"""lm-eval aggregations computed by sacrebleu, re-derived through it when it is installed."""


LM_EVAL: dict[str, Callable[[Sequence[Any]], float | None]] = {
    "mean": mean,
    "median": median,
    "perplexity": perplexity,
    "weighted_perplexity": weighted_perplexity,
    "bits_per_byte": bits_per_byte,
    "f1": f1_binary,
    "matthews_corrcoef": matthews_corrcoef,
    **SACREBLEU,
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
