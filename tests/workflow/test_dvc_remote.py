"""A clone can be audited: an init project pushes its raw runs to a real WebDAV server (WsgiDAV
on loopback, the kind of remote a lab shares), a clone in another directory pulls them,
rebuilds the results without an engine call and ``sealedeval audit`` passes there."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.conftest import git
from tests.workflow.test_dvc import ENV, run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("dvc") is None or shutil.which("snakemake") is None,
        reason="dvc/snakemake missing",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("wsgidav") is None
        or importlib.util.find_spec("dvc_webdav") is None,
        reason="wsgidav/dvc-webdav missing (pip install -e '.[workflow,test]')",
    ),
]
sh = run  # a command that must succeed, with DVC's analytics off (tests/workflow/test_dvc.py)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def webdav(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """WsgiDAV serving a fresh directory on a loopback port, anonymous read-write."""
    store = tmp_path / "dav"
    (store / "myeval").mkdir(parents=True)  # the folder the lab gives the project
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wsgidav.server.server_cli",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--root",
            str(store),
            "--auth",
            "anonymous",
            "--no-config",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"wsgidav exited: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.2)
        else:
            pytest.fail("wsgidav did not start in 30 s")
        yield f"webdav://127.0.0.1:{port}/myeval", store
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_author_pushes_a_clone_pulls_and_audits(webdav: tuple[str, Path], tmp_path: Path) -> None:
    url, store = webdav
    author = tmp_path / "author"
    author.mkdir()
    init = sh(author, sys.executable, "-m", "sealedeval.cli", "init", "myeval")
    assert "dvc init; default remote storage" in init.stdout
    root = author / "myeval"
    assert (root / ".dvc/config").exists() and (root / ".dvcignore").exists()
    assert "myeval-dvc-storage" in (root / ".dvc/config").read_text()
    cfg = yaml.safe_load((root / "config/config.yaml").read_text())
    cfg["engines"] = {"reference": {"kind": "reference"}}
    cfg["suites"]["example"]["engines"] = ["reference"]
    (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # the lab's server, as the README says
    sh(root, "dvc", "remote", "modify", "storage", "url", url)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Project")
    sh(root, sys.executable, "-m", "sealedeval.cli", "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Seal the rubric")
    sh(root, "dvc", "repro")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Runs")
    sh(root, "dvc", "push")
    assert any(p.is_file() for p in store.rglob("*")), "nothing reached the WebDAV server"
    raw = sorted(p.relative_to(root).as_posix() for p in (root / "results/raw").rglob("*.parquet"))
    assert raw

    clone = tmp_path / "auditor" / "myeval"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    shutil.rmtree(author)  # nothing of the author's machine is left to read
    sh(clone, "dvc", "pull")
    assert (
        sorted(p.relative_to(clone).as_posix() for p in (clone / "results/raw").rglob("*.parquet"))
        == raw
    )
    ledgered = len((clone / "ledger.jsonl").read_text().splitlines())
    sh(clone, "snakemake", "--cores", "2")
    entries = [json.loads(x) for x in (clone / "ledger.jsonl").read_text().splitlines()]
    assert all(e["ok"] + e["error"] == 0 for e in entries[ledgered:]), "an engine was called"
    audit = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", "audit"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "audit: passed" in audit.stdout
