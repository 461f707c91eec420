"""The golden design: which requests an engine gets, read from the config's ``golden`` block.

Conditions (the raw rows' ``condition`` column) name what a row is:

* ``{B}/main`` — branch ``B``'s one answer per task (greedy; a self-consistency branch votes over
  ``n`` sampled trajectories with fixed seeds), ``{B}/sample`` — its repeats at ``temperature``
  with fixed seeds (``repeat`` = run index);
* ``judge/...`` — judge calls (``judging.py``); ``probe/...`` — probes (``probing.py``).

Branches (``branches: {A: {solver: single}, B: {solver: agent}, C: {solver: agent,
self_consistency: 3}}``): ``single`` = one call with the five files in the prompt; ``agent`` =
the files only through tools (``run/agent.py``). The base branch (``base_branch``, default A)
runs on every engine of the suite; the others only on ``branch_engines``. Each engine speaks the
tool protocol its config names (``tool_protocol: native|json``), else the one its kind declares
(``engines.capabilities``: the embedded ``local`` model declares ``json``, llama.cpp's server
not parsing tool calls for it; the others ``native``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request, capabilities
from sealedeval.errors import UserError
from sealedeval.keys import derive_seed, keyed_request
from sealedeval.run.agent import TOOL_SPECS
from sealedeval.suites.golden import prompts

SUITE = "golden"


@dataclass(frozen=True)
class Branch:
    name: str
    solver: str
    self_consistency: int
    repeats: int
    # Task ids this branch answers (its ``main`` and its repeats); None = every task. A profile
    # that cannot afford an agent branch on all tasks runs it on a documented subset; paired
    # comparisons then use the tasks both branches answered.
    tasks: tuple[str, ...] | None = None

    @property
    def tools(self) -> bool:
        return self.solver == "agent"

    def describe(self) -> dict[str, Any]:
        return {
            "solver": self.solver,
            "tools": self.tools,
            "self_consistency": self.self_consistency,
            "repeats": self.repeats,
            "tasks": list(self.tasks) if self.tasks is not None else "all",
        }

    def selects(self, task_id: str) -> bool:
        return self.tasks is None or task_id in self.tasks


def branches(scfg: Mapping[str, Any], task_ids: Collection[str] = ()) -> list[Branch]:
    """Enabled branches, sorted by name; no ``branches`` block = the single branch A. With
    ``task_ids`` (every task of the set), a branch's ``tasks`` list must name only those."""
    raw = scfg.get("branches") or {"A": {"solver": "single"}}
    base = str(scfg.get("base_branch", "A"))
    out = []
    for name in sorted(raw):
        b = raw[name] or {}
        if not b.get("enabled", True):
            continue
        solver = str(b.get("solver", "single"))
        tools = bool(b.get("tools", solver == "agent"))
        where = f"suites.golden.branches.{name}"
        if tools != (solver == "agent"):
            raise UserError(
                f"{where}: tools: {str(tools).lower()} needs solver {solver!r} "
                "the other way round (single = files in the prompt, agent = tools)"
            )
        sc = int(b.get("self_consistency", 1))
        if sc > 1 and solver != "agent":
            raise UserError(f"{where}: self_consistency needs solver agent")
        default_repeats = int(scfg.get("repeats", 0)) if name == base else 0
        subset = _task_subset(b.get("tasks", "all"), task_ids, where)
        if subset is not None and name == base:
            raise UserError(
                f"{where}.tasks: the base branch runs every task (it is compared across engines)"
            )
        out.append(Branch(name, solver, sc, int(b.get("repeats", default_repeats)), subset))
    if base not in {b.name for b in out}:
        raise UserError(f"suites.golden.base_branch: {base!r} is not an enabled branch")
    return out


def _task_subset(raw: Any, task_ids: Collection[str], where: str) -> tuple[str, ...] | None:
    if raw in (None, "all"):
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(t, str) for t in raw):
        raise UserError(f"{where}.tasks: expected 'all' or a non-empty list of task ids")
    if len(set(raw)) != len(raw):
        raise UserError(f"{where}.tasks: duplicate task id")
    if task_ids and (unknown := sorted(set(raw) - set(task_ids))):
        raise UserError(f"{where}.tasks: unknown task id {unknown[0]!r}")
    return tuple(raw)


