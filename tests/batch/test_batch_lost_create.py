"""A create whose answer is lost made its batch all the same: the driver finds it on the provider
and re-attaches instead of paying for a second one.

The engines run ``run.batch.run_batches`` against the loopback fakes, which accept a create and
then drop the answer (``batch_create_faults``: a reset, a proxy's 502). Every test counts the
batches the fake made (what the provider bills) and checks each request was answered once, by
one batch. Without the look-up before a retry, each of them ends with one batch too many.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI

from sealedeval.config_types import EngineConfig
from sealedeval.engines import batch as batchapi
from sealedeval.engines.anthropic import AnthropicEngine
from sealedeval.engines.base import Completion, EngineError, Request
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.run import batch
from sealedeval.run.retry import RetryPolicy

ENV = "SEALEDEVAL_LOST_CREATE_KEY"
KEY = "sk-ant-lost-create-4e1f"
N, PER_BATCH = 5, 2  # three batches: 2 + 2 + 1 requests
POLICY = RetryPolicy(max_retries=2, base_s=0.001, max_s=0.005)


def _requests(n: int = N) -> list[Request]:
    return [
        Request(
            request_key=f"k{i:02d}",
            suite="golden",
            item_id=f"i{i}",
            condition="A",
            repeat=0,
            seed=1,
            messages=({"role": "user", "content": f"question {i}"},),
            params={"max_tokens": 16},
        )
        for i in range(n)
    ]


def _config(kind: str, base_url: str) -> EngineConfig:
    extra = {"batch": True, "batch_poll_seconds": 0.001, "batch_max_requests": PER_BATCH}
    if kind == "anthropic":
        return EngineConfig(
            name="bat",
            kind="anthropic",
            model="claude-fake",
            base_url=base_url,
            api_key_env=ENV,
            timeout_s=5.0,
            extra=extra,
        )
    return EngineConfig(
        name="bat",
        kind="openai_chat",
        model="fake-model",
        base_url=base_url,
        timeout_s=5.0,
        extra=extra,
    )


def _fresh(engine: OpenAIChatEngine) -> batch.BatchState:
    return batch.BatchState("bat", engine.config.kind, engine.base_url, "r" * 64)


def _run(
    engine: OpenAIChatEngine, state: Path, reqs: Sequence[Request] | None = None
) -> tuple[batch.BatchRun, list[str]]:
    said: list[str] = []

    async def go() -> batch.BatchRun:
        try:
            return await batch.run_batches(
                engine,
                _requests() if reqs is None else reqs,
                state,
                _fresh(engine),
                POLICY,
                report=said.append,
                now=lambda: "2026-12-03T00:00:00Z",
            )
        finally:
            await engine.close()

    return asyncio.run(go()), said


def _answered_once(run: batch.BatchRun, n: int = N) -> None:
    assert sorted(run.answers) == [f"k{i:02d}" for i in range(n)]
    for key, a in run.answers.items():
        assert isinstance(a.outcome, Completion), (key, a.outcome)
        assert a.outcome.output_text.endswith(f"question {int(key[1:])}")
        assert a.batches == 1  # one batch asked it: the row's attempts, the cost once


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[..., Any]]:
    monkeypatch.setenv(ENV, KEY)
    return {
        "openai_chat": lambda **kw: FakeOpenAI(**kw),
        "anthropic": lambda **kw: FakeAnthropic(api_key=KEY, **kw),
    }


def _engine(kind: str, base_url: str, cls: type[OpenAIChatEngine] | None = None) -> Any:
    plain = AnthropicEngine if kind == "anthropic" else OpenAIChatEngine
    return (cls or plain)(_config(kind, base_url))


KINDS = ["openai_chat", "anthropic"]


@pytest.mark.parametrize("fault", ["reset", "bad_gateway"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_lost_create_answer_reattaches_instead_of_a_second_batch(
    kind: str, fault: str, fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    state = tmp_path / "_batch.json"
    with fakes[kind](batch_create_faults=[fault]) as fake:
        engine = _engine(kind, fake.base_url)
        run, said = _run(engine, state)
        assert fake.batch_creates() == 3  # 2 + 2 + 1 requests: not 4
    _answered_once(run)
    found = [line for line in said if line.startswith("re-attached to batch ")]
    assert len(found) == 1 and "found on the provider" in found[0]
    first = run.batch_ids[0]
    token = batch.submission_token(_fresh(engine), ["k00", "k01"])
    assert found[0].startswith(f"re-attached to batch {first} (token {token})")
    assert run.submitted == 2 and len(run.batch_ids) == 3
    assert not any("not submitted" in line for line in said)


def test_openai_batches_carry_their_token_in_metadata_and_file_name(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    with fakes["openai_chat"]() as fake:
        engine = _engine("openai_chat", fake.base_url)
        run, _ = _run(engine, tmp_path / "_batch.json")
        made = [b.obj for b in fake.batches.values()]
        names = [fake.files[b["input_file_id"]].filename for b in made]
    fresh = _fresh(engine)
    tokens = [
        batch.submission_token(fresh, keys) for keys in (["k00", "k01"], ["k02", "k03"], ["k04"])
    ]
    assert [b["metadata"] for b in made] == [{batchapi.TOKEN_KEY: t} for t in tokens]
    assert names == [f"sealedeval-{t}.jsonl" for t in tokens]
    assert len(set(tokens)) == 3 and all(len(t) == batch.TOKEN_CHARS for t in tokens)
    _answered_once(run)


class _FailSecondWrite:
    """``write_text_atomic`` that fails once, on its second call: the write right after the
    provider accepted the first batch (the first is the intent, before the create). The run
    dies there, as a kill would, with the batch made and its id written nowhere."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = batch.write_text_atomic

    def __call__(self, path: Path, text: str) -> None:
        self.calls += 1
        if self.calls == 2:
            raise OSError("disk full (test)")
        self.real(path, text)


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_dying_before_the_state_write_reattaches_on_the_next_start(
    kind: str,
    fakes: dict[str, Callable[..., Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = tmp_path / "_batch.json"
    with fakes[kind]() as fake:
        monkeypatch.setattr(batch, "write_text_atomic", _FailSecondWrite())
        with pytest.raises(OSError, match="disk full"):
            _run(_engine(kind, fake.base_url), state)
        monkeypatch.undo()
        monkeypatch.setenv(ENV, KEY)
        assert fake.batch_creates() == 1
        doc = json.loads(state.read_text())
        assert doc["batches"] == [] and [i["keys"] for i in doc["intents"]] == [["k00", "k01"]]
        run, said = _run(_engine(kind, fake.base_url), state)
        assert fake.batch_creates() == 3  # the lost one re-attached, the other two submitted
    _answered_once(run)
    assert any(line.startswith("re-attached to batch ") for line in said)
    assert run.submitted == 2 and len(run.batch_ids) == 3
    assert json.loads(state.read_text())["intents"] == []
    batch.finish(state)
    assert not state.exists()


class _ForeignFirst(AnthropicEngine):
    """Another client of the workspace makes a batch of the same size right after this run's
    mark, and this run's first create is lost before it reaches the provider."""

    foreign = 0

    async def batch_submit(self, lines: Sequence[batchapi.BatchLine], token: str) -> str:
        if not self.foreign:
            self.foreign += 1
            other = [
                {
                    "custom_id": f"other{i}",
                    "params": {
                        "model": "claude-fake",
                        "max_tokens": 8,
                        "messages": [{"role": "user", "content": "not yours"}],
                    },
                }
                for i in range(len(lines))
            ]
            body = json.dumps({"requests": other}).encode()
            await self._json("POST", self.base_url + "/v1/messages/batches", body)
            raise EngineError("connection", "connection reset (test): the create never arrived")
        return await super().batch_submit(lines, token)


def test_anthropic_candidate_of_another_client_is_dropped_and_its_requests_asked_again(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    with fakes["anthropic"]() as fake:
        engine = _engine("anthropic", fake.base_url, _ForeignFirst)
        run, said = _run(engine, tmp_path / "_batch.json")
        foreign = next(iter(fake.batches))
        assert fake.batch_creates() == 1 + 3  # the other client's, then this run's three
    _answered_once(run)  # the foreign batch asked nothing: still one attempt each
    assert any(f"re-attached to batch {foreign}" in line for line in said)
    assert any(f"batch {foreign} holds none of these 2 requests" in line for line in said)
    assert foreign not in run.batch_ids and len(run.batch_ids) == 3


class _CancelledFirst(OpenAIChatEngine):
    """The first create lands, but its batch is cancelled (by someone else) before this run
    learns its id: found by its token, ended without output, it is not re-attached."""

    cancelled = ""

    async def batch_submit(self, lines: Sequence[batchapi.BatchLine], token: str) -> str:
        made = await super().batch_submit(lines, token)
        if not self.cancelled:
            self.cancelled = made
            await self._json("POST", f"{self.base_url}/batches/{made}/cancel")
            while (await self.batch_poll(made)).state != "cancelled":
                pass
            raise EngineError("timeout", "read timeout (test): the answer never arrived")
        return made


def test_a_found_batch_that_ended_without_results_is_submitted_anew(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    with fakes["openai_chat"]() as fake:
        engine = _engine("openai_chat", fake.base_url, _CancelledFirst)
        run, said = _run(engine, tmp_path / "_batch.json")
        assert fake.batch_creates() == 1 + 3
    _answered_once(run)
    assert any(
        f"batch {engine.cancelled} (token " in line
        and "ended cancelled without results: its requests are submitted anew" in line
        for line in said
    )
    assert engine.cancelled not in run.batch_ids
    assert not any(line.startswith("re-attached") for line in said)


class _NoList(OpenAIChatEngine):
    """An OpenAI-compatible server with batches but no ``GET /batches``."""

    async def batch_mark(self) -> str:
        raise EngineError("refused", "HTTP 404: Unknown path /v1/batches")


def test_a_provider_without_a_batch_list_submits_as_before_and_says_so(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    state = tmp_path / "_batch.json"
    with fakes["openai_chat"]() as fake:
        run, said = _run(_engine("openai_chat", fake.base_url, _NoList), state)
        assert fake.batch_creates() == 3
    _answered_once(run)
    assert sum("does not list batches" in line for line in said) == 1
    assert json.loads(state.read_text())["intents"] == []


class _LookRefused(OpenAIChatEngine):
    """A server whose list takes ``limit=1`` (the mark) but refuses a look's larger pages."""

    async def batch_find(self, token: str, count: int, mark: str) -> list[batchapi.Found]:
        raise EngineError("refused", "HTTP 400: limit must be at most 50 (test)")


def test_a_refused_look_is_no_look_said_once_and_never_holds_requests(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path
) -> None:
    state = tmp_path / "_batch.json"
    with fakes["openai_chat"](batch_create_faults=["reset"]) as fake:
        run, said = _run(_engine("openai_chat", fake.base_url, _LookRefused), state)
        assert fake.batch_creates() == 4  # what stays open: the lost batch is paid again
    _answered_once(run)
    assert sum("does not list batches" in line for line in said) == 1
    assert json.loads(state.read_text())["intents"] == []


class _ListDown(OpenAIChatEngine):
    """The provider's list fails (retryably) on every look."""

    async def batch_find(self, token: str, count: int, mark: str) -> list[batchapi.Found]:
        raise EngineError("server", "HTTP 503: list unavailable (test)")


def test_an_intent_that_cannot_be_looked_for_holds_its_requests_for_the_next_run(
    fakes: dict[str, Callable[..., Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "_batch.json"
    with fakes["openai_chat"]() as fake:
        monkeypatch.setattr(batch, "write_text_atomic", _FailSecondWrite())
        with pytest.raises(OSError):
            _run(_engine("openai_chat", fake.base_url), state)
        monkeypatch.undo()
        run, said = _run(_engine("openai_chat", fake.base_url, _ListDown), state)
        # the intent's two requests: not asked again (their batch may exist), error rows now
        assert fake.batch_creates() == 1 + 2
        held = {k: a.outcome for k, a in run.answers.items() if isinstance(a.outcome, EngineError)}
        assert sorted(held) == ["k00", "k01"]
        assert {e.kind for e in held.values()} == {"server"}
        assert any("could not look for batch" in line for line in said)
        batch.finish(state)  # the rows are stored: the intent stays for the next run
        assert [i["keys"] for i in json.loads(state.read_text())["intents"]] == [["k00", "k01"]]
        again, said = _run(_engine("openai_chat", fake.base_url), state, _requests()[:2])
        assert fake.batch_creates() == 3
    _answered_once(again, 2)
    assert any(line.startswith("re-attached to batch ") for line in said)


def test_openai_find_reads_only_batches_since_the_mark_across_pages(
    fakes: dict[str, Callable[..., Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [OpenAIChatEngine(_config("openai_chat", "")).batch_line(r) for r in _requests(1)]

    async def go(engine: OpenAIChatEngine, fake: Any) -> None:
        try:
            assert await engine.batch_mark() == ""
            ids = [await engine.batch_submit(lines, t) for t in ("t-old", "t-x", "t-y", "t-z")]
            for _ in range(3):  # the first three end: completed
                for i in ids[:3]:
                    await engine.batch_poll(i)
            mark = ids[0]
            assert await engine.batch_mark() == ids[-1]
            found = await engine.batch_find("t-old", 1, "")  # no mark: the whole (short) list
            assert [(f.status.id, f.by, f.usable) for f in found] == [(ids[0], "token", True)]
            assert found[0].status.state == "completed" and found[0].status.refs
            assert await engine.batch_find("t-old", 1, mark) == []  # not created since the mark
            assert [f.status.id for f in await engine.batch_find("t-z", 1, mark)] == [ids[3]]
            assert await engine.batch_find("t-nope", 1, "") == []
            pages = [r for r in fake.requests if r.path == "/v1/batches" and r.body is None]
            assert len(pages) > 4  # two batches a page: the look walked the pages
        finally:
            await engine.close()

    monkeypatch.setattr(batchapi, "LIST_PAGE", 2)
    with fakes["openai_chat"]() as fake:
        asyncio.run(go(_engine("openai_chat", fake.base_url), fake))


def test_anthropic_find_matches_by_size_since_the_mark(
    fakes: dict[str, Callable[..., Any]],
) -> None:
    proto = AnthropicEngine(_config("anthropic", "http://unused"))
    reqs = _requests(3)

    async def go(engine: AnthropicEngine) -> None:
        try:
            sizes: list[int] = [2, 1, 2, 3]
            ids = [
                await engine.batch_submit([proto.batch_line(r) for r in reqs[:n]], "t")
                for n in sizes
            ]
            found = await engine.batch_find("ignored", 2, ids[0])
            assert [(f.status.id, f.by) for f in found] == [(ids[2], "size")]
            assert {f.status.id for f in await engine.batch_find("t", 2, "")} == {ids[0], ids[2]}
            assert await engine.batch_find("t", 3, ids[-1]) == []
        finally:
            await engine.close()

    with fakes["anthropic"]() as fake:
        asyncio.run(go(_engine("anthropic", fake.base_url)))
