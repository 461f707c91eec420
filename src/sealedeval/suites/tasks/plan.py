"""The requests of a ``tasks`` suite.

Conditions (the raw rows' ``condition``):

* ``answer`` — item ``i`` answered ``repeats`` times (``repeat`` = 0..R-1) at ``temperature``,
  each with a fixed seed derived from the item's seed, the repeat and the optional suite
  ``seed``; by the configured solver (``single``: one call; ``agent``: the tool-using agent over
  the ``files`` directory; ``self_consistency``: ``samples`` calls voted); with ``truncated:
  answer`` (the default) a reply cut at ``max_tokens`` is kept as the answer
  (``solvers.tasks_answer``), with ``error`` it is an error row;
* ``judge/<grader>/calibration/<order>`` — a judge engine's verdicts on the human-labelled
  answers (phase 1: they need no answer);
* ``judge/<grader>/answers/<engine>/<order>`` — phase 2: the judge grades every ok answer of
  every answering engine (``item_id`` and ``repeat`` are the answer's), planned from the stored
  answers of all the suite's engines. The judge engine therefore runs after the engines it
  judges (``TasksSuite.run_after``); a judge run before them judges what was stored, and a later
  run of the judge adds the rest (the completeness table counts what is missing).

Engines are asked for what they declare (``engines.capabilities``): the agent's tool protocol,
and a JSON-schema ``response_format`` for ``json_schema`` graders with ``response_format:
true`` and for judge verdicts, only where the engine honours one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request, capabilities
from sealedeval.errors import UserError
from sealedeval.graders.kinds import text_of
from sealedeval.graders.kinds import verdict as jv
from sealedeval.graders.kinds.structured import response_format
from sealedeval.keys import derive_seed, keyed_request
from sealedeval.run.agent import TOOL_SPECS, json_protocol_help
from sealedeval.suites.tasks.data import Data
from sealedeval.suites.tasks.solvers import ANSWER as KEEP_TRUNCATED
from sealedeval.suites.tasks.solvers import NAME as SELF_CONSISTENCY

ANSWER = "answer"
JUDGE = "judge/"
SEED_KEY = "_seed"
"""The item record's derived seed (from the suite seed and the item id)."""


AUDIT_DRAW = "human_audit"
"""The label mixed into each item's seed to order the items for the human-audit draw."""


def audit_items(items: Sequence[Mapping[str, Any]], n: int) -> list[str]:
    """The sealed human-audit subset: the ``n`` items first in the order of
    ``derive_seed(item seed, AUDIT_DRAW)``, sorted by id. Item seeds derive from the project
    seed and the rubric hash, so the subset is fixed by the seal and cannot be chosen after
    the answers are seen; it is a simple random sample of the items (without replacement), as
    prediction-powered inference assumes of its labelled set."""
    order = sorted(items, key=lambda i: (derive_seed(i[SEED_KEY], AUDIT_DRAW), str(i["id"])))
    return sorted(str(i["id"]) for i in order[:n])


def judge_condition(gid: str, engine: str, order: str) -> str:
    return f"judge/{gid}/answers/{engine}/{order}"


def calibration_condition(gid: str, order: str) -> str:
    return f"judge/{gid}/calibration/{order}"


def parse_judge_condition(condition: str) -> tuple[str, str, str, str] | None:
    """(grader id, "answers" | "calibration", engine or "", order) of a judge condition."""
    parts = condition.split("/")
    if len(parts) == 5 and parts[0] == "judge" and parts[2] == "answers":
        return parts[1], "answers", parts[3], parts[4]
    if len(parts) == 4 and parts[0] == "judge" and parts[2] == "calibration":
        return parts[1], "calibration", "", parts[3]
    return None


def _tool_protocol(engine: EngineConfig) -> str:
    proto = str(capabilities(engine).tool_protocol)
    if proto not in ("native", "json"):
        raise UserError(f"engines.{engine.name}.tool_protocol: must be native or json")
    return proto


def _response_format(data: Data) -> dict[str, Any] | None:
    """The JSON-schema contract of the first ``json_schema`` grader asking for one."""

    for g in data.spec.graders:
        c = data.graders[g.id]
        if c.name == "json_schema" and c.extra.get("response_format") and c.extra.get("schema"):
            return response_format(c.extra["schema"])
    return None


