"""A small HTTP/1.1 client for engines on plain-HTTP endpoints (local and LAN model servers).

Why not aiohttp here: against a fast local server (llama.cpp, vLLM, Ollama on loopback or a
LAN) the client's own CPU per call is what caps calls/s on a small machine, and aiohttp spends
~70 µs of it per POST on machinery an engine call does not use (cookie jars, tracing, request
and response objects, multidicts, per-request timers): ``benchmarks/dispatch.py`` measures this
client at about 3× aiohttp's calls/s against the same server. It does only what an engine call
needs: keep-alive connections up to a limit, one POST at a time on each, a response framed by
``Content-Length``, chunked transfer coding or the connection's end, ``gzip``/``deflate``
bodies, a connect timeout and a read timeout that counts from the last byte received.

It is not used for ``https://`` URLs: hosted APIs answer in hundreds of milliseconds, so their
client's CPU does not matter, and aiohttp's TLS handling stays. Failures are the exceptions the
engines already classify (``engines.http.transport_error``): ``TimeoutError`` for timeouts,
``ConnectionError`` subclasses (``OSError``) for refused, reset or garbled exchanges.
"""

from __future__ import annotations

import asyncio
import collections
import zlib
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from sealedeval.errors import UserError

SWEEP_MIN_S: Final = 0.05
SWEEP_MAX_S: Final = 1.0
"""How often busy connections are checked for a read timeout: a tenth of the timeout, within
these bounds (one timer per pool, not one per call; a timeout fires at most a tenth late)."""

_NO_BODY_STATUS: Final = frozenset({204, 304})
_MAX_HEAD: Final = 1 << 20
"""A response head longer than this (1 MiB) is not HTTP from a model server."""


class Response(NamedTuple):
    status: int
    headers: Mapping[str, str]
    """Lower-case names; a repeated header's values joined by ", "."""
    content: bytes


class ProtocolError(ConnectionError):
    """The server's bytes are not an HTTP/1.x response we can frame."""


class ServerDisconnected(ConnectionResetError):
    """The connection ended before the response did."""


def _decode(body: bytes, coding: str) -> bytes:
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":  # zlib-wrapped as the RFC says, raw deflate as some servers send
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as e:
        raise ProtocolError(f"cannot decode {coding} body: {e}") from e
    raise ProtocolError(f"unsupported content-encoding {coding!r}")


