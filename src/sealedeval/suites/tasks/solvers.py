"""The solvers of a ``tasks`` suite that ``run.solvers`` does not have.

* ``tasks_answer`` — one call, like ``single``, except that a reply cut at ``max_tokens`` is
  kept as the answer (``finish_reason: length``) instead of becoming an error row: with
  ``truncated: answer`` (the suite's default) a model that rambles past its budget has answered,
  badly, and is graded on what it said. Counting it as an infrastructure error would take it out
  of every denominator and flatter the model. Any other engine error propagates (and is retried)
  as for any call.
* ``self_consistency`` — ``samples`` calls voted to one answer. Each sample is one call with the
  request's messages at its temperature and a fixed seed per sample index (the agent's
  ``self_consistency`` trajectory seeds); the answer is the modal normalised answer, ties to the
  first seen, empty answers never winning (``run.agent.modal``). Every sample and the vote are
  stored in the row's trajectory; tokens are summed over samples. The solver's settings ride in
  ``params["self_consistency"]`` and are never sent to an engine.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.run.agent import modal
from sealedeval.run.solvers import CallFn, SolveResult, solvers

NAME = "self_consistency"
ANSWER = "tasks_answer"


def sample_seed(seed: int, index: int) -> int:
    return (seed + 7919 * index) % (2**31)


async def keep_truncated(call: CallFn, request: Request, keep: bool) -> Completion:
    """One call; with ``keep``, a reply cut at ``max_tokens`` comes back as a completion."""
    try:
        return await call(request)
    except EngineError as e:
        if not keep or e.kind != "truncated":
            raise
        usage = e.response.get("usage") or {}
        return Completion(
            e.output_text,
            e.response,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            "length",
            message={"role": "assistant", "content": e.output_text},
        )


@solvers.register(ANSWER)
async def tasks_answer(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    return SolveResult(await keep_truncated(call, request, True))


@solvers.register(NAME)
async def self_consistency(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    cfg = dict(request.params.get(NAME) or {})
    n = int(cfg.get("samples", 1))
    keep = bool(cfg.get("keep_truncated", False))
    params = {k: v for k, v in request.params.items() if k != NAME}
    seed = int(params.get("seed", request.seed))
    comps: list[Completion] = []
    traj: list[dict[str, Any]] = []
    for i in range(n):
        s = sample_seed(seed, i)
        comp = await keep_truncated(call, replace(request, params=params | {"seed": s}), keep)
        comps.append(comp)
        traj.append(
            {
                "type": "sample",
                "index": i,
                "seed": s,
                "answer": comp.output_text,
                "finish_reason": comp.finish_reason,
                "tokens_in": comp.tokens_in,
                "tokens_out": comp.tokens_out,
            }
        )
    answers = [c.output_text for c in comps]
    idx, votes = modal(answers)
    chosen = comps[idx] if idx >= 0 else comps[-1]
    answer = answers[idx] if idx >= 0 else ""
    traj.append(
        {"type": "vote", "answers": answers, "winner": idx, "votes": votes, "answer": answer}
    )
    t_in = sum(c.tokens_in for c in comps)
    t_out = sum(c.tokens_out for c in comps)
    final = Completion(
        output_text=answer,
        response=chosen.response,
        tokens_in=t_in,
        tokens_out=t_out,
        finish_reason=chosen.finish_reason,
        engine_path=chosen.engine_path,
        message={"role": "assistant", "content": answer},
    )
    return SolveResult(final, traj, t_in, t_out)
