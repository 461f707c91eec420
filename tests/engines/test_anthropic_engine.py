"""AnthropicEngine against the loopback Messages API fake (``tests/fakes/anthropic_server.py``).

The fake refuses what the real API refuses (unknown top-level fields such as ``seed``, roles
that do not alternate, a ``tool_use`` without its ``tool_result``, more than 4 cache
breakpoints, a missing ``anthropic-version``, a wrong ``x-api-key``), so each test passing
means the engine sent a request the API accepts, and checks what the raw row keeps.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.fakes.anthropic_server import FakeAnthropic, last_user_text

from sealedeval.config import EngineConfig
from sealedeval.engines import openai_chat
from sealedeval.engines.anthropic import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    AnthropicEngine,
)
from sealedeval.engines.base import Completion, EngineError, Request, capabilities
from sealedeval.run.agent import TOOL_SPECS, agent_solver
from sealedeval.run.dispatcher import Dispatcher, RunStats, cost_usd
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter, raw_dir, raw_files, read_raw

T = TypeVar("T")
KEY = "sk-ant-fake-0123456789"
ENV = "SEALEDEVAL_TEST_ANTHROPIC_KEY"
SEAL = SealState("golden", "ab" * 32, "c0ffee" + "0" * 34, True)


@pytest.fixture(autouse=True, params=["http1", "aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The three clients the kind shares with openai_chat classify every failure the same way."""
    monkeypatch.setenv(ENV, KEY)
    if request.param != "http1":
        monkeypatch.setattr(openai_chat, "USE_HTTP1", False)
    if request.param == "httpx":
        monkeypatch.setattr(openai_chat, "USE_AIOHTTP", False)
    return str(request.param)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _cfg(base_url: str, **kw: Any) -> EngineConfig:
    extra = kw.pop("extra", {})
    opts: dict[str, Any] = {"timeout_s": 5.0, "api_key_env": ENV} | kw
    return EngineConfig(
        name="claude", kind="anthropic", model="claude-fake", base_url=base_url, extra=extra, **opts
    )


def _req(text: str = "what is two plus two", system: str = "be brief", **params: Any) -> Request:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": text}]
    if system:
        msgs.insert(0, {"role": "system", "content": system})
    return Request(
        request_key="k-" + text.replace(" ", "-"),
        suite="golden",
        item_id="i1",
        condition="A",
        repeat=0,
        seed=11,
        messages=tuple(msgs),
        params={"temperature": 0.0, "max_tokens": 32, "seed": 11} | params,
    )


async def _calls(cfg: EngineConfig, *reqs: Request) -> list[Completion | EngineError]:
    eng = AnthropicEngine(cfg)
    await eng.start()
    out: list[Completion | EngineError] = []
    try:
        for r in reqs:
            try:
                out.append(await eng.complete(r))
            except EngineError as e:
                out.append(e)
    finally:
        await eng.close()
    return out


def _one(cfg: EngineConfig, req: Request | None = None) -> Completion | EngineError:
    return _run(_calls(cfg, req or _req()))[0]


def _error(cfg: EngineConfig, req: Request | None = None) -> EngineError:
    got = _one(cfg, req)
    assert isinstance(got, EngineError), got
    return got


# -- the request and the answer ---------------------------------------------------------------


def test_request_follows_the_messages_api_and_the_answer_maps_back() -> None:
    with FakeAnthropic() as fake:
        comp = _one(_cfg(fake.base_url), _req(stop=["\n\n"], top_p=0.9))
        rec = fake.requests[0]
    assert isinstance(comp, Completion)
    assert rec.path == "/v1/messages"
    assert rec.headers["x-api-key"] == KEY and rec.headers["anthropic-version"] == "2023-06-01"
    body = rec.body
    assert body is not None
    # the system prompt is top level; the seed (no Messages API field) is not sent
    assert body["system"][0]["text"] == "be brief"
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "seed" not in body and body["stop_sequences"] == ["\n\n"] and body["top_p"] == 0.9
    assert body["max_tokens"] == 32 and body["model"] == "claude-fake"
    assert comp.output_text == "ANSWER: what is two plus two"
    assert comp.finish_reason == "stop" and comp.response["stop_reason"] == "end_turn"
    usage = comp.response["usage"]
    assert comp.tokens_out == usage["output_tokens"] == 6
    assert comp.tokens_in == (
        usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"]
    )
    assert json.loads(comp.response_json) == comp.response


