"""The requests a ``tasks`` suite plans and what it seals: seeds and keys, capabilities instead of
kind names, the agent over ``files:``, self-consistency, the judge's second phase, the sealed
spec file and the rubric inputs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI
from tests.tasks._support import ARITH, arith_suite, cli, git, plan_requests, project, write_jsonl

from sealedeval.config import Config, EngineConfig, load_config
from sealedeval.engines.base import Capabilities, Completion, Request, engine_kind
from sealedeval.errors import UserError
from sealedeval.plugins import GenerateContext, get_suite, suite_info
from sealedeval.run.solvers import SolveResult
from sealedeval.seal import lock
from sealedeval.suites.tasks import TasksSuite
from sealedeval.suites.tasks.solvers import self_consistency

REF = EngineConfig(name="reference", kind="reference")
CHAT = EngineConfig(name="chat", kind="openai_chat", base_url="http://127.0.0.1:9/v1")
# a kind that declares nothing beyond chat (no JSON-schema decoding)
engine_kind("tasks_test_plain", Capabilities())(lambda config, **kw: None)  # type: ignore[arg-type]
PLAIN = EngineConfig(name="chat", kind="tasks_test_plain")


def _suite(root: Path, **over: Any) -> tuple[TasksSuite, Config]:
    if not (root / "data/items.jsonl").exists():
        write_jsonl(root / "data/items.jsonl", ARITH)
    section = {
        "kind": "tasks",
        "items": "data/items.jsonl",
        "prompt": "{input}",
        "graders": [{"name": "exact"}],
        "engines": ["reference", "chat"],
    } | over
    section = {k: v for k, v in section.items() if v is not None}
    return TasksSuite("arith", section, root=root), Config(root=root, data={}, sources=())


def test_keys_and_seeds_are_fixed_and_distinct(tmp_path: Path) -> None:
    suite, cfg = _suite(tmp_path, repeats=3, temperature=0.8, system="Be brief.", stop=["\n"])
    items = suite.generate(GenerateContext(cfg=cfg, seed=42))
    reqs = plan_requests(suite, cfg, CHAT, 42, items=items)
    assert len(reqs) == 36 and len({r.request_key for r in reqs}) == 36
    assert len({r.params["seed"] for r in reqs}) == 36
    assert reqs[0].messages == (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "1 + 4"},
    )
    assert reqs[0].params == {
        "temperature": 0.8,
        "max_tokens": 256,
        "seed": reqs[0].seed,
        "stop": ["\n"],
    }
    again = plan_requests(suite, cfg, CHAT, 42)
    assert [r.request_key for r in again] == [r.request_key for r in reqs]
    other = plan_requests(suite, cfg, CHAT, 43)  # another rubric hash
    assert {r.params["seed"] for r in other}.isdisjoint({r.params["seed"] for r in reqs})
    # a suite seed draws fresh samples without touching the items
    s2, _ = _suite(tmp_path, repeats=3, temperature=0.8, system="Be brief.", stop=["\n"], seed=7)
    assert s2.generate(GenerateContext(cfg=cfg, seed=42)) == items
    fresh = plan_requests(s2, cfg, CHAT, 42, items=items)
    assert {r.params["seed"] for r in fresh}.isdisjoint({r.params["seed"] for r in reqs})


def test_limit_and_templates(tmp_path: Path) -> None:
    suite, cfg = _suite(tmp_path, limit=3, prompt='{{input}} = {input}; JSON: {"x": 1}')
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    assert [i["id"] for i in items] == ["q01", "q02", "q03"]
    [first, *_] = plan_requests(suite, cfg, CHAT, 1, items=items)
    assert first.messages[-1]["content"] == '{input} = 1 + 4; JSON: {"x": 1}'


def test_response_format_only_for_engines_that_declare_json_schema(tmp_path: Path) -> None:
    schema = {"type": "integer"}
    suite, cfg = _suite(
        tmp_path, graders=[{"name": "json_schema", "schema": schema, "response_format": True}]
    )
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    ref = plan_requests(
        suite, cfg, REF, 1, items=items, model="reference"
    )  # the reference declares json_schema
    chat = plan_requests(suite, cfg, CHAT, 1, items=items)  # so does openai_chat
    plain = plan_requests(suite, cfg, PLAIN, 1, items=items)  # this kind does not
    assert ref[0].params["response_format"]["json_schema"]["schema"] == schema
    assert chat[0].params["response_format"] == ref[0].params["response_format"]
    assert "response_format" not in plain[0].params
    assert suite.reference_answer(ref[0]) == "5"


def test_agent_over_files_follows_the_engine_tool_protocol(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.txt").write_text("alpha\n")
    (tmp_path / "docs/sub").mkdir()
    (tmp_path / "docs/sub/b.txt").write_text("beta\n")
    suite, cfg = _suite(
        tmp_path,
        solver="agent",
        files="docs",
        system="Use the files.",
        agent={"max_steps": 3, "tools": ["read_file", "grep"]},
    )
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    native = plan_requests(suite, cfg, CHAT, 1, items=items)[0]
    assert native.solver == "agent" and [t["function"]["name"] for t in native.tools] == [
        "read_file",
        "grep",
    ]
    assert native.item["sandbox"] == {"a.txt": "alpha\n", "sub/b.txt": "beta\n"}
    assert native.params["agent"] == {
        "protocol": "native",
        "max_steps": 3,
        "tools": ["read_file", "grep"],
        "final_answer": True,
        "self_consistency": 1,
    }
    as_json = EngineConfig(name="chat", kind="openai_chat", extra={"tool_protocol": "json"})
    j = plan_requests(suite, cfg, as_json, 1, items=items)[0]
    assert j.tools == () and '{"action": ...' in j.messages[0]["content"]
    assert j.messages[0]["content"].startswith("Use the files.")
    assert "docs/**/*" in suite.rubric_inputs()[2]
    assert "pkg:sealedeval/run/agent.py" in suite.rubric_inputs()


def test_files_render_into_templates(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.txt").write_text("alpha\n")
    suite, cfg = _suite(tmp_path, files="docs", prompt="{files}\n\nQ: {input}")
    [r, *_] = plan_requests(suite, cfg, CHAT, 1)
    assert r.messages[-1]["content"] == "=== a.txt (6 bytes) ===\nalpha\n\nQ: 1 + 4"


def test_self_consistency_votes_the_modal_answer(tmp_path: Path) -> None:
    suite, cfg = _suite(tmp_path, solver="self_consistency", samples=5, temperature=0.9)
    [req, *_] = plan_requests(suite, cfg, CHAT, 1)
    assert req.solver == "self_consistency"
    assert req.params["self_consistency"] == {"samples": 5, "keep_truncated": True}
    replies = iter(["5", "6", " 5.", "7", "5"])
    sent: list[dict[str, Any]] = []

    async def call(r: Request) -> Completion:
        sent.append(r.params)
        return Completion(next(replies), {}, tokens_in=10, tokens_out=1)

    res: SolveResult = asyncio.run(self_consistency(None, req, call))  # type: ignore[arg-type]
    assert res.completion.output_text == "5" and res.tokens_in == 50
    assert all("self_consistency" not in p for p in sent)  # never sent to the engine
    assert len({p["seed"] for p in sent}) == 5
    assert res.trajectory[-1] == {
        "type": "vote",
        "answers": ["5", "6", " 5.", "7", "5"],
        "winner": 0,
        "votes": 3,
        "answer": "5",
    }
    with pytest.raises(UserError, match="samples >= 2"):
        _suite(tmp_path, solver="self_consistency")


def test_judge_phase_two_plans_from_every_engines_answers(tmp_path: Path) -> None:
    suite, cfg = _suite(
        tmp_path,
        graders=[
            {"name": "exact"},
            {"name": "judge", "engine": "chat", "rubric": "R", "swap": True},
        ],
        engines=["reference", "chat"],
    )
    assert suite.run_after("chat") == ["reference"] and suite.run_after("reference") == []
    items = suite.generate(GenerateContext(cfg=cfg, seed=3))
    rows = [
        {
            "engine": e,
            "item_id": i["id"],
            "repeat": 0,
            "condition": "answer",
            "status": "ok" if n % 5 else "error",
            "output_text": str(i["target"]),
        }
        for e in ("reference", "chat")
        for n, i in enumerate(items)
    ]
    from sealedeval.suites.tasks import plan

    reqs = plan.judge_requests(suite._data(tmp_path), items, CHAT, "m", 3, rows)
    ok = sum(1 for r in rows if r["status"] == "ok")
    assert len(reqs) == ok * 2 and len({r.request_key for r in reqs}) == len(reqs)
    assert {r.condition for r in reqs} == {
        f"judge/judge/answers/{e}/{o}"
        for e in ("reference", "chat")
        for o in ("candidate-last", "candidate-first")
    }
    r = reqs[0]  # the chat engine's first ok answer: q02 (q01's call errored)
    assert r.messages[1]["content"] == (
        "Question:\n2 + 5\n\nReference answer:\n7\n\nCandidate answer:\n7\n\nVerdict:"
    )
    assert r.params["temperature"] == 0.0 and r.params["response_format"]["type"] == "json_schema"
    assert suite.reference_answer(r) == '{"verdict": "PASS"}'
    # the same judge on a kind without JSON-schema decoding: free text, read the same way
    [p, *_] = plan.judge_requests(suite._data(tmp_path), items, PLAIN, "m", 3, rows)
    assert "response_format" not in p.params and suite.reference_answer(p) == "PASS"
    # the judge only judges what it is configured for
    assert plan.judge_requests(suite._data(tmp_path), items, REF, "m", 3, rows) == []


def test_sealed_spec_and_rubric_inputs(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("Q: {input}\n")
    suite, _ = _suite(
        tmp_path,
        prompt=None,
        prompt_file="prompt.txt",
        abstention="category",
        graders=[{"name": "exact"}, {"name": "regex", "must": ["{target}"]}],
        analysis={"primary": "regex"},
    )
    pats = suite.rubric_inputs()
    assert pats[:3] == [".sealedeval/tasks-arith.json", "data/items.jsonl", "prompt.txt"]
    for p in (
        "pkg:sealedeval/suites/tasks/*.py",
        "pkg:sealedeval/graders/kinds/text.py",
        "pkg:sealedeval/graders/kinds/pattern.py",
        "pkg:sealedeval/graders/abstention.py",
    ):
        assert p in pats
    assert "pkg:sealedeval/graders/kinds/verdict.py" not in pats  # a kind it does not use
    doc = json.loads((tmp_path / ".sealedeval/tasks-arith.json").read_text())
    assert doc["sealed"]["analysis"]["primary"] == "regex"
    assert doc["sealed"]["graders"][1] == {
        "id": "regex",
        "name": "regex",
        "version": "1",
        "params": {"must": ["{target}"], "must_not": [], "ignore_case": True},
    }
    assert "engines" not in doc["sealed"] and "repeats" not in doc["sealed"]
    # the same section gives the same bytes; a sealed key changes the combined hash
    h1 = lock.compute(tmp_path, {"arith": pats})["suites"]["arith"]["sha256"]
    s2, _ = _suite(
        tmp_path,
        prompt=None,
        prompt_file="prompt.txt",
        abstention="category",
        graders=[{"name": "exact"}, {"name": "regex", "must": ["{target}"]}],
        analysis={"primary": "regex"},
        repeats=5,
    )
    assert lock.compute(tmp_path, {"arith": s2.rubric_inputs()})["suites"]["arith"]["sha256"] == h1
    s3, _ = _suite(
        tmp_path,
        prompt=None,
        prompt_file="prompt.txt",
        abstention="category",
        graders=[{"name": "exact"}, {"name": "regex", "must": ["{target}"]}],
        analysis={"primary": "exact"},
    )
    assert lock.compute(tmp_path, {"arith": s3.rubric_inputs()})["suites"]["arith"]["sha256"] != h1


def test_configured_through_the_config_with_defaults(chdir_tmp: Path) -> None:
    root = project(
        chdir_tmp, {"arith": arith_suite(), "other": arith_suite(prompt="{input}?")}, git_init=False
    )
    cfg = load_config(root)
    s = get_suite("arith", cfg)
    assert isinstance(s, TasksSuite) and s.root == root.resolve()
    assert cfg.suite("arith")["repeats"] == 1 and cfg.suite("arith")["temperature"] == 0.0
    assert cfg.suite("arith")["analysis"]["reduce"] == "majority"
    assert suite_info("arith", cfg)["params"] == {"kind": "tasks"}
    assert get_suite("other", cfg) is not s  # two suites of one kind, each its own
    with pytest.raises(UserError, match=r"suites\.arith\.analysis\.comparisons\[0\]: 'x'"):
        TasksSuite("arith", arith_suite(analysis={"comparisons": [["reference", "x"]]}))


@pytest.fixture
def agent_fake() -> Iterator[FakeOpenAI]:
    """Reads the one file, then answers with the number it found (OpenAI tool calling)."""

    def respond(body: dict[str, Any]) -> str | dict[str, Any]:
        msgs = body["messages"]
        if msgs[-1]["role"] == "tool":
            return str(msgs[-1]["content"]).split("=")[-1].strip()
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "n.txt"})},
        }
        return {"content": None, "tool_calls": [call]}

    with FakeOpenAI(responder=respond) as fake:
        yield fake


@pytest.mark.slow
def test_agent_reads_the_files_through_tools_end_to_end(
    tmp_path: Path, agent_fake: FakeOpenAI
) -> None:
    items = [{"id": "a", "input": "What number is in n.txt?", "target": 41}]
    engines = {
        "chat": {
            "kind": "openai_chat",
            "base_url": agent_fake.base_url,
            "model": "m",
            "concurrency": 1,
            "max_retries": 0,
        }
    }
    root = project(
        tmp_path / "agent",
        {
            "arith": arith_suite(
                prompt="{input}",
                solver="agent",
                files="data/docs",
                engines=["chat"],
                graders=[{"name": "numeric"}],
            )
        },
        engines=engines,
        items=items,
        files={"data/docs/n.txt": "n = 41\n"},
    )
    cli(root, "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    cli(root, "run", "arith", "--no-progress")
    assert agent_fake.count() == 2  # a tool call, then the answer
    cli(root, "publish")
    assert cli(root, "audit", check=False).returncode == 0
    section = json.loads((root / "results/result.json").read_text())["suites"]["arith"]
    [acc] = [m for m in section["analysis"]["metrics"] if m["metric"] == "accuracy"]
    assert acc["estimate"] == 1.0


def test_a_reply_cut_at_max_tokens_is_an_answer_unless_configured_otherwise(
    tmp_path: Path,
) -> None:
    from sealedeval.engines.base import EngineError
    from sealedeval.suites.tasks.solvers import tasks_answer

    suite, cfg = _suite(tmp_path)
    [req, *_] = plan_requests(suite, cfg, CHAT, 1)
    assert req.solver == "tasks_answer"
    body = {"usage": {"prompt_tokens": 7, "completion_tokens": 16}}

    async def cut(r: Request) -> Completion:
        raise EngineError("truncated", "length", response=body, output_text="To find 9 times")

    res: SolveResult = asyncio.run(tasks_answer(None, req, cut))  # type: ignore[arg-type]
    assert (res.completion.output_text, res.completion.finish_reason) == (
        "To find 9 times",
        "length",
    )
    assert (res.completion.tokens_in, res.completion.tokens_out) == (7, 16)

    async def down(r: Request) -> Completion:
        raise EngineError("server", "503")

    with pytest.raises(EngineError, match="503"):  # other errors stay errors (and are retried)
        asyncio.run(tasks_answer(None, req, down))  # type: ignore[arg-type]
    strict, _ = _suite(tmp_path, truncated="error")
    assert plan_requests(strict, cfg, CHAT, 1)[0].solver == "single"
    sc, _ = _suite(tmp_path, solver="self_consistency", samples=3)
    [r3, *_] = plan_requests(sc, cfg, CHAT, 1)
    assert r3.params["self_consistency"] == {"samples": 3, "keep_truncated": True}
    res = asyncio.run(self_consistency(None, r3, cut))  # type: ignore[arg-type]
    assert res.completion.output_text == "To find 9 times" and res.tokens_out == 48


def test_loading_a_config_changes_no_registry_and_two_projects_keep_their_own_suites(
    tmp_path: Path,
) -> None:
    """The loader returns the bound suites in the config: nothing global changes, so a notebook
    that loads two projects with a suite of the same name grades each with its own."""
    from sealedeval import plugins

    a = project(tmp_path / "a", {"arith": arith_suite()}, git_init=False)
    b = project(tmp_path / "b", {"arith": arith_suite(prompt="{input}?")}, git_init=False)
    before = plugins.suites.names()
    cfg_a, cfg_b = load_config(a), load_config(b)
    assert plugins.suites.names() == before and "arith" not in plugins.suites
    sa, sb = get_suite("arith", cfg_a), get_suite("arith", cfg_b)
    assert sa is not sb and sa.root == a.resolve() and sb.root == b.resolve()
    assert get_suite("arith", cfg_a) is sa  # the config holds it: one object per load
    with pytest.raises(UserError, match="arith"):
        get_suite("arith")  # without the config that binds it, no such suite
    with plugins.presenting(cfg_b):
        assert plugins.presentation_hook("arith", "report_sections").__self__ is sb
    assert plugins.presentation_hook("arith", "report_sections") is None


@pytest.mark.parametrize(
    "over",
    [
        {"repeats": 3, "temperature": 0.7, "stop": ["\n"]},
        {"solver": "self_consistency", "samples": 3, "temperature": 0.9},
        {"solver": "agent", "files": "docs", "agent": {"max_steps": 2, "tools": ["grep"]}},
        {"engines": ["reference"]},  # chat does not answer: nothing planned for it
    ],
    ids=["repeats", "self-consistency", "agent", "not-answering"],
)
def test_iter_requests_yields_the_requests_in_order(tmp_path: Path, over: dict[str, Any]) -> None:
    """The analysis counts planned keys through ``iter_requests``: it must plan exactly what
    ``requests`` plans (the run stage's list), request by request."""
    from sealedeval.plugins import RequestContext, hook

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.txt").write_text("alpha\n")
    suite, cfg = _suite(tmp_path, **over)
    items = suite.generate(GenerateContext(cfg=cfg, seed=5))
    each = hook(suite, "iter_requests")
    assert each is not None
    for engine in (CHAT, REF):
        ctx = RequestContext(cfg=cfg, items=items, engine=engine, model="m", seed=5)
        listed, streamed = suite.requests(ctx), each(ctx)
        assert isinstance(streamed, Iterator)
        assert list(streamed) == listed
        assert listed or (engine is CHAT and over.get("engines") == ["reference"])
