"""Per-token log-probabilities of a text under a model, and the check that a source is aligned.

A contamination probe built on misaligned log-probs measures nothing, so every source is
validated before use: at each position ``i`` the token the model generates *greedily* after
``tokens[:i]`` (found by an independent generation path) must carry the highest log-prob the
source reports for position ``i`` (ties within ``tol`` allowed). An off-by-one source — one that
reports for position ``i`` the distribution of position ``i + 1`` — fails at nearly every
position.

Sources:

* ``inprocess`` (used): llama-cpp-python in this process on the engine's own GGUF file. The text
  is evaluated token by token; the log-prob of token ``i`` is the log-softmax of the logits row
  the library stored after token ``i − 1`` (full vocabulary, exact), and the greedy token at that
  position is drawn by the library's own sampler at temperature 0 from the context's logits —
  the two must agree exactly. (Incremental, not batch: the Q4 kernels give batch and
  single-token evaluation log-probs that differ by up to ~0.5 nats, enough to flip near-ties.)
* ``echo``: the OpenAI-style ``/v1/completions`` answer with ``echo: true, logprobs: N``, as
  llama-cpp-python 0.3.36 computes it (its server calls the same ``create_completion``). It
  reports for prompt token ``i`` the distribution computed *after* token ``i`` — shifted by
  one — and the check rejects it. It is recorded next to every probe row as evidence.

Only the first ``top_n`` alternatives of a position are kept in the raw row (enough for the
check and for a reader); the observed token's log-prob is always kept exactly.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from sealedeval import stats
from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.run.solvers import CallFn, SolveResult, solvers

METHOD_INPROCESS = (
    "inprocess: llama-cpp-python Llama(logits_all=True) on the engine's GGUF, token-by-token "
    "eval; log p(token_i) = log_softmax(logits after token i-1)[token_i]; validated: the "
    "library's greedy sample (temperature 0) is the top log-prob at every position"
)
TOP_N = 5


@dataclass(frozen=True)
class Position:
    """One scored token: the observed token, its log-prob, and the source's top alternatives."""

    token: Hashable
    logprob: float
    top: Mapping[Any, float]


def validate(
    positions: Sequence[Position], greedy: Sequence[Hashable], *, tol: float = 1e-3
) -> dict[str, Any]:
    """Check a log-prob source against greedy decoding, position by position.

    Args:
        positions: The source's positions (aligned with ``greedy``); a position without
            alternatives cannot be checked and is counted as ``unchecked``.
        greedy: The greedy next token after each position's prefix, from an independent path.
        tol: A greedy token within ``tol`` nats of the source's maximum counts as the top
            (batch and incremental evaluation differ in the last bits; exact ties exist).

    Returns:
        ``ok`` (every checked position agrees and at least one was checked), counts, and the
        first few mismatches for a reader.
    """
    if len(positions) != len(greedy):
        raise ValueError("positions and greedy tokens must be aligned")
    checked, bad = 0, []
    for i, (pos, g) in enumerate(zip(positions, greedy, strict=True)):
        if not pos.top:
            continue
        checked += 1
        best_tok, best = max(pos.top.items(), key=lambda kv: kv[1])
        lp = pos.top.get(g)
        if lp is None or lp < best - tol:
            bad.append({"i": i, "greedy": str(g), "source_top": str(best_tok)})
    return {
        "ok": checked > 0 and not bad,
        "positions": len(positions),
        "checked": checked,
        "mismatches": len(bad),
        "first_mismatches": bad[:5],
    }


def positions_from_completion_logprobs(lp: Mapping[str, Any]) -> list[Position]:
    """Positions from a legacy completions ``logprobs`` object (``tokens``, ``token_logprobs``,
    ``top_logprobs``) as the OpenAI API and llama.cpp's server return it. ``None`` entries (the
    first echoed token has none) become positions without alternatives."""
    out = []
    tops = lp.get("top_logprobs") or []
    for i, (tok, val) in enumerate(
        zip(lp.get("tokens") or [], lp.get("token_logprobs") or [], strict=False)
    ):
        top = tops[i] if i < len(tops) and tops[i] else {}
        out.append(Position(tok, math.nan if val is None else float(val), dict(top)))
    return out