def test_a_base_url_given_with_v1_posts_to_v1_messages_once() -> None:
    with FakeAnthropic() as fake:
        comp = _one(_cfg(fake.base_url + "/v1/"))
        assert fake.requests[0].path == "/v1/messages"
    assert isinstance(comp, Completion)


def test_capabilities_are_declared_honestly() -> None:
    caps = capabilities(_cfg("http://x"))
    assert (caps.chat, caps.json_schema, caps.seeds, caps.tool_protocol) == (
        True,
        True,
        False,
        "native",
    )
    assert not capabilities(_cfg("http://x", extra={"json_output": "off"})).json_schema


def test_a_param_without_a_messages_api_field_is_refused_before_any_call() -> None:
    with FakeAnthropic() as fake:
        err = _error(_cfg(fake.base_url), _req(presence_penalty=0.5))
        assert fake.count() == 0
    assert err.kind == "refused" and "presence_penalty" in str(err)


def test_temperature_outside_the_api_range_is_the_servers_400_message() -> None:
    with FakeAnthropic() as fake:
        err = _error(_cfg(fake.base_url), _req(temperature=1.5))
    assert err.kind == "refused" and not err.retryable
    assert "invalid_request_error: temperature" in str(err)


def test_max_tokens_stop_is_a_truncated_error_with_the_text() -> None:
    with FakeAnthropic() as fake:
        err = _error(_cfg(fake.base_url), _req("one two three four five six", max_tokens=3))
    assert err.kind == "truncated"
    assert err.output_text == "ANSWER: one two"
    assert err.response["stop_reason"] == "max_tokens"


# -- JSON output: a forced tool ---------------------------------------------------------------


def _rf(schema: dict[str, Any], name: str = "verdict") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def test_json_schema_output_is_a_forced_tool_whose_input_is_the_answer() -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"enum": ["PASS", "FAIL"]}, "why": {"type": "string"}},
        "required": ["verdict", "why"],
    }
    with FakeAnthropic() as fake:
        comp = _one(_cfg(fake.base_url), _req(response_format=_rf(schema)))
        body = fake.requests[0].body
    assert isinstance(comp, Completion) and body is not None
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert body["tools"][0]["input_schema"] == schema and "response_format" not in body
    assert json.loads(comp.output_text) == {"verdict": "PASS", "why": "x"}
    assert comp.finish_reason == "stop" and "tool_calls" not in comp.message


def test_a_non_object_schema_is_wrapped_and_unwrapped() -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 2}
    with FakeAnthropic() as fake:
        comp = _one(_cfg(fake.base_url), _req(response_format=_rf(schema, "a b")))
        body = fake.requests[0].body
    assert isinstance(comp, Completion) and body is not None
    assert body["tools"][0]["name"] == "json_answer"  # "a b" is not a valid tool name
    assert body["tools"][0]["input_schema"]["properties"]["value"] == schema
    assert json.loads(comp.output_text) == [0, 0]


def test_json_output_off_refuses_schema_requests() -> None:
    with FakeAnthropic() as fake:
        err = _error(
            _cfg(fake.base_url, extra={"json_output": "off"}),
            _req(response_format=_rf({"type": "object"})),
        )
        assert fake.count() == 0
    assert err.kind == "refused"


# -- prompt caching ---------------------------------------------------------------------------


