"""``sealedeval import inspect``: real Inspect AI logs → raw rows, ledger, analysis, audit."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git

from sealedeval import cli
from sealedeval.imports import cli as import_cli
from sealedeval.store import ledger
from sealedeval.store.raw import latest_records, raw_files

pytest.importorskip("inspect_ai")

TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate

TARGETS = ["a", "b", "c", "d", "e"]


@task
def mytask():
    return Task(
        dataset=[Sample(id=f"s{i}", input=f"q{i}", target=t) for i, t in enumerate(TARGETS)],
        solver=generate(),
        scorer=match(),
    )
"""

# model answers per question: model is right on s0 s1 s2 s4, model2 on s0 s3 (s4 wrong)
ANSWERS = {
    "mockllm/model": {"q0": "a", "q1": "b", "q2": "c", "q3": "x", "q4": "e"},
    "mockllm/model2": {"q0": "a", "q1": "y", "q2": "z", "q3": "d", "q4": "w"},
}

CONFIG = """
project: {name: imp, seed: 1}
engines:
  mockllm-model: {kind: reference}
  mockllm-model2: {kind: reference}
suites:
  mytask:
    kind: imported
    engines: [mockllm-model, mockllm-model2]
    sources: [tasks/mytask.py]
"""


def _model(name: str) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    table = ANSWERS[name]

    def answer(messages: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        out = ModelOutput.from_content(name, table[messages[-1].text])
        out.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
        return out

    return get_model(name, custom_outputs=answer)


def run_inspect(root: Path, model: str, *, epochs: int = 1) -> Path:
    from inspect_ai import eval as inspect_eval

    log_dir = root.parent / "inspect-logs" / model.replace("/", "_")
    os.chdir(root)  # Inspect resolves a task file under the working directory (restored)
    log = inspect_eval(
        "tasks/mytask.py",
        model=_model(model),
        log_dir=str(log_dir),
        display="none",
        epochs=epochs,
    )[0]
    assert log.status == "success"
    return Path(log.location)


def inspect_accuracy(path: Path) -> float:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), header_only=True)
    assert log.results is not None
    return float(log.results.scores[0].metrics["accuracy"].value)


