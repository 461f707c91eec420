"""OpenAIChatEngine against the loopback FakeOpenAI: every fault kind is classified.

Each test drives the real engine over HTTP (httpx → loopback → fake) and checks the
``EngineError.kind`` the dispatcher will retry on or record, plus the details a raw row keeps
(Retry-After, the truncated text, the raw body of a malformed answer).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import socket
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from tests.fakes import FakeOpenAI

from sealedeval.canonical import compact
from sealedeval.config import EngineConfig
from sealedeval.engines import openai_chat
from sealedeval.engines.base import Completion, EngineError, Request
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.errors import UserError

T = TypeVar("T")


@pytest.fixture(autouse=True, params=["http1", "aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs over each client: engines.http1 (the default on http:// URLs), aiohttp
    (the default on https://) and plain httpx (the fallback when aiohttp is missing). Their
    exceptions differ, and so must not the classification."""
    if request.param != "http1":
        monkeypatch.setattr(openai_chat, "USE_HTTP1", False)
    if request.param == "httpx":
        monkeypatch.setattr(openai_chat, "USE_AIOHTTP", False)
    return str(request.param)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _req(text: str = "what is two plus two", **params: Any) -> Request:
    return Request(
        request_key="k-" + text.replace(" ", "-"),
        suite="golden",
        item_id="i1",
        condition="greedy",
        repeat=0,
        seed=1,
        messages=(
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": text},
        ),
        params={"temperature": 0.0, "max_tokens": 16, **params},
    )


def _cfg(base_url: str, **kw: Any) -> EngineConfig:
    opts: dict[str, Any] = {"timeout_s": 5.0} | kw
    return EngineConfig(
        name="fake", kind="openai_chat", model="fake-model", base_url=base_url, **opts
    )


async def _complete(cfg: EngineConfig, req: Request) -> Completion:
    eng = OpenAIChatEngine(cfg)
    await eng.start()
    try:
        return await eng.complete(req)
    finally:
        await eng.close()


def _error(cfg: EngineConfig, req: Request | None = None) -> EngineError:
    with pytest.raises(EngineError) as ei:
        _run(_complete(cfg, req or _req()))
    return ei.value


def _fault(kind: str, **fake_kw: Any) -> tuple[EngineError, FakeOpenAI]:
    """One request whose only server answer is ``kind``; returns the error and the fake."""
    with FakeOpenAI(faults={"MARK": [kind]}, **fake_kw) as fake:
        err = _error(_cfg(fake.base_url), _req("MARK please"))
    assert fake.count() == 1, "the engine itself must never retry; that is the dispatcher's job"
    return err, fake


def test_ok_completion_parsed() -> None:
    with FakeOpenAI() as fake:
        c = _run(_complete(_cfg(fake.base_url), _req("hello there")))
        body = fake.requests[0].body
    assert c.output_text == "ANSWER: hello there"
    assert c.finish_reason == "stop"
    # usage from the server: prompt = words of all messages, completion = words of the reply
    assert (c.tokens_in, c.tokens_out) == (4, 3)
    assert c.response["object"] == "chat.completion"
    assert c.message == {"role": "assistant", "content": "ANSWER: hello there"}
    # the request body is model + messages + params, the item never leaks into it
    assert body is not None
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0.0 and body["max_tokens"] == 16
    assert body["messages"][-1] == {"role": "user", "content": "hello there"}
    assert set(body) == {"model", "messages", "temperature", "max_tokens"}


# -- rate_limit -------------------------------------------------------------------------------


def test_rate_limit_retry_after_seconds() -> None:
    err, _ = _fault("rate_limit", retry_after="7")
    assert err.kind == "rate_limit" and err.retryable
    assert err.retry_after == pytest.approx(7.0)
    assert err.response["status"] == 429


def test_rate_limit_retry_after_fractional_seconds() -> None:
    err, _ = _fault("rate_limit", retry_after="0.25")
    assert err.kind == "rate_limit"
    assert err.retry_after == pytest.approx(0.25)


def test_rate_limit_retry_after_http_date() -> None:
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    err, _ = _fault("rate_limit", retry_after=email.utils.format_datetime(when, usegmt=True))
    assert err.kind == "rate_limit"
    assert err.retry_after is not None
    # HTTP-dates have 1 s resolution and a little wall clock passes during the request
    assert 27.0 <= err.retry_after <= 30.5


def test_rate_limit_retry_after_http_date_in_the_past_is_zero() -> None:
    when = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    err, _ = _fault("rate_limit", retry_after=email.utils.format_datetime(when, usegmt=True))
    assert err.kind == "rate_limit"
    assert err.retry_after == 0.0