def test_the_shared_prefix_is_written_once_then_read_and_priced_apart() -> None:
    system = "file listing " * 40
    with FakeAnthropic() as fake:
        cfg = _cfg(fake.base_url, price_in_per_mtok=3.0, price_out_per_mtok=15.0)
        first, second = _run(_calls(cfg, _req("question one", system), _req("two", system)))
        bodies = fake.ok_bodies()
    assert isinstance(first, Completion) and isinstance(second, Completion)
    assert bodies[0]["system"][-1]["cache_control"] == {"type": "ephemeral"}
    # a single-turn request marks only the shared prefix, not its own question
    assert all("cache_control" not in b for b in bodies[0]["messages"][0]["content"])
    assert first.cache_write_tokens == 80 and first.cache_read_tokens == 0
    assert second.cache_write_tokens == 0 and second.cache_read_tokens == 80
    assert second.tokens_in == 80 + 1
    eng = AnthropicEngine(cfg)
    p = eng.config.extra
    assert p["price_cache_write_per_mtok"] == CACHE_WRITE_MULTIPLIER * 3.0
    assert p["price_cache_read_per_mtok"] == CACHE_READ_MULTIPLIER * 3.0
    c2 = cost_usd(eng.config, second.tokens_in, second.tokens_out, 0, 80)
    assert c2 == pytest.approx((1 * 3.0 + 80 * 0.3 + second.tokens_out * 15.0) / 1e6)
    # priced as plain input, the read would have cost ten times as much
    assert cost_usd(eng.config, 81, second.tokens_out) > c2


def test_prompt_cache_off_sends_no_breakpoint() -> None:
    with FakeAnthropic() as fake:
        comp = _one(_cfg(fake.base_url, extra={"prompt_cache": "off"}))
        assert "cache_control" not in json.dumps(fake.requests[0].body)
    assert isinstance(comp, Completion) and comp.cache_write_tokens == 0


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "kind", "status", "error_type"),
    [
        ("rate_limit", "rate_limit", 429, "rate_limit_error"),
        ("overloaded", "server", 529, "overloaded_error"),
        ("api_error", "server", 500, "api_error"),
        ("bad_request", "refused", 400, "invalid_request_error"),
        ("auth", "refused", 401, "authentication_error"),
        ("permission", "refused", 403, "permission_error"),
        ("not_found", "refused", 404, "not_found_error"),
    ],
)
def test_error_statuses_are_classified_with_the_servers_message(
    fault: str, kind: str, status: int, error_type: str
) -> None:
    with FakeAnthropic(script=[fault], retry_after="7") as fake:
        err = _error(_cfg(fake.base_url))
    assert err.kind == kind
    assert err.retryable == (kind in ("rate_limit", "server"))
    assert err.response["status"] == status and err.response["error_type"] == error_type
    assert str(err).startswith(f"HTTP {status} {error_type}: ")
    assert err.response["request_id"].startswith("req_fake")
    assert err.response["ratelimit"]["anthropic-ratelimit-requests-limit"] == "4000"
    assert err.retry_after == (7.0 if fault == "rate_limit" else None)


def test_transport_failures_and_a_broken_body() -> None:
    with FakeAnthropic(script=["reset", "malformed"]) as fake:
        reset, malformed = _run(_calls(_cfg(fake.base_url), _req(), _req()))
    assert isinstance(reset, EngineError) and reset.kind == "connection"
    assert isinstance(malformed, EngineError) and malformed.kind == "malformed"


def test_a_wrong_key_is_refused_and_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "sk-ant-wrong-key-987654")
    with FakeAnthropic(key_in_errors=True) as fake:
        err = _error(_cfg(fake.base_url))
    assert err.kind == "refused" and "authentication_error" in str(err)
    assert "sk-ant-wrong-key-987654" not in str(err) + json.dumps(err.response)
    assert "***" in str(err)


def test_an_unset_key_variable_is_a_one_line_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from sealedeval.errors import UserError

    monkeypatch.delenv(ENV)
    with FakeAnthropic() as fake, pytest.raises(UserError, match=ENV):
        _one(_cfg(fake.base_url))


# -- native tool blocks through the agent solver and the dispatcher ---------------------------

FILES = {"orders.csv": "id,customer\n1,Pier 9 Kiosk\n", "notes.txt": "closed Monday\n"}


