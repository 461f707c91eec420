"""A fast loopback OpenAI-compatible server for the benchmarks, in its own process.

The stdlib fake in ``tests/fakes`` (one thread per connection) tops out well below what an
asyncio client can send, so measuring the harness against it would measure the fake. This one
is a bare ``asyncio.Protocol`` speaking just enough HTTP/1.1 (keep-alive, Content-Length bodies)
to answer ``POST /v1/chat/completions`` with a fixed, valid chat.completion. Latency can be
added per request (``--latency-ms``, uniformly jittered by ``--jitter``) without blocking the
loop. Pinned to one core with ``os.sched_setaffinity`` so client and server do not compete.

    python benchmarks/_server.py --cpu 1 [--latency-ms 200 --jitter 0.5]   # prints "PORT n"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ANSWER: 42"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23},
    }
).encode()
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n"
    b"content-length: " + str(len(BODY)).encode() + b"\r\n\r\n"
)
RESPONSE = HEAD + BODY


class _Proto(asyncio.Protocol):
    latency_s = 0.0
    jitter = 0.0
    rng = random.Random(0)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t: asyncio.Transport = transport  # type: ignore[assignment]
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).lower()
            n = 0
            i = head.find(b"content-length:")
            if i >= 0:
                j = head.find(b"\r\n", i)
                n = int(head[i + 15 : j if j >= 0 else len(head)])
            total = end + 4 + n
            if len(self.buf) < total:
                return
            del self.buf[:total]
            if self.latency_s > 0:
                d = self.latency_s * (1 + self.jitter * (2 * self.rng.random() - 1))
                asyncio.get_running_loop().call_later(d, self._answer)
            else:
                self.t.write(RESPONSE)

    def _answer(self) -> None:
        if not self.t.is_closing():
            self.t.write(RESPONSE)


async def _serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Proto, host, port, backlog=4096, reuse_address=True)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    server.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--cpu", type=int, default=-1, help="pin to this core (-1: don't)")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--jitter", type=float, default=0.0, help="± fraction of the latency")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    _Proto.latency_s = a.latency_ms / 1000
    _Proto.jitter = a.jitter
    _Proto.rng = random.Random(a.seed)
    asyncio.run(_serve(a.host, a.port))
    return 0


class Server:
    """Start the server as a subprocess; ``base_url`` once it printed its port."""

    def __init__(self, *args: str, kind: str = "fast") -> None:
        here = Path(__file__).resolve()
        if kind == "fast":
            cmd = [sys.executable, str(here), *args]
            cwd = None
        else:  # the stdlib fake from the test suite, for comparison
            cmd = [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0", *args]
            cwd = str(here.parents[1])
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=cwd)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "PORT":
            self.stop()
            raise RuntimeError(f"benchmark server did not start: {line}")
        self.port = int(line[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def pin(self, cpu: int) -> None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(self.proc.pid, {cpu})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
