"""Helpers for the run-stage tests: git in a throwaway project, fake configs, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=os.environ | GIT_ENV,
        check=True,
        timeout=60,
    )
    return proc.stdout.strip()


def fake_engine_config(base_url: str, **over: Any) -> dict[str, Any]:
    eng: dict[str, Any] = {
        "kind": "openai_chat",
        "base_url": base_url,
        "model": "fake-model",
        "concurrency": 4,
        "timeout_s": 10,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        # these tests plant failures and inspect the error rows: a run may end with any number
        # of them (the default, 0, fails the run: tests/seal/test_seal_ledger.py tests that)
        "fail_on_error": 1_000_000,
    }
    eng.update(over)
    return eng


def write_fake_config(
    root: Path, base_url: str, *, repeats: int = 4, name: str = "fake.yaml", **engine: Any
) -> Path:
    """A config file (merged over config/config.yaml) naming a ``fake`` openai_chat engine."""
    doc = {
        "engines": {"fake": fake_engine_config(base_url, **engine)},
        "suites": {"golden": {"engines": ["fake"], "repeats": repeats, "max_tokens": 32}},
    }
    path = root / name
    path.write_text(yaml.safe_dump(doc, sort_keys=True), encoding="utf-8")
    return path


def run_cli(
    root: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``sealedeval ARGS`` as a subprocess in ``root`` (the installed package, this Python)."""
    return subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ | GIT_ENV | (env or {}),
    )


def cli_popen(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | GIT_ENV,
    )
