"""A loopback fake OpenAI-compatible server with fault injection.

Stdlib only: a ``ThreadingHTTPServer`` serving HTTP/1.1 (keep-alive, exact Content-Length)
on ``127.0.0.1`` from a daemon thread. Used by the test suite to exercise the asyncio HTTP
dispatcher (retries, Retry-After backoff, error classification), and by the import tests to
run real harnesses against it: chat completions (``/v1/chat/completions``), the legacy text
completions with ``echo``/``logprobs`` that log-likelihood scoring uses (``/v1/completions``),
and vLLM's tokenizer endpoints (``/tokenizer_info``, ``/tokenize``, ``/detokenize``) so that a
client needing token counts (lm-eval's ``tokenizer_backend=remote``) needs no tokenizer files.

The tokenizer is a word tokenizer: a token is a run of whitespace and the word after it
(``"Answer: blue whale"`` → ``"Answer:"``, ``" blue"``, ``" whale"``), its id a CRC-32 of its
text, so ids are the same in every server and run, and decoding is lossless.

Usage::

    with FakeOpenAI(faults={"Q7": ["rate_limit", "server"]}) as fake:
        ...  # point the client at fake.base_url
        assert fake.count("rate_limit") == 1

Standalone (benchmarks)::

    python -m tests.fakes.openai_server --port 0 --latency-s 0
    # prints "PORT <n>" and serves until SIGTERM / SIGINT
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import threading
import urllib.parse
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["ALL_FAULTS", "CREATED", "FakeOpenAI", "Recorded", "main"]

#: Every injectable fault kind. ``"ok"`` (answer normally) is also accepted in ``faults`` lists.
ALL_FAULTS: tuple[str, ...] = (
    "rate_limit",
    "server",
    "unavailable",
    "timeout",
    "reset",
    "malformed",
    "truncated",
    "html",
    "empty",
)
OK = "ok"
EXPIRED = "expired"
"""A fault only the Batch API shows: the request is not run within the completion window (its
error-file line says ``batch_expired``, the batch ends ``expired``); a live call answers."""
_VALID_KINDS = frozenset((*ALL_FAULTS, OK, EXPIRED))

#: The Batch API's limits (https://platform.openai.com/docs/guides/batch): requests per batch
#: and bytes per input file.
BATCH_MAX_REQUESTS = 50_000
BATCH_MAX_BYTES = 200 * 1024 * 1024
#: The status a batch moves through, one step per ``batch_polls`` polls.
BATCH_STEPS = ("validating", "in_progress", "finalizing")
#: ``GET /v1/batches``: ``limit`` "can range between 1 and 100, and the default is 20"
#: (https://platform.openai.com/docs/api-reference/batch/list).
LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 20
#: A batch's ``metadata``: "Set of 16 key-value pairs ... Keys are strings with a maximum
#: length of 64 characters. Values are strings with a maximum length of 512 characters"
#: (https://platform.openai.com/docs/api-reference/batch/create).
METADATA_MAX_PAIRS = 16
METADATA_MAX_KEY = 64
METADATA_MAX_VALUE = 512
#: What ``batch_create_faults`` can do to a ``POST /v1/batches`` the fake *accepted* (the batch
#: exists and will run): ``reset`` drops the connection before the answer, ``bad_gateway`` answers
#: a proxy's HTML 502 instead of the batch, ``ok`` answers normally. A request it refuses (400)
#: consumes no entry.
CREATE_FAULTS = ("reset", "bad_gateway", OK)
_LINE_STATUS = {"rate_limit": 429, "server": 500, "unavailable": 503, "timeout": 500, "reset": 500}
"""A live fault's HTTP status, as a batch line reports it (a batch has no connection to drop)."""

#: Fixed ``created`` timestamp so responses are deterministic.
CREATED = 1_700_000_000

Responder = Callable[[dict[str, Any]], str | dict[str, Any]]
#: ``(model, tokens of one prompt) -> the log-probability of each token``: how a legacy
#: completions request with ``echo`` and ``logprobs`` scores its prompt.
Logprober = Callable[[str, Sequence[str]], Sequence[float]]

#: The tokenizer's end-of-sequence token (vLLM's ``/tokenizer_info`` names one).
EOS_TOKEN = "</s>"
#: A token: a run of whitespace and the non-whitespace run after it, or trailing whitespace.
_TOKEN = re.compile(r"\s*\S+|\s+")
#: Context length the tokenizer reports (``max_model_len``).
MAX_MODEL_LEN = 4096
#: OpenAI's legacy completions return at most 5 top log-probs per position.
MAX_LOGPROBS = 5
#: At each position the probability the token does not get is shared evenly by this many
#: alternative tokens (``<token>~1`` ...), which is what ``top_logprobs`` lists beside it.
ALTERNATIVES = 4

_HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
    b"<body><h1>502 Bad Gateway</h1><p>The upstream server returned an invalid response."
    b"</p></body></html>\n"
)
_MALFORMED = b'{"choices": ['


