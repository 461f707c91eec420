"""The tool-using agent: the sandbox, both protocols, step limit, self-consistency, and the
trajectory stored in the raw row (through the real dispatcher and the loopback fake server)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.fakes import FakeOpenAI

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Request
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.run.agent import (
    LAST_STEP,
    TOOL_SPECS,
    Sandbox,
    ToolError,
    agent_solver,
    modal,
    run_tool,
    trajectory_summary,
)
from sealedeval.run.dispatcher import Dispatcher, RunStats
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter, raw_dir, raw_files, read_raw

FILES = {"orders.csv": "id,customer\n1,Pier 9 Kiosk\n2,Ahti\n", "notes.txt": "closed Monday\n"}
SEAL = SealState("golden", "ab" * 32, "c0ffee" + "0" * 34, True)


# -- the sandbox -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../orders.csv",
        "/etc/passwd",
        "~/.ssh/id_rsa",
        "sub/../../orders.csv",
        "..\\orders.csv",
        "C:\\Windows\\win.ini",
        "./../notes.txt",
        "orders.csv/..",
    ],
)
def test_path_traversal_is_refused_as_a_tool_error(path: str) -> None:
    sb = Sandbox(FILES)
    with pytest.raises(ToolError) as e:
        sb.read_file(path)
    assert e.value.kind == "outside_sandbox"
    ok, text, kind = run_tool(sb, ("read_file",), "read_file", {"path": path})
    assert (ok, kind) == (False, "outside_sandbox")
    assert text.startswith("error: refused")


def test_sandbox_tools() -> None:
    sb = Sandbox(FILES)
    assert sb.list_files() == "notes.txt 14 bytes\norders.csv 34 bytes"
    assert sb.read_file("./orders.csv") == FILES["orders.csv"]
    assert sb.grep("pier") == "orders.csv:2: 1,Pier 9 Kiosk"
    assert sb.grep("monday", "notes.txt") == "notes.txt:1: closed Monday"
    assert sb.grep("nothing like this") == "no matching lines"
    tools = ("list_files", "read_file", "grep")
    assert run_tool(sb, tools, "read_file", {"path": "secret.txt"})[2] == "not_found"
    assert run_tool(sb, tools, "read_file", {})[2] == "bad_arguments"
    assert run_tool(sb, tools, "grep", {"pattern": "  "})[2] == "bad_arguments"
    assert run_tool(sb, tools, "delete_file", {"path": "notes.txt"})[2] == "unknown_tool"
    assert run_tool(sb, ("read_file",), "grep", {"pattern": "x"})[2] == "unknown_tool"


# -- a scripted engine -------------------------------------------------------------------------


class Scripted:
    """An engine that replies from a script and records every request it was sent."""

    def __init__(self, replies: Sequence[dict[str, Any] | str]) -> None:
        self.replies = list(replies)
        self.sent: list[Request] = []

    async def call(self, request: Request) -> Completion:
        self.sent.append(request)
        r = self.replies.pop(0) if self.replies else "out of script"
        msg = (
            {"role": "assistant", "content": r}
            if isinstance(r, str)
            else {"role": "assistant", "content": None, **r}
        )
        text = msg.get("content") or ""
        return Completion(text, {"choices": [{"message": msg}]}, 10, 3, "stop", message=msg)


def tool_call(name: str, args: dict[str, Any] | str, i: int = 0) -> dict[str, Any]:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": raw}}


def agent_request(protocol: str = "native", **agent: Any) -> Request:
    params = {
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 5,
        "agent": {"protocol": protocol, "max_steps": 4, "final_answer": False} | agent,
    }
    msgs = ({"role": "system", "content": "sys"}, {"role": "user", "content": "Top customer?"})
    return Request(
        "k1",
        "golden",
        "g10",
        "B/main",
        0,
        5,
        msgs,
        params,
        item={"sandbox": FILES, "answer": "Pier 9 Kiosk"},
    )


def solve(engine: Scripted, request: Request) -> Any:
    return asyncio.run(agent_solver(None, request, engine.call))  # type: ignore[arg-type]


def test_native_loop_tool_errors_and_trajectory() -> None:
    eng = Scripted(
        [
            {"tool_calls": [tool_call("list_files", {})]},
            {
                "tool_calls": [
                    tool_call("read_file", {"path": "../../etc/passwd"}, 1),
                    tool_call("read_file", "{not json", 2),
                ]
            },
            {"tool_calls": [tool_call("read_file", {"path": "orders.csv"}, 3)]},
            "Pier 9 Kiosk.",
        ]
    )
    res = solve(eng, agent_request())
    assert res.completion.output_text == "Pier 9 Kiosk."
    assert res.completion.finish_reason == "answer"
    assert (res.tokens_in, res.tokens_out) == (40, 12)  # summed over the four calls
    kinds = [(t["type"], t.get("name"), t.get("ok"), t.get("error_kind")) for t in res.trajectory]
    assert kinds == [
        ("model", None, None, None),
        ("tool", "list_files", True, ""),
        ("model", None, None, None),
        ("tool", "read_file", False, "outside_sandbox"),
        ("tool", "read_file", False, "bad_arguments"),
        ("model", None, None, None),
        ("tool", "read_file", True, ""),
        ("model", None, None, None),
        ("final", None, None, None),
    ]
    assert res.trajectory[-1] == {"type": "final", "stop": "answer", "answer": "Pier 9 Kiosk."}
    # The agent's own settings never reach the engine; the tools and the results do.
    last = eng.sent[-1]
    assert "agent" not in last.params and last.params["seed"] == 5
    assert {t["function"]["name"] for t in last.tools} == {"list_files", "read_file", "grep"}
    tool_msgs = [m for m in last.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c0", "c1", "c2", "c3"]
    assert tool_msgs[1]["content"].startswith("error: refused")
    assert tool_msgs[3]["content"] == FILES["orders.csv"]
    s = trajectory_summary(res.trajectory)
    assert (s["model_calls"], s["tool_calls"], s["tool_errors"], s["reads"]) == (4, 4, 2, 1)
    assert s["files_read"] == ["orders.csv"]


def test_step_limit_hit_is_classified_not_an_error() -> None:
    eng = Scripted([{"tool_calls": [tool_call("list_files", {}, i)]} for i in range(10)])
    res = solve(eng, agent_request(max_steps=3))
    assert len(eng.sent) == 3
    assert res.completion.output_text == ""
    assert res.completion.finish_reason == "step_limit"
    assert res.trajectory[-1] == {"type": "final", "stop": "step_limit", "answer": ""}
    assert trajectory_summary(res.trajectory)["stops"] == ["step_limit"]


def test_native_final_step_forbids_tools() -> None:
    eng = Scripted([{"tool_calls": [tool_call("list_files", {})]}, "Pier 9 Kiosk"])
    res = solve(eng, agent_request(max_steps=2, final_answer=True))
    assert res.completion.finish_reason == "forced_answer"
    assert eng.sent[0].params.get("tool_choice") is None
    assert eng.sent[1].params["tool_choice"] == "none"
    assert eng.sent[1].messages[-1] == {"role": "user", "content": LAST_STEP}


def test_json_protocol_malformed_action_and_forced_answer() -> None:
    eng = Scripted(
        [
            '{"action": "read_file", "argument": "orders.csv"}',
            "this is not json",
            '{"action": "read_file", "argument": "/etc/shadow"}',
            '{"action": "answer", "argument": "Pier 9 Kiosk"}',
        ]
    )
    res = solve(eng, agent_request("json", final_answer=True))
    assert res.completion.output_text == "Pier 9 Kiosk"
    assert res.completion.finish_reason == "forced_answer"
    tools = [t for t in res.trajectory if t["type"] == "tool"]
    assert [(t["name"], t["ok"], t["error_kind"]) for t in tools] == [
        ("read_file", True, ""),
        ("", False, "malformed_action"),
        ("read_file", False, "outside_sandbox"),
    ]
    enums = [
        r.params["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"]
        for r in eng.sent
    ]
    assert enums[:3] == [["list_files", "read_file", "grep", "answer"]] * 3
    assert enums[3] == ["answer"]  # the last step may only answer
    assert all(r.tools == () for r in eng.sent)
    assert eng.sent[1].messages[-1]["content"].startswith("Result of read_file(orders.csv):\n")
    assert eng.sent[3].messages[-1]["content"].endswith(LAST_STEP)


def test_self_consistency_votes_and_keeps_every_trajectory() -> None:
    eng = Scripted(["Pier 9 Kiosk", "Ahti Office", "pier 9 kiosk."])
    res = solve(eng, agent_request(self_consistency=3))
    assert res.completion.output_text == "Pier 9 Kiosk"
    samples = [t for t in res.trajectory if t["type"] == "sample"]
    assert [s["answer"] for s in samples] == ["Pier 9 Kiosk", "Ahti Office", "pier 9 kiosk."]
    assert len({s["seed"] for s in samples}) == 3
    assert [r.params["seed"] for r in eng.sent] == [s["seed"] for s in samples]
    vote = res.trajectory[-1]
    assert (vote["type"], vote["winner"], vote["votes"]) == ("vote", 0, 2)
    assert res.tokens_in == 30


def test_modal_answer_rules() -> None:
    assert modal(["a", "b", "b", "a"]) == (0, 2)  # tie → first seen
    assert modal(["", "", "x"]) == (2, 1)  # an empty answer never wins over a real one
    assert modal(["", ""]) == (-1, 0)


# -- through the dispatcher and the HTTP engine: the row keeps the trajectory -------------------


def _responder(body: dict[str, Any]) -> dict[str, Any] | str:
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file", "grep", "list_files"]
    tool_msgs = [m for m in body["messages"] if m.get("role") == "tool"]
    if not tool_msgs:
        return {"tool_calls": [tool_call("read_file", {"path": "../outside.txt"}, 0)]}
    if len(tool_msgs) == 1:
        return {"tool_calls": [tool_call("grep", {"pattern": "pier"}, 1)]}
    return "Pier 9 Kiosk placed the most orders."


def test_agent_row_stores_the_full_trajectory(tmp_path: Path) -> None:
    req = agent_request(tools=["read_file", "grep", "list_files"])
    req = Request(
        req.request_key,
        req.suite,
        req.item_id,
        req.condition,
        0,
        5,
        req.messages,
        req.params,
        item=req.item,
        solver="agent",
        tools=tuple(TOOL_SPECS[t] for t in ("read_file", "grep", "list_files")),
    )
    with FakeOpenAI(responder=_responder, faults={"Top customer?": ["server"]}) as fake:
        cfg = EngineConfig(
            name="fake",
            kind="openai_chat",
            base_url=fake.base_url,
            model="fake-model",
            max_retries=2,
            backoff_base_s=0.01,
            price_in_per_mtok=2.0,
            price_out_per_mtok=12.0,
        )
        engine = OpenAIChatEngine(cfg)
        writer = RawWriter(raw_dir(tmp_path, "golden", "fake"))
        stats = RunStats(requested=1)

        async def go() -> None:
            await engine.start()
            try:
                await Dispatcher(engine, writer, SEAL, progress=False).run([req], stats)
            finally:
                await engine.close()

        asyncio.run(go())
        writer.close()
        assert fake.count("server") == 1  # a transient error inside the loop was retried
    (row,) = read_raw(raw_files(tmp_path, "golden")).to_pylist()
    assert row["status"] == "ok" and row["attempts"] == 4  # 3 calls + 1 retry
    assert row["output_text"] == "Pier 9 Kiosk placed the most orders."
    assert row["finish_reason"] == "answer"
    traj = json.loads(row["trajectory"])
    tools = [t for t in traj if t["type"] == "tool"]
    assert [(t["name"], t["ok"], t["error_kind"]) for t in tools] == [
        ("read_file", False, "outside_sandbox"),
        ("grep", True, ""),
    ]
    assert tools[1]["result"] == "orders.csv:2: 1,Pier 9 Kiosk"
    assert json.loads(row["params"])["agent"]["protocol"] == "native"  # stored, never sent
    assert row["tokens_in"] > 0 and row["cost_usd"] > 0


def test_json_action_cut_at_max_tokens_is_a_malformed_action() -> None:
    from sealedeval.engines.base import EngineError

    replies = iter(
        ['{"action": "read_file", "argument": "ord', '{"action": "answer", "argument": "x"}']
    )

    async def call(req: Request) -> Completion:
        text = next(replies)
        if not text.endswith("}"):
            raise EngineError("truncated", "output hit max_tokens", output_text=text)
        return Completion(text, {}, 5, 5, "stop", message={"role": "assistant", "content": text})

    res = asyncio.run(agent_solver(None, agent_request("json"), call))  # type: ignore[arg-type]
    assert res.completion.output_text == "x"
    tool = next(t for t in res.trajectory if t["type"] == "tool")
    assert tool["error_kind"] == "malformed_action"
    model = next(t for t in res.trajectory if t["type"] == "model")
    assert model["finish_reason"] == "length"
