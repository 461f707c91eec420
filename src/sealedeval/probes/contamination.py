"""Contamination statistics from the log-prob probe's stored rows (pure functions).

Per text: mean negative log-likelihood per token (nats) and Min-20% prob. Per group (famous /
fresh × original / paraphrase): the mean over texts. The **loss gap** is mean NLL(fresh
originals) − mean NLL(famous originals): a model that memorised the famous strings finds them
far less surprising. Absolute loss mixes memorisation with ordinary naturalness, so the
**paraphrase penalty** — NLL(paraphrase) − NLL(original), averaged per group — is the sharper
statistic: for memorised strings the original is much cheaper than the same content in other
words; for fresh strings the two cost about the same. The continuation test counts originals
whose greedy continuation of the first six words reproduces the next six exactly, and (a graded
view for small models) how many of those six it reproduces before its first difference.

Numbers are only reported when every text's log-prob source passed validation (see
``probes.logprobs``); otherwise the table says so and gives none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval import stats


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def contamination_table(texts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``texts``: one record per probed text with ``id`` (sentence id), ``kind`` (famous /
    fresh), ``variant`` (original / paraphrase), ``logprobs``, ``valid`` and, for originals,
    ``exact`` (continuation test), ``matched`` (words reproduced) and ``continuation``."""
    invalid = sorted(f"{t['id']}/{t['variant']}" for t in texts if not t["valid"])
    per: dict[tuple[str, str], dict[str, Any]] = {}
    for t in texts:
        lp = [float(x) for x in t["logprobs"]]
        per[(str(t["id"]), str(t["variant"]))] = {
            "kind": t["kind"],
            "n_tokens": len(lp),
            "mean_nll": stats.mean_nll(lp) if lp else math.nan,
            "min_k_20": stats.min_k_prob(lp, 0.2) if lp else math.nan,
        }
    groups: dict[str, dict[str, float]] = {}
    penalty: dict[str, float] = {}
    for kind in ("famous", "fresh"):
        ids = sorted({i for (i, _), v in per.items() if v["kind"] == kind})
        orig = [per[(i, "original")]["mean_nll"] for i in ids if (i, "original") in per]
        para = [per[(i, "paraphrase")]["mean_nll"] for i in ids if (i, "paraphrase") in per]
        groups[kind] = {"original": _mean(orig), "paraphrase": _mean(para), "n": len(ids)}
        diffs = [
            per[(i, "paraphrase")]["mean_nll"] - per[(i, "original")]["mean_nll"]
            for i in ids
            if (i, "original") in per and (i, "paraphrase") in per
        ]
        penalty[kind] = _mean(diffs)
    cont: dict[str, dict[str, Any]] = {}
    for kind in ("famous", "fresh"):
        orig = [t for t in texts if t["kind"] == kind and t["variant"] == "original"]
        cont[kind] = {
            "exact": sum(1 for t in orig if t.get("exact")),
            "n": len(orig),
            "mean_words_matched": _mean([float(t.get("matched", 0)) for t in orig]),
        }
    valid = not invalid and bool(texts)
    gap = groups["fresh"]["original"] - groups["famous"]["original"]
    return {
        "valid": valid,
        "invalid_texts": invalid,
        "texts": {f"{i}/{v}": r for (i, v), r in sorted(per.items())} if valid else {},
        "groups": groups if valid else {},
        "loss_gap_nats": gap if valid else math.nan,
        "loss_ratio": (
            groups["fresh"]["original"] / groups["famous"]["original"]
            if valid and groups["famous"]["original"]
            else math.nan
        ),
        "paraphrase_penalty_nats": penalty if valid else {},
        "continuation": cont,
        "continuations": {
            str(t["id"]): {
                "exact": bool(t.get("exact")),
                "matched": int(t.get("matched", 0)),
                "text": str(t.get("continuation", "")),
            }
            for t in sorted(texts, key=lambda t: str(t["id"]))
            if t["variant"] == "original"
        },
    }
