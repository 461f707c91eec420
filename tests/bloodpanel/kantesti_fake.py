"""A loopback fake of the Kantesti blood-test analysis API (the V11 harness's protocol).

``POST /api/v11/01-06-2025/analyze`` with ``multipart/form-data`` fields ``file`` (a PDF),
``username``, ``password``, ``language``; answers ``{"status": "success", "api_version",
"timestamp", "data": {"interpretation": [sections], "parameters": [], "metadata": {}}}`` with V11
sections (``{title, shortcode, subsections: [{subtitle, shortcode, items: [{item}]}]}``).

Fault script: ``faults`` is a list consumed one entry per request (then ``"ok"``): ``"ok"``,
``"slow"`` (sleep ``slow_s`` before answering ok), ``"429"``, ``"503"``, ``"401"``,
``"malformed"`` (200 with broken JSON), ``"nonsuccess"`` (200, ``status: error``),
``"echo"`` (ok, but the body echoes the credentials, to test scrubbing). Every request is
recorded with its parsed form fields.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.conftest import shared_fixture

ENDPOINT = "/api/v11/01-06-2025/analyze"
V11 = "responses_v11_full.json"


@dataclass
class Seen:
    path: str
    fields: dict[str, str]
    file_name: str
    file_type: str
    pdf: bytes
    fault: str


def parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, Any]]:
    """(text fields, {"name", "type", "data"} of the file part) of a multipart body."""
    msg = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    fields: dict[str, str] = {}
    file: dict[str, Any] = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if part.get_filename():
            file = {"name": part.get_filename(), "type": part.get_content_type(), "data": payload}
        else:
            fields[str(name)] = payload.decode()
    return fields, file


def fixture_sections(case_id: str = "BT-001-IDA") -> list[dict[str, Any]]:
    doc = json.loads((shared_fixture("kantesti-v11", V11) / V11).read_text(encoding="utf-8"))
    for c in doc["cases"]:
        if c["summary"]["case_id"] == case_id:
            return list(c["response"]["sections"])
    raise KeyError(case_id)


class FakeKantesti:
    def __init__(
        self,
        faults: Sequence[str] = (),
        *,
        slow_s: float = 1.0,
        sections: list[dict[str, Any]] | None = None,
        username: str = "",
        password: str = "",
    ) -> None:
        self.faults = list(faults)
        self.slow_s = slow_s
        self.sections = sections if sections is not None else fixture_sections()
        self.seen: list[Seen] = []
        self.username = username
        self.password = password
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _next_fault(self) -> str:
        with self._lock:
            return self.faults.pop(0) if self.faults else "ok"

    def __enter__(self) -> FakeKantesti:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                try:
                    self.send_response(code)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout)
                    pass

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                fault = fake._next_fault()
                fields, file = parse_multipart(self.headers.get("content-type", ""), raw)
                with fake._lock:
                    fake.seen.append(
                        Seen(
                            self.path,
                            fields,
                            str(file.get("name", "")),
                            str(file.get("type", "")),
                            bytes(file.get("data", b"")),
                            fault,
                        )
                    )
                if self.path != ENDPOINT:
                    self._send(404, b'{"error": "not found"}')
                    return
                if fault == "slow":
                    time.sleep(fake.slow_s)
                if fault == "429":
                    self._send(429, b'{"error": "rate limited"}')
                    return
                if fault == "503":
                    self._send(503, b"<html>503 Service Unavailable</html>", "text/html")
                    return
                if fault == "401" or (fake.password and fields.get("password") != fake.password):
                    self._send(401, b'{"status": "error", "message": "invalid credentials"}')
                    return
                if fault == "malformed":
                    self._send(200, b'{"status": "success", "data": {')
                    return
                if fault == "nonsuccess":
                    self._send(200, b'{"status": "error", "message": "quota exceeded"}')
                    return
                body: dict[str, Any] = {
                    "status": "success",
                    "api_version": "v11",
                    "timestamp": "2026-04-23T21:50:54Z",
                    "data": {
                        "interpretation": fake.sections,
                        "parameters": [],
                        "metadata": {"pages": 1},
                    },
                }
                if fault == "echo":
                    body["data"]["metadata"]["account"] = {
                        "username": fields.get("username"),
                        "note": f"authenticated with {fields.get('password')}",
                    }
                self._send(200, json.dumps(body).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
