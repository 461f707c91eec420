"""``sealedeval import lm-eval``: lm-evaluation-harness output → raw rows, ledger, analysis, audit.

The committed fixture (tests/fixtures/imports/lm_eval/, made by the real lm-eval with
scripts/imports/make_lm_eval_fixture.sh) is imported by the default tests; the slow test runs
the real lm-eval (``lm-eval[api]``, no torch) against a loopback server after the seal.
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

FIXTURE = hr.FIXTURES / "lm_eval"

CONFIG = """
project: {name: imp, seed: 1}
engines:
  tiny-a: {kind: reference}
  tiny-b: {kind: reference}
suites:
  tinyqa:
    kind: imported
    harness: lm-eval
    engines: [tiny-a, tiny-b]
    scorer: "exact_match,strict"
    sources: [tasks/tinyqa.yaml, tasks/tinyqa.jsonl]
"""


def sealedeval_import(root: Path, *args: str) -> int:
    return import_cli.main(["lm-eval", "--root", str(root), *args])


def results_file(folder: Path) -> Path:
    (f,) = folder.glob("results_*.json")
    return f


def samples_file(folder: Path) -> Path:
    (f,) = folder.glob("samples_tinyqa_*.jsonl")
    return f


def reported(folder: Path) -> dict[str, float]:
    """lm-eval's own headline, read straight from its results file."""
    res = json.loads(results_file(folder).read_text())["results"]["tinyqa"]
    return {k: v for k, v in res.items() if k.startswith("exact_match,")}