class _Conn(asyncio.Protocol):
    """One keep-alive connection; at most one exchange at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.last = 0.0
        self.waiter: asyncio.Future[Response] | None = None
        self.buf = bytearray()
        self.head_scan = 0
        self.status = 0
        self.headers: dict[str, str] = {}
        self.framing = ""  # "" (reading the head), "length", "chunked", "close"
        self.length = 0
        self.keep_alive = True
        self.chunks: list[bytes] = []
        self.chunk_left = -1

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():
            self.abort()  # bytes nobody asked for: the connection cannot be trusted again
            return
        self.last = self.loop.time()
        self.buf += data
        try:
            self._parse()
        except ProtocolError as e:
            self._fail(e)

    def eof_received(self) -> bool:
        self._ended(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended(exc)

    # -- the exchange ----------------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[Response]:
        self.waiter = self.loop.create_future()
        self.framing = ""
        self.head_scan = 0
        self.last = self.loop.time()
        assert self.transport is not None
        self.transport.write(request)
        return self.waiter

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, e: BaseException) -> None:
        self.keep_alive = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(e)
        self.abort()

    def _done(self, body: bytes) -> None:
        if self.buf:  # bytes after the response: a server that answered twice
            self.keep_alive = False
        coding = self.headers.get("content-encoding", "")
        if coding:
            try:
                body = _decode(body, coding)
            except ProtocolError as e:
                self._fail(e)
                return
        assert self.waiter is not None
        self.waiter.set_result(Response(self.status, self.headers, body))

    def _ended(self, exc: Exception | None) -> None:
        self.closed = True
        self.keep_alive = False
        w = self.waiter
        if w is None or w.done():
            return
        if self.framing == "close":  # the end of the connection is the end of the body
            self._done(bytes(self.buf))
            self.buf.clear()
            return
        why = f": {exc}" if exc is not None else ""
        w.set_exception(ServerDisconnected(f"server closed the connection mid-response{why}"))

    def _parse(self) -> None:
        buf = self.buf
        while not self.framing:
            end = buf.find(b"\r\n\r\n", self.head_scan)
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise ProtocolError("response head longer than 1 MiB")
                self.head_scan = max(0, len(buf) - 3)
                return
            head = bytes(buf[:end])
            del buf[: end + 4]
            self.head_scan = 0
            if self._head(head):
                break  # a final response; 1xx heads are skipped and the next one read
        if self.framing == "length":
            n = self.length
            if len(buf) >= n:
                body = bytes(buf[:n])
                del buf[:n]
                self._done(body)
        elif self.framing == "chunked":
            self._chunked()

    def _head(self, head: bytes) -> bool:
        """Parse a response head; False for an interim (1xx) response."""
        lines = head.split(b"\r\n")
        first = lines[0]
        if (
            not first.startswith(b"HTTP/1.")
            or first[8:9] != b" "
            or len(first) < 12
            or first[12:13] not in (b"", b" ")
        ):
            raise ProtocolError(f"not an HTTP/1.x status line: {first[:80]!r}")
        try:
            status = int(first[9:12])
        except ValueError:
            raise ProtocolError(f"bad status line: {first[:80]!r}") from None
        if 100 <= status < 200:
            if status == 101:
                raise ProtocolError("server switched protocols")
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name != name.strip():
                raise ProtocolError(f"bad header line: {line[:80]!r}")
            k = name.decode("latin-1").lower()
            v = value.strip().decode("latin-1")
            headers[k] = f"{headers[k]}, {v}" if k in headers else v
        self.status, self.headers = status, headers
        conn = headers.get("connection", "").lower()
        self.keep_alive = first[7:8] == b"1" and "close" not in conn
        te = headers.get("transfer-encoding", "").lower()
        if status in _NO_BODY_STATUS:
            self.framing, self.length = "length", 0
        elif te:
            if te.rsplit(",", 1)[-1].strip() != "chunked":
                raise ProtocolError(f"unsupported transfer-encoding {te!r}")
            self.framing, self.chunk_left, self.chunks = "chunked", -1, []
        elif "content-length" in headers:
            cl = headers["content-length"]
            values = {x.strip() for x in cl.split(",")}  # repeated identical values are allowed
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise ProtocolError(f"bad content-length {cl!r}")
            self.framing, self.length = "length", int(next(iter(values)))
        else:
            self.framing, self.keep_alive = "close", False
        return True

    def _chunked(self) -> None:
        buf = self.buf
        while True:
            if self.chunk_left < 0:  # at a size line
                eol = buf.find(b"\r\n")
                if eol < 0:
                    return
                size_text = bytes(buf[:eol]).split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
                if size == 0:  # the last chunk: trailers until an empty line
                    if buf[eol : eol + 4] == b"\r\n\r\n":
                        del buf[: eol + 4]
                    else:
                        end = buf.find(b"\r\n\r\n", eol)
                        if end < 0:
                            return
                        del buf[: end + 4]
                    body = b"".join(self.chunks)
                    self.chunks = []
                    self._done(body)
                    return
                del buf[: eol + 2]
                self.chunk_left = size
            if len(buf) < self.chunk_left + 2:
                return
            if buf[self.chunk_left : self.chunk_left + 2] != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")
            self.chunks.append(bytes(buf[: self.chunk_left]))
            del buf[: self.chunk_left + 2]
            self.chunk_left = -1


class Http1Pool:
    """Keep-alive connections to one ``http://`` origin, at most ``limit`` open at once.

    ``post(body)`` sends one POST to the URL's path with the pool's headers. An idle connection
    the server has closed is not used again; a failure during the exchange is raised, never
    retried here: a reset before any byte may still be a request the server worked on, and the
    engine's retry policy counts and spaces the attempts (as it does over aiohttp, which does
    not re-send a POST either).
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        limit: int,
        connect_timeout: float,
        read_timeout: float,
    ) -> None:
        u = urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"{url}: Http1Pool speaks plain http:// only")
        self.host = u.hostname
        self.port = u.port or 80
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        host = f"[{self.host}]" if ":" in self.host else self.host
        authority = host if self.port == 80 else f"{host}:{self.port}"
        fields = {"host": authority, "accept-encoding": "identity"}
        fields.update({k.lower(): v for k, v in headers.items()})
        for k, v in fields.items():
            if any(c in k + v for c in "\r\n\0"):
                raise UserError(f"{url}: HTTP header {k!r} holds a line break or NUL")
        lines = "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        self._head = f"POST {path} HTTP/1.1\r\n{lines}content-length: ".encode("latin-1")
        self.limit = max(1, limit)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._idle: list[_Conn] = []
        self._busy: set[_Conn] = set()
        self._open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False

    async def post(self, body: bytes) -> Response:
        request = self._head + b"%d\r\n\r\n" % len(body) + body
        conn = await self._acquire()
        if self._sweeper is None:
            self._schedule_sweep(asyncio.get_running_loop())
        try:
            resp = await conn.send(request)
        except BaseException:
            conn.abort()
            self._release(conn)
            raise
        self._release(conn)
        return resp

    def _take_idle(self) -> _Conn | None:
        """The most recently used idle connection still open (closed ones are forgotten)."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                self._busy.add(conn)
                return conn
            self._open -= 1
        return None

    async def _acquire(self) -> _Conn:
        conn = self._take_idle()
        if conn is not None:
            return conn
        while self._open >= self.limit:
            w = asyncio.get_running_loop().create_future()
            self._waiters.append(w)
            try:
                await asyncio.wait_for(w, self.connect_timeout)
            except BaseException as e:
                if w.done() and not w.cancelled():
                    self._wake()  # woken, but leaving: pass the turn on
                if isinstance(e, TimeoutError):
                    raise TimeoutError("no free connection within the connect timeout") from None
                raise
            finally:
                if w in self._waiters:
                    self._waiters.remove(w)
            conn = self._take_idle()
            if conn is not None:
                return conn
        self._open += 1
        loop = asyncio.get_running_loop()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(lambda: _Conn(loop), self.host, self.port),
                self.connect_timeout,
            )
        except BaseException:
            self._open -= 1
            self._wake()
            raise
        self._busy.add(proto)
        return proto

    def _release(self, conn: _Conn) -> None:
        if conn not in self._busy:
            return
        self._busy.discard(conn)
        conn.waiter = None
        if conn.closed or not conn.keep_alive or self._closed:
            if not conn.closed:
                conn.abort()
            self._open -= 1
        else:
            self._idle.append(conn)
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def _schedule_sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        every = min(SWEEP_MAX_S, max(SWEEP_MIN_S, self.read_timeout / 10))
        self._sweeper = loop.call_later(every, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fail every exchange that received nothing for ``read_timeout`` seconds."""
        now = loop.time()
        for conn in list(self._busy):
            w = conn.waiter
            if w is not None and not w.done() and now - conn.last >= self.read_timeout:
                conn._fail(TimeoutError(f"no response bytes for {self.read_timeout:g} s"))
        self._sweeper = None
        if self._busy and not self._closed:  # post() starts it again when needed
            self._schedule_sweep(loop)

    async def close(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in self._idle + list(self._busy):
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
        self._open = len(self._busy)