@dataclass
class Recorded:
    """One request seen by the server. ``headers`` keys are lower-cased.

    ``fault`` is the fault kind applied (``"ok"`` for a normal answer, ``"error"`` for a
    request the server itself rejected, e.g. unknown path or unparsable body).
    """

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    fault: str


def _content_text(content: Any) -> str:
    """Text of an OpenAI message ``content`` (a string or a list of content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return " ".join(parts)
    return str(content)


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return []
    return [m for m in msgs if isinstance(m, dict)]


def last_user_content(body: Mapping[str, Any]) -> str:
    """Content of the last ``role == "user"`` message, or ``""``."""
    for msg in reversed(_messages(body)):
        if msg.get("role") == "user":
            return _content_text(msg.get("content"))
    return ""


def _count_words(text: str) -> int:
    return max(1, len(text.split()))


def default_responder(body: dict[str, Any]) -> str:
    """Deterministic echo: ``"ANSWER: " + <last user message content>``."""
    return "ANSWER: " + last_user_content(body)


def _logprobs(reply: str, top_n: int) -> dict[str, Any]:
    """Plausible, deterministic per-word logprobs for ``reply``."""
    content: list[dict[str, Any]] = []
    for i, word in enumerate(reply.split()):
        token = word if i == 0 else " " + word
        h = zlib.crc32(token.encode())
        logprob = -round((h % 2000) / 1000.0, 4)  # in (-2, 0]
        top: list[dict[str, Any]] = [
            {"token": token, "logprob": logprob, "bytes": list(token.encode())}
        ]
        for k in range(1, top_n):
            alt = f"{token}~{k}"
            top.append(
                {
                    "token": alt,
                    "logprob": round(logprob - 1.5 * k - ((h >> k) % 100) / 100.0, 4),
                    "bytes": list(alt.encode()),
                }
            )
        content.append(
            {
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode()),
                "top_logprobs": top[:top_n],
            }
        )
    return {"content": content, "refusal": None}


def split_tokens(text: str) -> list[str]:
    """The fake tokenizer's tokens of ``text``; ``"".join`` of them is ``text``."""
    return _TOKEN.findall(text)


def token_id(token: str) -> int:
    """A token's id: the CRC-32 of its UTF-8 text (stable across servers and runs)."""
    return zlib.crc32(token.encode())


def default_logprober(model: str, tokens: Sequence[str]) -> list[float]:
    """Deterministic log-probs in [-2.0, -0.001], by a CRC-32 of each token."""
    return [-(1 + zlib.crc32(t.encode()) % 2000) / 1000.0 for t in tokens]


def _position(token: str, logprob: float, top_n: int) -> dict[str, float]:
    """The ``top_n`` most likely tokens at a position: ``token`` with ``logprob`` and the
    ALTERNATIVES sharing the rest of the probability (ties: the token first)."""
    rest = max(1.0 - math.exp(logprob), 1e-12) / ALTERNATIVES
    cands = [(logprob, 0, token)] + [
        (math.log(rest), k, f"{token}~{k}") for k in range(1, ALTERNATIVES + 1)
    ]
    cands.sort(key=lambda c: (-c[0], c[1]))
    return {tok: lp for lp, _, tok in cands[:top_n]}


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[bytes, str]]:
    """The fields of a ``multipart/form-data`` body: name → (bytes, filename)."""
    import email.parser
    import email.policy

    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    out: dict[str, tuple[bytes, str]] = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            data = part.get_payload(decode=True)
            out[name] = (data if isinstance(data, bytes) else b"", part.get_filename() or "")
    return out


