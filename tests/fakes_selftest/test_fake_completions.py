"""Self-test of the fake server's legacy completions (echo, logprobs) and vLLM tokenizer
endpoints, against the protocol as written and as lm-eval's own client code reads it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from tests.fakes import FakeOpenAI
from tests.fakes.openai_server import ALTERNATIVES, EOS_TOKEN, split_tokens, token_id

PROMPT = "Question: Which is the largest animal?\nAnswer: blue whale"


def table_logprober(model: str, tokens: Sequence[str]) -> list[float]:
    """-0.5 per token for model "sure", -2.5 for any other (below log(1/5): not greedy)."""
    return [-0.5 if model == "sure" else -2.5] * len(tokens)


def root(fake: FakeOpenAI) -> str:
    return fake.base_url.removesuffix("/v1")


def test_tokenizer_endpoints_round_trip_with_stable_ids() -> None:
    with FakeOpenAI() as fake, FakeOpenAI() as other:
        info = httpx.get(f"{root(fake)}/tokenizer_info").json()
        assert info["eos_token"] == EOS_TOKEN and info["model_max_length"] > 0
        got = httpx.post(f"{root(fake)}/tokenize", json={"prompt": PROMPT}).json()
        assert split_tokens(PROMPT) == [
            "Question:",
            " Which",
            " is",
            " the",
            " largest",
            " animal?",
            "\nAnswer:",
            " blue",
            " whale",
        ]
        assert got["tokens"] == [token_id(t) for t in split_tokens(PROMPT)]
        assert got["count"] == 9
        # the ids are the same in another server (so a run's requests do not depend on it)
        again = httpx.post(f"{root(other)}/tokenize", json={"prompt": PROMPT}).json()
        assert again["tokens"] == got["tokens"]
        back = httpx.post(f"{root(fake)}/detokenize", json={"tokens": got["tokens"]}).json()
        assert back == {"prompt": PROMPT}
        assert "".join(split_tokens("  a  b \n")) == "  a  b \n"  # lossless, trailing space too

        unknown = httpx.post(f"{root(other)}/detokenize", json={"tokens": [7]})
        assert unknown.status_code == 400 and "unknown token id 7" in unknown.text
        bad = httpx.post(f"{root(fake)}/tokenize", json={"prompt": ["x"]})
        assert bad.status_code == 400


def test_echo_logprobs_is_the_legacy_completions_shape() -> None:
    with FakeOpenAI(logprober=table_logprober, responder=lambda b: "Yes it is") as fake:
        ids = httpx.post(f"{root(fake)}/tokenize", json={"prompt": PROMPT}).json()["tokens"]
        body = {"model": "sure", "prompt": [ids], "max_tokens": 1, "echo": True, "logprobs": 2}
        r = httpx.post(f"{fake.base_url}/completions", json=body)
        assert r.status_code == 200
        obj = r.json()
        assert obj["object"] == "text_completion" and obj["id"].startswith("cmpl-")
        assert obj["model"] == "sure"
        (choice,) = obj["choices"]
        assert choice["index"] == 0 and choice["finish_reason"] == "length"
        assert choice["text"] == PROMPT + "Yes"  # echo, then the first token of the reply
        lp = choice["logprobs"]
        tokens = [*split_tokens(PROMPT), "Yes"]
        assert lp["tokens"] == tokens
        assert lp["text_offset"] == [sum(map(len, tokens[:i])) for i in range(len(tokens))]
        # OpenAI gives the first echoed token no log-prob
        assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
        assert lp["token_logprobs"][1:9] == [-0.5] * 8
        rest = zip(tokens[1:], lp["top_logprobs"][1:], lp["token_logprobs"][1:], strict=True)
        for tok, top, value in rest:
            assert len(top) == 2
            assert top[tok] == value  # p = e^-0.5 beats the alternatives' (1 - p) / 4
            alt = math.log((1 - math.exp(value)) / ALTERNATIVES)
            assert top[f"{tok}~1"] == pytest.approx(alt)
        assert obj["usage"] == {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}


def test_prompt_forms_max_tokens_zero_stop_and_no_logprobs() -> None:
    with FakeOpenAI(responder=lambda b: f"seen {b['prompt']!s}. more") as fake:
        url = f"{fake.base_url}/completions"
        two = httpx.post(url, json={"model": "m", "prompt": ["a", "b c"], "max_tokens": 5}).json()
        assert [c["text"] for c in two["choices"]] == ["seen a. more", "seen b c. more"]
        assert [c["index"] for c in two["choices"]] == [0, 1]
        assert all(c["logprobs"] is None for c in two["choices"])
        stopped = httpx.post(url, json={"model": "m", "prompt": "x", "stop": ["."]}).json()
        assert stopped["choices"][0]["text"] == "seen x"
        assert stopped["choices"][0]["finish_reason"] == "stop"
        zero = {"model": "m", "prompt": "a b", "max_tokens": 0, "echo": True, "logprobs": 0}
        (c,) = httpx.post(url, json=zero).json()["choices"]
        assert c["text"] == "a b" and c["logprobs"]["tokens"] == ["a", " b"]
        assert c["logprobs"]["top_logprobs"] == [None, {}] and c["finish_reason"] == "length"
        for bad in ({"prompt": 3}, {"prompt": "x", "max_tokens": -1}, {"prompt": [[1, 2]]}):
            assert httpx.post(url, json={"model": "m", **bad}).status_code == 400


def test_faults_apply_to_completions_by_prompt_text() -> None:
    with FakeOpenAI(faults={"BOOM": ["server", "rate_limit"]}, retry_after="0") as fake:
        url = f"{fake.base_url}/completions"
        assert httpx.post(url, json={"model": "m", "prompt": "a BOOM"}).status_code == 500
        assert httpx.post(url, json={"model": "m", "prompt": "a BOOM"}).status_code == 429
        assert httpx.post(url, json={"model": "m", "prompt": "a BOOM"}).status_code == 200
        assert fake.count("server") == 1 and fake.count("rate_limit") == 1


def test_lm_eval_reads_it_as_a_server_with_log_probs_and_a_tokenizer() -> None:
    """lm-eval's own client code: its remote-tokenizer probe and client, and the parser that
    turns an echo response into (log-likelihood of the continuation, is greedy)."""
    completions = pytest.importorskip("lm_eval.models.openai_completions")
    utils = pytest.importorskip("lm_eval.utils")
    with FakeOpenAI(logprober=table_logprober) as fake:
        url = f"{fake.base_url}/completions"
        assert utils.check_remote_tokenizer_support(url) is True
        tok = utils.RemoteTokenizer(url)
        ids = tok.encode(PROMPT)
        assert tok.decode(ids) == PROMPT and tok.eos_token == EOS_TOKEN
        ctxlen = len(tok.encode("Question: Which is the largest animal?\nAnswer:"))
        for model, greedy in (("sure", True), ("unsure", False)):
            body = {"model": model, "prompt": [ids], "max_tokens": 1, "echo": True, "logprobs": 1}
            out: Any = httpx.post(url, json=body).json()
            parsed = completions.LocalCompletionsAPI.parse_logprobs(
                outputs=out, tokens=[ids], ctxlens=[ctxlen]
            )
            # the continuation " blue whale": two tokens of the table's log-prob each
            expected = 2 * table_logprober(model, ["x"])[0]
            assert parsed == [(pytest.approx(expected), greedy)]
