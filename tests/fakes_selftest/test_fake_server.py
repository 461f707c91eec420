"""Self-test of the fake OpenAI server: every fault kind, sequencing, seeding, concurrency."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes import ALL_FAULTS, FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]


def _body(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": text},
        ],
        **extra,
    }


def _post(client: httpx.Client, text: str, **extra: Any) -> httpx.Response:
    return client.post("/chat/completions", json=_body(text, **extra))


@pytest.fixture
def client_for() -> Iterator[Any]:
    clients: list[httpx.Client] = []

    def make(fake: FakeOpenAI, timeout: float = 2.0) -> httpx.Client:
        c = httpx.Client(base_url=fake.base_url, timeout=timeout)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def test_endpoints_and_normal_completion(client_for: Any) -> None:
    with FakeOpenAI(model="fake-x") as fake:
        assert fake.base_url == f"http://127.0.0.1:{fake.port}/v1"
        c = client_for(fake)
        models = c.get("/models").json()
        assert [m["id"] for m in models["data"]] == ["fake-x"]
        assert httpx.get(f"http://127.0.0.1:{fake.port}/health").json() == {"status": "ok"}

        r1 = _post(c, "what is two plus two")
        r2 = _post(c, "what is two plus two")
        assert r1.status_code == 200
        assert r1.headers["content-type"] == "application/json"
        d = r1.json()
        assert d == r2.json()  # deterministic
        assert d["object"] == "chat.completion"
        assert isinstance(d["id"], str) and isinstance(d["created"], int)
        assert d["model"] == "m"
        ch = d["choices"][0]
        assert ch["message"] == {"role": "assistant", "content": "ANSWER: what is two plus two"}
        assert ch["finish_reason"] == "stop"
        assert d["usage"] == {"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13}
        assert fake.count() == 4 and fake.count("ok") == 4
        rec = fake.requests[-1]
        assert rec.path == "/v1/chat/completions" and rec.body == _body("what is two plus two")
        assert rec.headers["content-type"] == "application/json"


def test_keepalive_reuses_connection(client_for: Any) -> None:
    with FakeOpenAI() as fake:
        c = client_for(fake)
        ports = set()
        for _ in range(3):
            r = _post(c, "hi", n=1)
            assert r.http_version == "HTTP/1.1"
            assert "close" not in r.headers.get("connection", "")
            stream = r.extensions["network_stream"]
            ports.add(stream.get_extra_info("client_addr")[1])
        assert len(ports) == 1


def test_responder_dict_tool_calls_and_logprobs(client_for: Any) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": "{}"},
    }

    def responder(body: dict[str, Any]) -> str | dict[str, Any]:
        if "tool" in body["messages"][-1]["content"]:
            return {"content": None, "tool_calls": [call]}
        return "one two three"

    with FakeOpenAI(responder=responder) as fake:
        c = client_for(fake)
        d = _post(c, "use a tool").json()
        assert d["choices"][0]["finish_reason"] == "tool_calls"
        assert d["choices"][0]["message"]["tool_calls"] == [call]
        assert d["choices"][0]["message"]["role"] == "assistant"
        assert d["usage"]["completion_tokens"] == 1

        d1 = _post(c, "plain", logprobs=True, top_logprobs=3).json()
        d2 = _post(c, "plain", logprobs=True, top_logprobs=3).json()
        lp = d1["choices"][0]["logprobs"]["content"]
        assert lp == d2["choices"][0]["logprobs"]["content"]
        assert [t["token"] for t in lp] == ["one", " two", " three"]
        for t in lp:
            assert t["logprob"] <= 0
            assert len(t["top_logprobs"]) == 3
            assert t["top_logprobs"][0]["token"] == t["token"]


@pytest.mark.parametrize(
    ("kind", "status"), [("rate_limit", 429), ("server", 500), ("unavailable", 503)]
)
def test_http_error_faults(client_for: Any, kind: str, status: int) -> None:
    with FakeOpenAI(faults={"X": [kind]}) as fake:
        c = client_for(fake)
        r = _post(c, "X")
        assert r.status_code == status
        assert "message" in r.json()["error"]
        if kind == "rate_limit":
            assert r.headers["retry-after"] == "0.05"
        else:
            assert "retry-after" not in r.headers
        assert _post(c, "X").status_code == 200  # keep-alive connection still usable
        assert fake.count(kind) == 1


def test_rate_limit_without_retry_after(client_for: Any) -> None:
    with FakeOpenAI(faults={"X": ["rate_limit"]}, retry_after=None) as fake:
        r = _post(client_for(fake), "X")
        assert r.status_code == 429 and "retry-after" not in r.headers


def test_reset_raises_transport_error(client_for: Any) -> None:
    with FakeOpenAI(faults={"X": ["reset"]}) as fake:
        c = client_for(fake)
        with pytest.raises(httpx.TransportError):
            _post(c, "X")
        assert _post(c, "X").status_code == 200  # client reconnects fine
        assert fake.count("reset") == 1


def test_timeout_fault_and_prompt_stop(client_for: Any) -> None:
    fake = FakeOpenAI(faults={"X": ["timeout"]}, hang_s=30.0).start()
    try:
        c = client_for(fake, timeout=0.3)
        with pytest.raises(httpx.ReadTimeout):
            _post(c, "X")
        assert fake.count("timeout") == 1
    finally:
        t0 = time.monotonic()
        fake.stop()  # the handler is still sleeping: must not block on it
        assert time.monotonic() - t0 < 1.5


def test_timeout_fault_answers_after_hang(client_for: Any) -> None:
    with FakeOpenAI(faults={"X": ["timeout"]}, hang_s=0.3) as fake:
        t0 = time.monotonic()
        r = _post(client_for(fake, timeout=5.0), "X")
        assert time.monotonic() - t0 >= 0.3
        assert r.status_code == 200 and r.json()["choices"][0]["finish_reason"] == "stop"


def test_stop_while_request_in_flight_on_other_thread() -> None:
    fake = FakeOpenAI(faults={"X": ["timeout"]}, hang_s=30.0).start()
    errors: list[BaseException] = []

    def hit() -> None:
        try:
            httpx.post(f"{fake.base_url}/chat/completions", json=_body("X"), timeout=10)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=hit, daemon=True)
    t.start()
    deadline = time.monotonic() + 2
    while fake.count("timeout") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    fake.stop()
    assert time.monotonic() - t0 < 1.5
    t.join(2)
    assert not t.is_alive()
    assert errors and isinstance(errors[0], httpx.TransportError)


def test_malformed_html_empty_truncated(client_for: Any) -> None:
    faults = {"M": ["malformed"], "H": ["html"], "E": ["empty"], "T": ["truncated"]}
    with FakeOpenAI(faults=faults) as fake:
        c = client_for(fake)

        r = _post(c, "M")
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(r.content)

        r = _post(c, "H")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/html")
        assert b"<html" in r.content

        r = _post(c, "E")
        assert r.status_code == 200 and r.json()["choices"] == []

        r = _post(c, "T four five six seven")
        ch = r.json()["choices"][0]
        full = "ANSWER: T four five six seven"
        assert ch["finish_reason"] == "length"
        assert ch["message"]["content"] == full[: len(full) // 2]

        assert [x.fault for x in fake.requests] == ["malformed", "html", "empty", "truncated"]


def test_marker_sequence_consumed_in_order(client_for: Any) -> None:
    seq = ["rate_limit", "ok", "server", "unavailable"]
    with FakeOpenAI(faults={"Q1": seq}) as fake:
        c = client_for(fake)
        assert _post(c, "other question").status_code == 200  # no marker: untouched
        codes = [_post(c, "question Q1 here").status_code for _ in range(6)]
        assert codes == [429, 200, 500, 503, 200, 200]
        assert [r.fault for r in fake.requests] == ["ok", *seq, "ok", "ok"]


def test_marker_only_matches_last_user_message(client_for: Any) -> None:
    with FakeOpenAI(faults={"Q1": ["server"]}) as fake:
        body = {
            "messages": [
                {"role": "user", "content": "Q1 earlier"},
                {"role": "assistant", "content": "sure"},
                {"role": "user", "content": [{"type": "text", "text": "later"}]},
            ]
        }
        c = client_for(fake)
        assert c.post("/chat/completions", json=body).status_code == 200


def test_unknown_fault_kind_rejected() -> None:
    with pytest.raises(ValueError):
        FakeOpenAI(faults={"X": ["nope"]})
    with pytest.raises(ValueError):
        FakeOpenAI(fault_rate=0.5, fault_kinds=["nope"])


def _battery(seed: int) -> list[str]:
    kinds = ["rate_limit", "server", "unavailable", "malformed", "html", "empty", "truncated"]
    with FakeOpenAI(fault_rate=0.5, fault_kinds=kinds, seed=seed) as fake:
        with httpx.Client(base_url=fake.base_url, timeout=2) as c:
            for i in range(40):
                _post(c, f"q{i}")
        return [r.fault for r in fake.requests]


def test_fault_rate_seed_reproducible() -> None:
    a, b, other = _battery(7), _battery(7), _battery(8)
    assert a == b
    assert a != other
    assert 5 < sum(f != "ok" for f in a) < 35
    assert len(set(a)) > 3
    assert set(ALL_FAULTS) >= set(a) - {"ok"}


def test_max_in_flight_with_latency() -> None:
    with FakeOpenAI(latency_s=0.3) as fake:
        codes: list[int] = []

        def hit(i: int) -> None:
            r = httpx.post(f"{fake.base_url}/chat/completions", json=_body(f"q{i}"), timeout=5)
            codes.append(r.status_code)

        threads = [threading.Thread(target=hit, args=(i,)) for i in range(6)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        elapsed = time.monotonic() - t0
        assert codes == [200] * 6
        assert fake.max_in_flight > 1
        assert elapsed < 1.5  # served concurrently, not 6 * 0.3 s
        # Handlers decrement after the response is written, so allow them a moment.
        deadline = time.monotonic() + 1
        while fake.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.in_flight == 0


def test_subprocess_mode_starts_answers_and_stops() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0", "--latency-s", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        port = int(line.split()[1])
        assert port > 0
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/health", timeout=2).json() == {"status": "ok"}
        r = httpx.post(f"{base}/v1/chat/completions", json=_body("ping"), timeout=2)
        assert r.json()["choices"][0]["message"]["content"] == "ANSWER: ping"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=5)
        assert time.monotonic() - t0 < 5
        assert rc == 0
        assert proc.stderr is not None
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