@dataclass
class StoredFile:
    """A file the fake holds: an upload, or a batch's output or error file."""

    id: str
    filename: str
    purpose: str
    data: bytes

    def obj(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": CREATED,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class FakeBatch:
    """A batch and where it stands: ``polls`` counts the status reads that advance it."""

    obj: dict[str, Any]
    lines: list[dict[str, Any]]
    polls: int = 0


def _error_body(message: str, type_: str, code: str | int | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _param_error(message: str, param: str) -> dict[str, Any]:
    """OpenAI's 400 body for one bad parameter (``param`` names it)."""
    body = _error_body(message, "invalid_request_error", None)
    body["error"]["param"] = param
    return body


def _metadata_problem(metadata: Any) -> str:
    """Why a batch's ``metadata`` breaks the documented rules, "" when it does not."""
    if metadata is None:
        return ""
    if not isinstance(metadata, dict):
        return "metadata must be an object of string keys and values"
    if len(metadata) > METADATA_MAX_PAIRS:
        return f"metadata: at most {METADATA_MAX_PAIRS} pairs, got {len(metadata)}"
    for k, v in metadata.items():
        if not isinstance(v, str):
            return f"metadata[{k!r}] must be a string"
        if len(k) > METADATA_MAX_KEY:
            return f"metadata: key {k[:20]!r}... longer than {METADATA_MAX_KEY} characters"
        if len(v) > METADATA_MAX_VALUE:
            return f"metadata[{k!r}]: value longer than {METADATA_MAX_VALUE} characters"
    return ""


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256

    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or self.fake._stopping.is_set():
            return  # client went away / we are shutting down: not interesting
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle + delayed ACK adds
    # ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    server_version = "FakeOpenAI/1.0"
    sys_version = ""
    server: _Server

    # -- plumbing -----------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str = "application/json",
        extra: Mapping[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (ConnectionError, OSError):
            self.close_connection = True

    def _send_json(self, status: int, obj: Any, extra: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", extra)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._read_chunked()
            return b""
        try:
            n = int(length)
        except ValueError:
            self.close_connection = True
            return b""
        return self.rfile.read(n) if n > 0 else b""

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            line = self.rfile.readline(65537)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline(65537)  # CRLF after chunk

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _reset(self) -> None:
        """Abort the TCP connection with an RST and no response."""
        self.close_connection = True
        sock = self.connection
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # The socket's fd is only really closed once rfile/wfile (makefile refs) are closed
        # too; swap in inert streams so the base class's later flush()/close() are no-ops.
        for f in (self.wfile, self.rfile):
            with contextlib.suppress(OSError):
                f.close()
        with contextlib.suppress(OSError):
            sock.close()
        self.wfile = io.BytesIO()
        self.rfile = io.BytesIO()

    # -- routes -------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._counted(self._get)

    def do_POST(self) -> None:
        self._counted(self._post)

    def _counted(self, fn: Callable[[], None]) -> None:
        fake = self.server.fake
        fake._enter()
        try:
            fn()
        finally:
            fake._leave()

    def _get(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path in ("/v1/models", "/models"):
            fake._record(path, self._headers(), None, OK)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": fake.model,
                            "object": "model",
                            "created": CREATED,
                            "owned_by": "fake",
                        }
                    ],
                },
            )
        elif path == "/v1/batches":
            self._batch_list(path)
        elif path.startswith("/v1/batches/") or path.startswith("/v1/files/"):
            self._batch_get(path)
        elif path == "/health":
            fake._record(path, self._headers(), None, OK)
            self._send_json(200, {"status": "ok"})
        elif path == "/tokenizer_info":
            fake._record(path, self._headers(), None, OK)
            self._send_json(
                200,
                {
                    "tokenizer_class": "FakeWordTokenizer",
                    "eos_token": EOS_TOKEN,
                    "bos_token": None,
                    "pad_token": None,
                    "model_max_length": MAX_MODEL_LEN,
                    "chat_template": None,
                },
            )
        else:
            fake._record(path, self._headers(), None, "error")
            self._send_json(404, _error_body(f"Unknown path {path}", "not_found", 404))

    def _authorized(self, path: str, body: dict[str, Any] | None) -> bool:
        """With an ``api_key``, a request without it is answered 401 (and recorded)."""
        fake = self.server.fake
        headers = self._headers()
        if fake.api_key is None or headers.get("authorization") == f"Bearer {fake.api_key}":
            return True
        fake._record(path, headers, body, "auth")
        self._send_json(
            401, _error_body("Incorrect API key provided", "invalid_request_error", None)
        )
        return False

    def _batch_get(self, path: str) -> None:
        """``GET /v1/batches/{id}`` (each poll may advance it) and ``GET /v1/files/{id}`` /
        ``/v1/files/{id}/content``."""
        fake = self.server.fake
        if not self._authorized(path, None):
            return
        parts = path.split("/")
        if parts[2] == "batches" and len(parts) == 4:
            batch = fake._poll_batch(parts[3])
            fake._record(path, self._headers(), None, OK if batch else "error")
            if batch is None:
                self._send_json(
                    404, _error_body(f"No batch {parts[3]}", "invalid_request_error", None)
                )
            else:
                self._send_json(200, batch)
            return
        found = fake.files.get(parts[3]) if len(parts) >= 4 else None
        fake._record(path, self._headers(), None, OK if found else "error")
        if found is None:
            self._send_json(404, _error_body(f"No file {parts[-1]}", "invalid_request_error", None))
        elif len(parts) == 5 and parts[4] == "content":
            self._send(200, found.data, "application/octet-stream")
        else:
            self._send_json(200, found.obj())

    def _batch_list(self, path: str) -> None:
        """``GET /v1/batches?limit=N&after=ID``: the newest batches first, a page of ``limit``
        after the cursor ``after`` (the ``last_id`` of the page before), ``has_more`` when older
        ones are left. Listing never advances a batch (only a retrieve does)."""
        fake = self.server.fake
        if not self._authorized(path, None):
            return
        query = urllib.parse.parse_qs(self.path.partition("?")[2])
        status, obj = fake._list_batches(query.get("limit", [""])[-1], query.get("after", [""])[-1])
        fake._record(path, self._headers(), None, OK if status == 200 else "error")
        self._send_json(status, obj)

    def _upload(self, path: str, raw: bytes) -> None:
        """``POST /v1/files`` (multipart: ``purpose`` and ``file``)."""
        fake = self.server.fake
        if not self._authorized(path, None):
            return
        fields = _multipart(self.headers.get("Content-Type", ""), raw)
        purpose = fields.get("purpose", (b"", ""))[0].decode()
        data, filename = fields.get("file", (b"", ""))
        if purpose != "batch" or "file" not in fields:
            fake._record(path, self._headers(), None, "error")
            self._send_json(
                400, _error_body("need a file and purpose 'batch'", "invalid_request_error", None)
            )
            return
        if len(data) > fake.batch_max_bytes:
            fake._record(path, self._headers(), None, "error")
            self._send_json(
                400,
                _error_body(
                    f"File is too large: {len(data)} bytes, the limit is {fake.batch_max_bytes}",
                    "invalid_request_error",
                    None,
                ),
            )
            return
        fake._record(path, self._headers(), {"purpose": purpose, "bytes": len(data)}, OK)
        self._send_json(200, fake._add_file(data, filename or "upload.jsonl", purpose).obj())

    def _post(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        headers = self._headers()
        if path == "/v1/files":
            self._upload(path, raw)
            return
        body: dict[str, Any] | None = None
        try:
            parsed = json.loads(raw) if raw else None
            body = parsed if isinstance(parsed, dict) else None
        except ValueError:
            body = None
        if path in ("/tokenize", "/detokenize") and body is not None:
            self._tokenizer(path, headers, body)
            return
        if path == "/v1/batches" or (path.startswith("/v1/batches/") and path.endswith("/cancel")):
            if not self._authorized(path, body):
                return
            status, obj = (
                fake._create_batch(body)
                if path == "/v1/batches"
                else fake._cancel(path.split("/")[3])
            )
            fault = OK if status == 200 else "error"
            if status == 200 and path == "/v1/batches":
                fault = fake._create_fault()
            fake._record(path, headers, body, fault)
            if fault == "reset":  # accepted: the batch runs, its answer never arrives
                self._reset()
            elif fault == "bad_gateway":
                self._send(502, _HTML_PAGE, "text/html; charset=utf-8")
            else:
                self._send_json(status, obj)
            return
        legacy = path in ("/v1/completions", "/completions")
        if path not in ("/v1/chat/completions", "/chat/completions") and not legacy:
            fake._record(path, headers, body, "error")
            self._send_json(404, _error_body(f"Unknown path {path}", "not_found", 404))
            return
        if body is None:
            fake._record(path, headers, None, "error")
            self._send_json(
                400,
                _error_body("Request body must be a JSON object", "invalid_request_error", None),
            )
            return
        if fake.api_key is not None and headers.get("authorization") != f"Bearer {fake.api_key}":
            given = headers.get("authorization", "").removeprefix("Bearer ")
            fake._record(path, headers, body, "auth")
            # echoes the key it was given, as a careless server would: the client must scrub it
            self._send_json(
                401,
                _error_body(f"Incorrect API key provided: {given}", "invalid_request_error", None),
            )
            return
        fault = fake._choose_fault(body)
        fake._record(path, headers, body, fault)
        self._serve_completion(body, fault, fake._text_completion if legacy else fake._completion)

    def _tokenizer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        """vLLM's ``POST /tokenize`` (``{"prompt"}`` → ``{"count", "max_model_len",
        "tokens"}``) and ``POST /detokenize`` (``{"tokens"}`` → ``{"prompt"}``)."""
        fake = self.server.fake
        try:
            if path == "/tokenize":
                prompt = body.get("prompt")
                if not isinstance(prompt, str):
                    raise ValueError("'prompt' must be a string")
                ids = fake.encode(prompt)
                out: dict[str, Any] = {
                    "count": len(ids),
                    "max_model_len": MAX_MODEL_LEN,
                    "tokens": ids,
                    "token_strs": None,
                }
            else:
                out = {"prompt": fake.decode(body.get("tokens"))}
        except ValueError as exc:
            fake._record(path, headers, body, "error")
            self._send_json(400, _error_body(str(exc), "invalid_request_error", None))
            return
        fake._record(path, headers, body, OK)
        self._send_json(200, out)

    def _serve_completion(
        self,
        body: dict[str, Any],
        fault: str,
        make: Callable[..., dict[str, Any]],
    ) -> None:
        fake = self.server.fake
        if fault == "rate_limit":
            extra = {} if fake.retry_after is None else {"Retry-After": fake.retry_after}
            self._send_json(
                429,
                _error_body("Rate limit reached (fake)", "rate_limit_error", "rate_limit_exceeded"),
                extra,
            )
        elif fault == "server":
            self._send_json(500, _error_body("Internal server error (fake)", "server_error", None))
        elif fault == "unavailable":
            self._send_json(503, _error_body("Service unavailable (fake)", "server_error", None))
        elif fault == "reset":
            self._reset()
        elif fault == "malformed":
            self._send(200, _MALFORMED, "application/json")
        elif fault == "html":
            self._send(200, _HTML_PAGE, "text/html; charset=utf-8")
        elif fault == "empty":
            obj = make(body)
            obj["choices"] = []
            self._send_json(200, obj)
        else:  # ok, timeout, truncated
            if fault == "timeout" and not fake._sleep(fake.hang_s):
                self._reset()  # server stopping: abandon the request
                return
            if not fake._sleep(fake.latency_s):
                self._reset()
                return
            try:
                obj = make(body, truncated=fault == "truncated")
            except ValueError as exc:
                self._send_json(400, _error_body(str(exc), "invalid_request_error", None))
                return
            except Exception as exc:
                self._send_json(
                    500, _error_body(f"responder failed: {exc!r}", "server_error", None)
                )
                return
            self._send_json(200, obj)


class FakeOpenAI:
    """Loopback fake of an OpenAI-compatible chat-completions server (with the legacy text
    completions and vLLM's tokenizer endpoints).

    ``faults`` maps a marker substring to fault kinds consumed, in order, by successive
    requests whose last user message contains the marker (first matching marker with
    entries left wins; exhausted -> normal; ``"ok"`` -> normal this time). Otherwise, with
    probability ``fault_rate`` a request gets a kind drawn from ``fault_kinds`` using
    ``random.Random(seed)`` (reproducible for sequential requests). With ``api_key``, a
    chat request without ``Authorization: Bearer <api_key>`` is answered 401 (recorded with
    fault ``"auth"``), its message echoing the key it was sent.

    Legacy completions (``/v1/completions``) answer each prompt (a string, or token ids from
    ``/tokenize``) with the first ``max_tokens`` tokens of ``responder``'s reply (it sees the
    body with that one prompt as ``prompt``); with ``echo`` the prompt comes first. With
    ``logprobs: N`` every token gets the log-prob ``logprober(model, prompt tokens)`` gives it
    (generated tokens: ``default_logprober``'s), the first echoed token ``null`` as OpenAI
    has it, and the N most likely tokens at each position (see ``ALTERNATIVES``).
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        faults: Mapping[str, Sequence[str]] | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = ALL_FAULTS,
        seed: int = 0,
        latency_s: float = 0.0,
        retry_after: str | None = "0.05",
        hang_s: float = 5.0,
        model: str = "fake-model",
        api_key: str | None = None,
        logprober: Logprober | None = None,
        batch_polls: int = 1,
        batch_max_requests: int = BATCH_MAX_REQUESTS,
        batch_max_bytes: int = BATCH_MAX_BYTES,
        batch_create_faults: Sequence[str] = (),
    ) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate}")
        kinds = list(fault_kinds)
        if fault_rate > 0 and not kinds:
            raise ValueError("fault_kinds must be non-empty when fault_rate > 0")
        queues: dict[str, list[str]] = {}
        for marker, seq in (faults or {}).items():
            if isinstance(seq, str):
                raise TypeError(f"faults[{marker!r}] must be a sequence of kinds, not a str")
            queues[marker] = list(seq)
        for kind in [*kinds, *(k for q in queues.values() for k in q)]:
            if kind not in _VALID_KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; expected one of {ALL_FAULTS}")
        for kind in batch_create_faults:
            if kind not in CREATE_FAULTS:
                raise ValueError(f"unknown create fault {kind!r}; expected one of {CREATE_FAULTS}")

        self.responder: Responder = responder or default_responder
        self.logprober: Logprober = logprober or default_logprober
        self._vocab: dict[int, str] = {token_id(EOS_TOKEN): EOS_TOKEN}
        self.fault_rate = fault_rate
        self.fault_kinds: list[str] = kinds
        self.seed = seed
        self.latency_s = latency_s
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.model = model
        self.api_key = api_key

        self.batch_polls = batch_polls
        self.batch_max_requests = batch_max_requests
        self.batch_max_bytes = batch_max_bytes
        self.batch_hold = threading.Event()
        """While set, no batch gets past ``in_progress`` (a test kills its client meanwhile)."""
        self.batch_create_faults = list(batch_create_faults)
        """What happens to the answer of each accepted ``POST /v1/batches``, in order
        (``CREATE_FAULTS``; answered normally once the list is used up)."""
        self.batch_create_hold = threading.Event()
        """While set, an accepted ``POST /v1/batches`` gets no answer until it is cleared (then
        its connection is reset): the batch exists, its creator never learns the id (a test
        kills the creator meanwhile)."""
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, FakeBatch] = {}

        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0

        self._queues = queues
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.base_url = ""

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeOpenAI:
        if self._server is not None:
            raise RuntimeError("FakeOpenAI already started")
        self._stopping.clear()
        server = _Server((host, port), _Handler)
        server.fake = self
        self._server = server
        self.port = int(server.server_address[1])
        self.base_url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeOpenAI:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving. Returns promptly: sleeping handlers are woken and their connections
        aborted; open keep-alive connections are shut down. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5.0)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- inspection ---------------------------------------------------------------------

    def count(self, fault: str | None = None) -> int:
        """Number of recorded requests (all paths), optionally only those with ``fault``."""
        with self._lock:
            if fault is None:
                return len(self.requests)
            return sum(1 for r in self.requests if r.fault == fault)

    def batch_creates(self) -> int:
        """Batches the fake accepted (created), whether or not their creator got the answer:
        what the provider would bill."""
        with self._lock:
            return len(self.batches)

    # -- the Batch API (handler threads) -------------------------------------------------

    def _add_file(self, data: bytes, filename: str, purpose: str) -> StoredFile:
        with self._lock:
            f = StoredFile(f"file-{len(self.files) + 1:06d}", filename, purpose, data)
            self.files[f.id] = f
        return f

    def _create_batch(self, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        """``POST /v1/batches``: refused (400) for a bad request; a batch whose input file
        breaks a rule is created and then ``failed`` with the rule in ``errors``, as OpenAI
        reports validation."""
        body = body or {}
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return 400, _error_body(
                "endpoint must be /v1/chat/completions and completion_window 24h",
                "invalid_request_error",
                None,
            )
        problem = _metadata_problem(body.get("metadata"))
        if problem:
            return 400, _param_error(problem, "metadata")
        f = self.files.get(str(body.get("input_file_id")))
        if f is None or f.purpose != "batch":
            return 400, _error_body(
                "input_file_id: no such batch file", "invalid_request_error", None
            )
        lines: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, raw in enumerate(f.data.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            ok = (
                isinstance(line, dict)
                and isinstance(line.get("custom_id"), str)
                and line.get("method") == "POST"
                and line.get("url") == body["endpoint"]
                and isinstance(line.get("body"), dict)
            )
            if not ok:
                errors.append(
                    {"code": "invalid_request", "message": "not a batch request line", "line": n}
                )
            elif line["custom_id"] in seen:  # type: ignore[index]
                errors.append(
                    {"code": "duplicate_custom_id", "message": "custom_id repeated", "line": n}
                )
            else:
                seen.add(line["custom_id"])  # type: ignore[index]
                lines.append(line)  # type: ignore[arg-type]
        if len(lines) > self.batch_max_requests:
            errors.append(
                {
                    "code": "too_many_requests",
                    "message": f"{len(lines)} requests, the limit is {self.batch_max_requests}",
                    "line": None,
                }
            )
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1:06d}"
            obj: dict[str, Any] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "errors": {"object": "list", "data": errors} if errors else None,
                "input_file_id": f.id,
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": CREATED,
                "in_progress_at": None,
                "expires_at": CREATED + 86400,
                "finalizing_at": None,
                "completed_at": None,
                "failed_at": None,
                "expired_at": None,
                "cancelling_at": None,
                "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
            }
            self.batches[batch_id] = FakeBatch(obj, lines)
        return 200, dict(obj)

    def _create_fault(self) -> str:
        """The fate of an accepted create's answer (``batch_create_faults``, then the hold)."""
        with self._lock:
            fault = self.batch_create_faults.pop(0) if self.batch_create_faults else OK
        if self.batch_create_hold.is_set():
            while self.batch_create_hold.is_set() and not self._stopping.wait(0.02):
                pass
            return "reset"
        return fault

    def _list_batches(self, limit: str, after: str) -> tuple[int, dict[str, Any]]:
        """One page of ``GET /v1/batches``, newest first (see ``_Handler._batch_list``)."""
        try:
            n = int(limit) if limit else LIST_LIMIT_DEFAULT
        except ValueError:
            n = 0
        if not 1 <= n <= LIST_LIMIT_MAX:
            return 400, _param_error(
                f"limit must be an integer from 1 to {LIST_LIMIT_MAX}, got {limit!r}", "limit"
            )
        with self._lock:
            newest = [dict(b.obj) for b in reversed(self.batches.values())]
        start = 0
        if after:
            ids = [b["id"] for b in newest]
            if after not in ids:
                return 400, _param_error(f"after: no batch {after!r}", "after")
            start = ids.index(after) + 1
        page = newest[start : start + n]
        return 200, {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": start + n < len(newest),
        }

    def _cancel(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            b = self.batches.get(batch_id)
            if b is None:
                return 404, _error_body(f"No batch {batch_id}", "invalid_request_error", None)
            if b.obj["status"] in ("validating", "in_progress"):
                b.obj["status"] = "cancelling"
                b.obj["cancelling_at"] = CREATED
            return 200, dict(b.obj)

    def _poll_batch(self, batch_id: str) -> dict[str, Any] | None:
        """The batch, one step further every ``batch_polls`` reads (not past ``in_progress``
        while ``batch_hold`` is set); finishing runs every line."""
        with self._lock:
            b = self.batches.get(batch_id)
            if b is None:
                return None
            b.polls += 1
            st = b.obj["status"]
            if st == "cancelling":
                b.obj["status"], b.obj["cancelled_at"] = "cancelled", CREATED
                finish = "cancelled"
            elif st in BATCH_STEPS and b.polls >= self.batch_polls:
                if st == "in_progress" and self.batch_hold.is_set():
                    return dict(b.obj)
                b.polls = 0
                if st == "validating" and b.obj["errors"]:
                    b.obj["status"], b.obj["failed_at"] = "failed", CREATED
                    return dict(b.obj)
                nxt = BATCH_STEPS.index(st) + 1
                if nxt < len(BATCH_STEPS):
                    b.obj["status"] = BATCH_STEPS[nxt]
                    b.obj["in_progress_at"] = CREATED
                    return dict(b.obj)
                finish = "completed"
            else:
                return dict(b.obj)
        self._finish_batch(b, finish)
        with self._lock:
            return dict(b.obj)

    def _finish_batch(self, b: FakeBatch, how: str) -> None:
        """Answer every line (``how``: completed, or cancelled: none answered) into the output
        and error files; an expired line makes the whole batch ``expired``."""
        out: list[bytes] = []
        err: list[bytes] = []
        expired = False
        for n, line in enumerate(b.lines):
            key, body = line["custom_id"], line["body"]
            rid = f"req_{b.obj['id']}_{n:06d}"
            fault = EXPIRED if how == "cancelled" else self._choose_fault(body)
            if fault == EXPIRED:
                expired = expired or how != "cancelled"
                code, msg = (
                    ("batch_cancelled", "This request was cancelled.")
                    if how == "cancelled"
                    else (
                        "batch_expired",
                        "This request could not be executed before the completion window expired.",
                    )
                )
                rec = {
                    "id": rid,
                    "custom_id": key,
                    "response": None,
                    "error": {"code": code, "message": msg},
                }
                err.append(json.dumps(rec).encode())
                continue
            status = _LINE_STATUS.get(fault, 200)
            if status != 200:
                ebody = (
                    _error_body(
                        "Rate limit reached (fake)", "rate_limit_error", "rate_limit_exceeded"
                    )
                    if status == 429
                    else _error_body(f"fake batch line fault {fault}", "server_error", None)
                )
                rec = {
                    "id": rid,
                    "custom_id": key,
                    "response": {"status_code": status, "request_id": rid, "body": ebody},
                    "error": None,
                }
                err.append(json.dumps(rec).encode())
                continue
            obj = self._completion(body, truncated=fault == "truncated")
            if fault in ("malformed", "html", "empty"):
                obj["choices"] = []
            rec = {
                "id": rid,
                "custom_id": key,
                "response": {"status_code": 200, "request_id": rid, "body": obj},
                "error": None,
            }
            out.append(json.dumps(rec).encode())
        st = "cancelled" if how == "cancelled" else ("expired" if expired else "completed")
        files = {
            "output_file_id": self._add_file(
                b"\n".join(out) + b"\n", "output.jsonl", "batch_output"
            )
            if out
            else None,
            "error_file_id": self._add_file(b"\n".join(err) + b"\n", "errors.jsonl", "batch_output")
            if err
            else None,
        }
        with self._lock:
            b.obj.update({k: (v.id if v else None) for k, v in files.items()})
            b.obj["status"] = st
            b.obj[f"{st}_at"] = CREATED
            b.obj["request_counts"] = {
                "total": len(b.lines),
                "completed": len(out),
                "failed": len(err),
            }

    # -- internals (called from handler threads) ----------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _record(
        self, path: str, headers: dict[str, str], body: dict[str, Any] | None, fault: str
    ) -> None:
        with self._lock:
            self.requests.append(Recorded(path=path, headers=headers, body=body, fault=fault))

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; False if the server is stopping."""
        if seconds > 0:
            return not self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, remembered so that ``decode`` maps them back."""
        tokens = split_tokens(text)
        ids = [token_id(t) for t in tokens]
        with self._lock:
            for i, t in zip(ids, tokens, strict=True):
                known = self._vocab.setdefault(i, t)
                if known != t:
                    raise ValueError(f"token id collision: {known!r} and {t!r}")
        return ids

    def decode(self, ids: Any) -> str:
        """The text of token ids this server gave out; anything else is a ValueError."""
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            raise ValueError("'tokens' must be a list of token ids")
        with self._lock:
            unknown = [i for i in ids if i not in self._vocab]
            if unknown:
                raise ValueError(f"unknown token id {unknown[0]}")
            return "".join(self._vocab[i] for i in ids)

    def _prompts(self, body: Mapping[str, Any]) -> list[str]:
        """The prompts of a legacy completions body: a string, a list of strings, token ids
        or a list of token-id lists (OpenAI's four forms)."""
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            return [prompt]
        if isinstance(prompt, list) and prompt:
            if all(isinstance(p, str) for p in prompt):
                return [str(p) for p in prompt]
            if all(isinstance(p, int) and not isinstance(p, bool) for p in prompt):
                return [self.decode(prompt)]
            if all(isinstance(p, list) for p in prompt):
                return [self.decode(p) for p in prompt]
        raise ValueError("'prompt' must be a string, strings, token ids or lists of token ids")

    def _choose_fault(self, body: Mapping[str, Any]) -> str:
        text = last_user_content(body)
        if not text and "prompt" in body:
            try:
                text = "".join(self._prompts(body))
            except ValueError:
                text = ""
        with self._lock:
            for marker, queue in self._queues.items():
                if marker in text and queue:
                    return queue.pop(0)
            if self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                return self._rng.choice(self.fault_kinds)
        return OK

    def _completion(self, body: dict[str, Any], *, truncated: bool = False) -> dict[str, Any]:
        result = self.responder(body)
        if isinstance(result, dict):
            message: dict[str, Any] = {"role": "assistant", "content": None, **result}
        else:
            message = {"role": "assistant", "content": str(result)}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        content = message.get("content")
        if truncated:
            finish = "length"
            if isinstance(content, str):
                content = content[: len(content) // 2]
                message["content"] = content
        reply = _content_text(content)

        prompt_text = " ".join(_content_text(m.get("content")) for m in _messages(body))
        prompt_tokens = _count_words(prompt_text)
        completion_tokens = _count_words(reply)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs") is True:
            top_n = body.get("top_logprobs")
            n = max(1, min(20, top_n)) if isinstance(top_n, int) else 1
            choice["logprobs"] = _logprobs(reply, n)
        else:
            choice["logprobs"] = None
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[
            :24
        ]
        model = body.get("model")
        return {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": CREATED,
            "model": model if isinstance(model, str) and model else self.model,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _text_completion(self, body: dict[str, Any], *, truncated: bool = False) -> dict[str, Any]:
        """A legacy ``text_completion`` object, one choice per prompt."""
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
            raise ValueError("'max_tokens' must be a non-negative integer")
        top_n = body.get("logprobs")
        if top_n is not None and (not isinstance(top_n, int) or isinstance(top_n, bool)):
            raise ValueError("'logprobs' must be an integer")
        stop = body.get("stop")
        stops = [stop] if isinstance(stop, str) else [s for s in stop or [] if isinstance(s, str)]
        echo = body.get("echo") is True
        model = body.get("model")
        model = model if isinstance(model, str) and model else self.model
        choices: list[dict[str, Any]] = []
        n_prompt = n_completion = 0
        for index, prompt in enumerate(self._prompts(body)):
            result = self.responder({**body, "prompt": prompt})
            reply = result if isinstance(result, str) else _content_text(result.get("content"))
            for s in stops:
                reply = reply.split(s, 1)[0]
            words = split_tokens(reply)
            generated = words[: max_tokens // 2 if truncated else max_tokens]
            finish = "length" if truncated or len(words) > len(generated) else "stop"
            if max_tokens == 0:
                finish = "length"
            prompt_tokens = split_tokens(prompt)
            n_prompt += len(prompt_tokens)
            n_completion += len(generated)
            shown = [*prompt_tokens, *generated] if echo else generated
            text = "".join(shown)
            logprobs: dict[str, Any] | None = None
            if top_n is not None:
                n = max(0, min(MAX_LOGPROBS, top_n))
                scored = [
                    *self.logprober(model, prompt_tokens),
                    *default_logprober(model, generated),
                ]
                scored = scored[len(prompt_tokens) :] if not echo else scored
                offsets = [sum(len(t) for t in shown[:i]) for i in range(len(shown))]
                token_lps: list[float | None] = list(scored)
                tops: list[dict[str, float] | None] = [
                    _position(t, lp, n) for t, lp in zip(shown, scored, strict=True)
                ]
                if echo and prompt_tokens:
                    token_lps[0] = None  # no log-prob for the first token of the prompt
                    tops[0] = None
                logprobs = {
                    "tokens": shown,
                    "token_logprobs": token_lps,
                    "top_logprobs": tops,
                    "text_offset": offsets,
                }
            choices.append(
                {"text": text, "index": index, "logprobs": logprobs, "finish_reason": finish}
            )
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        return {
            "id": f"cmpl-{digest[:24]}",
            "object": "text_completion",
            "created": CREATED,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": n_completion,
                "total_tokens": n_prompt + n_completion,
            },
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible server (loopback).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--fault-kinds", default=",".join(ALL_FAULTS), help="comma-separated fault kinds"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", default="0.05", help="'none' to omit the header")
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args(argv)

    fake = FakeOpenAI(
        fault_rate=args.fault_rate,
        fault_kinds=[k for k in args.fault_kinds.split(",") if k],
        seed=args.seed,
        latency_s=args.latency_s,
        retry_after=None if args.retry_after.lower() == "none" else args.retry_after,
        hang_s=args.hang_s,
        model=args.model,
    )
    done = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    fake.start(host=args.host, port=args.port)
    print(f"PORT {fake.port}", flush=True)
    try:
        while not done.wait(0.2):
            pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