def _log_softmax(logits: npt.ArrayLike) -> npt.NDArray[np.float64]:
    x = np.asarray(logits, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    out: npt.NDArray[np.float64] = x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    return out


class InProcessScorer:
    """A llama-cpp-python model in this process (lazy import; one lock: not thread-safe)."""

    _cache: ClassVar[dict[tuple[str, int], InProcessScorer]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model_path: Path, *, n_threads: int = 1, n_ctx: int = 512) -> None:
        from llama_cpp import Llama

        self.model_path = model_path
        self.llm: Any = Llama(
            model_path=str(model_path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            logits_all=True,
            verbose=False,
            seed=0,
        )
        self.lock = threading.Lock()

    @classmethod
    def get(cls, model_path: Path, n_threads: int = 1) -> InProcessScorer:
        key = (str(model_path), n_threads)
        with cls._cache_lock:
            if key not in cls._cache:
                cls._cache[key] = cls(model_path, n_threads=n_threads)
            return cls._cache[key]

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))

    def piece(self, token: int, prev: Sequence[int]) -> str:
        raw: bytes = self.llm.detokenize([token], prev_tokens=list(prev))
        return raw.decode("utf-8", "replace")

    def first_scored(self, tokens: Sequence[int]) -> int:
        """Index of the first token with a prefix: 1 (after BOS, or after the first token)."""
        return 1

    def score(self, tokens: Sequence[int]) -> tuple[list[Position], list[int]]:
        """Positions ``1..T-1`` (token ids) and the greedy token after each prefix.

        Tokens are evaluated one at a time; after each, the log-probs of the next position are
        the log-softmax of the logits row this library stored for it, and the greedy token is
        drawn by the library's own sampler at temperature 0 from the context's last logits.
        The two must agree (an off-by-one in the stored rows would not); one incremental pass
        is used for both because Q4 kernels give batch and single-token evaluation log-probs
        that differ by up to ~0.5 nats, which would blur an exact check.
        """
        self.llm.reset()
        positions: list[Position] = []
        greedy: list[int] = []
        start = self.first_scored(tokens)
        for i in range(len(tokens) - 1):
            self.llm.eval([tokens[i]])
            if i + 1 < start:
                continue
            row = _log_softmax(np.asarray(self.llm._scores[i]))
            nxt = int(tokens[i + 1])
            top = np.argsort(-row, kind="stable")[:TOP_N]
            alts = {int(t): float(row[t]) for t in top} | {nxt: float(row[nxt])}
            positions.append(Position(nxt, float(row[nxt]), alts))
            greedy.append(int(self.llm.sample(temp=0.0, top_k=1, repeat_penalty=1.0)))
        return positions, greedy

    def echo_positions(self, text: str, top_n: int = TOP_N) -> list[Position]:
        """What ``/v1/completions`` with ``echo`` reports for the prompt's tokens."""
        self.llm.reset()
        res: Any = self.llm.create_completion(
            text, max_tokens=1, echo=True, logprobs=top_n, temperature=0.0, repeat_penalty=1.0
        )
        return positions_from_completion_logprobs(res["choices"][0]["logprobs"])

    def continue_greedy(self, prompt: str, max_tokens: int) -> str:
        self.llm.reset()
        res: Any = self.llm.create_completion(
            prompt, max_tokens=max_tokens, temperature=0.0, top_k=1, repeat_penalty=1.0
        )
        return str(res["choices"][0]["text"])


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?\"'()").lower() for w in text.split() if w.strip(".,;:!?\"'()")]


def continuation_matches(original: str, prefix_words: int, continuation: str) -> bool:
    """Whether the continuation's next ``prefix_words`` words equal the original's."""
    want = _words(original)[prefix_words : 2 * prefix_words]
    return bool(want) and matched_words(original, prefix_words, continuation) == len(want)


