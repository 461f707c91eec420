"""Imports of other harnesses' logs: real logs made by the real tools (Inspect AI's ``mockllm``
in-process; lm-eval and promptfoo against a loopback server, or their committed fixtures),
into a minimal sealed project; everything runs offline."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Inspect's logs, caches and data under tmp; no display, no network."""
    for var in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "xdg" / var.lower()))
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.setenv("NO_PROXY", "*")
    for var in (
        "INSPECT_TELEMETRY",  # a hook module that records logs and usage: never set here
        "INSPECT_API_KEY_OVERRIDE",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    old = os.getcwd()
    yield
    os.chdir(old)
