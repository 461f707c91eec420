"""A loopback fake of Anthropic's Messages API (``POST /v1/messages``), with scripted failures.

Stdlib only, like ``openai_server``: a ``ThreadingHTTPServer`` on ``127.0.0.1`` in a daemon
thread. It speaks the documented protocol (https://docs.anthropic.com/en/api/messages,
/en/api/errors, /en/api/rate-limits, /en/docs/build-with-claude/prompt-caching) and checks what
the real API checks, so an engine that passes here sends what the real API accepts:

- ``x-api-key`` must be the server's key (else 401 ``authentication_error``) and an
  ``anthropic-version`` header must be present (else 400);
- the body: ``model`` and ``max_tokens`` required, no top-level field the API does not know
  (``seed: Extra inputs are not permitted``), ``system`` a string or text blocks, ``messages``
  starting with ``user`` and alternating, text blocks non-empty, every ``tool_use`` answered by
  a ``tool_result`` (listed first) in the next user turn naming its id, at most 4
  ``cache_control`` breakpoints, ``temperature`` in [0, 1], a forced ``tool_choice`` naming a
  tool that exists;
- answers: ``{id, type: message, role, model, content: [text | tool_use], stop_reason,
  stop_sequence, usage: {input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
  output_tokens}}``; an answer longer than ``max_tokens`` words is cut with ``stop_reason:
  max_tokens``; every response carries ``request-id`` and ``anthropic-ratelimit-*`` headers;
- prompt caching: a prefix up to a ``cache_control`` breakpoint is written on first sight
  (``cache_creation_input_tokens``) and read back by a later request with the same prefix
  (``cache_read_input_tokens``); ``input_tokens`` counts only what follows the last
  breakpoint, as the real API does. Tokens are words (deterministic).
- errors: ``{"type": "error", "error": {"type", "message"}, "request_id"}``.

Failures are scripted: ``script`` is consumed by successive requests in order, ``faults``
maps a marker to kinds consumed by requests whose first user text contains it. Kinds:
``rate_limit`` (429 with ``retry-after``), ``overloaded`` (529), ``api_error`` (500),
``bad_request`` (400), ``auth`` (401), ``permission`` (403), ``not_found`` (404),
``max_tokens`` (an answer cut at max_tokens), ``malformed`` (a 200 that is not JSON),
``reset`` (the connection dropped), ``ok``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FAULTS", "FakeAnthropic", "Recorded", "minimal_instance"]

FAULTS: tuple[str, ...] = (
    "rate_limit",
    "overloaded",
    "api_error",
    "bad_request",
    "auth",
    "permission",
    "not_found",
    "max_tokens",
    "malformed",
    "reset",
)
_VALID = frozenset((*FAULTS, "ok"))
TOP_LEVEL = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
        "stream",
    }
)
"""Top-level fields of a Messages API request (the API refuses any other)."""
MAX_BREAKPOINTS = 4
RATE_LIMIT_REQUESTS = 4000
RESET_AT = "2026-01-01T00:01:00Z"

_STATUS = {
    "rate_limit": (
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "api_error": (500, "api_error", "Internal server error"),
    "bad_request": (
        400,
        "invalid_request_error",
        "messages: text content blocks must be non-empty",
    ),
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "permission": (
        403,
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    "not_found": (404, "not_found_error", "model: claude-nonexistent"),
}

Responder = Callable[[dict[str, Any]], "str | list[dict[str, Any]]"]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    fault: str
    status: int


class InvalidRequest(Exception):
    """A request the real API would refuse with 400 ``invalid_request_error``."""


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """A small value valid under a (simple) JSON schema: what a forced tool call fills in."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0])
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: minimal_instance(props[k]) for k in schema.get("required", []) if k in props}
    if t == "array":
        n = int(schema.get("minItems", 0))
        return [minimal_instance(schema.get("items") or {}) for _ in range(n)]
    if t in ("number", "integer"):
        return schema.get("minimum", 0)
    if t == "boolean":
        return False
    if t == "null":
        return None
    return "x" * int(schema.get("minLength", 1))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(str(b.get("text", "")))
        elif b.get("type") == "tool_result":
            out.append(_text_of(b.get("content")))
        elif b.get("type") == "tool_use":
            out.append(json.dumps(b.get("input"), sort_keys=True))
    return " ".join(out)