@pytest.mark.parametrize("header", [None, "soon-ish"])
def test_rate_limit_without_usable_retry_after(header: str | None) -> None:
    err, _ = _fault("rate_limit", retry_after=header)
    assert err.kind == "rate_limit" and err.retryable
    assert err.retry_after is None


# -- server -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "status"), [("server", 500), ("unavailable", 503)])
def test_server_errors(fault: str, status: int) -> None:
    err, _ = _fault(fault)
    assert err.kind == "server" and err.retryable
    assert err.response["status"] == status
    assert str(status) in str(err)


# -- timeout ----------------------------------------------------------------------------------


def test_timeout_when_server_hangs() -> None:
    with FakeOpenAI(faults={"MARK": ["timeout"]}, hang_s=3.0) as fake:
        err = _error(_cfg(fake.base_url, timeout_s=0.3), _req("MARK now"))
        assert fake.count("timeout") == 1
    assert err.kind == "timeout" and err.retryable


# -- connection -------------------------------------------------------------------------------


def test_connection_reset() -> None:
    err, fake = _fault("reset")
    assert fake.count("reset") == 1
    assert err.kind == "connection" and err.retryable


def test_connection_refused_on_closed_port() -> None:
    with socket.socket() as s:  # a port that was free a moment ago and now has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = _error(_cfg(f"http://127.0.0.1:{port}/v1", timeout_s=2.0))
    assert err.kind == "connection" and err.retryable


# -- malformed --------------------------------------------------------------------------------


def test_malformed_invalid_json() -> None:
    err, _ = _fault("malformed")
    assert err.kind == "malformed" and not err.retryable
    assert err.response["status"] == 200
    assert err.response["text"] == '{"choices": ['  # the bytes the server sent are kept


def test_malformed_html_error_page_with_200() -> None:
    err, _ = _fault("html")
    assert err.kind == "malformed" and not err.retryable
    assert "text/html" in str(err)
    assert "502 Bad Gateway" in err.response["text"]


def test_malformed_empty_choices() -> None:
    err, _ = _fault("empty")
    assert err.kind == "malformed" and not err.retryable
    assert err.response["choices"] == []


# -- truncated --------------------------------------------------------------------------------


def test_truncated_keeps_output_text() -> None:
    err, _ = _fault("truncated")
    assert err.kind == "truncated" and not err.retryable
    full = "ANSWER: MARK please"
    assert err.output_text == full[: len(full) // 2]
    assert err.output_text  # non-empty: the partial answer is kept for the raw row
    assert err.response["choices"][0]["finish_reason"] == "length"


# -- API key ----------------------------------------------------------------------------------

SECRET = "sk-test-DISTINCTIVE-9f3a1c77e2"


def test_api_key_sent_as_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALEDEVAL_TEST_KEY", SECRET)
    with FakeOpenAI() as fake:
        cfg = _cfg(fake.base_url, api_key_env="SEALEDEVAL_TEST_KEY")
        _run(_complete(cfg, _req()))
        headers = fake.requests[0].headers
    assert headers["authorization"] == f"Bearer {SECRET}"


def test_no_key_configured_sends_no_authorization() -> None:
    with FakeOpenAI() as fake:
        _run(_complete(_cfg(fake.base_url), _req()))
        assert "authorization" not in fake.requests[0].headers


def test_missing_key_env_is_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEALEDEVAL_TEST_KEY", raising=False)
    with FakeOpenAI() as fake:
        cfg = _cfg(fake.base_url, api_key_env="SEALEDEVAL_TEST_KEY")
        with pytest.raises(UserError, match="SEALEDEVAL_TEST_KEY"):
            _run(_complete(cfg, _req()))
        # complete() without start() must not slip past the check either
        eng = OpenAIChatEngine(cfg)
        with pytest.raises(UserError, match="SEALEDEVAL_TEST_KEY"):
            _run(eng.complete(_req()))
        assert fake.count() == 0


def test_identity_has_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALEDEVAL_TEST_KEY", SECRET)
    cfg = EngineConfig(
        name="fake",
        kind="openai_chat",
        model="fake-model",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="SEALEDEVAL_TEST_KEY",
    )

    async def started_identity() -> dict[str, Any]:
        eng = OpenAIChatEngine(cfg)
        await eng.start()  # the key is loaded into the client, not into the identity
        try:
            return eng.identity()
        finally:
            await eng.close()

    ident = _run(started_identity())
    text = compact(ident)
    assert SECRET not in text
    assert "sk-test" not in text
    assert ident["model"] == "fake-model" and ident["kind"] == "openai_chat"
