"""``sealedeval import promptfoo``: ``promptfoo eval -o results.json`` → raw rows, ledger,
analysis, audit.

The committed fixture (tests/fixtures/imports/promptfoo/results.json, made by the real
promptfoo 0.115 with scripts/imports/make_promptfoo_fixture.sh) is imported by the default
tests; the slow test runs the real promptfoo when node and promptfoo are installed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.imports import harness_runs as hr
from tests.imports.project import make_project, nothing_written, publish_and_audit

from sealedeval.config import load_config
from sealedeval.imports import cli as import_cli
from sealedeval.stages.pipeline import derive
from sealedeval.store import ledger
from sealedeval.store.raw import latest_records, raw_files, read_raw

FIXTURE = hr.FIXTURES / "promptfoo" / "results.json"
A, B = "openai-chat-tiny-a", "openai-chat-tiny-b"

CONFIG = f"""
project: {{name: imp, seed: 1}}
engines:
  {A}: {{kind: reference}}
  {B}: {{kind: reference}}
suites:
  tinyqa-promptfoo:
    kind: imported
    harness: promptfoo
    engines: [{A}, {B}]
    sources: [tasks/promptfooconfig.yaml]
"""
SUITE = "tinyqa-promptfoo"


def sealedeval_import(root: Path, *args: str) -> int:
    return import_cli.main(["promptfoo", "--root", str(root), *args])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", CONFIG, hr.PROMPTFOO_CONFIG)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    dest = tmp_path / "pf" / "results.json"
    dest.parent.mkdir()
    shutil.copyfile(FIXTURE, dest)
    return dest


def analysis(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = derive(load_config(root), SUITE).doc["analysis"]
    return doc


def promptfoo_counts(path: Path) -> dict[str, tuple[int, int, int]]:
    """provider → (passed, failed, errors) as promptfoo reported them, read straight from
    the file."""
    doc = json.loads(path.read_text())
    out = {}
    for p in doc["results"]["prompts"]:
        m = p["metrics"]
        out[p["provider"]] = (m["testPassCount"], m["testFailCount"], m["testErrorCount"])
    return out


def test_fixture_import_equals_promptfoo(
    project: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sealedeval_import(project, str(log)) == 0
    out = capsys.readouterr().out
    assert f"5 rows (4 ok, 1 error) → results/raw/{SUITE}/{A}" in out
    assert f"5 rows (4 ok, 1 error) → results/raw/{SUITE}/{B}" in out

    rows = latest_records(raw_files(project, SUITE))
    assert len(rows) == 10
    boom = [r for r in rows if r["item_id"] == "4"]
    assert {(r["status"], r["error_kind"]) for r in boom} == {("error", "provider_error")}
    assert all("500" in r["error_message"] for r in boom)
    r = next(r for r in rows if r["engine"] == B and r["item_id"] == "1")
    assert r["output_text"] == "4 obviously" and r["model"] == "openai:chat:tiny-b"
    assert (r["tokens_in"], r["tokens_out"]) == (8, 2) and r["latency_s"] > 0
    assert r["harness_version"] == "promptfoo (results v3)"  # 0.115 records no version
    assert json.loads(r["messages"]) == [
        {"role": "user", "content": "Answer in one word. Q: What is 2+2?"}
    ]
    resp = json.loads(r["response"])
    assert resp["scores"]["pass"]["value"] is False and resp["scores"]["score"]["value"] == 0.5
    kinds = [(a["type"], a["pass"]) for a in resp["assertions"]]
    assert kinds == [("javascript", True), ("equals", False)]  # defaultTest's, then the test's
    assert resp["test"]["description"] == "sum"

    an = analysis(project)
    assert an["harness"] == "promptfoo" and an["primary"] == "pass"
    theirs = promptfoo_counts(log)
    for eng, provider in ((A, "openai:chat:tiny-a"), (B, "openai:chat:tiny-b")):
        passed, failed, errors = theirs[provider]
        ours = an["engines"][eng]["scorers"]["pass"]
        assert ours["accuracy"]["rate"] == pytest.approx(passed / (passed + failed))
        assert (ours["samples"], ours["samples_error"]) == (passed + failed, errors)
        (h,) = an["engines"][eng]["headline"]
        assert h["match"] and h["counts"]["ours"] == h["counts"]["harness"]
        assert h["counts"]["harness"] == {"passed": passed, "failed": failed, "error": errors}
    assert theirs == {"openai:chat:tiny-a": (3, 1, 1), "openai:chat:tiny-b": (1, 3, 1)}
    assert an["headline_match"] is True
    (c,) = an["comparisons"]  # tests 0-3: a better on sum and sky, ties on capital and planet
    assert (c["n_items"], c["a_better"], c["b_better"], c["ties"]) == (4, 2, 0, 2)

    key = hr.DUMMY_KEY
    assert key.encode() not in FIXTURE.read_bytes()
    assert key not in json.dumps(read_raw(raw_files(project)).to_pylist())
    assert key not in (project / ledger.LEDGER_NAME).read_text()
    (e,) = [e for e in ledger.read(project) if e["engine"] == A]
    assert e["source"]["sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    assert e["harness"] == "promptfoo" and (e["ok"], e["error"]) == (4, 1)


def test_repeats_are_one_item_each(project: Path, tmp_path: Path) -> None:
    """``--repeat 2`` writes each test twice under consecutive testIdx: one item with two
    repeats, and promptfoo's counts (per run) are ours."""
    log = tmp_path / "results-repeat2.json"
    shutil.copyfile(FIXTURE.with_name("results-repeat2.json"), log)
    doc = json.loads(log.read_text())
    assert sorted({r["testIdx"] for r in doc["results"]["results"]}) == list(range(10))
    assert sealedeval_import(project, str(log)) == 0
    rows = latest_records(raw_files(project, SUITE))
    assert sorted({r["item_id"] for r in rows}) == ["0", "1", "2", "3", "4"]
    assert {(r["item_id"], r["repeat"]) for r in rows if r["engine"] == A} == {
        (str(i), k) for i in range(5) for k in (0, 1)
    }
    an = analysis(project)
    theirs = promptfoo_counts(log)
    assert theirs["openai:chat:tiny-a"] == (6, 2, 2)
    for eng, provider in ((A, "openai:chat:tiny-a"), (B, "openai:chat:tiny-b")):
        passed, failed, errors = theirs[provider]
        (h,) = an["engines"][eng]["headline"]
        assert h["match"], h
        assert h["counts"]["ours"] == {"passed": passed, "failed": failed, "error": errors}
        ours = an["engines"][eng]["scorers"]["pass"]
        assert ours["epochs"] == 2 and ours["samples"] == 4  # items, not runs
        assert "pass_at_2" in ours and "pass_hat_2" in ours
    assert an["headline_match"] is True


