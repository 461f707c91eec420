"""engines.http1, the HTTP/1.1 client of chat calls on http:// URLs, against scripted servers.

Each test serves raw response bytes from a loopback asyncio server (so framing, split reads,
closes and hangs are exactly what the test says) and checks what ``Http1Pool.post`` returns or
raises; one runs a real ASGI server (uvicorn) to check the client against a server we did not
write. The engines' fault tests (test_openai_chat_engine.py, test_anthropic_engine.py) run over
this client too, for the error kinds.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.config import EngineConfig
from sealedeval.engines.base import EngineError
from sealedeval.engines.http import transport_error
from sealedeval.engines.http1 import Http1Pool, ProtocolError, ServerDisconnected
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.errors import UserError

Handler = Callable[[int, bytes, asyncio.StreamWriter], Awaitable[bool]]
"""(connection number, request bytes, writer) → keep the connection open for another request."""


@dataclass
class Seen:
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    open_now: int = 0
    most_open: int = 0


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(n)


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        seen.open_now += 1
        seen.most_open = max(seen.most_open, seen.open_now)
        number = seen.connections
        try:
            while True:
                req = await _read_request(reader)
                if req is None:
                    break
                seen.requests.append(req)
                if not await handler(number, req, writer):
                    break
        finally:
            seen.open_now -= 1
            writer.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions", seen
    finally:
        server.close()


def respond(body: bytes, *extra: str, status: str = "200 OK", version: str = "1.1") -> bytes:
    head = [f"HTTP/{version} {status}", "content-type: application/json", *extra]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in extra):
        head.append(f"content-length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(body: bytes, sizes: list[int]) -> bytes:
    out, i = b"", 0
    for n in sizes:
        part = body[i : i + n]
        if not part:
            break
        out += f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n"
        i += len(part)
    if i < len(body):
        out += f"{len(body) - i:x}\r\n".encode() + body[i:] + b"\r\n"
    return out + b"0\r\nx-trailer: t\r\n\r\n"


def pool(url: str, **kw: Any) -> Http1Pool:
    opts: dict[str, Any] = {"limit": 4, "connect_timeout": 5.0, "read_timeout": 5.0} | kw
    return Http1Pool(url, {"content-type": "application/json"}, **opts)


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


BODY = json.dumps({"choices": [{"message": {"content": "ANSWER: 42"}}]}).encode()


def always(data: bytes, keep: bool = True) -> Handler:
    async def handler(_n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(data)
        await w.drain()
        return keep

    return handler


def test_request_bytes_and_keep_alive_reuse() -> None:
    async def go() -> None:
        resp = respond(BODY, "x-rate: a", "X-Rate: b", "Retry-After: 3")
        async with serve(always(resp)) as (url, seen):
            p = pool(url)
            try:
                first = await p.post(b'{"a":1}')
                second = await p.post(b'{"b":22}')
            finally:
                await p.close()
        assert first.status == second.status == 200
        assert first.content == second.content == BODY
        assert first.headers["x-rate"] == "a, b"  # names lower-cased, repeats joined
        assert first.headers["retry-after"] == "3"
        assert seen.connections == 1  # the second call reused the first's connection
        head, _, body = seen.requests[1].partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert lines[0] == b"POST /v1/chat/completions HTTP/1.1"
        fields = dict(line.split(b": ", 1) for line in lines[1:])
        assert fields[b"host"] == url.split("/")[2].encode()
        assert fields[b"content-length"] == b"8" and body == b'{"b":22}'
        assert fields[b"content-type"] == b"application/json"
        assert fields[b"accept-encoding"] == b"identity"

    run(go())


def test_chunked_with_extensions_and_trailers() -> None:
    async def go() -> None:
        data = respond(chunked(BODY, [1, 7, 3]), "transfer-encoding: chunked")
        async with serve(always(data)) as (url, seen):
            p = pool(url)
            try:
                got = [await p.post(b"{}") for _ in range(2)]
            finally:
                await p.close()
        assert [g.content for g in got] == [BODY, BODY]
        assert seen.connections == 1

    run(go())


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda b: zlib.compress(b, wbits=-zlib.MAX_WBITS)),  # raw, as some send
        ("identity", lambda b: b),
    ],
)
def test_content_encodings_decoded(coding: str, encode: Callable[[bytes], bytes]) -> None:
    async def go() -> None:
        async with serve(always(respond(encode(BODY), f"content-encoding: {coding}"))) as (
            url,
            _,
        ):
            p = pool(url)
            try:
                assert (await p.post(b"{}")).content == BODY
            finally:
                await p.close()

    run(go())


def test_unknown_content_encoding_is_a_protocol_error() -> None:
    async def go() -> None:
        async with serve(always(respond(b"xx", "content-encoding: br"))) as (url, _):
            p = pool(url)
            try:
                with pytest.raises(ProtocolError, match="content-encoding 'br'"):
                    await p.post(b"{}")
            finally:
                await p.close()

    run(go())


def test_interim_100_is_skipped() -> None:
    async def go() -> None:
        data = b"HTTP/1.1 100 Continue\r\n\r\n" + respond(BODY)
        async with serve(always(data)) as (url, _):
            p = pool(url)
            try:
                r = await p.post(b"{}")
            finally:
                await p.close()
        assert (r.status, r.content) == (200, BODY)

    run(go())


def test_body_until_close_and_connection_close_are_not_reused() -> None:
    async def go() -> None:
        n = [0]

        async def handler(_n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
            n[0] += 1
            if n[0] == 1:  # HTTP/1.0, no length: the body ends with the connection
                w.write(b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + BODY)
                await w.drain()
                return False
            # said close but kept open: a client that reused it would be answered here again
            w.write(respond(BODY, "connection: close"))
            await w.drain()
            return True

        async with serve(handler) as (url, seen):
            p = pool(url)
            try:
                got = [await p.post(b"{}") for _ in range(3)]
            finally:
                await p.close()
        assert [g.content for g in got] == [BODY] * 3
        assert seen.connections == 3

    run(go())


def test_bytes_after_a_response_retire_the_connection() -> None:
    """A server that sent more than one response's bytes cannot be trusted with the next."""

    async def go() -> None:
        async with serve(always(respond(BODY) + b"HTTP/1.1 200 OK\r\n")) as (url, seen):
            p = pool(url)
            try:
                got = [await p.post(b"{}") for _ in range(2)]
            finally:
                await p.close()
        assert [g.content for g in got] == [BODY] * 2
        assert seen.connections == 2

    run(go())


