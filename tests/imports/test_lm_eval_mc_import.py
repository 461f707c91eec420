"""The real lm-eval on a multiple-choice task (``acc``, ``acc_norm``), imported with no
hand-written config, published and audited.

lm-eval's ``local-completions`` model scores every choice by one legacy completions request
(``echo``, ``logprobs``) to the loopback server, which gives each choice the log-likelihood
``harness_runs.MC_LOGLIKELIHOODS`` lists; token counts come from the server's vLLM tokenizer
endpoints (``tokenizer_backend=remote``), so nothing is downloaded. The table is built so that
acc and acc_norm disagree on some documents, and the two models on others.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git
from tests.imports import harness_runs as hr
from tests.imports.project import make_project, nothing_written, publish_and_audit

from sealedeval import cli
from sealedeval.config import load_config
from sealedeval.imports import cli as import_cli
from sealedeval.stages.pipeline import derive
from sealedeval.store.raw import latest_records, raw_files

EMPTY_CONFIG = "project: {name: mc, seed: 1}\nengines: {}\nsuites: {}\n"
MODELS = ("tiny-a", "tiny-b")
METRICS = ("acc,none", "acc_norm,none")


def docs() -> list[dict[str, Any]]:
    text = (hr.LM_EVAL_MC_TASK / "tinymc.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def reported(folder: Path) -> dict[str, float]:
    """lm-eval's own headline, read straight from its results file."""
    (f,) = folder.glob("results_*.json")
    res = json.loads(f.read_text())["results"]["tinymc"]
    return {k: float(res[k]) for k in METRICS}


def from_samples(folder: Path) -> dict[str, float]:
    """The mean of each metric's per-document values in the samples file (independent of the
    importer)."""
    (f,) = folder.glob("samples_tinymc_*.jsonl")
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    return {m: sum(d[m.split(",")[0]] for d in lines) / len(lines) for m in METRICS}


