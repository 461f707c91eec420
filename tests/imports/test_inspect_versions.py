"""Inspect AI logs written by two pinned releases: the installed one and an older minor release
(``OLD``, a year older, installed by this test in a throwaway venv) whose log format differs —
its samples have no ``started_at`` / ``completed_at`` and its scores no ``scored_samples``.

Both releases run the same made-up task (``tests/fixtures/imports/inspect_versions``) with
their own ``mockllm``, each writing an ``.eval`` and a ``.json`` log; the logs import with no
hand-written config, publish and audit clean, and every headline number Inspect printed for its
own log is the one the import carries and re-derives. The venv is kept in pytest's cache
(``.pytest_cache/d/inspect-ai-<OLD>``; under tmp with ``-p no:cacheprovider``); where PyPI
cannot be reached the test is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git
from tests.imports.project import make_project, nothing_written, publish_and_audit

import sealedeval as se
from sealedeval import cli
from sealedeval.config import load_config
from sealedeval.imports import cli as import_cli
from sealedeval.stages.pipeline import derive
from sealedeval.store.raw import latest_records, raw_files

pytest.importorskip("inspect_ai")

OLD = "0.3.100"
"""The older pinned release: its logs are format version 2 like the installed release's, but
samples carry no start/end times and scores no scored/unscored counts."""
FIXTURE = Path(__file__).parents[1] / "fixtures" / "imports" / "inspect_versions"
EMPTY_CONFIG = "project: {name: versions, seed: 1}\nengines: {}\nsuites: {}\n"
EPOCHS = 2
ENGINES = ("mockllm-eval-log", "mockllm-json-log")
_NETWORK = (
    "No matching distribution",
    "Could not find a version",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "ConnectionError",
    "ReadTimeout",
    "Max retries exceeded",
)


def _venv_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir(f"inspect-ai-{OLD}"))
    return tmp_path_factory.mktemp(f"inspect-ai-{OLD}")


@pytest.fixture(scope="module")
def old_python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a venv holding inspect-ai==OLD (made once, then reused)."""
    venv = _venv_dir(request, tmp_path_factory) / "venv"
    python = venv / "bin" / "python"
    ready = venv / "READY"
    if ready.exists() and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"inspect-ai=={OLD}"],
        capture_output=True,
        text=True,
        timeout=1500,
    )  # fmt: skip
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        last = next((x for x in reversed(text.splitlines()) if x.strip()), "")
        if any(n in text for n in _NETWORK):
            pytest.skip(f"PyPI unreachable: cannot install inspect-ai=={OLD} ({last.strip()})")
        raise AssertionError(f"pip install inspect-ai=={OLD} failed:\n{text[-3000:]}")
    ready.write_text(OLD)
    return python


def run_inspect(python: Path, work: Path) -> dict[str, Any]:
    """The fixture task run by ``python``'s Inspect (its headline as Inspect printed it)."""
    shutil.copytree(FIXTURE, work)
    home = work / "home"
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")} | {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "INSPECT_DISPLAY": "none",
        "NO_PROXY": "*",
        "no_proxy": "*",
    }
    proc = subprocess.run(
        [str(python), "run_inspect.py", str(work / "logs"), str(EPOCHS)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise AssertionError(f"inspect ({python}) failed:\n{proc.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _import(root: Path, suite: str, logs: list[str]) -> int:
    return import_cli.main(["inspect", "--root", str(root), "--suite", suite, *logs])


def _raw_log(path: str) -> dict[str, Any]:
    """The JSON log as written (not through any Inspect reader)."""
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    return doc


@pytest.mark.slow
def test_logs_of_two_inspect_releases_import_and_audit_with_inspect_s_headline(
    old_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {
        "new": run_inspect(Path(sys.executable), tmp_path / "new"),
        "old": run_inspect(old_python, tmp_path / "old"),
    }
    assert runs["new"]["inspect_ai"] == version("inspect_ai") != OLD
    assert runs["old"]["inspect_ai"] == OLD
    # the premise: the older release's format lacks what the importer reads from a new log
    old_json, new_json = (_raw_log(runs[v]["logs"]["json"]["path"]) for v in ("old", "new"))
    assert old_json["version"] == new_json["version"]
    assert "started_at" not in old_json["samples"][0] and "started_at" in new_json["samples"][0]
    assert "scored_samples" not in old_json["results"]["scores"][0]
    assert new_json["results"]["scores"][0]["scored_samples"] == 5

    root = make_project(tmp_path / "proj", EMPTY_CONFIG, FIXTURE / "tasks", seal=False)
    logs = {v: [r["path"] for r in runs[v]["logs"].values()] for v in runs}
    capsys.readouterr()
    for v in runs:  # no config by hand: each first import writes its blocks and stops
        assert _import(root, f"versiontask_{v}", logs[v]) == 0
    first = capsys.readouterr().out
    assert "suites.versiontask_old" in first and "suites.versiontask_new" in first
    assert nothing_written(root)
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    for v in runs:
        assert _import(root, f"versiontask_{v}", logs[v]) == 0
    second = capsys.readouterr().out
    assert second.count(f"{5 * EPOCHS} rows ({5 * EPOCHS} ok, 0 error)") == 4

    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["harness headline"].startswith("PASS 8 reported metric(s) equal ours")

    result = json.loads((root / "results" / "result.json").read_text())
    for v, run in runs.items():
        suite = f"versiontask_{v}"
        an = result["suites"][suite]["analysis"]
        full = derive(load_config(root), suite).doc["analysis"]
        assert an["headline_match"] is True and an["headline_mismatches"] == []
        for fmt, log in run["logs"].items():
            eng = f"mockllm-{fmt}-log"
            assert an["engines"][eng]["harness_version"] == [f"inspect_ai {run['inspect_ai']}"]
            heads = {
                (h["scorer"], h.get("metric", "accuracy")): h
                for h in an["engines"][eng]["headline"]
            }
            assert set(heads) == {tuple(k.split("/")) for k in log["metrics"]}
            for key, theirs in log["metrics"].items():
                h = heads[tuple(key.split("/"))]
                assert h["match"] is True, (v, fmt, key)
                assert h["harness"] == pytest.approx(theirs, abs=1e-9)
                # no sample was trimmed from either log: an older log's missing scored_samples
                # must not read as "the log holds 5 of the 10 samples its headline scored"
                assert "trimmed" not in h, (v, fmt, h["trimmed"])
            ours = full["engines"][eng]["scorers"]["includes"]["mean_score"]
            assert ours == pytest.approx(log["metrics"]["includes/accuracy"], abs=1e-12)

    # every sample has its own start and end, the older log's from its events
    for v in runs:
        rows = latest_records(raw_files(root, f"versiontask_{v}"))
        assert len(rows) == 2 * 5 * EPOCHS
        starts = [datetime.fromisoformat(r["started_at"]) for r in rows]
        ends = [datetime.fromisoformat(r["finished_at"]) for r in rows]
        assert all(a <= b for a, b in zip(starts, ends, strict=True)), v
        assert len(set(starts)) == len(rows), (v, "samples share a start time")
        assert all(r["tokens_in"] == 5 and r["tokens_out"] == 7 for r in rows), v

    # the metric records' SE and direction (issue #27 item 3) reach the Python API
    df = se.metrics_df(root)
    acc = df[(df["metric"] == "accuracy") & (df["suite"] == "versiontask_old")]
    assert len(acc) == 2 and set(acc["direction"]) == {"higher"}
    assert acc["se"].tolist() == pytest.approx([(0.6 * 0.4 / 5) ** 0.5] * 2, rel=1e-9)