def tool_responder(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    """A model that lists the files, reads one, then answers from what it read."""
    results = [
        b
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    if not body.get("tools") or body.get("tool_choice", {}).get("type") == "none":
        return "Pier 9 Kiosk" if results else "no tools"
    if not results:
        return [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "name": "list_files", "input": {}},
        ]
    if len(results) == 1:
        return [{"type": "tool_use", "name": "read_file", "input": {"path": "orders.csv"}}]
    return "The customer is " + results[-1]["content"].split("\n")[1].split(",")[1]


def _agent_request(max_steps: int = 4) -> Request:
    return Request(
        request_key="agent-1",
        suite="golden",
        item_id="g01",
        condition="B",
        repeat=0,
        seed=3,
        messages=(
            {"role": "system", "content": "Answer from the files."},
            {"role": "user", "content": "Who is customer 1?"},
        ),
        params={
            "temperature": 0.0,
            "max_tokens": 64,
            "seed": 3,
            "agent": {"protocol": "native", "max_steps": max_steps, "tools": list(TOOL_SPECS)},
        },
        item={"sandbox": FILES},
        solver="agent",
    )


def test_agent_runs_with_native_tool_blocks_through_the_dispatcher(tmp_path: Path) -> None:
    with FakeAnthropic(responder=tool_responder, script=["overloaded"]) as fake:
        cfg = _cfg(fake.base_url, max_retries=2, backoff_base_s=0.01, price_in_per_mtok=1.0)
        eng = AnthropicEngine(cfg)
        writer = RawWriter(raw_dir(tmp_path, "golden", "claude"), flush_rows=1)
        stats = RunStats(requested=1)

        async def main() -> None:
            await eng.start()
            try:
                d = Dispatcher(eng, writer, SEAL, solver=agent_solver, progress=False)
                await d.run([_agent_request()], stats)
            finally:
                await eng.close()

        _run(main())
        writer.close()
        bodies = fake.ok_bodies()
    assert (stats.ok, stats.error) == (1, 0)
    row = read_raw(raw_files(tmp_path)).to_pylist()[0]
    assert row["output_text"] == "The customer is Pier 9 Kiosk"
    assert row["attempts"] == 4  # one 529 retried, then three model turns
    traj = json.loads(row["trajectory"])
    tools = [s for s in traj if s["type"] == "tool"]
    assert [(t["name"], t["ok"]) for t in tools] == [("list_files", True), ("read_file", True)]
    assert tools[1]["result"] == FILES["orders.csv"]
    # the wire: tools as input_schema, assistant tool_use blocks answered by tool_result blocks
    # naming their ids, in one alternating conversation
    assert bodies[0]["tools"][0] == {
        "name": "list_files",
        "description": TOOL_SPECS["list_files"]["function"]["description"],
        "input_schema": TOOL_SPECS["list_files"]["function"]["parameters"],
    } | ({"cache_control": {"type": "ephemeral"}} if len(bodies[0]["tools"]) == 1 else {})
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for m in last if m["role"] == "assistant" for b in m["content"]]
    assert uses[0] == {"type": "text", "text": "Let me look."}
    use_ids = [b["id"] for b in uses if b["type"] == "tool_use"]
    result_ids = [
        b["tool_use_id"]
        for m in last
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert use_ids == result_ids and len(use_ids) == 2
    # later turns mark the conversation so far: the next turn reads it from the cache
    assert last[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    model_steps = [s for s in traj if s["type"] == "model"]
    assert model_steps[-1]["cache_read_tokens"] > 0
    reads = sum(s.get("cache_read_tokens", 0) for s in model_steps)
    writes = sum(s.get("cache_write_tokens", 0) for s in model_steps)
    assert row["tokens_in"] == sum(s["tokens_in"] for s in model_steps)
    expected = ((row["tokens_in"] - reads - writes) + 1.25 * writes + 0.1 * reads) / 1e6
    assert row["cost_usd"] == pytest.approx(expected)


def test_the_forced_last_step_sends_tool_choice_none() -> None:
    with FakeAnthropic(responder=tool_responder) as fake:
        cfg = _cfg(fake.base_url)

        async def main() -> Any:
            eng = AnthropicEngine(cfg)
            await eng.start()
            try:
                req = _agent_request(max_steps=2)

                async def call(r: Request) -> Completion:
                    return await eng.complete(r)

                return await agent_solver(eng, req, call)
            finally:
                await eng.close()

        res = _run(main())
        bodies = fake.ok_bodies()
    assert bodies[-1]["tool_choice"] == {"type": "none"}
    assert res.completion.finish_reason == "forced_answer"
    assert res.completion.output_text == "Pier 9 Kiosk"
    assert last_user_text(bodies[-1]).endswith("answer now.")