def from_samples(folder: Path) -> dict[str, float]:
    """The mean of the per-document values, straight from the samples file (independent of
    the importer)."""
    values: dict[str, list[float]] = {}
    for line in samples_file(folder).read_text().splitlines():
        d = json.loads(line)
        values.setdefault(f"exact_match,{d['filter']}", []).append(d["exact_match"])
    return {k: sum(v) / len(v) for k, v in values.items()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", CONFIG, hr.LM_EVAL_TASK)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A writable copy of the committed fixture."""
    dest = tmp_path / "lm_eval_out"
    shutil.copytree(FIXTURE, dest)
    return dest


def analysis(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = derive(load_config(root), "tinyqa").doc["analysis"]
    return doc


def test_fixture_import_equals_lm_eval_headline(
    project: Path, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sealedeval_import(project, str(logs)) == 0
    out = capsys.readouterr().out
    assert "6 rows (6 ok, 0 error) → results/raw/tinyqa/tiny-a" in out
    assert "6 rows (4 ok, 2 error) → results/raw/tinyqa/tiny-b" in out  # --limit 4

    rows = latest_records(raw_files(project, "tinyqa"))
    assert len(rows) == 12
    b = {r["item_id"]: r for r in rows if r["engine"] == "tiny-b"}
    assert {(b[i]["status"], b[i]["error_kind"]) for i in ("4", "5")} == {("error", "limit")}
    a1 = next(r for r in rows if r["engine"] == "tiny-a" and r["item_id"] == "4")
    assert a1["output_text"] == "cold, surely" and a1["model"] == "tiny-a"
    assert a1["harness_version"] == "lm_eval 0.4.13"
    assert json.loads(a1["messages"]) == [{"role": "user", "content": "Q: Opposite of hot?\nA:"}]
    sc = json.loads(a1["response"])["scores"]
    assert sc["exact_match,strict"]["value"] == 0.0 and sc["exact_match,flex"]["value"] == 1.0
    assert sc["exact_match,flex"]["answer"] == "cold"  # the filtered answer
    assert a1["started_at"].endswith("Z") and a1["started_at"] < a1["finished_at"]

    # the harness's headline, ours recomputed from the rows, and an independent mean of the
    # samples file: all three equal, for both filters and both models
    an = analysis(project)
    assert an["harness"] == "lm-eval" and an["headline_match"] is True
    for eng in ("tiny-a", "tiny-b"):
        theirs = reported(logs / eng)
        independent = from_samples(logs / eng)
        assert set(theirs) == {"exact_match,strict", "exact_match,flex"}
        for name, value in theirs.items():
            ours = an["engines"][eng]["scorers"][name]
            assert ours["mean_score"] == pytest.approx(value, abs=1e-12)
            assert ours["accuracy"]["rate"] == pytest.approx(value, abs=1e-12)
            assert independent[name] == pytest.approx(value, abs=1e-12)
        assert {h["scorer"] for h in an["engines"][eng]["headline"]} == set(theirs)
    assert reported(logs / "tiny-a")["exact_match,strict"] == pytest.approx(4 / 6)
    assert an["engines"]["tiny-b"]["scorers"]["exact_match,strict"]["samples_error"] == 2

    # paired on the four documents both scored (strict): a right on 0 1 2, b on 0 3
    (c,) = an["comparisons"]
    assert (c["a"], c["b"], c["n_items"]) == ("tiny-a", "tiny-b", 4)
    assert (c["a_better"], c["b_better"], c["ties"]) == (2, 1, 1)

    # no key anywhere: not in the fixture, not in the rows, not in the ledger
    key = hr.DUMMY_KEY.encode()
    assert all(key not in f.read_bytes() for f in FIXTURE.rglob("*") if f.is_file())
    assert key not in (project / ledger.LEDGER_NAME).read_bytes()
    every_value = json.dumps(read_raw(raw_files(project)).to_pylist())
    assert "tinyqa" in every_value and hr.DUMMY_KEY not in every_value

    entries = [e for e in ledger.read(project) if e["kind"] == "import"]
    assert len(entries) == 2
    ea = next(e for e in entries if e["engine"] == "tiny-a")
    files = {Path(f["path"]).name: f["sha256"] for f in ea["source"]["files"]}
    for f in (results_file(logs / "tiny-a"), samples_file(logs / "tiny-a")):
        assert files[f.name] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert ea["harness_version"] == "lm_eval 0.4.13" and ea["ok"] == 6


@pytest.mark.slow
def test_report_and_audit_show_both_numbers(
    project: Path, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sealedeval_import(project, str(logs)) == 0
    _rc, checks = publish_and_audit(project, capsys)
    assert checks["harness headline"].startswith("PASS 4 reported metric(s) equal ours")
    assert checks["result re-derives"].startswith("PASS")  # tiny-b's --limit rows: no score
    md = (project / "results" / "report.md").read_text()
    assert "| tiny-a | exact_match,strict | accuracy |" in md
    assert "| engine | scorer | metric | log | lm-eval | ours | check |" in md
    assert "**DIFFERS**" not in md
    # the fixture was made before this project's seal: the audit says so (and verifies it)
    assert checks["seal precedes runs"].startswith("WARN no sealed rows: every imported sample")
    assert "imported samples predate the seal" in checks["rows bound to seal"]


@pytest.mark.slow
def test_headline_mismatch_is_an_audit_failure(
    project: Path, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = results_file(logs / "tiny-a")
    doc = json.loads(path.read_text())
    doc["results"]["tinyqa"]["exact_match,strict"] = 0.75  # a headline the samples do not give
    path.write_text(json.dumps(doc, indent=2))
    assert sealedeval_import(project, str(logs)) == 0
    rc, checks = publish_and_audit(project, capsys)
    assert rc == 1
    fail = checks["harness headline"]
    assert fail.startswith("FAIL tinyqa: tiny-a/exact_match,strict: ours 0.6666")
    assert "vs lm-eval 0.75" in fail
    md = (project / "results" / "report.md").read_text()
    assert "| tiny-a | exact_match,strict | " in md and "| 0.750 | 0.667 | **DIFFERS** |" in md


def test_reimport_noop_and_changed_file_is_new_ingest(
    project: Path, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = logs / "tiny-a"
    assert sealedeval_import(project, str(folder)) == 0
    parts = raw_files(project, "tinyqa")
    n = len(ledger.read(project))
    capsys.readouterr()
    assert sealedeval_import(project, str(folder)) == 0
    assert "already imported" in capsys.readouterr().out
    assert raw_files(project, "tinyqa") == parts and len(ledger.read(project)) == n

    # the same samples file, edited in place (document 3 now scored right): a new ingest
    sfile = samples_file(folder)
    lines = [json.loads(x) for x in sfile.read_text().splitlines()]
    for d in lines:
        if d["doc_id"] == 3:
            d["exact_match"] = 1.0
    sfile.write_text("".join(json.dumps(d) + "\n" for d in lines))
    assert sealedeval_import(project, str(folder)) == 0
    assert "6 rows (6 ok, 0 error)" in capsys.readouterr().out
    entries = [e for e in ledger.read(project) if e["kind"] == "import"]
    assert len(entries) == 2 and entries[0]["source"]["sha256"] != entries[1]["source"]["sha256"]
    assert len(raw_files(project, "tinyqa")) == len(parts) + 1
    # the raw store's rule holds for imports too: the first ok row of a key is final, so the
    # edit is recorded (ledger, part) but changes no number
    an = analysis(project)
    assert an["engines"]["tiny-a"]["scorers"]["exact_match,strict"]["mean_score"] == 4 / 6
    assert an["engines"]["tiny-a"]["logs"] == [entries[0]["source"]["sha256"]]


def _break(logs: Path, case: str) -> tuple[Path, str]:
    """Damage a copy of the fixture; return the path to import and the text the error names."""
    folder = logs / "tiny-b"
    r, s = results_file(folder), samples_file(folder)
    if case == "line not JSON":
        lines = s.read_text().splitlines()
        lines[2] = lines[2][:40]
        s.write_text("\n".join(lines) + "\n")
        return folder, f"{s}:3: not JSON"
    if case == "truncated samples":
        data = s.read_bytes()
        s.write_bytes(data[: len(data) - 50])
        return folder, f"{s}:{len(s.read_text().splitlines())}: not JSON"
    if case == "truncated results":
        data = r.read_bytes()
        r.write_bytes(data[: len(data) // 2])
        return folder, f"{r}:"
    if case == "samples without results":
        r.unlink()
        return s, f"{s}: samples file without its results file"
    if case == "unknown version":
        doc = json.loads(r.read_text())
        doc["lm_eval_version"] = "0.9.0"
        r.write_text(json.dumps(doc))
        return folder, f"{r}: lm_eval_version 0.9.0 is not a format this importer reads"
    if case == "no samples (run without --log_samples)":
        s.unlink()
        return folder, f"{r}: task tinyqa has no per-sample records"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "line not JSON",
        "truncated samples",
        "truncated results",
        "samples without results",
        "unknown version",
        "no samples (run without --log_samples)",
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(
    project: Path, logs: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, names = _break(logs, case)
    capsys.readouterr()
    # the good run first on the command line: nothing of it may be written either
    assert sealedeval_import(project, str(logs / "tiny-a"), str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sealedeval: error: ") and names in err, err
    assert nothing_written(project)


def test_credentials_in_a_log_never_reach_rows_or_ledger(project: Path, logs: Path) -> None:
    """A key passed in ``--model_args`` (lm-eval copies model_args into the task config's
    metadata too) and a password in a URL are redacted before anything is written."""
    path = results_file(logs / "tiny-a")
    doc = json.loads(path.read_text())
    secret, password = "sk-live-0123456789abcdef", "hunter2pw"
    url = f"http://bob:{password}@127.0.0.1:9/v1/chat/completions"
    for args in (doc["config"]["model_args"], doc["configs"]["tinyqa"]["metadata"]):
        args |= {"api_key": secret, "base_url": url, "hf_token": secret}
    path.write_text(json.dumps(doc))
    assert sealedeval_import(project, str(logs / "tiny-a")) == 0
    stored = json.dumps(read_raw(raw_files(project)).to_pylist())
    stored += (project / ledger.LEDGER_NAME).read_text()
    assert secret not in stored and password not in stored
    (row,) = [r for r in latest_records(raw_files(project, "tinyqa")) if r["item_id"] == "0"]
    params = json.loads(row["params"])
    assert params["model_args"]["api_key"] == "[redacted]"
    assert params["model_args"]["base_url"] == "http://127.0.0.1:9/v1/chat/completions"
    assert params["model_args"]["tokenized_requests"] is False  # not a credential: kept


def test_wrong_harness_for_the_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(
        tmp_path / "p", CONFIG.replace("harness: lm-eval", "harness: inspect"), hr.LM_EVAL_TASK
    )
    assert sealedeval_import(root, str(FIXTURE)) == 2
    assert "configured with harness: inspect" in capsys.readouterr().err
    assert nothing_written(root)


@pytest.mark.slow
def test_real_lm_eval_after_the_seal_audits_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real lm-eval, run after the seal (so its samples follow it), imported, published
    and audited: every check passes and our numbers are lm-eval's."""
    pytest.importorskip("lm_eval")
    one_engine = CONFIG.replace("  tiny-b: {kind: reference}\n", "").replace(
        "[tiny-a, tiny-b]", "[tiny-a]"
    )
    project = make_project(tmp_path / "proj", one_engine, hr.LM_EVAL_TASK)
    out = tmp_path / "lm_eval_run"
    with hr.answering_server(hr.LM_EVAL_ANSWERS) as fake:
        folder = hr.run_lm_eval(out, fake.base_url, "tiny-a", tmp_path / "work")
    assert hr.DUMMY_KEY not in "".join(f.read_text() for f in folder.iterdir())
    assert sealedeval_import(project, str(out)) == 0
    an = analysis(project)
    for name, value in reported(folder).items():
        assert an["engines"]["tiny-a"]["scorers"][name]["mean_score"] == pytest.approx(value)
    assert an["headline_match"] is True
    rows = latest_records(raw_files(project, "tinyqa"))
    assert len(rows) == 6 and all(r["sealed"] for r in rows)
    rc, checks = publish_and_audit(project, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["seal precedes runs"].startswith("PASS")
    assert checks["harness headline"].startswith("PASS")
