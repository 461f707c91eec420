"""The multi-call solvers (B2 select-then-answer, B4 multi-agent chain) against a scripted engine.

The scripted engine answers each call from a script keyed by the call's stage and, for owner
agents, by which owner the prompt addresses; it records every request it receives, so the tests
can check who was asked what, in which order, and how the replies were graded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, EngineError, Request
from sealedeval.run.dispatcher import Dispatcher, RunStats
from sealedeval.run.solvers import SolveResult, get_solver
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter
from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.design import Design, RequestSpec
from sealedeval.suites.grounding.requests import build_requests, call_specs
from sealedeval.suites.grounding.rubric import grade_rows
from sealedeval.suites.grounding.solvers import multi_agent_chain, select_then_answer
from sealedeval.suites.grounding.suite import GroundingSuite

ENGINE = EngineConfig(name="scripted", kind="openai_chat", model="scripted-1")
Script = Callable[[Request], str]


def _design(*specs: RequestSpec) -> Design:
    return Design("test", 1, tuple(specs))


def _chain_request(chain_id: str = "B4-R1") -> Request:
    specs = []
    prev = None
    for rnd in ("round1", "round2", "round3"):
        spec = RequestSpec("B4", chain_id, rnd, 1, depends_on=prev)
        specs.append(spec)
        prev = spec.request_id
    (req,) = build_requests(
        _design(*specs), engine=ENGINE, model="scripted-1", seed=5, temperature=0.0, max_tokens=64
    )
    return req


def _b2_request(question_id: str = "B2-06") -> Request:
    select = RequestSpec("B2", question_id, "select", 1)
    own = RequestSpec("B2", question_id, "own_pick", 1, depends_on=select.request_id)
    (req,) = build_requests(
        _design(select, own),
        engine=ENGINE,
        model="scripted-1",
        seed=5,
        temperature=0.0,
        max_tokens=64,
    )
    return req


class Recorder:
    """A ``call`` function that answers from a script and records every request."""

    def __init__(self, script: Script, fail_at: int | None = None) -> None:
        self.script = script
        self.fail_at = fail_at
        self.seen: list[Request] = []

    async def __call__(self, request: Request) -> Completion:
        self.seen.append(request)
        if self.fail_at is not None and len(self.seen) == self.fail_at:
            raise EngineError("timeout", "scripted timeout")
        text = self.script(request)
        return Completion(text, {"scripted": True}, tokens_in=10, tokens_out=5)


def _user(request: Request) -> str:
    return str(request.messages[-1]["content"])


def _owner_script(
    coordinator_to: str,
    owner_reply: Callable[[str], str],
    *,
    suite: GroundingData,
    chain_id: str = "B4-R1",
) -> Script:
    chain = suite.chain(chain_id)

    def script(req: Request) -> str:
        spec = call_specs(req)[req.item["call"]]
        if spec.condition == "round1":
            return json.dumps(
                {"to": coordinator_to, "field": chain.field, "request": "new value and date?"}
            )
        if spec.condition == "round2":
            me = _user(req).split("You are the ", 1)[1].split(" at ", 1)[0]
            return owner_reply(me)
        record = {
            "id": chain.def_id,
            "version": chain.prev_version + 1,
            "effective_from": chain.effective_from.isoformat(),
            "supersedes": f"{chain.def_id} v{chain.prev_version}",
            "owner": chain.owner,
            "field": chain.field,
            "value": chain.new_value_text,
        }
        return json.dumps({"record": record, "value": chain.reference_value})

    return script


def _row(req: Request, text: str, trajectory: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "request_key": req.request_key,
        "engine": "scripted",
        "item_id": req.item_id,
        "condition": req.condition,
        "repeat": req.repeat,
        "status": "ok",
        "output_text": text,
        "trajectory": json.dumps(trajectory),
    }


def _run(solver: Any, req: Request, rec: Recorder) -> Any:
    return asyncio.run(solver(None, req, rec))


def test_solvers_are_registered_and_named_by_requests() -> None:
    assert get_solver("multi_agent_chain") is multi_agent_chain
    assert get_solver("select_then_answer") is select_then_answer
    assert _chain_request().solver == "multi_agent_chain"
    assert _b2_request().solver == "select_then_answer"


def test_routing_to_the_right_owner(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    reply = json.dumps(
        {
            "refuse": False,
            "redirect_to": None,
            "value": chain.new_value_text,
            "effective_from": chain.effective_from.isoformat(),
        }
    )
    rec = Recorder(_owner_script(chain.owner, lambda me: reply, suite=suite))
    req = _chain_request()
    res = _run(multi_agent_chain, req, rec)
    calls = [e for e in res.trajectory if e["event"] == "call"]
    assert [e["agent"] for e in calls] == [
        "coordinator",
        f"owner:{chain.owner}",
        "coordinator",
    ]
    assert len(rec.seen) == 3
    # call 1 is the request itself; the owner sees its own remit and decision, not the tables
    assert rec.seen[0].request_key == req.request_key
    assert f"You are the {chain.owner}" in _user(rec.seen[1])
    assert "## Data tables" not in _user(rec.seen[1])
    assert chain.new_value_text in _user(rec.seen[1])
    # the coordinator's record round sees the owner's raw reply
    assert reply in _user(rec.seen[2])
    # every agent's messages and replies are in the trajectory
    assert all(e["messages"] and e["output_text"] for e in calls)
    assert res.tokens_in == 30 and res.tokens_out == 15
    (g,) = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    m = json.loads(g["details"])
    assert g["grader"] == "grounding/b4-chain" and g["grader_version"] == "grounding-b4/1"
    assert m["routing_correct"] == m["owner_behaviour_correct"] == 1
    assert m["record_well_formed"] == m["effective_date_correct"] == m["final_correct"] == 1
    assert g["passed"] and not m["step_limit"]


def test_misrouted_request_is_refused_and_redirected(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    wrong = chain.decoy_owner

    def owner(me: str) -> str:
        assert me == wrong  # the request went where the coordinator sent it
        return json.dumps(
            {"refuse": True, "redirect_to": chain.owner, "value": None, "effective_from": None}
        )

    rec = Recorder(_owner_script(wrong, owner, suite=suite))
    req = _chain_request()
    res = _run(multi_agent_chain, req, rec)
    assert res.trajectory[1]["agent"] == f"owner:{wrong}"
    (g,) = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    m = json.loads(g["details"])
    assert m["addressed_owner"] == wrong
    assert m["routing_correct"] == 0  # asked the wrong owner
    assert m["owner_behaviour_correct"] == 1  # who refused and named the right owner
    assert not g["passed"]


def test_an_owner_that_answers_outside_its_remit_is_wrong(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    wrong = chain.decoy_owner
    rec = Recorder(
        _owner_script(
            wrong,
            lambda me: json.dumps(
                {"refuse": False, "redirect_to": None, "value": "90", "effective_from": None}
            ),
            suite=suite,
        )
    )
    req = _chain_request()
    res = _run(multi_agent_chain, req, rec)
    (g,) = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    assert json.loads(g["details"])["owner_behaviour_correct"] == 0


def test_malformed_owner_reply_does_not_break_the_chain(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    garbage = "sure!! the window is ninety days {not json"
    rec = Recorder(_owner_script(chain.owner, lambda me: garbage, suite=suite))
    req = _chain_request()
    res = _run(multi_agent_chain, req, rec)
    assert len(rec.seen) == 3  # the coordinator still gets its record round
    assert garbage in _user(rec.seen[2])
    (g,) = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    m = json.loads(g["details"])
    assert m["parse_ok_round2"] is False and m["parse_ok"] is False
    assert m["owner_behaviour_correct"] == 0
    assert m["routing_correct"] == 1  # the coordinator did its part


def test_malformed_coordinator_request_goes_to_the_decoy(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")

    def script(req: Request) -> str:
        if call_specs(req)[req.item["call"]].condition == "round1":
            return "I would ask someone"
        return "{}"

    rec = Recorder(script)
    res = _run(multi_agent_chain, _chain_request(), rec)
    assert res.trajectory[1]["agent"] == f"owner:{chain.decoy_owner}"


def test_step_limit_stops_the_conversation(suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    rec = Recorder(
        _owner_script(chain.owner, lambda me: json.dumps({"refuse": False}), suite=suite)
    )
    base = _chain_request()
    req = replace(base, item=dict(base.item) | {"max_calls": 2})
    res = _run(multi_agent_chain, req, rec)
    assert len(rec.seen) == 2
    assert res.trajectory[-1]["event"] == "step_limit"
    assert res.trajectory[-1]["skipped"] == [call_specs(req)[2].request_id]
    (g,) = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    m = json.loads(g["details"])
    assert m["step_limit"] is True and m["final_correct"] == 0 and m["parse_ok_round3"] is False
    with pytest.raises(ValueError, match="at least 1"):
        _run(multi_agent_chain, replace(base, item=dict(base.item) | {"max_calls": 0}), rec)


def test_an_engine_error_mid_chain_fails_the_request_and_keeps_the_trajectory(
    suite: GroundingData,
) -> None:
    chain = suite.chain("B4-R1")
    rec = Recorder(_owner_script(chain.owner, lambda me: "{}", suite=suite), fail_at=2)
    with pytest.raises(EngineError) as info:
        _run(multi_agent_chain, _chain_request(), rec)
    err = info.value
    assert err.kind == "timeout" and "owner:" in str(err)
    assert [e["stage"] for e in err.response["trajectory"]] == ["round1"]


def test_wrong_track_is_a_bug() -> None:
    with pytest.raises(ValueError, match="not a B2 request"):
        _run(select_then_answer, _chain_request(), Recorder(lambda r: "{}"))


def test_select_then_answer_assembles_the_own_pick(suite: GroundingData) -> None:
    question = suite.b2_question("B2-06")
    labels = sorted(r.label() for r in question.required)

    def script(req: Request) -> str:
        spec = call_specs(req)[req.item["call"]]
        if spec.condition == "select":
            return json.dumps({"records": [*labels, "NOPE-RECORD v9"]})
        return json.dumps(
            {
                "value": question.reference_value,
                "definition_id": None,
                "version": None,
                "refusal": False,
                "reason": "own pick",
            }
        )

    rec = Recorder(script)
    req = _b2_request()
    res = _run(select_then_answer, req, rec)
    assert [e["agent"] for e in res.trajectory] == ["selector", "answerer"]
    answer_prompt = _user(rec.seen[1])
    assert answer_prompt.startswith("## Data tables")
    for record in suite.b2_records:
        assert (record.line in answer_prompt) == (record.ref in question.required)
    assert rec.seen[1].params["response_format"]["json_schema"]["name"] == "grounding_b2_own_pick"
    rows = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
    by_grader = {g["grader"]: json.loads(g["details"]) for g in rows}
    sel = by_grader["grounding/b2-select"]
    assert sel["recall"] == 1.0 and sel["precision"] == pytest.approx(2 / 3) and sel["exact"] == 0
    assert by_grader["grounding/b2-answer"]["correct"] == 1


def test_reference_engine_plays_every_agent(suite: GroundingData) -> None:
    """The reference answerer works for every call of a chain (it answers sub-requests)."""
    harness = GroundingSuite()

    async def call(request: Request) -> Completion:
        return Completion(harness.reference_answer(request), {})

    for req in (_chain_request("B4-P7"), _b2_request("B2-02")):
        solver = get_solver(req.solver)
        res: SolveResult = asyncio.run(solver(None, req, call))  # type: ignore[arg-type]
        rows = grade_rows([_row(req, res.completion.output_text, res.trajectory)], suite)
        assert rows and all(g["passed"] for g in rows), rows


class _ScriptedEngine:
    """Just enough of the Engine protocol for the dispatcher."""

    def __init__(self, script: Script) -> None:
        self.config = ENGINE
        self.script = script

    @property
    def model(self) -> str:
        return "scripted-1"

    def identity(self) -> dict[str, Any]:
        return {"name": "scripted"}

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def complete(self, request: Request) -> Completion:
        return Completion(self.script(request), {"scripted": True}, tokens_in=7, tokens_out=3)


def test_dispatcher_stores_the_whole_trajectory(tmp_path: Path, suite: GroundingData) -> None:
    chain = suite.chain("B4-R1")
    ok = json.dumps(
        {"refuse": False, "redirect_to": None, "value": "90", "effective_from": "2026-08-01"}
    )
    engine = _ScriptedEngine(_owner_script(chain.owner, lambda me: ok, suite=suite))
    out = tmp_path / "raw"
    writer = RawWriter(out)
    seal = SealState("grounding", "ab" * 32, "", False)
    stats = RunStats(requested=1)
    asyncio.run(Dispatcher(engine, writer, seal, progress=False).run([_chain_request()], stats))
    writer.close()
    assert stats.ok == 1
    (part,) = sorted(out.glob("part-*.parquet"))
    (row,) = pq.read_table(part).to_pylist()
    trajectory = json.loads(row["trajectory"])
    assert [e["stage"] for e in trajectory] == ["round1", "round2", "round3"]
    assert row["tokens_in"] == 21 and row["tokens_out"] == 9
    assert json.loads(row["messages"])[-1]["content"] == trajectory[0]["messages"][-1]["content"]
    assert row["condition"] == "B4/records" and row["item_id"] == "B4-R1"