def answer_requests(
    data: Data,
    items: Sequence[Mapping[str, Any]],
    engine: EngineConfig,
    model: str,
) -> Iterator[Request]:
    """Every ``answer`` request of one engine, one at a time: item by item, repeat by repeat
    (consecutive calls share the prompt prefix). The analysis reads only their keys, and a
    million requests held at once were ~0.8 GB (``benchmarks/scale.py --suite tasks``)."""
    spec = data.spec
    if engine.name not in spec.answering:
        return
    caps = capabilities(engine)
    repeats = int(spec.get("repeats", 1))
    temperature = float(spec.get("temperature", 0.0))
    extra_seed = spec.get("seed")
    stop = list(spec.get("stop") or [])
    rf = _response_format(data) if caps.json_schema else None
    solver = spec.solver
    agent: dict[str, Any] = {}
    tools: list[dict[str, Any]] = []
    proto = ""
    if solver == "agent":
        ac = dict(spec.get("agent") or {})
        proto = _tool_protocol(engine)
        names = list(ac.get("tools") or ["read_file", "grep", "list_files"])
        agent = {
            "protocol": proto,
            "max_steps": int(ac.get("max_steps", 4)),
            "tools": names,
            "final_answer": bool(ac.get("final_answer", True)),
            "self_consistency": spec.samples,
        }
        tools = [TOOL_SPECS[t] for t in names] if proto == "native" else []
    for item in items:
        msgs = _answer_messages(data, item, agent, proto)
        for rep in range(repeats):
            parts: list[Any] = [item[SEED_KEY], ANSWER, rep]
            if extra_seed is not None:
                parts.append(extra_seed)
            seed = derive_seed(*parts) % (2**31)
            params: dict[str, Any] = {
                "temperature": temperature,
                "max_tokens": int(spec.get("max_tokens", 256)),
                "seed": seed,
            }
            if stop:
                params["stop"] = stop
            if rf is not None and solver != "agent":
                params["response_format"] = rf
            req_item = dict(item)
            name = KEEP_TRUNCATED if spec.keep_truncated else "single"
            if solver == "agent":
                params["max_tokens"] = int((spec.get("agent") or {}).get("max_tokens", 128))
                params["agent"] = agent
                req_item["sandbox"] = dict(data.files)
                name = "agent"
            elif solver == SELF_CONSISTENCY:
                params[SELF_CONSISTENCY] = {
                    "samples": spec.samples,
                    "keep_truncated": spec.keep_truncated,
                }
                name = SELF_CONSISTENCY
            yield keyed_request(
                spec.suite,
                str(item["id"]),
                ANSWER,
                rep,
                seed,
                engine.name,
                model,
                params,
                msgs,
                item=req_item,
                tools=tools,
                solver=name,
            )


def _answer_messages(
    data: Data, item: Mapping[str, Any], agent: Mapping[str, Any], proto: str
) -> list[dict[str, str]]:
    system = data.system_prompt(item)
    if agent and proto == "json":
        help_text = json_protocol_help(list(agent["tools"]))
        system = f"{system}\n\n{help_text}" if system else help_text
    msgs = [{"role": "system", "content": system}] if system else []
    return [*msgs, {"role": "user", "content": data.user_prompt(item)}]


def _judge_request(
    data: Data,
    gid: str,
    engine: EngineConfig,
    model: str,
    condition: str,
    item_id: str,
    rep: int,
    suite_seed: int,
    msgs: list[dict[str, str]],
    reference_reply: str,
) -> Request:
    g = data.spec.grader(gid)
    seed = derive_seed(suite_seed, condition, item_id, rep) % (2**31)
    params = jv.params(
        int(g.params["max_tokens"]), seed, constrained=capabilities(engine).json_schema
    )
    return keyed_request(
        data.spec.suite,
        item_id,
        condition,
        rep,
        seed,
        engine.name,
        model,
        params,
        msgs,
        item={"id": item_id, "reference_reply": reference_reply},
    )


def _judge_messages(
    data: Data, gid: str, item: Mapping[str, Any], candidate: str, order: str
) -> list[dict[str, str]]:
    c = data.graders[gid]
    target = item.get(data.spec.target_column)
    reference = text_of(target) if c.params.get("reference") else None
    return jv.messages(str(c.extra["rubric"]), data.user_prompt(item), reference, candidate, order)


def calibration_requests(
    data: Data, engine: EngineConfig, model: str, suite_seed: int
) -> list[Request]:
    """Phase 1 of a judge engine: its verdicts on the human-labelled answers."""
    by_id = {str(i["id"]): i for i in data.items}
    out: list[Request] = []
    for g in data.spec.judges():
        if g.params["engine"] != engine.name:
            continue
        for lab in data.labels.get(g.id, []):
            for order in jv.orders(g.params):
                cond = calibration_condition(g.id, order)
                msgs = _judge_messages(data, g.id, by_id[lab.item], lab.answer, order)
                out.append(
                    _judge_request(
                        data, g.id, engine, model, cond, lab.id, 0, suite_seed, msgs, lab.label
                    )
                )
    return out


def judge_requests(
    data: Data,
    items: Sequence[Mapping[str, Any]],
    engine: EngineConfig,
    model: str,
    suite_seed: int,
    rows: Sequence[Mapping[str, Any]],
) -> list[Request]:
    """Phase 2 of a judge engine: one call per ok answer row (of any engine) and order."""
    by_id = {str(i["id"]): i for i in items}
    answers = sorted(
        (
            r
            for r in rows
            if r["condition"] == ANSWER
            and r["status"] == "ok"
            and str(r["item_id"]) in by_id
            and r["engine"] in data.spec.answering
        ),
        key=lambda r: (str(r["engine"]), str(r["item_id"]), int(r["repeat"])),
    )
    out: list[Request] = []
    for g in data.spec.judges():
        if g.params["engine"] != engine.name:
            continue
        for r in answers:
            item = by_id[str(r["item_id"])]
            cand = str(r["output_text"] or "")
            ref = jv.reference_verdict(item.get(data.spec.target_column), cand)
            for order in jv.orders(g.params):
                cond = judge_condition(g.id, str(r["engine"]), order)
                msgs = _judge_messages(data, g.id, item, cand, order)
                out.append(
                    _judge_request(
                        data,
                        g.id,
                        engine,
                        model,
                        cond,
                        str(r["item_id"]),
                        int(r["repeat"]),
                        suite_seed,
                        msgs,
                        ref,
                    )
                )
    return out
