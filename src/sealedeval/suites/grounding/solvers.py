"""Multi-call solvers for the grounding suite: select-then-answer (B2) and the multi-agent
chain (B4), registered in the harness's solver registry (``sealedeval.run.solvers``) when the
suite package is imported. They live in the suite (not in ``run/``) because they render their
steps from the suite's data: ``run/`` sits below the suites and imports none of them.

Both run a fixed sequence of dependent calls inside one request: each call is rendered from the
outputs of the calls before it (by :func:`sealedeval.suites.grounding.requests.step_request`),
made through ``call`` (so retries and attempts are counted on the row), and appended to the
trajectory with the agent that made it, its messages, its raw reply and its token counts. The
row's ``output_text`` is the last reply; the grader reads every reply from the trajectory.

* ``select_then_answer``: the agent picks the records a question needs from the 41-record
  catalog, then answers the question with only its own pick assembled (B2 ``own_pick``).
* ``multi_agent_chain``: a coordinator addresses one of four owner agents and asks for a
  field; the addressed owner (it sees only its remit, the directory and its own decisions)
  answers or refuses and names the right owner; the coordinator records the answer as a new
  version and answers the original question. Round 2 goes to whichever owner the coordinator
  named, so routing mistakes reach the wrong agent exactly as they would in deployment.

A step limit (``Request.item["max_calls"]``, the number of planned calls unless set lower)
bounds every conversation: a solver never makes more calls than that, and when it stops early
the trajectory ends with a ``step_limit`` event so the grader scores the missing replies as
missing. An engine error inside a conversation fails the whole request (an infrastructure error
is never scored as a model failure) and keeps the partial trajectory in the error row's
``response`` for inspection; resume re-runs the whole conversation.
"""

from __future__ import annotations

from typing import Any

from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.run.solvers import CallFn, SolveResult, solvers
from sealedeval.suites.grounding.requests import (
    SOLVER_CHAIN,
    SOLVER_SELECT,
    agent_of,
    call_specs,
    step_request,
)

__all__ = ["multi_agent_chain", "run_steps", "select_then_answer"]


async def run_steps(request: Request, call: CallFn) -> SolveResult:
    """Make the request's planned calls in order, each seeing the earlier replies.

    Raises:
        EngineError: A call failed after its retries; ``response`` holds the trajectory so far.
        ValueError: The request plans no calls, or its limit is below one call.
    """
    specs = call_specs(request)
    if not specs:
        raise ValueError(f"{request.request_key}: request plans no calls")
    limit = int(request.item.get("max_calls", len(specs)))
    if limit < 1:
        raise ValueError(f"{request.request_key}: max_calls must be at least 1, got {limit}")
    prior: dict[str, str] = {}
    trajectory: list[dict[str, Any]] = []
    last: Completion | None = None
    tokens_in = tokens_out = 0
    for index, spec in enumerate(specs):
        if index >= limit:
            trajectory.append(
                {
                    "event": "step_limit",
                    "limit": limit,
                    "planned": len(specs),
                    "skipped": [s.request_id for s in specs[index:]],
                }
            )
            break
        sub = step_request(request, index, prior)
        agent = agent_of(spec, prior)
        try:
            completion = await call(sub)
        except EngineError as e:
            raise EngineError(
                e.kind,
                f"call {index + 1}/{len(specs)} ({agent}): {e}",
                retry_after=e.retry_after,
                response={
                    "failed_call": spec.request_id,
                    "error_response": e.response,
                    "trajectory": trajectory,
                },
                output_text=e.output_text,
            ) from e
        prior[spec.request_id] = completion.output_text
        tokens_in += completion.tokens_in
        tokens_out += completion.tokens_out
        trajectory.append(
            {
                "event": "call",
                "step": index + 1,
                "call_id": spec.request_id,
                "stage": spec.condition,
                "agent": agent,
                "messages": list(sub.messages),
                "params": {k: v for k, v in sub.params.items() if k != "response_format"},
                "output_text": completion.output_text,
                "finish_reason": completion.finish_reason,
                "tokens_in": completion.tokens_in,
                "tokens_out": completion.tokens_out,
            }
        )
        last = completion
    assert last is not None  # at least one call was made (limit >= 1)
    return SolveResult(last, trajectory, tokens_in=tokens_in, tokens_out=tokens_out)


def _check(request: Request, track: str) -> None:
    specs = call_specs(request)
    if not specs or specs[0].track != track:
        raise ValueError(f"{request.request_key}: not a {track} request")


@solvers.register(SOLVER_SELECT)
async def select_then_answer(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """B2: pick the records, then answer with only the pick assembled."""
    del engine
    _check(request, "B2")
    return await run_steps(request, call)


@solvers.register(SOLVER_CHAIN)
async def multi_agent_chain(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """B4: coordinator → addressed owner agent → coordinator records and answers."""
    del engine
    _check(request, "B4")
    return await run_steps(request, call)
