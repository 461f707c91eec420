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

Message Batches (https://docs.anthropic.com/en/api/creating-message-batches and the pages
beside it): create, retrieve (each poll may end it), results, cancel and list
(``GET /v1/messages/batches``: newest first, ``limit`` 1 to 1000, default 20, cursors
``after_id`` / ``before_id``, pages ``{data, has_more, first_id, last_id}``). A batch carries
no metadata of its creator's: the create body is ``{requests}`` only, and a listed batch shows
its id, status, times and ``request_counts``, never its requests' ``custom_id``s (those are in
the results, once the batch has ended). ``batch_create_faults`` and ``batch_create_hold`` lose
the answer of a create the fake accepted (the batch exists and runs).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import struct
import sys
import threading
import urllib.parse
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
EXPIRED = "expired"
"""A fault only Message Batches show: the request's result is ``expired`` (live: answered)."""
_VALID = frozenset((*FAULTS, "ok", EXPIRED))

BATCH_MAX_REQUESTS = 100_000
BATCH_MAX_BYTES = 256 * 1024 * 1024
"""A Message Batch holds at most 100,000 requests or 256 MB
(https://docs.anthropic.com/en/docs/build-with-claude/batch-processing#batch-limitations)."""
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCHES = "/v1/messages/batches"
LIST_LIMIT_MAX = 1000
LIST_LIMIT_DEFAULT = 20
"""``GET /v1/messages/batches``: "Defaults to 20. Ranges from 1 to 1000"
(https://docs.anthropic.com/en/api/listing-message-batches)."""
CREATE_FAULTS = ("reset", "bad_gateway", "ok")
"""What ``batch_create_faults`` can do to a create the fake accepted: ``reset`` drops the
connection before the answer, ``bad_gateway`` answers a proxy's HTML 502, ``ok`` answers."""
_BAD_GATEWAY = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
    b"<body><h1>502 Bad Gateway</h1></body></html>\n"
)
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
            self.send_header("Content-Type", headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            for k, v in headers.items():
                if k != "content-type":
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

    def do_GET(self) -> None:
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra = fake._handle_get(self.path, headers)
        if extra.get("content-type") == "application/binary":
            extra = {k: v for k, v in extra.items() if k != "content-type"}
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/binary")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                self.close_connection = True
            return
        self._send(status, payload, extra)

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
        batch_polls: int = 1,
        batch_max_requests: int = BATCH_MAX_REQUESTS,
        batch_max_bytes: int = BATCH_MAX_BYTES,
        batch_create_faults: Sequence[str] = (),
    ) -> None:
        for kind in [*script, *(k for q in (faults or {}).values() for k in q)]:
            if kind not in _VALID:
                raise ValueError(f"unknown fault {kind!r}; expected one of {FAULTS}")
        for kind in batch_create_faults:
            if kind not in CREATE_FAULTS:
                raise ValueError(f"unknown create fault {kind!r}; expected one of {CREATE_FAULTS}")
        self.api_key = api_key
        self.responder = responder or default_responder
        self.script = list(script)
        self.faults = {m: list(q) for m, q in (faults or {}).items()}
        self.retry_after = retry_after
        self.min_cache_tokens = min_cache_tokens
        self.key_in_errors = key_in_errors
        self.model = model
        self.batch_polls = batch_polls
        self.batch_max_requests = batch_max_requests
        self.batch_max_bytes = batch_max_bytes
        self.batch_hold = threading.Event()
        """While set, no batch ends (a test kills its client meanwhile)."""
        self.batch_create_faults = list(batch_create_faults)
        """What happens to the answer of each accepted create, in order (``CREATE_FAULTS``;
        answered normally once the list is used up)."""
        self.batch_create_hold = threading.Event()
        """While set, an accepted create gets no answer until it is cleared (then its
        connection is reset): the batch exists, its creator never learns the id."""
        self._stopping = threading.Event()
        self.batches: dict[str, dict[str, Any]] = {}
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
        self._stopping.set()
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
        if path.startswith(BATCHES):
            return self._batch_post(path, headers, body, request_id, record)
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

    # -- Message Batches -------------------------------------------------------------------

    def batch_creates(self) -> int:
        """Batches the fake accepted (created), whether or not their creator got the answer:
        what the provider would bill."""
        with self._lock:
            return len(self.batches)

    def _auth_error(
        self, headers: Mapping[str, str], request_id: str
    ) -> tuple[int, bytes, dict[str, str]] | None:
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        # the official client (anthropic 2.x) sends the key as a bearer token, the engine as
        # x-api-key: the batch endpoints take either
        if self.api_key not in (headers.get("x-api-key", ""), bearer):
            return self._error(401, "authentication_error", "invalid x-api-key", request_id)
        if not headers.get("anthropic-version"):
            return self._error(
                400, "invalid_request_error", "anthropic-version: header is required", request_id
            )
        return None

    def _batch_post(
        self,
        path: str,
        headers: dict[str, str],
        body: Any,
        request_id: str,
        record: Callable[[str, int], None],
    ) -> tuple[int, bytes, dict[str, str]]:
        """``POST /v1/messages/batches`` (create) and ``.../{id}/cancel``."""
        refused = self._auth_error(headers, request_id)
        if refused is not None:
            record("error", refused[0])
            return refused
        if path.endswith("/cancel"):
            with self._lock:
                b = self.batches.get(path.split("/")[4])
                if b is not None and b["processing_status"] == "in_progress":
                    b["processing_status"] = "canceling"
                    b["cancel_initiated_at"] = RESET_AT
            record("ok" if b else "error", 200 if b else 404)
            if b is None:
                return self._error(404, "not_found_error", f"Not found: {path}", request_id)
            return 200, json.dumps(self._public(b)).encode(), self._headers(request_id)
        reqs = body.get("requests") if isinstance(body, dict) else None
        problem = ""
        if not isinstance(reqs, list) or not reqs:
            problem = "requests: at least one request is required"
        elif len(reqs) > self.batch_max_requests:
            problem = f"requests: at most {self.batch_max_requests} requests in a batch"
        else:
            ids = [r.get("custom_id") if isinstance(r, dict) else None for r in reqs]
            bad = next((i for i in ids if not isinstance(i, str) or not _CUSTOM_ID.match(i)), "")
            if bad != "":
                problem = f"requests: custom_id {bad!r} must match ^[a-zA-Z0-9_-]{{1,64}}$"
            elif len(set(ids)) != len(ids):
                problem = "requests: custom_id values must be unique within a batch"
            elif any(not isinstance(r.get("params"), dict) for r in reqs):
                problem = "requests: every request needs params"
        if not problem and len(json.dumps(body)) > self.batch_max_bytes:
            record("error", 413)
            return self._error(
                413, "request_too_large", f"batch over {self.batch_max_bytes} bytes", request_id
            )
        if problem:
            record("error", 400)
            return self._error(400, "invalid_request_error", problem, request_id)
        with self._lock:
            batch_id = f"msgbatch_fake{len(self.batches) + 1:06d}"
            b = {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "in_progress",
                "request_counts": {
                    "processing": len(reqs),  # type: ignore[arg-type]
                    "succeeded": 0,
                    "errored": 0,
                    "canceled": 0,
                    "expired": 0,
                },
                "ended_at": None,
                "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-02T00:00:00Z",
                "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": None,
                "_requests": reqs,
                "_polls": 0,
                "_results": b"",
            }
            self.batches[batch_id] = b
            fault = self.batch_create_faults.pop(0) if self.batch_create_faults else "ok"
        if self.batch_create_hold.is_set():
            while self.batch_create_hold.is_set() and not self._stopping.wait(0.02):
                pass
            fault = "reset"
        if fault == "reset":  # accepted: the batch runs, its answer never arrives
            record("reset", 0)
            return 0, b"", {}
        if fault == "bad_gateway":
            record("bad_gateway", 502)
            return 502, _BAD_GATEWAY, {"content-type": "text/html; charset=utf-8"}
        record("ok", 200)
        return 200, json.dumps(self._public(b)).encode(), self._headers(request_id)

    @staticmethod
    def _public(b: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    def _handle_get(
        self, target: str, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str]]:
        """``GET /v1/messages/batches/{id}`` (each poll may end it), ``.../{id}/results`` and
        the list ``GET /v1/messages/batches``."""
        path, _, query = target.partition("?")
        with self._lock:
            self._n += 1
            request_id = f"req_fake{self._n:06d}"
        refused = self._auth_error(headers, request_id)
        if path.rstrip("/") == BATCHES:
            status, payload, extra = refused or self._list(query, request_id)
            with self._lock:
                self.requests.append(
                    Recorded(path, headers, None, "ok" if status == 200 else "error", status)
                )
            return status, payload, extra
        parts = path.rstrip("/").split("/")
        ok_path = path.startswith(BATCHES + "/") and len(parts) in (5, 6)
        b = self.batches.get(parts[4]) if ok_path else None
        status = refused[0] if refused else (200 if b is not None else 404)
        with self._lock:
            self.requests.append(
                Recorded(path, headers, None, "ok" if status == 200 else "error", status)
            )
        if refused is not None:
            return refused
        if b is None:
            return self._error(404, "not_found_error", f"Not found: {path}", request_id)
        if len(parts) == 6:
            if parts[5] != "results" or b["processing_status"] != "ended":
                return self._error(404, "not_found_error", f"Not found: {path}", request_id)
            return (
                200,
                b["_results"],
                self._headers(request_id) | {"content-type": "application/binary"},
            )
        self._advance(b)
        return 200, json.dumps(self._public(b)).encode(), self._headers(request_id)

    def _list(self, query: str, request_id: str) -> tuple[int, bytes, dict[str, str]]:
        """One page of the list, newest first: ``limit`` batches right after ``after_id``
        (older) or right before ``before_id`` (newer); ``has_more`` when more lie that way."""
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(query).items()}
        try:
            n = int(q.get("limit", LIST_LIMIT_DEFAULT))
        except ValueError:
            n = 0
        if not 1 <= n <= LIST_LIMIT_MAX:
            return self._error(
                400,
                "invalid_request_error",
                f"limit: Input should be between 1 and {LIST_LIMIT_MAX}",
                request_id,
            )
        with self._lock:
            newest = [self._public(b) for b in reversed(self.batches.values())]
        ids = [b["id"] for b in newest]
        after, before = q.get("after_id"), q.get("before_id")
        if after and before:
            return self._error(
                400, "invalid_request_error", "only one of after_id, before_id", request_id
            )
        cursor = after or before
        if cursor and cursor not in ids:
            return self._error(404, "not_found_error", f"Not found: {cursor}", request_id)
        if before:
            end = ids.index(before)
            page, more = newest[max(0, end - n) : end], end - n > 0
        else:
            start = ids.index(after) + 1 if after else 0
            page, more = newest[start : start + n], start + n < len(newest)
        doc = {
            "data": page,
            "has_more": more,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
        }
        return 200, json.dumps(doc).encode(), self._headers(request_id)

    def _advance(self, b: dict[str, Any]) -> None:
        """One poll: after ``batch_polls`` of them (unless ``batch_hold``), every request is
        answered and the batch has ``ended``."""
        with self._lock:
            b["_polls"] += 1
            canceling = b["processing_status"] == "canceling"
            if b["processing_status"] == "ended" or (
                not canceling and (b["_polls"] < self.batch_polls or self.batch_hold.is_set())
            ):
                return
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for n, r in enumerate(b["_requests"]):
            result = (
                {"type": "canceled"}
                if canceling
                else self._batch_result(r["params"], f"{b['id']}_{n:06d}")
            )
            counts[result["type"]] += 1
            lines.append(json.dumps({"custom_id": r["custom_id"], "result": result}))
        with self._lock:
            b["_results"] = ("\n".join(lines) + "\n").encode()
            b["request_counts"] = counts
            b["processing_status"] = "ended"
            b["ended_at"] = RESET_AT
            b["results_url"] = f"{self.base_url}{BATCHES}/{b['id']}/results"

    def _batch_result(self, params: dict[str, Any], request_id: str) -> dict[str, Any]:
        """One request's ``result``: ``succeeded`` with its message, ``errored`` with the
        error the live call would have got, or ``expired``."""

        def errored(type_: str, message: str) -> dict[str, Any]:
            return {
                "type": "errored",
                "error": {"type": "error", "error": {"type": type_, "message": message}},
            }

        try:
            validate(params)
        except InvalidRequest as e:
            return errored("invalid_request_error", str(e))
        fault = self._fault(params)
        if fault == EXPIRED:
            return {"type": "expired"}
        if fault in _STATUS:
            _, type_, message = _STATUS[fault]
            return errored(type_, message)
        if fault in ("malformed", "reset"):
            return errored("api_error", "Internal server error")
        return {
            "type": "succeeded",
            "message": self._message(params, request_id, cut=fault == "max_tokens"),
        }

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