@pytest.mark.slow
def test_real_lm_eval_multiple_choice_imports_with_its_own_acc_and_acc_norm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("lm_eval")
    root = make_project(tmp_path / "proj", EMPTY_CONFIG, hr.LM_EVAL_MC_TASK, seal=False)
    out = tmp_path / "lm_eval_run"
    with hr.scoring_server() as fake:
        folders = {m: hr.run_lm_eval_mc(out, fake.base_url, m, tmp_path / "work") for m in MODELS}
    # every choice of every document was one echo + logprobs request
    scored = [r for r in fake.requests if r.path == "/v1/completions"]
    assert len(scored) == 2 * sum(len(d["choices"]) for d in docs())
    assert all(r.body and r.body["echo"] is True and r.body["logprobs"] for r in scored)
    assert all(r.headers["authorization"] == f"Bearer {hr.DUMMY_KEY}" for r in scored)
    assert all(hr.DUMMY_KEY not in f.read_text() for f in out.rglob("*") if f.is_file())

    # lm-eval's numbers are the table's (so the fake scored what lm-eval asked), and differ
    # between acc and acc_norm: the import must carry both, not one for the other
    for m in MODELS:
        assert reported(folders[m]) == pytest.approx(hr.mc_expected(m, docs()), abs=1e-12)
    assert reported(folders["tiny-a"]) == pytest.approx({"acc,none": 2 / 6, "acc_norm,none": 4 / 6})
    assert reported(folders["tiny-b"]) == pytest.approx({"acc,none": 4 / 6, "acc_norm,none": 5 / 6})

    # no config by hand: the first import writes the blocks and stops, seal, import again
    capsys.readouterr()
    assert import_cli.main(["lm-eval", "--root", str(root), str(out)]) == 0
    first = capsys.readouterr().out
    assert "added to config/config.yaml: suites.tinymc: " in first
    assert "engines.tiny-a: " in first and "engines.tiny-b: " in first
    assert "nothing imported yet" in first and nothing_written(root)
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    assert import_cli.main(["lm-eval", "--root", str(root), str(out)]) == 0
    second = capsys.readouterr().out
    for m in MODELS:
        assert f"6 rows (6 ok, 0 error) → results/raw/tinymc/{m}" in second

    rows = latest_records(raw_files(root, "tinymc"))
    assert len(rows) == 12 and all(r["status"] == "ok" for r in rows)
    a3 = next(r for r in rows if r["engine"] == "tiny-a" and r["item_id"] == "3")
    resp = json.loads(a3["response"])
    # document 3: tiny-a's highest log-likelihood is "elephant" (acc 0), its highest per
    # character "blue whale" (acc_norm 1); every choice's (log-likelihood, greedy) is kept
    assert resp["scores"]["acc,none"]["value"] == 0.0
    assert resp["scores"]["acc_norm,none"]["value"] == 1.0
    lls = [float(ll) for ll, _greedy in resp["filtered_resps"]["none"]]
    assert lls == [-4.5, -5.0, hr.MC_UNLISTED]
    assert a3["output_text"] == " elephant"  # the choice lm-eval's acc picks
    assert json.loads(a3["messages"]) == [
        {"role": "user", "content": "Question: Which is the largest animal?\nAnswer:"}
    ]

    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["harness headline"].startswith("PASS 4 reported metric(s) equal ours")
    assert checks["result re-derives"].startswith("PASS")

    # the analysis at full precision, and result.json (which keeps 10 digits) and the report
    full = derive(load_config(root), "tinymc").doc["analysis"]
    result = json.loads((root / "results" / "result.json").read_text())
    an = result["suites"]["tinymc"]["analysis"]
    assert an["harness"] == "lm-eval" and an["headline_match"] is True
    report = (root / "results" / "report.md").read_text()
    assert "**DIFFERS**" not in report
    for m in MODELS:
        theirs, independent = reported(folders[m]), from_samples(folders[m])
        eng = an["engines"][m]
        assert {h["scorer"] for h in eng["headline"]} == set(METRICS)
        for name in METRICS:
            assert independent[name] == pytest.approx(theirs[name], abs=1e-12)
            ours = full["engines"][m]["scorers"][name]["mean_score"]
            assert ours == pytest.approx(theirs[name], abs=1e-12)
            assert eng["scorers"][name]["mean_score"] == pytest.approx(theirs[name], abs=1e-9)
            (head,) = [h for h in eng["headline"] if h["scorer"] == name]
            assert head["match"] is True
            assert head["harness"] == pytest.approx(theirs[name], abs=1e-9)
            assert f"| {m} | {name} | accuracy |" in report


def _mc(lls: list[Any], contexts: list[str] | None = None) -> tuple[Any, Any]:
    """A multiple-choice sample's ``resps`` and ``arguments`` as lm-eval writes them."""
    ctx = contexts or ["Question: q\nAnswer:"] * len(lls)
    resps = [[[ll, "False"]] for ll in lls]
    arguments = {f"gen_args_{i}": {"arg_0": c, "arg_1": f" choice {i}"} for i, c in enumerate(ctx)}
    return resps, arguments


def test_a_multiple_choice_rows_output_is_the_choice_acc_picks() -> None:
    from sealedeval.imports.lm_eval_log import _text

    assert _text(*_mc(["-3.0", "-1.5", "-2.0"])) == " choice 1"
    assert _text(*_mc(["-2.0", "-1.0", "-1.0"])) == " choice 1"  # the first on ties
    assert _text(*_mc(["-inf", "-7.25"])) == " choice 1"
    assert _text(*_mc([-0.5, -9])) == " choice 0"  # numbers, not strings, read too
    # not a choice among several: the responses as JSON, as before
    resps, args = _mc(["-1.0"])  # a loglikelihood task: its continuation is the target
    assert _text(resps, args) == '[[["-1.0","False"]]]'
    resps, args = _mc(["-1.0", "-2.0"], ["Question: q\nAnswer:", ""])  # acc_mutual_info
    assert _text(resps, args).startswith("[[[")
    resps, args = _mc(["nan", "-2.0"])
    assert _text(resps, args).startswith("[[[")
    assert _text([["Paris"]], {"gen_args_0": {"arg_0": "Q", "arg_1": {}}}) == "Paris"
