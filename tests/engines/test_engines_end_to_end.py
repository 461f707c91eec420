"""The new kinds through the real ``sealedeval`` stages in a throwaway sealed project copy.

- golden's tiny profile (``config/tiny.yaml``) on an ``anthropic`` engine against the loopback
  Messages API, which fails with every retryable error it has first: every row ends ok, usage
  and cost recorded, the audit passes, and the key is nowhere in the results, logs, ledger or
  CLI output; golden's agent branch runs on it with native tool blocks;
- a replay of a recorded raw run regrades it under a changed rubric (a new seal): a new run
  bound to the new seal, answers as recorded, grades by the new rubric, the source's hash in
  every row.

Mirrors ``tests/golden/test_golden_suite.py::test_reference_engine_end_to_end`` (the CLI in
process, ``--root`` a copy of this repository's project files, sealed and committed).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git, sealedeval
from tests.fakes.anthropic_server import FakeAnthropic

from sealedeval.store import ledger
from sealedeval.store.raw import latest_rows, raw_files, read_raw

KEY = "sk-ant-e2e-7f3a9c1d5b"
ENV = "SEALEDEVAL_E2E_ANTHROPIC_KEY"
RETRYABLE_FIRST = ["rate_limit", "overloaded", "api_error", "reset", "rate_limit", "overloaded"]


def _cli(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    return rc, out + err


def golden_responder(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    """Branch A: the echo answer. Agents: list the files, read the first, answer."""
    msgs = body["messages"]
    results = [
        b
        for m in msgs
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    if body.get("tools") and body.get("tool_choice", {}).get("type") != "none":
        if not results:
            return [{"type": "tool_use", "name": "list_files", "input": {}}]
        if len(results) == 1:
            first = results[0]["content"].split()[0]
            return [{"type": "tool_use", "name": "read_file", "input": {"path": first}}]
    if results:
        return "I read the files."
    return "I do not know."


def _files_text(root: Path) -> list[tuple[Path, bytes]]:
    out = []
    for base in ("results", "logs"):
        for p in sorted((root / base).rglob("*")):
            if p.is_file():
                out.append((p, p.read_bytes()))
    out.append((root / "ledger.jsonl", (root / "ledger.jsonl").read_bytes()))
    return out


@pytest.mark.slow
def test_golden_tiny_on_anthropic_end_to_end(
    project: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, KEY)
    root = project()
    with FakeAnthropic(api_key=KEY, responder=golden_responder, script=RETRYABLE_FIRST) as fake:
        (root / "config/claude.yaml").write_text(
            "engines:\n"
            "  claude:\n"
            "    kind: anthropic\n"
            "    model: claude-fake\n"
            f"    base_url: {fake.base_url}\n"
            f"    api_key_env: {ENV}\n"
            "    concurrency: 2\n"
            "    backoff_base_s: 0.01\n"
            "    backoff_max_s: 0.05\n"
            "    price_in_per_mtok: 3\n"
            "    price_out_per_mtok: 15\n"
            "suites:\n"
            "  golden:\n"
            "    engines: [claude]\n"
            "    branch_engines: [claude]\n"
            "    branches:\n"
            "      A: {solver: single, tools: false}\n"
            "      B: {solver: agent, tools: true, repeats: 0, tasks: [g01, g04]}\n"
            "  bloodpanel: {engines: [reference], enabled: false}\n"
            "  grounding: {engines: [reference], enabled: false}\n"
        )
        cfgs = ("-c", "config/tiny.yaml", "-c", "config/claude.yaml")
        rc, out = _cli(root, "run", "golden", "--engine", "claude", *cfgs, capsys=capsys)
        assert rc == 0, out[-3000:]
        # tiny: 6 tasks x (1 main + 3 sampled) on A; agents: 2 tasks on B, and g01 (of
        # config.yaml's C subset g01 g07 g19, cut to 6 tasks) on C, 3 trajectories voted
        n = 6 * 4 + 2 + 1
        assert f"requested {n}, skipped (already ok) 0, ok {n}, error 0" in out
        assert fake.count("rate_limit") == 2 and fake.count("overloaded") == 2
        assert fake.count("api_error") == 1 and fake.count("reset") == 1
        assert "rate_limit: waiting" in out  # the 429's Retry-After wait was shown
        for stage in ("grade", "analyze"):
            rc, o = _cli(root, stage, "golden", *cfgs, capsys=capsys)
            assert rc == 0, o[-3000:]
            out += o
        for cmd in ("publish", "audit"):
            rc, o = _cli(root, cmd, *cfgs, capsys=capsys)
            assert rc == 0, o[-3000:]
            out += o
        bodies = fake.ok_bodies()
        calls = fake.count()
    rows = list(latest_rows(read_raw(raw_files(root, "golden")).to_pylist()).values())
    assert len(rows) == n and {r["status"] for r in rows} == {"ok"}
    assert all(r["tokens_in"] > 0 and r["tokens_out"] > 0 and r["cost_usd"] > 0 for r in rows)
    # every request the server saw, failed ones included, is an attempt of some row
    assert sum(r["attempts"] for r in rows) == calls == len(bodies) + len(RETRYABLE_FIRST)
    a_rows = [r for r in rows if r["condition"].startswith("A")]
    # one system prefix per directory variant, written once and read by every later request
    reads = [json.loads(r["response"])["usage"]["cache_read_input_tokens"] for r in a_rows]
    assert sum(1 for x in reads if x > 0) >= len(a_rows) - 2
    agent = [r for r in rows if not r["condition"].startswith("A")]
    assert sorted(r["condition"] for r in agent) == ["B/main", "B/main", "C/main"]
    for r in agent:
        traj = json.loads(r["trajectory"])
        runs = [t["steps"] for t in traj if t["type"] == "sample"] or [traj]
        assert len(runs) == (3 if r["condition"] == "C/main" else 1)
        for steps in runs:
            tools = [s for s in steps if s["type"] == "tool"]
            assert [t["name"] for t in tools] == ["list_files", "read_file"]
            assert all(t["ok"] for t in tools)
        assert r["output_text"] == "I read the files."
    assert any(
        b["type"] == "tool_result"
        for body in bodies
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    )
    res = json.loads((root / "results/result.json").read_text())
    c = res["suites"]["golden"]["seal"]["counts"]["claude"]
    assert (c["requests"], c["ok"], c["missing"], c["complete"]) == (n, n, 0, True)
    # the key: nowhere in what was written or printed
    leaks = [p for p, data in _files_text(root) if KEY.encode() in data]
    assert leaks == [] and KEY not in out
    assert ENV in (root / "results/result.json").read_text()  # only the variable's name


def _edit_g01_must(root: Path) -> None:
    """A changed rubric: g01 now also needs the deploy it was rolled back to named as 17."""
    path = root / "data/golden/tasks.yaml"
    text = path.read_text()
    old = "    category: lookup\n    files: [deploys.log]\n"
    assert old in text
    first = text.index("  - id: g01")
    at = text.index("    must:\n", first) + len("    must:\n")
    path.write_text(text[:at] + "      - 'rolled back to deploy 17'\n" + text[at:])


@pytest.mark.slow
def test_replay_regrades_a_raw_run_under_a_changed_rubric(
    project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    tiny = ("-c", "config/tiny.yaml")
    rc, out = _cli(root, "run", "golden", "--engine", "reference", *tiny, capsys=capsys)
    assert rc == 0, out
    rc, out = _cli(root, "grade", "golden", *tiny, capsys=capsys)
    assert rc == 0, out
    assert _regex_passed(root) == {f"g0{i}": {True} for i in range(1, 7)}
    old_rows = list(latest_rows(read_raw(raw_files(root, "golden")).to_pylist()).values())
    old_hash = old_rows[0]["rubric_sha256"]
    old_entry = ledger.read(root)[-1]
    # archive the recorded run, change the rubric, re-seal (a new seal, committed)
    (root / "archive/raw/golden").mkdir(parents=True)
    shutil.move(root / "results/raw/golden/reference", root / "archive/raw/golden/reference")
    _edit_g01_must(root)
    sealedeval(root, "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "re-seal: g01 needs deploy 17")
    (root / "config/old.yaml").write_text(
        "engines:\n"
        "  old: {kind: replay, source: archive/raw/golden/reference, concurrency: 2}\n"
        "suites:\n"
        "  golden: {engines: [old]}\n"
        "  bloodpanel: {engines: [reference], enabled: false}\n"
        "  grounding: {engines: [reference], enabled: false}\n"
    )
    cfgs = (*tiny, "-c", "config/old.yaml")
    rc, out = _cli(root, "run", "golden", "--engine", "old", *cfgs, capsys=capsys)
    assert rc == 0, out
    n = len(old_rows)
    assert f"requested {n}, skipped (already ok) 0, ok {n}, error 0" in out
    new_rows = list(latest_rows(read_raw(raw_files(root, "golden")).to_pylist()).values())
    new_hash = new_rows[0]["rubric_sha256"]
    assert new_hash != old_hash and {r["rubric_sha256"] for r in new_rows} == {new_hash}
    # keys changed with the seal (the seed derives from it): matched by item, answers as recorded
    assert not {r["request_key"] for r in new_rows} & {r["request_key"] for r in old_rows}
    recorded = {(r["item_id"], r["condition"], r["repeat"]): r["output_text"] for r in old_rows}
    assert {(r["item_id"], r["condition"], r["repeat"]): r["output_text"] for r in new_rows} == (
        recorded
    )
    ident = json.loads(new_rows[0]["engine_identity"])
    assert ident["source"] == "archive/raw/golden/reference"
    assert ident["source_ledger"] == [old_entry["hash"]]
    assert len({r["engine_identity"] for r in new_rows}) == 1
    entry = ledger.read(root)[-1]
    assert (entry["engine"], entry["rubric_sha256"], entry["ok"]) == ("old", new_hash, n)
    for stage in ("grade", "analyze"):
        rc, o = _cli(root, stage, "golden", *cfgs, capsys=capsys)
        assert rc == 0, o[-3000:]
    graded = json.loads((root / "results/analysis/golden.json").read_text())
    # g01 was right under the old rubric (the reference answer), wrong under the new one
    by_task = _regex_passed(root, engine="old")
    assert by_task.pop("g01") == {False}
    assert by_task == {f"g0{i}": {True} for i in range(2, 7)}
    assert graded["seal"]["rubric_sha256"] == new_hash
    for cmd in ("publish", "audit"):  # the regraded run publishes and audits like any run
        rc, o = _cli(root, cmd, *cfgs, capsys=capsys)
        assert rc == 0, o[-3000:]
    res = json.loads((root / "results/result.json").read_text())
    assert res["engines"]["old"]["source_sha256"] == ident["source_sha256"]


def _regex_passed(root: Path, engine: str = "reference") -> dict[str, set[bool]]:
    """Per task, the verdicts of golden's regex grader (the must / mustNot rules)."""
    from sealedeval.stages import artifacts

    out: dict[str, set[bool]] = {}
    for r in artifacts.read_graded(root / "results/graded/golden.parquet"):
        if r["grader"] == "regex":
            assert r["engine"] == engine and r["status"] == "ok"
            out.setdefault(str(r["item_id"]), set()).add(bool(r["passed"]))
    return out
