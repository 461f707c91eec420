"""Planted faults an auditor tries on a finished build, each caught by plain ``sealedeval audit``.

Selective reporting (a run deleted and the project republished), a part swapped, a ledger
entry removed, a ledger rewritten with a recomputed chain, a config edited after the build, a
result built from an older seal, analysis code edited after the seal, an engine config that
cannot work, a run whose every call failed. The template project (``conftest.sealed_template``)
is sealed, run on the tiny profile, published, and its raw runs, results and ledger committed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sealedeval.canonical import compact
from sealedeval.store import ledger

REPO = Path(__file__).resolve().parents[2]


def _republish(sealed, not_as_sealed: str) -> None:
    """Publish again: it states (exit 1) what the audit then fails."""
    sealed.publish(not_as_sealed=not_as_sealed)


def test_the_clean_build_audits_without_flags_and_discloses_attempts(sealed):
    a = sealed.audit(configs=())  # no -c: the config is the one result.json records
    assert a.rc == 0, a
    assert "config as recorded in results/result.json" in a.out
    assert a.status("config as built") == "PASS", a
    assert a.status("ledger chain") == "PASS" and "all committed" in a.detail("ledger chain"), a
    assert a.status("ledgered parts") == "PASS", a
    assert a.detail("attempts") == "golden/reference 1 run", a


def test_deleting_an_engines_runs_and_republishing_is_caught(sealed):
    shutil.rmtree(sealed.root / "results/raw/golden/reference")
    # The project still publishes (no raw runs for golden: nothing to report) ...
    rc, _, err = sealed.cli("publish", "-c", "config/tiny.yaml")
    assert rc == 2 and "no raw runs" in err
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("ledgered parts") == "FAIL", a
    assert "is in the ledger but missing" in a.detail("ledgered parts")


@pytest.mark.slow
def test_one_part_deleted_and_republished_is_caught(sealed):
    gone = sealed.parts()[-1]
    gone.unlink()
    _republish(sealed, "golden/reference: 1 ledgered raw part missing")
    a = sealed.audit()
    assert a.rc == 1, a
    # the manifest was rebuilt without the part, so only the ledger knows it existed
    assert a.status("manifest checksums") == "PASS", a
    assert a.status("ledgered parts") == "FAIL", a
    rel = gone.relative_to(sealed.root).as_posix()
    assert f"{rel} is in the ledger but missing" in a.detail("ledgered parts")


def test_a_part_swapped_for_another_is_caught(sealed):
    a_part, b_part = sealed.parts()[:2]
    tmp = a_part.with_suffix(".tmp")
    a_part.rename(tmp)
    b_part.rename(a_part)
    tmp.rename(b_part)
    _republish(sealed, f"{a_part.relative_to(sealed.root).as_posix()} differs from the ledger")
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("ledgered parts") == "FAIL", a
    assert "differs from the ledger (edited or swapped)" in a.detail("ledgered parts")


@pytest.mark.slow
def test_a_part_written_by_no_run_is_caught(sealed):
    src = sealed.parts()[0]
    shutil.copy2(src, src.with_name("part-99999999T000000-injected-00000.parquet"))
    _republish(sealed, "injected-00000.parquet was written by no ledgered run")
    a = sealed.audit()
    assert a.rc == 1, a
    assert "was written by no ledgered run" in a.detail("ledgered parts")
    # running the engine again adopts only what a killed run can have left: a copy answers
    # keys another part answered, so the rerun does not take it into the ledger
    rc, _, err = sealed.cli("run", "golden", "--engine", "reference", "-c", "config/tiny.yaml")
    assert rc == 0, err
    assert "adopted" not in ledger.read(sealed.root)[-1]
    assert sealed.audit().status("ledgered parts") == "FAIL"


def _entries(sealed) -> list[dict]:
    return ledger.read(sealed.root)


def _write(sealed, entries: list[dict]) -> None:
    (sealed.root / ledger.LEDGER_NAME).write_text(
        "".join(compact(e) + "\n" for e in entries), encoding="utf-8"
    )


def test_a_ledger_entry_removed_breaks_the_chain(sealed):
    # a second run (a resume check) so there is an entry to remove from the middle
    assert sealed.run() == 0
    entries = _entries(sealed)
    assert len(entries) == 2
    _write(sealed, entries[1:])
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("ledger chain") == "FAIL", a
    assert "sequence number" in a.detail("ledger chain") or "chain" in a.detail("ledger chain")


def test_a_ledger_rewritten_with_a_recomputed_chain_is_caught_by_its_history(sealed):
    entries = _entries(sealed)
    forged = dict(entries[0], ok=entries[0]["ok"] - 1)  # hide a call ...
    forged["hash"] = ledger.entry_hash(forged)  # ... and recompute the chain: it verifies
    _write(sealed, [forged])
    assert ledger.chain_problems(ledger.read(sealed.root)) == []
    a = sealed.audit()
    assert a.rc == 1, a
    assert "rewritten after commit" in a.detail("ledger chain"), a
    # committing the forgery does not help: the earlier commit still holds the original
    sealed.commit("forge", "ledger.jsonl")
    a = sealed.audit()
    assert a.rc == 1 and "rewritten after commit" in a.detail("ledger chain"), a


def test_a_config_edited_after_the_build_is_named(sealed):
    tiny = sealed.root / "config/tiny.yaml"
    tiny.write_text(tiny.read_text().replace("seed: 7", "seed: 8"))
    a = sealed.audit(configs=())
    assert a.rc == 1, a
    assert a.status("config as built") == "FAIL", a
    assert "changed since the build" in a.detail("config as built")


def test_a_result_built_from_an_older_seal_is_caught(sealed):
    old = sealed.result_path.read_text()
    tasks = sealed.root / "data/golden/tasks.yaml"
    tasks.write_text(tasks.read_text() + "\n# re-sealed after the build\n")
    sealed.seal()
    sealed.commit("re-seal", "rubric.lock", "data")
    sealed.result_path.write_text(old)
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("lock matches files") == "FAIL" or a.status("result re-derives") == "FAIL"


def _package_copy(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "src/sealedeval", site / "sealedeval", ignore=shutil.ignore_patterns("__pycache__")
    )
    return site


@pytest.mark.slow
def test_editing_the_statistics_after_the_seal_stops_a_run(sealed, tmp_path):
    site = _package_copy(tmp_path)
    prop = site / "sealedeval/stats/_proportion.py"
    prop.write_text(prop.read_text().replace("Z_95 = ", "Z_95 = 0.0 + "))
    env = {**os.environ, "PYTHONPATH": str(site)}

    def run_tiny() -> subprocess.CompletedProcess[str]:
        """`sealedeval run` with the edited package copy first on the path."""
        cmd = [sys.executable, "-m", "sealedeval.cli", "run", "golden", "-c", "config/tiny.yaml"]
        return subprocess.run(
            [*cmd, "--no-progress"],
            cwd=sealed.root,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    proc = run_tiny()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "pkg:sealedeval/stats/_proportion.py changed after the seal" in proc.stderr
    # a comment or a re-format is not a seal event: the AST is what is sealed
    prop.write_text(
        REPO.joinpath("src/sealedeval/stats/_proportion.py").read_text()
        + "\n# a comment added after the seal\n"
    )
    proc = run_tiny()
    assert proc.returncode == 0, proc.stderr


def test_an_openai_chat_engine_without_base_url_is_a_config_error(sealed):
    bad = sealed.root / "config/bad.yaml"
    bad.write_text(
        "engines:\n  remote: {kind: openai_chat, model: m}\n"
        "suites:\n  golden: {engines: [remote]}\n"
    )
    rc, _, err = sealed.cli("run", "golden", "-c", "config/bad.yaml", "--no-progress")
    assert rc == 2 and err.count("\n") == 1
    assert "engines.remote: kind openai_chat needs base_url" in err
    bad.write_text("engines:\n  reference: {kind: reference, n_ctx: 512}\n")
    rc, _, err = sealed.cli("run", "golden", "-c", "config/bad.yaml", "--no-progress")
    assert rc == 2 and "engines.reference.n_ctx: not an option of kind reference" in err


def test_a_run_in_which_every_call_failed_exits_non_zero(sealed):
    bad = sealed.root / "config/dead.yaml"
    # nothing listens on port 9: every call is a connection error after its retries
    bad.write_text(
        "engines:\n  dead: {kind: openai_chat, base_url: 'http://127.0.0.1:9/v1', model: m,"
        " max_retries: 0, timeout_s: 2}\n"
        "suites:\n  golden: {engines: [dead], limit: 2, repeats: 0, branch_engines: [],"
        " judge: {engines: []}, probes: {engines: []}}\n"
    )
    rc, _, err = sealed.cli("run", "golden", "-c", "config/dead.yaml", "--no-progress")
    assert rc == 2, err
    line = err.strip().splitlines()[-1]
    assert "golden/dead: 2 of 2 calls ended in error after retries (connection 2)" in line
    rows = [r for p in sealed.parts() for r in sealed.read_part(p) if r["engine"] == "dead"]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"error"}  # rows kept
    rc, _, _ = sealed.cli(
        "run", "golden", "-c", "config/dead.yaml", "--no-progress", "--allow-errors"
    )
    assert rc == 0
    entries = ledger.read(sealed.root)
    assert [e["engine"] for e in entries].count("dead") == 2


def test_the_ledger_records_what_each_run_planned_and_wrote(sealed):
    [e] = _entries(sealed)
    assert e["suite"] == "golden" and e["engine"] == "reference" and e["kind"] == "run"
    assert e["planned"] == e["ok"] == sum(p["rows"] for p in e["parts"])
    assert {p["path"] for p in e["parts"]} == {
        p.relative_to(sealed.root).as_posix() for p in sealed.parts()
    }
    assert e["sealed"] is True and e["seal_commit"] == sealed.seal_commit
    assert len(e["planned_keys_sha256"]) == 64 and e["outcome"] == "done"
    assert json.loads(compact(e)) == e