def first_user_text(body: Mapping[str, Any]) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            return _text_of(m.get("content"))
    return ""


def last_user_text(body: Mapping[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            return " ".join(
                str(b.get("text", ""))
                for b in (
                    m["content"]
                    if isinstance(m["content"], list)
                    else [{"type": "text", "text": m["content"]}]
                )
                if b.get("type") == "text"
            )
    return ""


def default_responder(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    """A forced tool gets a minimal valid input; anything else an echo of the last user text."""
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        tool = next(t for t in body["tools"] if t["name"] == choice["name"])
        return [
            {
                "type": "tool_use",
                "name": tool["name"],
                "input": minimal_instance(tool["input_schema"]),
            }
        ]
    return "ANSWER: " + last_user_text(body)


def _words(text: str) -> int:
    return len(text.split())


def _segments(body: Mapping[str, Any]) -> list[tuple[str, int, bool]]:
    """The prompt in cache order (tools, system, messages): (canonical text, tokens, marked)."""
    out: list[tuple[str, int, bool]] = []
    for t in body.get("tools") or []:
        plain = {k: v for k, v in t.items() if k != "cache_control"}
        s = json.dumps(plain, sort_keys=True)
        out.append((s, _words(s), "cache_control" in t))
    system = body.get("system")
    if isinstance(system, str):
        out.append((system, _words(system), False))
    else:
        for b in system or []:
            out.append((b["text"], _words(b["text"]), "cache_control" in b))
    for m in body.get("messages") or []:
        content = m["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for b in blocks:
            plain = {k: v for k, v in b.items() if k != "cache_control"}
            s = m["role"] + ":" + json.dumps(plain, sort_keys=True)
            out.append((s, _words(_text_of([plain])), "cache_control" in b))
    return out


def validate(body: Any) -> None:
    """Raise ``InvalidRequest`` for what the Messages API refuses (its messages, shortened)."""
    if not isinstance(body, dict):
        raise InvalidRequest("body: Input should be a valid dictionary")
    for k in sorted(body):
        if k not in TOP_LEVEL:
            raise InvalidRequest(f"{k}: Extra inputs are not permitted")
    for k in ("model", "max_tokens", "messages"):
        if k not in body:
            raise InvalidRequest(f"{k}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        raise InvalidRequest("max_tokens: Input should be a positive integer")
    t = body.get("temperature")
    if t is not None and not 0 <= t <= 1:
        raise InvalidRequest("temperature: Input should be less than or equal to 1")
    system = body.get("system")
    if (
        system is not None
        and not isinstance(system, str)
        and (
            not isinstance(system, list)
            or any(b.get("type") != "text" or not b.get("text") for b in system)
        )
    ):
        raise InvalidRequest("system: text content blocks must be non-empty")
    msgs = body["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise InvalidRequest("messages: at least one message is required")
    if msgs[0].get("role") != "user":
        raise InvalidRequest('messages: first message must use the "user" role')
    pending: set[str] = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i and msgs[i - 1].get("role") == role:
            raise InvalidRequest('messages: roles must alternate between "user" and "assistant"')
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if pending:
            got = {b.get("tool_use_id") for b in results}
            if role != "user" or got != pending or blocks[: len(results)] != results:
                raise InvalidRequest(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    "immediately after"
                )
        elif results:
            raise InvalidRequest(
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks"
            )
        pending = set()
        for j, b in enumerate(blocks):
            kind = b.get("type")
            if kind == "text":
                if not isinstance(b.get("text"), str) or not b["text"]:
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: text content blocks must be non-empty"
                    )
            elif kind == "tool_use":
                if role != "assistant" or not isinstance(b.get("input"), dict) or not b.get("id"):
                    raise InvalidRequest(f"messages.{i}.content.{j}: invalid tool_use block")
                pending.add(str(b["id"]))
            elif kind != "tool_result":
                raise InvalidRequest(f"messages.{i}.content.{j}.type: unknown block type {kind!r}")
    marks = sum(1 for _, _, marked in _segments(body) if marked)
    if marks > MAX_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {marks}."
        )
    choice = body.get("tool_choice")
    if choice is not None:
        names = {t.get("name") for t in body.get("tools") or []}
        if choice.get("type") not in ("auto", "any", "tool", "none"):
            raise InvalidRequest("tool_choice.type: Input tag does not match the expected tags")
        if choice.get("type") == "tool" and choice.get("name") not in names:
            raise InvalidRequest(f"tool_choice: tool {choice.get('name')!r} not found in tools")
    for tool in body.get("tools") or []:
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise InvalidRequest("tools.0.input_schema.type: Input should be 'object'")


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False
    fake: FakeAnthropic


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "FakeAnthropic/1.0"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _reset(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_POST(self) -> None:
        fake = self.server.fake
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status, payload, extra = fake._handle(path, headers, body)
        if status == 0:
            self._reset()
            return
        self._send(status, payload, extra)


class FakeAnthropic:
    """Loopback Messages API. ``base_url`` is ``http://127.0.0.1:PORT`` (the engine appends
    ``/v1/messages``). ``key_in_errors`` makes error messages echo the key the client sent
    (a careless proxy), so tests can prove the engine scrubs it."""

    def __init__(
        self,
        *,
        api_key: str = "sk-ant-fake-0123456789",
        responder: Responder | None = None,
        script: Sequence[str] = (),
        faults: Mapping[str, Sequence[str]] | None = None,
        retry_after: str | None = "0",
        min_cache_tokens: int = 0,
        key_in_errors: bool = False,
        model: str = "claude-fake",
    ) -> None:
        for kind in [*script, *(k for q in (faults or {}).values() for k in q)]:
            if kind not in _VALID:
                raise ValueError(f"unknown fault {kind!r}; expected one of {FAULTS}")
        self.api_key = api_key
        self.responder = responder or default_responder
        self.script = list(script)
        self.faults = {m: list(q) for m, q in (faults or {}).items()}
        self.retry_after = retry_after
        self.min_cache_tokens = min_cache_tokens
        self.key_in_errors = key_in_errors
        self.model = model
        self.requests: list[Recorded] = []
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._n = 0
        self.port = 0
        self.base_url = ""

    def start(self) -> FakeAnthropic:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self.port = int(server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def count(self, fault: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if fault is None or r.fault == fault)

    def ok_bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.status == 200 and r.body is not None]

    # -- internals (handler threads) ----------------------------------------------------

    def _headers(self, request_id: str) -> dict[str, str]:
        with self._lock:
            remaining = max(0, RATE_LIMIT_REQUESTS - self._n)
        return {
            "request-id": request_id,
            "anthropic-ratelimit-requests-limit": str(RATE_LIMIT_REQUESTS),
            "anthropic-ratelimit-requests-remaining": str(remaining),
            "anthropic-ratelimit-requests-reset": RESET_AT,
            "anthropic-ratelimit-tokens-limit": "400000",
            "anthropic-ratelimit-tokens-remaining": "400000",
            "anthropic-ratelimit-tokens-reset": RESET_AT,
        }

    def _error(
        self, status: int, type_: str, message: str, request_id: str, extra: Mapping[str, str] = {}
    ) -> tuple[int, bytes, dict[str, str]]:
        doc = {
            "type": "error",
            "error": {"type": type_, "message": message},
            "request_id": request_id,
        }
        return status, json.dumps(doc).encode(), self._headers(request_id) | dict(extra)

    def _fault(self, body: Mapping[str, Any] | None) -> str:
        text = first_user_text(body) if isinstance(body, dict) else ""
        with self._lock:
            for marker, queue in self.faults.items():
                if marker in text and queue:
                    return queue.pop(0)
            if self.script:
                return self.script.pop(0)
        return "ok"

    def _handle(
        self, path: str, headers: dict[str, str], body: Any
    ) -> tuple[int, bytes, dict[str, str]]:
        with self._lock:
            self._n += 1
            request_id = f"req_fake{self._n:06d}"

        def record(fault: str, status: int) -> None:
            with self._lock:
                self.requests.append(
                    Recorded(path, headers, body if isinstance(body, dict) else None, fault, status)
                )

        sent_key = headers.get("x-api-key", "")
        if path != "/v1/messages":
            record("error", 404)
            return self._error(404, "not_found_error", f"Not found: {path}", request_id)
        if sent_key != self.api_key:
            record("error", 401)
            msg = "invalid x-api-key" + (f" {sent_key!r}" if self.key_in_errors else "")
            return self._error(401, "authentication_error", msg, request_id)
        if not headers.get("anthropic-version"):
            record("error", 400)
            return self._error(
                400, "invalid_request_error", "anthropic-version: header is required", request_id
            )
        try:
            validate(body)
        except InvalidRequest as e:
            record("error", 400)
            return self._error(400, "invalid_request_error", str(e), request_id)
        fault = self._fault(body)
        if fault in _STATUS:
            status, type_, message = _STATUS[fault]
            if self.key_in_errors:
                message += f" (key {sent_key})"
            extra = (
                {"retry-after": self.retry_after}
                if fault == "rate_limit" and self.retry_after is not None
                else {}
            )
            record(fault, status)
            return self._error(status, type_, message, request_id, extra)
        if fault == "reset":
            record(fault, 0)
            return 0, b"", {}
        if fault == "malformed":
            record(fault, 200)
            return 200, b'{"type": "message", "content": [', self._headers(request_id)
        try:
            message = self._message(body, request_id, cut=fault == "max_tokens")
        except Exception as e:  # a broken responder is a 500 the test sees
            record("error", 500)
            return self._error(500, "api_error", f"responder failed: {e!r}", request_id)
        record(fault, 200)
        return 200, json.dumps(message).encode(), self._headers(request_id)

    def _usage(self, body: Mapping[str, Any]) -> dict[str, int]:
        segs = _segments(body)
        total = sum(n for _, n, _ in segs)
        h = hashlib.sha256(str(body.get("model")).encode())
        prefix: list[tuple[int, str, int]] = []  # (segment index, prefix hash, prefix tokens)
        upto = 0
        for i, (text, n, marked) in enumerate(segs):
            h.update(b"\x00" + text.encode())
            upto += n
            if marked:
                prefix.append((i, h.hexdigest(), upto))
        read = write = 0
        with self._lock:
            hits = [p for p in prefix if p[1] in self._cache]
            if hits:
                read = hits[-1][2]
            if prefix and prefix[-1][2] >= self.min_cache_tokens:
                last = prefix[-1]
                if last[1] not in self._cache:
                    write = last[2] - read
                for p in prefix:
                    if p[2] >= self.min_cache_tokens:
                        self._cache.add(p[1])
        return {
            "input_tokens": total - read - write,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }

    def _message(self, body: dict[str, Any], request_id: str, *, cut: bool) -> dict[str, Any]:
        reply = self.responder(body)
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": reply}]
            if isinstance(reply, str)
            else [dict(b) for b in reply]
        )
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use" and "id" not in b:
                b["id"] = f"toolu_{request_id[-6:]}{i:02d}"
        limit = int(body["max_tokens"])
        words = 0
        out: list[dict[str, Any]] = []
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        for b in blocks:
            n = _words(b.get("text", "")) if b["type"] == "text" else _words(_text_of([b]))
            if words + n > limit or cut:
                stop = "max_tokens"
                if b["type"] == "text":
                    keep = b["text"].split()[: max(0, min(limit - words, n // 2 if cut else n))]
                    if keep:
                        out.append({"type": "text", "text": " ".join(keep)})
                        words += len(keep)
                break
            out.append(b)
            words += n
        return {
            "id": "msg_"
            + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24],
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": out,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(body) | {"output_tokens": words},
        }


if __name__ == "__main__":  # pragma: no cover - a manual smoke run
    with FakeAnthropic() as fake:
        print(f"PORT {fake.port}", flush=True)
        threading.Event().wait(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