def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    async def go() -> None:
        async with serve(always(respond(BODY), keep=False)) as (url, seen):
            p = pool(url, limit=1)
            try:
                got = []
                for _ in range(3):
                    got.append(await p.post(b"{}"))
                    await asyncio.sleep(0.05)  # the server's close reaches the client
            finally:
                await p.close()
        assert [g.content for g in got] == [BODY] * 3
        assert seen.connections == 3
        assert len(seen.requests) == 3  # each request reached the server once

    run(go())


def test_a_response_cut_short_is_raised_not_retried() -> None:
    async def go() -> None:
        cut = respond(BODY)[:-5]
        async with serve(always(cut, keep=False)) as (url, seen):
            p = pool(url)
            try:
                with pytest.raises(ServerDisconnected) as ei:
                    await p.post(b"{}")
            finally:
                await p.close()
        assert len(seen.requests) == 1
        err = transport_error(ei.value, 5.0)
        assert isinstance(err, EngineError) and err.kind == "connection"

    run(go())


def test_read_timeout_counts_from_the_last_byte() -> None:
    async def go() -> None:
        async def slow(_n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
            data = respond(BODY)
            for i in range(0, len(data), 10):  # a byte run every 0.15 s: never 0.4 s silent
                w.write(data[i : i + 10])
                await w.drain()
                await asyncio.sleep(0.15)
            return True

        async def hang(_n: int, _req: bytes, _w: asyncio.StreamWriter) -> bool:
            await asyncio.sleep(30)
            return False

        async with serve(slow) as (url, _):
            p = pool(url, read_timeout=0.4)
            try:
                assert (await p.post(b"{}")).content == BODY  # > 0.4 s in all, but trickling
            finally:
                await p.close()
        async with serve(hang) as (url, _):
            p = pool(url, read_timeout=0.4)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            try:
                with pytest.raises(TimeoutError):
                    await p.post(b"{}")
            finally:
                await p.close()
            assert 0.35 <= loop.time() - t0 < 2.0
        assert transport_error(TimeoutError("x"), 0.4).kind == "timeout"

    run(go())


@pytest.mark.parametrize(
    "garbage",
    [
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded: header\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 3, 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ],
)
def test_garbled_responses_are_protocol_errors(garbage: bytes) -> None:
    async def go() -> None:
        async with serve(always(garbage)) as (url, _):
            p = pool(url)
            try:
                with pytest.raises(ProtocolError) as ei:
                    await p.post(b"{}")
            finally:
                await p.close()
        assert transport_error(ei.value, 5.0).kind == "connection"

    run(go())


def test_limit_bounds_open_connections() -> None:
    async def go() -> None:
        async def slowish(_n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
            await asyncio.sleep(0.02)
            w.write(respond(BODY))
            await w.drain()
            return True

        async with serve(slowish) as (url, seen):
            p = pool(url, limit=2)
            try:
                got = await asyncio.gather(*(p.post(b"{}") for _ in range(9)))
            finally:
                await p.close()
        assert [g.content for g in got] == [BODY] * 9
        assert seen.most_open <= 2 and seen.connections <= 2

    run(go())


def test_a_cancelled_call_drops_its_connection() -> None:
    async def go() -> None:
        async def first_hangs(n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
            if n == 1:
                await asyncio.sleep(30)
                return False
            w.write(respond(BODY))
            await w.drain()
            return True

        async with serve(first_hangs) as (url, seen):
            p = pool(url, limit=1)
            try:
                task = asyncio.ensure_future(p.post(b"{}"))
                await asyncio.sleep(0.1)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                r = await p.post(b"{}")  # a new connection: the old one may still answer
            finally:
                await p.close()
        assert r.content == BODY and seen.connections == 2

    run(go())


def test_refused_is_a_connection_error_the_engines_call_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the call: nothing listens

    async def go() -> None:
        p = pool(f"http://127.0.0.1:{port}/v1")
        try:
            with pytest.raises(OSError) as ei:
                await p.post(b"{}")
        finally:
            await p.close()
        err = transport_error(ei.value, 5.0)
        assert err.kind == "connection" and err.unreachable == "connection refused"

    run(go())


def test_header_line_breaks_are_refused_before_any_call() -> None:
    with pytest.raises(UserError, match="line break"):
        Http1Pool("http://127.0.0.1:9/v1", {"authorization": "Bearer a\r\nx: y"}, limit=1,
                  connect_timeout=1, read_timeout=1)  # fmt: skip
    with pytest.raises(ValueError, match="plain http"):
        Http1Pool("https://example.org/v1", {}, limit=1, connect_timeout=1, read_timeout=1)


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(max_size=300),
    cuts=st.lists(st.integers(min_value=1, max_value=40), max_size=12),
    sizes=st.lists(st.integers(min_value=1, max_value=50), max_size=6),
    framing=st.sampled_from(["length", "chunked"]),
)
def test_any_split_of_the_bytes_gives_the_same_body(
    body: bytes, cuts: list[int], sizes: list[int], framing: str
) -> None:
    """Whatever way the response arrives in pieces, the body is the one that was sent."""
    data = (
        respond(body)
        if framing == "length"
        else respond(chunked(body, sizes), "transfer-encoding: chunked")
    )

    async def handler(_n: int, _req: bytes, w: asyncio.StreamWriter) -> bool:
        i = 0
        for c in [*cuts, len(data)]:
            w.write(data[i : i + c])
            await w.drain()
            await asyncio.sleep(0)
            i += c
        w.write(data[i:])
        await w.drain()
        return True

    async def go() -> None:
        async with serve(handler) as (url, _):
            p = pool(url)
            try:
                assert (await p.post(b"{}")).content == body
                assert (await p.post(b"{}")).content == body
            finally:
                await p.close()

    run(go())


@contextmanager
def uvicorn_server(app: Callable[..., Awaitable[None]]) -> Iterator[str]:
    """A real ASGI server (uvicorn, h11) on a loopback port, in a thread."""
    uvicorn = pytest.importorskip("uvicorn")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", http="h11", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.02)
        yield f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_against_a_real_asgi_server() -> None:
    """uvicorn answers with Content-Length, and streams chunked when the app does not say."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        reply = json.dumps({"echo": json.loads(body), "path": scope["path"]}).encode()
        if json.loads(body).get("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for i in range(0, len(reply), 7):
                await send({"type": "http.response.body", "body": reply[i : i + 7],
                            "more_body": True})  # fmt: skip
            await send({"type": "http.response.body", "body": b""})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 429 if json.loads(body).get("limit") else 200,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"2")],
            }
        )
        await send({"type": "http.response.body", "body": reply})

    async def go(url: str) -> None:
        p = pool(url, limit=3)
        try:
            docs = [{"i": i, "stream": i % 2 == 1, "limit": i == 4} for i in range(12)]
            got = await asyncio.gather(*(p.post(json.dumps(d).encode()) for d in docs))
        finally:
            await p.close()
        for d, r in zip(docs, got, strict=True):
            assert json.loads(r.content) == {"echo": d, "path": "/v1/chat/completions"}
            assert r.status == (429 if d["limit"] else 200)
        assert got[4].headers["retry-after"] == "2"
        assert "chunked" in got[1].headers.get("transfer-encoding", "")

    with uvicorn_server(app) as url:
        asyncio.run(go(url))


def test_waiting_for_a_free_connection_is_bounded_by_the_connect_timeout() -> None:
    async def go() -> None:
        async def hang(_n: int, _req: bytes, _w: asyncio.StreamWriter) -> bool:
            await asyncio.sleep(30)
            return False

        async with serve(hang) as (url, seen):
            p = pool(url, limit=1, connect_timeout=0.2, read_timeout=10)
            try:
                first = asyncio.ensure_future(p.post(b"{}"))
                await asyncio.sleep(0.05)
                with pytest.raises(TimeoutError, match="no free connection"):
                    await p.post(b"{}")
                first.cancel()
            finally:
                await p.close()
        assert seen.connections == 1

    run(go())


@pytest.mark.parametrize(
    ("url", "choice", "used"),
    [
        ("http://127.0.0.1:9/v1", "auto", "http1"),
        ("https://127.0.0.1:9/v1", "auto", "aiohttp"),
        ("http://127.0.0.1:9/v1", "aiohttp", "aiohttp"),
        ("http://127.0.0.1:9/v1", "httpx", "httpx"),
    ],
)
def test_http_client_option_picks_the_client(url: str, choice: str, used: str) -> None:
    """``http_client`` (docs/engines.md, The HTTP client) decides which client sends the calls."""

    async def go() -> str:
        eng = OpenAIChatEngine(
            EngineConfig(
                name="e", kind="openai_chat", model="m", base_url=url, extra={"http_client": choice}
            )
        )
        await eng.start()
        try:
            if eng._pool is not None:
                return "http1"
            return "aiohttp" if eng._session is not None else "httpx"
        finally:
            await eng.close()

    assert asyncio.run(go()) == used
