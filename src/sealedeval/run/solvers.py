"""Solvers, registered by name: how one request turns into engine calls.

A solver gets the engine, the request and ``call`` — a function that makes one engine call with
retries and attempt counting — and returns a ``SolveResult`` with the final completion and, for
multi-call solvers (tool agents, multi-agent chains, select-then-answer), the whole trajectory.
Every call a solver makes goes through ``call`` so the raw row counts attempts and tokens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sealedeval.engines.base import Completion, Engine, Request
from sealedeval.registry import Registry

CallFn = Callable[[Request], Awaitable[Completion]]


@dataclass
class SolveResult:
    """The final completion and, for agents, the whole trajectory (stored in the raw row)."""

    completion: Completion
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    tokens_in: int | None = None
    tokens_out: int | None = None


Solver = Callable[[Engine, Request, CallFn], Awaitable[SolveResult]]
solvers: Registry[Solver] = Registry("solver")


@solvers.register("single")
async def single_call(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """The default solver: one chat call with the request's messages."""
    return SolveResult(await call(request))


@solvers.register("replay")
async def replay_rows(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """For engines that replay whole recorded rows (``replays_rows``, the ``replay`` kind):
    the row's completion and trajectory as recorded, whatever solver made them; no call."""
    completion, trajectory = engine.recorded(request)  # type: ignore[attr-defined]
    return SolveResult(completion, list(trajectory), completion.tokens_in, completion.tokens_out)


def get_solver(name: str) -> Solver:
    """Look a solver up; solver modules register on import."""
    return solvers.get(name)
