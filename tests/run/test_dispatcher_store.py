"""Dispatcher → RawWriter end to end against the fake server.

Every request must yield exactly one stored row: ok rows carry tokens, cost, attempts and the seal;
infrastructure errors are rows with status ``error`` and a classified ``error_kind``, never
dropped. The fake's request log is the ground truth for how many attempts each key took.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fakes import FakeOpenAI

from sealedeval import __version__
from sealedeval.canonical import compact, normalise
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, EngineError, Request
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.run.dispatcher import CallFn, Dispatcher, RunStats, SolveResult
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter, latest_rows, raw_dir, raw_files, read_raw
from sealedeval.store.schema import ERROR_KINDS, RAW_SCHEMA

SEAL = SealState("golden", "ab" * 32, "c0ffee" + "0" * 34, True)
PRICE_IN, PRICE_OUT = 2.5, 10.0
# what each fake fault must become in the raw row
EXPECTED_KIND = {
    "rate_limit": "rate_limit",
    "server": "server",
    "unavailable": "server",
    "timeout": "timeout",
    "reset": "connection",
    "malformed": "malformed",
    "html": "malformed",
    "empty": "malformed",
    "truncated": "truncated",
}
TRANSIENT = {"rate_limit", "server", "unavailable", "timeout", "reset"}
_TAG = re.compile(r"<Q\d{4}>")


def tag(i: int) -> str:
    return f"<Q{i:04d}>"


def make_requests(n: int, start: int = 0) -> list[Request]:
    out = []
    for i in range(start, start + n):
        msgs = (
            {"role": "system", "content": "You answer briefly."},
            {"role": "user", "content": f"question {tag(i)} about the bakery"},
        )
        out.append(
            Request(
                request_key=f"key{i:04d}",
                suite="golden",
                item_id=f"item{i // 2:04d}",
                condition="greedy" if i % 2 == 0 else "sample",
                repeat=i % 2,
                seed=1000 + i,
                messages=msgs,
                params={"temperature": 0.0, "max_tokens": 32, "seed": 1000 + i},
            )
        )
    return out


def engine_cfg(base_url: str, **kw: Any) -> EngineConfig:
    opts: dict[str, Any] = {
        "concurrency": 4,
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "price_in_per_mtok": PRICE_IN,
        "price_out_per_mtok": PRICE_OUT,
    } | kw
    return EngineConfig(
        name="fake", kind="openai_chat", model="fake-model", base_url=base_url, **opts
    )


def dispatch(
    root: Path,
    cfg: EngineConfig,
    requests: list[Request],
    *,
    flush_rows: int = 8,
    solver: Any = None,
    seal: SealState = SEAL,
) -> tuple[RunStats, list[dict[str, Any]]]:
    engine = OpenAIChatEngine(cfg)
    writer = RawWriter(raw_dir(root, "golden", "fake"), flush_rows=flush_rows)
    stats = RunStats(requested=len(requests))

    async def main() -> None:
        await engine.start()
        try:
            kw = {"solver": solver} if solver else {}
            await Dispatcher(engine, writer, seal, progress=False, **kw).run(requests, stats)
        finally:
            await engine.close()

    try:
        asyncio.run(main())
    finally:
        writer.close()
    return stats, read_raw(raw_files(root, "golden")).to_pylist()


def tries_by_tag(fake: FakeOpenAI) -> dict[str, list[str]]:
    """Faults the server applied, per request tag, in arrival order."""
    out: dict[str, list[str]] = defaultdict(list)
    for rec in fake.requests:
        assert rec.body is not None
        m = _TAG.search(rec.body["messages"][-1]["content"])
        assert m, rec.body
        out[m.group(0)].append(rec.fault)
    return out


def check_common(row: dict[str, Any], req: Request) -> None:
    assert row["suite"] == "golden"
    assert row["item_id"] == req.item_id
    assert row["condition"] == req.condition and row["repeat"] == req.repeat
    assert row["seed"] == req.seed
    assert row["engine"] == "fake" and row["engine_kind"] == "openai_chat"
    assert row["model"] == "fake-model"
    assert json.loads(row["engine_identity"])["base_url"].startswith("http://127.0.0.1:")
    assert row["params"] == compact(req.params)
    assert row["messages"] == compact(list(req.messages))
    assert row["rubric_sha256"] == SEAL.rubric_sha256
    assert row["seal_commit"] == SEAL.seal_commit
    assert row["sealed"] is True
    assert row["harness_version"] == __version__
    assert row["started_at"] <= row["finished_at"]
    assert row["latency_s"] >= 0


def test_every_request_one_row_ok_and_classified_errors(tmp_path: Path) -> None:
    faults = {
        tag(1): ["rate_limit", "rate_limit"],  # ok on the 3rd attempt
        tag(2): ["server", "unavailable", "server"],  # retries exhausted
        tag(3): ["reset", "reset", "reset"],
        tag(4): ["malformed"],
        tag(5): ["html"],
        tag(6): ["empty"],
        tag(7): ["truncated"],
        tag(8): ["rate_limit", "rate_limit", "rate_limit"],
        tag(9): ["timeout", "timeout", "timeout"],
        tag(10): ["timeout"],  # ok on the 2nd attempt
        tag(11): ["reset", "server"],  # ok on the 3rd attempt
    }
    expected = {
        tag(2): ("server", 3),
        tag(3): ("connection", 3),
        tag(4): ("malformed", 1),
        tag(5): ("malformed", 1),
        tag(6): ("malformed", 1),
        tag(7): ("truncated", 1),
        tag(8): ("rate_limit", 3),
        tag(9): ("timeout", 3),
    }
    ok_attempts = {tag(1): 3, tag(10): 2, tag(11): 3}
    reqs = make_requests(24)
    with FakeOpenAI(faults=faults, hang_s=3.0) as fake:
        stats, rows = dispatch(tmp_path, engine_cfg(fake.base_url, timeout_s=0.3), reqs)
        tries = tries_by_tag(fake)

    # exactly one row per request, nothing dropped, nothing doubled
    assert sorted(r["request_key"] for r in rows) == sorted(r.request_key for r in reqs)
    by_key = {r["request_key"]: r for r in rows}
    assert stats.ok + stats.error == len(reqs) == len(rows)
    assert stats.ok == len(reqs) - len(expected)
    assert dict(stats.by_kind) == dict(Counter(k for k, _ in expected.values()))

    for req in reqs:
        row = by_key[req.request_key]
        t = tag(int(req.request_key[3:]))
        check_common(row, req)
        assert row["attempts"] == len(tries[t]), t  # the row counts what the server saw
        if t in expected:
            kind, n = expected[t]
            assert row["status"] == "error", t
            assert row["error_kind"] == kind, t
            assert row["attempts"] == n, t
            assert row["error_message"]
            assert row["tokens_in"] == 0 and row["cost_usd"] == 0.0
        else:
            assert row["status"] == "ok", (t, row["error_kind"], row["error_message"])
            assert row["error_kind"] == "" and row["error_message"] == ""
            assert row["attempts"] == ok_attempts.get(t, 1), t
            assert row["output_text"] == f"ANSWER: question {t} about the bakery"
            assert row["finish_reason"] == "stop"
            body = json.loads(row["response"])
            assert body["object"] == "chat.completion"
            usage = body["usage"]
            assert row["tokens_in"] == usage["prompt_tokens"] == 8
            assert row["tokens_out"] == usage["completion_tokens"] == 6
            cost = (8 * PRICE_IN + 6 * PRICE_OUT) / 1e6
            assert row["cost_usd"] == pytest.approx(cost, rel=1e-12)

    trunc = by_key["key0007"]
    full = f"ANSWER: question {tag(7)} about the bakery"
    assert trunc["output_text"] == full[: len(full) // 2]  # the partial answer is kept
    assert json.loads(trunc["response"])["choices"][0]["finish_reason"] == "length"
    assert "not JSON" in by_key["key0005"]["error_message"]
    assert json.loads(by_key["key0005"]["response"])["status"] == 200


def test_rows_stream_into_several_atomic_parts(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        _, rows = dispatch(tmp_path, engine_cfg(fake.base_url), make_requests(20), flush_rows=8)
    parts = raw_files(tmp_path, "golden")
    assert len(parts) >= 3  # flushed as rows finished, not once at the end
    assert sum(pq.read_metadata(p).num_rows for p in parts) == 20 == len(rows)
    d = raw_dir(tmp_path, "golden", "fake")
    assert not [p for p in d.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]
    for p in parts:
        assert pq.read_schema(p).equals(RAW_SCHEMA, check_metadata=False)


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_bounded_by_config_on_the_wire(tmp_path: Path, limit: int) -> None:
    with FakeOpenAI(latency_s=0.05) as fake:
        stats, rows = dispatch(
            tmp_path, engine_cfg(fake.base_url, concurrency=limit), make_requests(24)
        )
        peak = fake.max_in_flight
    assert stats.ok == 24 and len(rows) == 24
    assert peak <= limit
    if limit > 1:
        assert peak > 1, "requests were sent one at a time"


class CountingEngine:
    """An engine without HTTP (so no pool limits) that records its own peak concurrency."""

    def __init__(self, cfg: EngineConfig) -> None:
        self.config = cfg
        self.now = 0
        self.peak = 0

    @property
    def model(self) -> str:
        return "counting"

    def identity(self) -> dict[str, Any]:
        return self.config.public()

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def complete(self, request: Request) -> Completion:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.now -= 1
        return Completion("x", {"usage": {}}, tokens_in=1, tokens_out=1)


def test_dispatcher_semaphore_alone_bounds_concurrency(tmp_path: Path) -> None:
    cfg = engine_cfg("http://unused", concurrency=5)
    engine = CountingEngine(cfg)
    writer = RawWriter(raw_dir(tmp_path, "golden", "fake"), flush_rows=1000)
    reqs = make_requests(60)
    stats = asyncio.run(
        Dispatcher(engine, writer, SEAL, progress=False).run(reqs, RunStats(requested=60))
    )
    writer.close()
    assert stats.ok == 60
    assert engine.peak == 5  # bounded, and the bound is actually used (not sequential)


def test_fault_battery_every_request_ok_or_classified(tmp_path: Path) -> None:
    n = 200
    reqs = make_requests(n)
    with FakeOpenAI(fault_rate=0.1, seed=20261129, hang_s=2.0, retry_after="0.01") as fake:
        cfg = engine_cfg(fake.base_url, concurrency=8, timeout_s=0.4, max_retries=2)
        stats, rows = dispatch(tmp_path, cfg, reqs, flush_rows=32)
        tries = tries_by_tag(fake)

    assert sorted(r["request_key"] for r in rows) == sorted(r.request_key for r in reqs)
    assert stats.ok + stats.error == n
    applied = Counter(f for seq in tries.values() for f in seq)
    assert sum(applied.values()) > n  # some retries happened
    assert len(set(applied) - {"ok"}) >= 5  # a genuinely mixed battery
    for row in rows:
        t = tag(int(row["request_key"][3:]))
        seq = tries[t]
        assert row["attempts"] == len(seq)
        last = seq[-1]
        # only transient faults are followed by another try, and at most max_retries of them
        assert all(f in TRANSIENT for f in seq[:-1]), (t, seq)
        assert len(seq) <= 3, (t, seq)
        if last == "ok":
            assert row["status"] == "ok", (t, seq, row["error_message"])
            assert row["tokens_in"] > 0 and row["tokens_out"] > 0
        else:
            assert row["status"] == "error", (t, seq)
            assert row["error_kind"] == EXPECTED_KIND[last], (t, seq)
            assert row["error_kind"] in ERROR_KINDS
            if last in TRANSIENT:  # a transient fault ends the series only when retries run out
                assert len(seq) == 3, (t, seq)
    assert stats.error == sum(1 for r in rows if r["status"] == "error")
    assert stats.error > 0


def test_no_secret_in_parquet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-live-SEALEDEVAL-CANARY-4b1d9e07c3"
    monkeypatch.setenv("FAKE_PROVIDER_KEY", secret)
    faults = {
        tag(1): ["rate_limit"],
        tag(2): ["malformed"],
        tag(3): ["reset"] * 3,
        tag(4): ["truncated"],
        tag(5): ["server"] * 3,
    }
    with FakeOpenAI(faults=faults) as fake:
        cfg = engine_cfg(fake.base_url, api_key_env="FAKE_PROVIDER_KEY")
        stats, rows = dispatch(tmp_path, cfg, make_requests(12))
        auths = {r.headers.get("authorization") for r in fake.requests}
    assert auths == {f"Bearer {secret}"}  # the key was really in use
    assert stats.error == 4 and len(rows) == 12
    for part in raw_files(tmp_path, "golden"):
        assert secret.encode() not in part.read_bytes()
    for row in rows:
        for col, value in row.items():
            assert secret not in str(value), col
            assert "sk-live" not in str(value), col


def test_multi_call_solver_rows_count_all_attempts(tmp_path: Path) -> None:
    """A two-call solver: each call may retry on its own budget; attempts sums both calls."""

    async def two_calls(engine: Any, req: Request, call: CallFn) -> SolveResult:
        first = await call(req)
        follow = {"role": "user", "content": req.messages[-1]["content"] + " second"}
        second = await call(
            Request(
                req.request_key,
                req.suite,
                req.item_id,
                req.condition,
                req.repeat,
                req.seed,
                (*req.messages, first.message, follow),
                req.params,
            )
        )
        return SolveResult(
            second,
            trajectory=[first.message, second.message],
            tokens_in=first.tokens_in + second.tokens_in,
            tokens_out=first.tokens_out + second.tokens_out,
        )

    faults = {
        f"{tag(0)} about the bakery second": ["rate_limit"],
        f"{tag(0)} about the bakery": ["server"],
    }
    with FakeOpenAI(faults=faults) as fake:
        stats, rows = dispatch(
            tmp_path, engine_cfg(fake.base_url, max_retries=1), make_requests(2), solver=two_calls
        )
        seen = fake.count()
    assert stats.ok == 2, [r["error_message"] for r in rows]
    row = {r["request_key"]: r for r in rows}["key0000"]
    assert row["attempts"] == 4 == seen - 2
    assert len(json.loads(row["trajectory"])) == 2
    assert row["tokens_in"] > 8  # both calls counted


def test_harness_bug_is_a_row_and_is_surfaced(tmp_path: Path) -> None:
    async def buggy(engine: Any, req: Request, call: CallFn) -> SolveResult:
        if req.request_key == "key0001":
            raise ZeroDivisionError("oops")
        return SolveResult(await call(req))

    with FakeOpenAI() as fake:
        stats, rows = dispatch(tmp_path, engine_cfg(fake.base_url), make_requests(4), solver=buggy)
    assert len(rows) == 4 and stats.ok == 3
    bad = {r["request_key"]: r for r in rows}["key0001"]
    assert bad["status"] == "error" and bad["error_kind"] == "harness"
    assert "ZeroDivisionError" in bad["error_message"]
    assert len(stats.bugs) == 1


def test_latest_rows_prefers_ok_over_later_errors() -> None:
    rows = [
        {"request_key": "a", "status": "error", "finished_at": "2026-01-01T00:00:01Z"},
        {"request_key": "a", "status": "ok", "finished_at": "2026-01-01T00:00:02Z"},
        {"request_key": "a", "status": "error", "finished_at": "2026-01-01T00:00:03Z"},
        {
            "request_key": "b",
            "status": "error",
            "finished_at": "2026-01-01T00:00:05Z",
            "error_kind": "server",
        },
        {
            "request_key": "b",
            "status": "error",
            "finished_at": "2026-01-01T00:00:04Z",
            "error_kind": "timeout",
        },
    ]
    best = latest_rows(rows)
    assert best["a"]["status"] == "ok"
    assert best["b"]["error_kind"] == "server"  # the latest attempt when none is ok


def test_engine_error_kinds_known_to_schema() -> None:
    for kind in set(EXPECTED_KIND.values()):
        assert kind in ERROR_KINDS
        assert EngineError(kind, "x").kind == kind


# -- the dispatcher's fast canonical JSON and the store's background writes -------------------

_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**66),  # orjson's 64-bit edge
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=1e17),  # where the float spellings change
    st.text(max_size=20),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Zl", "Co"]), max_size=6),
)
_json_tree = st.recursive(
    _json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.tuples(kids, kids),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), kids, max_size=4),
    ),
    max_leaves=25,
)


def _stdlib_compact(obj: Any) -> str:
    """The canonical format's definition, without the fast paths."""
    return json.dumps(
        normalise(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(_json_tree)
def test_compact_is_byte_identical_to_the_stdlib_definition(obj: Any) -> None:
    """``compact`` (orjson for plain trees, a reused stdlib encoder otherwise; the raw row's JSON
    columns) gives exactly the bytes of ``json.dumps(normalise(obj), ...)``."""
    try:
        expected = _stdlib_compact(obj)
    except (TypeError, ValueError) as e:  # unsortable keys, a float rounding to inf: both refuse
        with pytest.raises(type(e)):
            compact(obj)
        return
    assert compact(obj) == expected


def test_compact_fast_path_edges() -> None:
    for obj in (
        [1e-05, 1e16, 1e15, 999999999999999.9, 1e-4, 0.0, -0.0, 2**64, 2**64 - 1, -(2**63) - 1],
        {"a": "\ud800", "b": "\u2028\x7f\x00\n", "é": 1, "z": [True, None]},
        {"\ud800": 1},
        {1: "int key", "1": "str key", 0.5: "float key", None: "none key"},
    ):
        assert compact(obj) == _stdlib_compact(obj)


_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": st.text(max_size=40)}
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    _messages,
    st.dictionaries(st.text(max_size=6), _json_leaf, max_size=4),
    st.lists(st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2), max_size=2),
)
def test_request_keys_and_bodies_reuse_the_encoded_messages_exactly(
    msgs: list[dict[str, Any]], params: dict[str, Any], tools: list[dict[str, Any]]
) -> None:
    """The spliced request key is the sha256 of ``compact`` of the whole key document (keys of
    existing raw runs stay valid), ``keyed_request`` hands its encoding to the request, and the
    HTTP body is the payload, whichever way it is assembled."""
    import dataclasses
    import hashlib

    from sealedeval.keys import keyed_request, request_key

    params.pop("messages", None)
    doc = {
        "suite": "s",
        "item": "i\u00e9",
        "condition": "c",
        "repeat": 2,
        "engine": "e",
        "model": "m",
        "params": params,
        "messages": msgs,
        "tools": tools,
    }
    try:
        expected = hashlib.sha256(_stdlib_compact(doc).encode()).hexdigest()[:32]
    except (TypeError, ValueError):  # a float rounding to inf, a lone surrogate: refused
        with pytest.raises((TypeError, ValueError)):
            request_key("s", "i\u00e9", "c", 2, "e", "m", params, msgs, tools)
        return
    assert request_key("s", "i\u00e9", "c", 2, "e", "m", params, msgs, tools) == expected
    req = keyed_request("s", "i\u00e9", "c", 2, 7, "e", "m", params, msgs, tools=tools)
    assert req.request_key == expected
    assert req.__dict__["messages_json"] == _stdlib_compact(msgs) == req.messages_json
    derived = dataclasses.replace(req, messages=({"role": "user", "content": "other"},))
    assert derived.messages_json == '[{"content":"other","role":"user"}]'

    eng = OpenAIChatEngine(EngineConfig(name="e", kind="openai_chat", model="m"))
    try:
        plain = json.dumps(eng.payload(req), ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN/inf in the params: no JSON body either way
        with pytest.raises(ValueError):
            eng.body(req)
        return
    sent = eng.body(req).decode()
    assert json.loads(sent) == json.loads(plain)
    assert sent.startswith('{"messages":' + req.messages_json + ",")
    # params and tools keep their order (a response_format schema's property order is the
    # order a constrained decoder writes the fields in)
    assert [k for k in json.loads(sent) if k != "messages"] == [
        k for k in json.loads(plain) if k != "messages"
    ]
    fmt = {"type": "object", "properties": {"zeta": {}, "alpha": {}}}
    ordered = keyed_request("s", "i", "c", 0, 1, "e", "m", {"response_format": fmt}, msgs)
    assert '"properties":{"zeta":{},"alpha":{}}' in eng.body(ordered).decode()


def test_a_failed_background_write_stops_later_parts_and_surfaces_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    import sealedeval.store.raw as raw
    from sealedeval.errors import UserError

    real = raw.pq.write_table
    calls = {"n": 0}

    def write_table(table: Any, where: Any, **kw: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(table, where, **kw)

    monkeypatch.setattr(raw.pq, "write_table", write_table)
    d = raw_dir(tmp_path, "golden", "fake")
    writer = RawWriter(d, flush_rows=2)
    rows = [{c: None for c in RAW_SCHEMA.names} | {"request_key": f"k{i}"} for i in range(12)]
    with pytest.raises(UserError, match="No space left on device"):
        for r in rows:  # the failure shows up on a later append (or at the latest on flush)
            writer.append(r)
        writer.flush()
    writer.close()  # already reported: closing does not raise it again
    parts = sorted(d.glob("part-*.parquet"))
    assert [pq.read_table(p).column("request_key").to_pylist() for p in parts] == [["k0", "k1"]]
    assert not list(d.glob(".*.tmp"))


def test_part_size_doubles_up_to_max_rows(tmp_path: Path) -> None:
    d = raw_dir(tmp_path, "golden", "fake")
    writer = RawWriter(d, flush_rows=2, max_rows=8, flush_s=3600)
    for i in range(30):
        writer.append({c: None for c in RAW_SCHEMA.names} | {"request_key": f"k{i:02d}"})
    writer.close()
    parts = sorted(d.glob("part-*.parquet"))  # names carry a sequence number: write order
    sizes = [pq.read_metadata(p).num_rows for p in parts]
    assert sizes == [2, 4, 8, 8, 8]
    keys = [k for p in parts for k in pq.read_table(p).column("request_key").to_pylist()]
    assert keys == [f"k{i:02d}" for i in range(30)]  # in order, none lost or doubled


def test_latest_records_streams_the_same_rows_as_latest_rows(tmp_path: Path) -> None:
    """The streaming reader publish uses equals the dict path it replaced, row for row and in
    order: first ok per key wins, else the latest attempt; (engine, key) order."""
    import random

    from sealedeval.store.raw import RawRecord, latest_records

    rng = random.Random(7)
    d = raw_dir(tmp_path, "golden", "fake")
    writer = RawWriter(d, flush_rows=7)
    for i in range(300):
        row: dict[str, Any] = {c: "" for c in RAW_SCHEMA.names}
        row |= {
            "request_key": f"k{rng.randrange(60):03d}",
            "engine": rng.choice(["b", "a"]),
            "status": rng.choice(["ok", "error", "error"]),
            "finished_at": f"2026-01-01T00:00:{rng.randrange(30):02d}Z",
            "output_text": f"answer {i}",
            "repeat": i,
            "seed": i,
            "tokens_in": 1,
            "tokens_out": 2,
            "cost_usd": 0.5,
            "latency_s": 0.25,
            "attempts": 1,
            "sealed": True,
        }
        writer.append(row)
    writer.close()
    files = raw_files(tmp_path, "golden")
    expected = sorted(
        latest_rows(read_raw(files).to_pylist()).values(),
        key=lambda r: (r["engine"], r["request_key"]),
    )
    got = latest_records(files, batch_rows=16)
    assert all(isinstance(r, RawRecord) for r in got)
    assert [dict(r) for r in got] == expected
    assert got[0]["output_text"] == expected[0]["output_text"]
    with pytest.raises(KeyError):
        got[0]["no such column"]


def test_read_columns_after_latest_records_equals_a_fresh_read(tmp_path: Path) -> None:
    """The parts latest_records read whole are reused by read_columns in the same process:
    the same table as reading them again, and a part rewritten since is read again."""
    from sealedeval.store import raw
    from sealedeval.store.raw import latest_records, read_columns

    d = raw_dir(tmp_path, "golden", "fake")
    writer = RawWriter(d, flush_rows=5)
    for i in range(23):
        row: dict[str, Any] = {c: "" for c in RAW_SCHEMA.names}
        row |= {"request_key": f"k{i % 9}", "engine": "fake", "status": "ok", "repeat": i}
        row |= {"rubric_sha256": f"r{i % 2}", "sealed": i % 3 > 0, "seal_commit": "c"}
        row |= {"seed": i, "tokens_in": 1, "tokens_out": 2, "cost_usd": 0.5, "latency_s": 0.25}
        row |= {"attempts": 1, "finished_at": "2026-01-01T00:00:00Z"}
        writer.append(row)
    writer.close()
    files = raw_files(tmp_path, "golden")
    cols = ["engine", "sealed", "seal_commit", "rubric_sha256", "repeat"]
    raw._HELD.clear()
    fresh = read_columns(files, cols)
    latest_records(files)
    assert set(raw._HELD) == {raw._held_key(p) for p in files}
    assert read_columns(files, cols).equals(fresh)
    # a part replaced by other bytes is not served from what was held
    t = pq.read_table(files[0]).slice(0, 1)
    pq.write_table(t, files[0])
    assert read_columns(files, cols).num_rows == fresh.num_rows - (5 - 1)


def test_a_later_run_in_the_same_second_sorts_after_the_earlier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts are read in name order and a key's first ok row is final, so a run written after
    another within the same second must sort after it, whatever the random run ids."""
    from sealedeval.store import raw

    clock = iter(range(1_764_547_200_000_000_000, 1_764_547_201_000_000_000, 1_000_000))
    monkeypatch.setattr(raw.time, "time_ns", lambda: next(clock))
    d = raw_dir(tmp_path, "golden", "fake")
    for run_id in ("ffffffffffff", "000000000000"):  # the later run has the smaller id
        w = RawWriter(d, flush_rows=1, run_id=run_id)
        row: dict[str, Any] = {c: "" for c in RAW_SCHEMA.names}
        row |= {"request_key": "k", "engine": "fake", "status": "ok", "output_text": run_id}
        row |= {"seed": 0, "tokens_in": 1, "tokens_out": 2, "cost_usd": 0.0, "latency_s": 0.0}
        row |= {"attempts": 1, "repeat": 0, "sealed": True}
        w.append(row)
        w.close()
    files = raw_files(tmp_path, "golden")
    assert [f.name.split("-")[2] for f in files] == ["ffffffffffff", "000000000000"]
    assert files[0].name.startswith("part-20251201T000000000000-")
    from sealedeval.store.raw import latest_records

    assert latest_records(files)[0]["output_text"] == "ffffffffffff"
    # an older-form name of the same second sorts first
    assert files[0].name > "part-20251201T000000-zzz"