def engine_branches(
    scfg: Mapping[str, Any], engine: str, task_ids: Collection[str] = ()
) -> list[Branch]:
    """The base branch on every engine; every enabled branch on ``branch_engines`` (an empty
    list = no engine runs more than the base branch)."""
    base = str(scfg.get("base_branch", "A"))
    on = set(scfg.get("branch_engines") or [])
    return [b for b in branches(scfg, task_ids) if b.name == base or engine in on]


def tool_protocol(engine: EngineConfig) -> str:
    """The engine's agent protocol: its ``tool_protocol`` config, else its kind's capability."""
    proto = str(capabilities(engine).tool_protocol)
    if proto not in ("native", "json"):
        raise UserError(f"engines.{engine.name}.tool_protocol: must be native or json")
    return proto


def files_sha256(files: Mapping[str, str]) -> str:
    return hashlib.sha256(compact(dict(sorted(files.items()))).encode()).hexdigest()[:16]


def make_request(
    engine: EngineConfig,
    model: str,
    item_id: str,
    condition: str,
    rep: int,
    seed: int,
    msgs: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    item: Mapping[str, Any],
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    solver: str = "single",
) -> Request:
    return keyed_request(
        SUITE,
        item_id,
        condition,
        rep,
        seed,
        engine.name,
        model,
        params,
        msgs,
        item=item,
        tools=tools,
        solver=solver,
    )


def answer_request(
    scfg: Mapping[str, Any],
    engine: EngineConfig,
    model: str,
    task: Mapping[str, Any],
    branch: Branch,
    files: Mapping[str, str],
    condition: str,
    rep: int,
    *,
    sampled: bool,
    sandbox: str = "clean",
) -> Request:
    """One answer to one task from one branch, over ``files`` (the clean five or a variant)."""
    seed = derive_seed(task["seed"], condition, rep) % (2**31)
    temp = float(scfg["temperature"]) if sampled or branch.self_consistency > 1 else 0.0
    if not branch.tools:
        msgs = prompts.messages(task, files)
        prompts.leak_check(task, msgs)
        # One short sentence is asked for; stopping at the first newline keeps a small model's
        # rambling out of the graded answer (and out of the time budget).
        params = {
            "temperature": temp,
            "max_tokens": int(scfg["max_tokens"]),
            "seed": seed,
            "stop": ["\n"],
        }
        return make_request(engine, model, task["id"], condition, rep, seed, msgs, params, task)
    ac = scfg.get("agent") or {}
    proto = tool_protocol(engine)
    tools = list(ac.get("tools") or ["read_file", "grep", "list_files"])
    msgs = prompts.agent_messages(task, proto, tools)
    prompts.leak_check(task, msgs)
    params = {
        "temperature": temp,
        "max_tokens": int(ac.get("max_tokens", 96)),
        "seed": seed,
        "agent": {
            "protocol": proto,
            "max_steps": int(ac.get("max_steps", 4)),
            "tools": tools,
            "final_answer": bool(ac.get("final_answer", True)),
            "self_consistency": branch.self_consistency,
            "sandbox": sandbox,
            "sandbox_sha256": files_sha256(files),
        },
    }
    specs = [TOOL_SPECS[t] for t in tools] if proto == "native" else []
    return make_request(
        engine,
        model,
        task["id"],
        condition,
        rep,
        seed,
        msgs,
        params,
        dict(task) | {"sandbox": dict(files)},
        tools=specs,
        solver="agent",
    )


def branch_requests(
    scfg: Mapping[str, Any],
    engine: EngineConfig,
    model: str,
    tasks: Sequence[Mapping[str, Any]],
    files: Mapping[str, str],
    branch: Branch,
) -> list[Request]:
    """``{B}/main`` for every task the branch selects, then ``{B}/sample`` run by run (a run =
    those tasks once)."""
    tasks = [t for t in tasks if branch.selects(str(t["id"]))]
    out = [
        answer_request(
            scfg, engine, model, t, branch, files, f"{branch.name}/main", 0, sampled=False
        )
        for t in tasks
    ]
    for rep in range(branch.repeats):
        out += [
            answer_request(
                scfg, engine, model, t, branch, files, f"{branch.name}/sample", rep, sampled=True
            )
            for t in tasks
        ]
    return out


def condition_kind(condition: str) -> str:
    """``answer`` | ``judge`` | ``probe`` from a raw row's condition."""
    head = condition.split("/", 1)[0]
    return head if head in ("judge", "probe") else "answer"


def split_condition(condition: str) -> tuple[str, str]:
    """(branch, main|sample) of an answer condition."""
    branch, _, what = condition.partition("/")
    return branch, what
