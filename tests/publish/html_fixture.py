"""A tiny published project for report.html's tests, built once per test session.

Every suite on the reference engine (the tiny profile), plus golden on an engine whose server is
down (an ``openai_chat`` engine on a loopback port nothing listens on): its requests are real
error rows of kind ``connection``, so the status and verdict filters have something to tell
apart. Seconds, no model. Shared by test_html_report.py and test_html_browser.py, and by
``benchmarks/html.py screenshots`` (the pictures in docs/img).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import make_project, sealedeval

SUITES = ("golden", "bloodpanel", "grounding")
CONFIG = ("-c", "config/tiny.yaml", "-c", "config/html.yaml")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def overlay(port: int) -> str:
    return f"""\
engines:
  down:
    kind: openai_chat
    base_url: http://127.0.0.1:{port}/v1
    model: down-model
    max_retries: 0
    timeout_s: 5
    fail_on_error: 1000
suites:
  golden:
    engines: [reference, down]
"""


def build(dest: Path) -> Path:
    """Seal, run every suite and publish in ``dest``; returns the project root."""
    root = make_project(dest)
    (root / "config/html.yaml").write_text(overlay(_closed_port()))
    for suite in SUITES:
        # --allow-errors: `down` trips its circuit breaker (the run fails, by design); its rows
        # are the error rows these tests need
        sealedeval(root, "run", suite, *CONFIG, "--no-progress", "--allow-errors")
    sealedeval(root, "publish", *CONFIG)
    return root


@functools.cache
def tiny_report() -> Path:
    """The project root of a session-wide tiny build (removed at exit)."""
    tmp = Path(tempfile.mkdtemp(prefix="sealedeval-html-"))
    atexit.register(shutil.rmtree, tmp, True)
    return build(tmp / "proj")


def publish_again(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", "publish", *CONFIG],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )


CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium (envs/apt-packages.txt); Playwright's own browser download is never used."""

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Headless, no sandbox (containers), and none of the browser's own background traffic, so a
request the page did not make cannot show up in (or hide behind) the request log."""

VIEWPORT = {"width": 1280, "height": 900}


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A Playwright browser context on Debian's chromium with a fresh user-data dir."""
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="sealedeval-chromium-") as profile,
        sync_playwright() as p,
    ):
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            args=list(CHROMIUM_ARGS),
            headless=True,
            viewport=VIEWPORT,  # type: ignore[arg-type]
        )
        try:
            yield ctx
        finally:
            ctx.close()