@pytest.mark.slow
def test_report_and_audit(project: Path, log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sealedeval_import(project, str(log)) == 0
    _rc, checks = publish_and_audit(project, capsys)
    assert checks["harness headline"].startswith("PASS 2 reported metric(s) equal ours")
    # error rows have no score: the graded file read back equals the re-derivation
    assert checks["result re-derives"].startswith("PASS")
    md = (project / "results" / "report.md").read_text()
    assert f"| {A} | pass | accuracy |" in md and "| promptfoo | ours |" in md
    assert "**DIFFERS**" not in md
    assert (
        f"- {A}/pass: promptfoo counted 3 / 1 / 1 (passed / failed / error); ours 3 / 1 / 1" in md
    )


@pytest.mark.parametrize("edit", ["headline", "error hidden"])
@pytest.mark.slow
def test_headline_mismatch_is_an_audit_failure(
    project: Path, log: Path, edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(log.read_text())
    metrics = doc["results"]["prompts"][0]["metrics"]  # tiny-a
    if edit == "headline":
        metrics["testPassCount"] = 4  # a pass rate of 4/5 that its rows do not give
        metrics["testFailCount"] = 1
        metrics["testErrorCount"] = 0
        want = "ours 0.75 vs promptfoo 0.8"
    else:  # the errored test counted as a failed one: 3 passed, 2 failed, no error
        metrics["testFailCount"] = 2
        metrics["testErrorCount"] = 0
        want = "ours 0.75 vs promptfoo 0.6"
    log.write_text(json.dumps(doc))
    assert sealedeval_import(project, str(log)) == 0
    rc, checks = publish_and_audit(project, capsys)
    assert rc == 1
    fail = checks["harness headline"]
    assert fail.startswith(f"FAIL {SUITE}: {A}/pass: {want}"), fail
    assert "passed/failed/error ours 3/1/1 vs" in fail


def test_reimport_noop_and_changed_file_is_new_ingest(
    project: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sealedeval_import(project, str(log)) == 0
    parts = raw_files(project, SUITE)
    n = len(ledger.read(project))
    capsys.readouterr()
    assert sealedeval_import(project, str(log)) == 0
    assert capsys.readouterr().out.count("already imported") == 2  # one per provider
    assert raw_files(project, SUITE) == parts and len(ledger.read(project)) == n

    doc = json.loads(log.read_text())
    doc["results"]["results"][0]["response"]["output"] = "Lyon"  # edited in place
    log.write_text(json.dumps(doc, indent=2))
    assert sealedeval_import(project, str(log)) == 0
    assert "5 rows" in capsys.readouterr().out
    entries = [e for e in ledger.read(project) if e["kind"] == "import"]
    assert len(entries) == 4 and len({e["source"]["sha256"] for e in entries}) == 2
    assert len(raw_files(project, SUITE)) == len(parts) + 2


def _break(log: Path, case: str) -> str:
    data = log.read_bytes()
    if case == "truncated":
        log.write_bytes(data[: len(data) // 2])
        return f"{log}:"
    if case == "not JSON":
        log.write_text("{results: nope")
        return f"{log}:1: not JSON, so not a promptfoo export"
    doc = json.loads(data)
    if case == "unknown version":
        doc["results"]["version"] = 2
        log.write_text(json.dumps(doc))
        return f"{log}: promptfoo results version 2 is not a format this importer reads"
    if case == "not promptfoo":
        log.write_text(json.dumps({"results": {"version": 3, "results": [{"a": 1}], "stats": {}}}))
        return f"{log}: results.results[0] is not a promptfoo result"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["truncated", "not JSON", "unknown version", "not promptfoo"])
def test_bad_input_one_line_exit_2_nothing_written(
    project: Path, log: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    shutil.copyfile(log, good)
    names = _break(log, case)
    capsys.readouterr()
    assert sealedeval_import(project, str(good), str(log), "--suite", SUITE) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sealedeval: error: ") and names in err, err
    assert nothing_written(project)


@pytest.mark.slow
def test_real_promptfoo_after_the_seal_audits_clean(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if hr.promptfoo_bin() is None:
        pytest.skip(
            "promptfoo not found: needs node >= 18 and promptfoo 0.115 "
            "(npm install promptfoo@0.115; PROMPTFOO_BIN=<its node_modules/.bin/promptfoo>)"
        )
    with hr.answering_server(hr.PROMPTFOO_ANSWERS, hr.PROMPTFOO_FAULTS) as fake:
        result, _cmd = hr.run_promptfoo(tmp_path / "run", fake.base_url)
        auth = {r.headers.get("authorization") for r in fake.requests}
    assert auth == {f"Bearer {hr.DUMMY_KEY}"}  # the key was used, and is in no file below
    assert hr.DUMMY_KEY not in result.read_text()
    assert sealedeval_import(project, str(result)) == 0
    an = analysis(project)
    assert an["headline_match"] is True
    for eng, (passed, failed, _errors) in zip(
        (A, B), promptfoo_counts(result).values(), strict=True
    ):
        ours = an["engines"][eng]["scorers"]["pass"]["accuracy"]["rate"]
        assert ours == pytest.approx(passed / (passed + failed))
    rc, checks = publish_and_audit(project, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["seal precedes runs"].startswith("PASS")