def make_project(root: Path, config: str = CONFIG, task: str = TASK) -> Path:
    (root / "config").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "config" / "config.yaml").write_text(config)
    (root / "tasks" / "mytask.py").write_text(task)
    (root / ".gitignore").write_text("/results/\n/logs/\n__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    return root


def sealedeval_import(root: Path, *args: str) -> int:
    return import_cli.main(["inspect", "--root", str(root), *args])


@pytest.fixture
def sealed(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.mark.slow
def test_two_models_import_publish_audit(sealed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = sealed
    log1 = run_inspect(root, "mockllm/model")
    log2 = run_inspect(root, "mockllm/model2", epochs=2)
    assert sealedeval_import(root, str(log1), str(log2)) == 0
    out = capsys.readouterr().out
    assert "5 rows (5 ok, 0 error) → results/raw/mytask/mockllm-model" in out
    assert "10 rows (10 ok, 0 error) → results/raw/mytask/mockllm-model2" in out

    rows = latest_records(raw_files(root, "mytask"))
    assert len(rows) == 15
    r = next(r for r in rows if r["engine"] == "mockllm-model" and r["item_id"] == "s3")
    assert r["output_text"] == "x" and r["model"] == "mockllm/model"
    assert r["sealed"] and r["seal_commit"] and r["rubric_sha256"]
    assert r["harness_version"].startswith("inspect_ai 0.3.")
    assert (r["tokens_in"], r["tokens_out"]) == (3, 1)
    assert json.loads(r["response"])["scores"]["match"]["value"] == "I"
    assert r["started_at"].endswith("Z")

    entries = [e for e in ledger.read(root) if e["kind"] == "import"]
    assert len(entries) == 2
    e1 = next(e for e in entries if e["engine"] == "mockllm-model")
    assert e1["source"]["sha256"] == __import__("hashlib").sha256(log1.read_bytes()).hexdigest()
    assert e1["harness_version"] == r["harness_version"] and e1["source"]["format"] == "eval"
    assert sum(p["rows"] for p in e1["parts"]) == 5 and e1["ok"] == 5

    assert cli.main(["publish", "--root", str(root)]) == 0
    result = json.loads((root / "results" / "result.json").read_text())
    section = result["suites"]["mytask"]
    an = section["analysis"]
    for eng, log in (("mockllm-model", log1), ("mockllm-model2", log2)):
        ours = an["engines"][eng]["scorers"]["match"]
        assert ours["mean_score"] == pytest.approx(inspect_accuracy(log), abs=1e-12)
        assert ours["accuracy"]["rate"] == pytest.approx(inspect_accuracy(log), abs=1e-12)
        assert all(h["match"] for h in an["engines"][eng]["headline"])
    assert inspect_accuracy(log1) == 0.8 and inspect_accuracy(log2) == 0.4
    assert an["headline_match"] is True and an["headline_mismatches"] == []
    acc = {
        m["groups"]["engine"]: m
        for m in an["metrics"]
        if m["metric"] == "accuracy" and m["groups"]["scorer"] == "match"
    }
    assert acc["mockllm-model"]["method"] == "wilson" and acc["mockllm-model"]["unit"] == "sample"
    assert (
        acc["mockllm-model"]["n_ok"] == 5 and acc["mockllm-model2"]["n_ok"] == 5
    )  # epochs reduced
    assert 0 < acc["mockllm-model"]["lo"] < 0.8 < acc["mockllm-model"]["hi"] <= 1
    harness = [m for m in an["metrics"] if m["metric"] == "harness_accuracy"]
    assert sorted(m["estimate"] for m in harness) == [0.4, 0.8]

    # paired: discordant samples s1 s2 s4 (model better) and s3 (model2 better)
    (c,) = an["comparisons"]
    assert (c["a"], c["b"], c["n_items"]) == ("mockllm-model", "mockllm-model2", 5)
    assert (c["a_better"], c["b_better"], c["ties"]) == (3, 1, 1)
    assert c["p"] == pytest.approx(0.625)  # exact two-sided sign test, 3 vs 1
    assert c["difference"] == pytest.approx(0.4)
    # planned vs present: the imported keys
    counts = section["seal"]["counts"]
    assert counts["mockllm-model"]["missing"] == 0 and counts["mockllm-model"]["complete"]
    assert counts["mockllm-model2"]["requests"] == 10

    git(root, "add", "-A")
    git(root, "commit", "-qm", "ledger")
    capsys.readouterr()
    rc = cli.main(["audit", "--root", str(root)])
    report = capsys.readouterr().out
    assert rc == 0, report
    assert "ledgered parts" in report
    md = (root / "results" / "report.md").read_text()
    assert "| mockllm-model | match |" in md and "**DIFFERS**" not in md


@pytest.mark.slow
def test_reimport_is_noop_changed_log_is_new_ingest(
    sealed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sealed
    log1 = run_inspect(root, "mockllm/model")
    assert sealedeval_import(root, str(log1)) == 0
    parts = raw_files(root, "mytask")
    n_entries = len(ledger.read(root))
    capsys.readouterr()
    assert sealedeval_import(root, str(log1)) == 0
    assert "already imported" in capsys.readouterr().out
    assert raw_files(root, "mytask") == parts and len(ledger.read(root)) == n_entries

    # the same log, changed (a score edited in place): a new ingest, visible in the ledger
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log1))
    assert log.samples is not None
    log.samples[3].scores["match"].value = "C"  # type: ignore[index]
    write_eval_log(log, str(log1))
    assert sealedeval_import(root, str(log1)) == 0
    assert "5 rows" in capsys.readouterr().out
    entries = [e for e in ledger.read(root) if e["kind"] == "import"]
    assert len(entries) == 2 and entries[0]["source"]["sha256"] != entries[1]["source"]["sha256"]
    assert len(raw_files(root, "mytask")) == len(parts) + 1


def _bad_cases(tmp: Path, good: Path) -> dict[str, Path]:
    truncated = tmp / "truncated.eval"
    truncated.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    notalog = tmp / "notalog.json"
    notalog.write_text(json.dumps({"hello": "world"}))
    notjson = tmp / "broken.json"
    notjson.write_text("{not json")
    return {"truncated": truncated, "notalog": notalog, "notjson": notjson}


def test_bad_input_one_line_exit_2_nothing_written(
    sealed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sealed
    good = run_inspect(root, "mockllm/model")
    assert zipfile.is_zipfile(good)
    for name, bad in _bad_cases(tmp_path, good).items():
        capsys.readouterr()
        # the good log first: nothing of it may be written either
        assert sealedeval_import(root, str(good), str(bad)) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert err.startswith("sealedeval: error: ") and str(bad) in err
        assert raw_files(root) == [] and ledger.read(root) == []


def test_unsealed_import_marks_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "proj"
    (root / "config").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "config" / "config.yaml").write_text(CONFIG)
    (root / "tasks" / "mytask.py").write_text(TASK)
    log = run_inspect(root, "mockllm/model")
    assert sealedeval_import(root, str(log)) == 0
    rows = latest_records(raw_files(root, "mytask"))
    assert rows and not any(r["sealed"] for r in rows)
    assert {r["rubric_sha256"] for r in rows} == {""}


def test_errored_sample_is_an_error_row(sealed: Path) -> None:
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    log1 = run_inspect(sealed, "mockllm/model")
    log = read_eval_log(str(log1))
    assert log.samples is not None
    s = log.samples[1]
    s.error = EvalError(message="boom", traceback="", traceback_ansi="")
    s.scores = None
    del log.samples[4]  # listed by the dataset, absent from the log
    edited = sealed.parent / "edited.json"
    write_eval_log(log, str(edited))
    assert sealedeval_import(sealed, str(edited)) == 0
    rows = {r["item_id"]: r for r in latest_records(raw_files(sealed, "mytask"))}
    assert len(rows) == 5
    assert (rows["s1"]["status"], rows["s1"]["error_kind"]) == ("error", "sample_error")
    assert (rows["s4"]["status"], rows["s4"]["error_kind"]) == ("error", "missing")
    assert rows["s0"]["status"] == "ok"

    # the log's headline (0.8 over 5 samples) no longer follows from its samples: flagged
    from sealedeval.config import load_config
    from sealedeval.stages.pipeline import derive

    an = derive(load_config(sealed), "mytask").doc["analysis"]
    assert an["headline_match"] is False
    # accuracy and its stderr are both computed by Inspect over 5 samples, ours over 3
    (m, m_se) = an["headline_mismatches"]
    assert m.startswith("mockllm-model/match: ours 0.666") and "vs inspect 0.8 " in m
    assert m_se.startswith("mockllm-model/match stderr: ours ")
    ours = an["engines"]["mockllm-model"]["scorers"]["match"]
    assert ours["samples"] == 3 and ours["samples_error"] == 2


def test_default_names(tmp_path: Path) -> None:
    from sealedeval.stages.ingest import engine_name, suite_name

    assert engine_name("openai/gpt-4o-mini") == "openai-gpt-4o-mini"
    assert engine_name("hf/org/Model:v1") == "hf-org-Model-v1"
    assert suite_name("inspect_evals/arc_easy") == "arc_easy"


def test_real_token_limited_samples_are_error_rows(sealed: Path) -> None:
    """Inspect scores a sample that hit its token limit (``I``, counted in its accuracy); we
    keep it as an error row of kind ``limit_token`` with the harness's score in ``response``."""
    from inspect_ai import eval as inspect_eval

    os.chdir(sealed)
    (log,) = inspect_eval(
        "tasks/mytask.py",
        model=_model("mockllm/model"),
        log_dir=str(sealed.parent / "limited"),
        display="none",
        token_limit=2,  # every mockllm call reports 4 tokens
    )
    assert sealedeval_import(sealed, str(log.location), "--suite", "mytask") == 0
    rows = latest_records(raw_files(sealed, "mytask"))
    assert len(rows) == 5
    assert {(r["status"], r["error_kind"]) for r in rows} == {("error", "limit_token")}
    assert json.loads(rows[0]["response"])["scores"]["match"]["value"] == "I"
    # Inspect counts them (accuracy 0.0); recomputed its way from the samples, so do we — the
    # headline check holds, and our own accuracy excludes them (no ok sample: none)
    # the sealed design names a second engine this test does not import: publish states it
    # (NOT AS SEALED, exit 1) and writes the report anyway; --allow-incomplete exits 0
    assert cli.main(["publish", "--root", str(sealed)]) == 1
    assert cli.main(["publish", "--root", str(sealed), "--allow-incomplete"]) == 0
    res = json.loads((sealed / "results" / "result.json").read_text())
    assert "mytask/mockllm-model2: sealed engine has no rows" in res["as_sealed"]["deviations"]
    an = res["suites"]["mytask"]["analysis"]
    (h,) = [h for h in an["engines"]["mockllm-model"]["headline"] if h["metric"] == "accuracy"]
    assert (h["harness"], h["ours"], h["match"]) == (0.0, 0.0, True)
    assert h["ours_excluding_errors"] is None and an["headline_match"]
