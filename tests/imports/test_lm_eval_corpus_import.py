"""The real lm-eval on two made-up ``generate_until`` tasks scored by corpus-level aggregations:
``tinyf1`` (lm-eval's ``f1`` metric, aggregation ``f1``: scikit-learn's binary F1 over every
document's (gold, prediction) pair) and ``tinybleu`` (``bleu``: sacrebleu's corpus BLEU),
imported with no hand-written config, published and audited.

The F1 is re-derived from the per-sample pairs and must equal lm-eval's; so is BLEU, through
sacrebleu (the ``imports`` extra), and it must equal both the results file and lm-eval's own
``bleu`` aggregation run on the samples file's pairs. The answers
(``harness_runs.LM_EVAL_CORPUS_ANSWERS``) make each F1 differ from the accuracy and the mean of
the per-document values, so an F1 computed any other way would not match.
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

EMPTY_CONFIG = "project: {name: corpus, seed: 1}\nengines: {}\nsuites: {}\n"
MODELS = ("tiny-a", "tiny-b")


def reported(folder: Path, task: str, metric: str) -> float:
    """lm-eval's own headline, read straight from its results file."""
    (f,) = folder.glob("results_*.json")
    return float(json.loads(f.read_text())["results"][task][metric])


def samples(folder: Path, task: str) -> list[dict[str, Any]]:
    (f,) = folder.glob(f"samples_{task}_*.jsonl")
    return [json.loads(x) for x in f.read_text().splitlines()]


def sklearn_f1(folder: Path) -> float:
    """scikit-learn's F1 over the samples file's (target, filtered answer) pairs: independent
    of the importer (and of lm-eval's aggregation code)."""
    from sklearn.metrics import f1_score

    lines = samples(folder, "tinyf1")
    golds = [int(d["target"]) for d in lines]
    preds = [int(d["filtered_resps"][0]) for d in lines]
    return float(f1_score(golds, preds))


def lm_eval_bleu(folder: Path) -> float:
    """lm-eval's own ``bleu`` aggregation over the samples file's (reference, prediction)
    pairs: the reference the importer's re-derivation is checked against."""
    from lm_eval.api.metrics import bleu

    return float(bleu([tuple(d["bleu"]) for d in samples(folder, "tinybleu")]))


@pytest.mark.slow
def test_real_lm_eval_corpus_f1_and_bleu_are_rederived(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("lm_eval")
    pytest.importorskip("sklearn")
    sacrebleu = pytest.importorskip("sacrebleu")
    root = make_project(tmp_path / "proj", EMPTY_CONFIG, hr.LM_EVAL_CORPUS_TASK, seal=False)
    out = tmp_path / "lm_eval_run"
    with hr.answering_server(hr.LM_EVAL_CORPUS_ANSWERS) as fake:
        folders = {
            m: hr.run_lm_eval_corpus(out, fake.base_url, m, tmp_path / "work") for m in MODELS
        }
    assert all(hr.DUMMY_KEY not in f.read_text() for f in out.rglob("*") if f.is_file())

    # lm-eval's F1 is scikit-learn's over the pairs, and is neither the accuracy nor a mean
    f1 = {m: reported(folders[m], "tinyf1", "f1,none") for m in MODELS}
    for m in MODELS:
        assert f1[m] == pytest.approx(sklearn_f1(folders[m]), abs=1e-12)
        lines = samples(folders[m], "tinyf1")
        acc = sum(int(d["target"]) == int(d["filtered_resps"][0]) for d in lines) / len(lines)
        assert abs(acc - f1[m]) > 0.01
    assert f1 == pytest.approx({"tiny-a": 6 / 9, "tiny-b": 4 / 9})
    bleu = {m: reported(folders[m], "tinybleu", "bleu,none") for m in MODELS}
    assert bleu["tiny-a"] > bleu["tiny-b"] > 0
    for m in MODELS:
        assert bleu[m] == pytest.approx(lm_eval_bleu(folders[m]), rel=1e-12)

    # no config by hand: the first import writes the blocks and stops, seal, import again
    capsys.readouterr()
    assert import_cli.main(["lm-eval", "--root", str(root), str(out)]) == 0
    first = capsys.readouterr().out
    assert "suites.tinyf1: " in first and "suites.tinybleu: " in first
    assert nothing_written(root)
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    assert import_cli.main(["lm-eval", "--root", str(root), str(out)]) == 0
    second = capsys.readouterr().out
    for m in MODELS:
        assert f"8 rows (8 ok, 0 error) → results/raw/tinyf1/{m}" in second
        assert f"4 rows (4 ok, 0 error) → results/raw/tinybleu/{m}" in second
    # a corpus-level value is a pair per document, never an error row
    rows = latest_records(raw_files(root, "tinyf1")) + latest_records(raw_files(root, "tinybleu"))
    assert len(rows) == 24 and all(r["status"] == "ok" for r in rows)

    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["harness headline"].startswith("PASS"), checks["harness headline"]
    assert checks["result re-derives"].startswith("PASS")

    result = json.loads((root / "results" / "result.json").read_text())
    report = (root / "results" / "report.md").read_text()
    assert "**DIFFERS**" not in report
    full = derive(load_config(root), "tinyf1").doc["analysis"]
    an_f1 = result["suites"]["tinyf1"]["analysis"]
    an_bleu = result["suites"]["tinybleu"]["analysis"]
    assert an_f1["headline_match"] is True and an_bleu["headline_match"] is True
    for m in MODELS:
        (h,) = [h for h in an_f1["engines"][m]["headline"] if h.get("metric") == "f1"]
        assert h["scorer"] == "f1,none" and h["match"] is True, h
        assert h["harness"] == pytest.approx(f1[m], abs=1e-9)
        (h_full,) = [h for h in full["engines"][m]["headline"] if h.get("metric") == "f1"]
        assert h_full["ours"] == pytest.approx(f1[m], abs=1e-12)  # re-derived, not copied
        assert an_f1["engines"][m]["scorers"]["f1,none"]["corpus_level"] is True

        (b,) = [h for h in an_bleu["engines"][m]["headline"] if h.get("metric") == "bleu"]
        assert b["scorer"] == "bleu,none" and b["match"] is True, b
        assert b["harness"] == pytest.approx(bleu[m], rel=1e-9)
        assert b["ours"] == pytest.approx(lm_eval_bleu(folders[m]), rel=1e-9)
        assert b["rederived_with"] == {"sacrebleu": sacrebleu.__version__}
    assert an_bleu["rederived_with"] == {"sacrebleu": sacrebleu.__version__}

    # the metric records: our F1 and BLEU next to lm-eval's
    ms = {
        (m["metric"], m["groups"]["engine"]): m
        for s in ("tinyf1", "tinybleu")
        for m in result["suites"][s]["analysis"]["metrics"]
        if "engine" in m["groups"]
    }
    for m in MODELS:
        assert ms[("f1", m)]["estimate"] == pytest.approx(f1[m], abs=1e-9)
        assert ms[("harness_f1", m)]["estimate"] == pytest.approx(f1[m], abs=1e-9)
        assert ms[("harness_bleu", m)]["estimate"] == pytest.approx(bleu[m], rel=1e-9)
        assert ms[("harness_bleu", m)]["method"] == "reported by the harness"
        assert ms[("bleu", m)]["estimate"] == pytest.approx(bleu[m], rel=1e-9)
        assert f"sacrebleu {sacrebleu.__version__}" in ms[("bleu", m)]["method"]
        assert ms[("f1", m)]["direction"] == ms[("harness_bleu", m)]["direction"] == "higher"