def matched_words(original: str, prefix_words: int, continuation: str) -> int:
    """How many of the original's next ``prefix_words`` words the continuation reproduces
    before its first difference (a graded view of the exact-continuation test)."""
    want = _words(original)[prefix_words : 2 * prefix_words]
    n = 0
    for a, b in zip(want, _words(continuation), strict=False):
        if a != b:
            break
        n += 1
    return n


def check_echo(
    scorer: InProcessScorer, text: str, tokens: Sequence[int], greedy: Sequence[int]
) -> dict[str, Any]:
    """Validate the echo source against the greedy tokens (as strings, as it reports them).
    It lists the prompt without a leading BOS, then the one generated token; the tolerance is
    wide (0.25 nats) so that only misalignment, not kernel noise, can fail it."""
    echo = scorer.echo_positions(text)
    skip = 0 if tokens[0] == scorer.llm.token_bos() else 1
    n = len(greedy)
    aligned = echo[skip : skip + n]
    start = scorer.first_scored(tokens)
    greedy_str = [scorer.piece(g, tokens[: i + start]) for i, g in enumerate(greedy)]
    if len(aligned) != n:
        return {"ok": False, "reason": f"{len(echo)} echoed positions for {len(tokens)} tokens"}
    return validate(aligned, greedy_str, tol=0.25)


def probe_text(
    scorer: InProcessScorer, text: str, prefix_words: int, continue_: bool, echo: bool = False
) -> dict[str, Any]:
    """Everything the contamination probe stores for one text."""
    tokens = scorer.tokenize(text)
    positions, greedy = scorer.score(tokens)
    check = validate(positions, greedy, tol=1e-6)
    prev = tokens[: scorer.first_scored(tokens)]
    pieces = []
    for p in positions:
        pieces.append(scorer.piece(int(p.token), prev))  # type: ignore[call-overload]
        prev = [*prev, int(p.token)]  # type: ignore[call-overload]
    echo_check = check_echo(scorer, text, tokens, greedy) if echo else None
    out: dict[str, Any] = {
        "method": METHOD_INPROCESS,
        "n_tokens": len(tokens),
        "tokens": pieces,
        "logprobs": [p.logprob for p in positions],
        "validation": check,
        "echo_validation": echo_check,
        "min_k_20": stats.min_k_prob([p.logprob for p in positions], 0.2) if positions else None,
    }
    if continue_:
        prompt = " ".join(text.split()[:prefix_words])
        cont = scorer.continue_greedy(prompt, max_tokens=4 * prefix_words)
        out["continuation"] = {
            "prompt": prompt,
            "text": cont,
            "exact": continuation_matches(text, prefix_words, cont),
        }
    return out


@solvers.register("logprob_probe")
async def logprob_probe_solver(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """Contamination probe for one text, computed in-process on the engine's own weights.

    No HTTP call is made (the chat API has no model loss); the raw row stores the per-token
    log-probs, both validations and the method, so the audit covers the probe like any call.
    """
    model_path = getattr(engine, "model_path", None)
    if not isinstance(model_path, Path):
        raise EngineError("refused", "the log-prob probe needs local weights (a `local` engine)")
    # One thread: single-token evaluation of a small model is memory-bound, and a second
    # thread spin-waits against the server's threads on a 2-core machine (measured 10x slower).
    n_threads = 1
    probe = dict(request.params.get("probe") or {})
    text = str(probe["text"])

    def work() -> dict[str, Any]:
        scorer = InProcessScorer.get(model_path, n_threads)
        with scorer.lock:
            return probe_text(
                scorer,
                text,
                int(probe.get("prefix_words", 6)),
                bool(probe.get("continue")),
                bool(probe.get("echo_check")),
            )

    result = await asyncio.to_thread(work)
    cont = result.get("continuation", {}).get("text", "")
    comp = Completion(
        output_text=cont,
        response={"object": "logprob_probe", "model": str(model_path.name)},
        tokens_in=int(result["n_tokens"]),
        tokens_out=0,
        finish_reason="stop",
        engine_path="in-process",
        message={"role": "assistant", "content": cont},
    )
    return SolveResult(comp, [{"type": "logprobs", **result}], int(result["n_tokens"]), 0)
