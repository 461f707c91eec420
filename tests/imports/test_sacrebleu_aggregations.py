"""lm-eval's corpus BLEU, chrF, chrF++ and TER re-derived through sacrebleu, checked against
lm-eval's own aggregation functions (``lm_eval.api.metrics.bleu`` / ``chrf`` / ``chrfpp`` /
``ter``), never against numbers written down here: on random (reference, prediction) pairs,
and on a hand-made lm-eval run (results + samples files) imported, published and audited, whose
headline lm-eval's functions computed. Without sacrebleu the headline is shown as reported and
says which extra to install.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git
from tests.imports.project import publish_and_audit

from sealedeval import cli
from sealedeval.imports import cli as import_cli
from sealedeval.suites.imported import aggregations, suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "lm_eval" / "tiny-a"
WORDS = ["the", "cat", "dog", "sat", "on", "a", "mat", "it", "rains", "we", "go", "to", ",", "."]
EMPTY_CONFIG = "project: {name: mt, seed: 1}\nengines: {}\nsuites: {}\n"


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))


def _items(rng: random.Random, refs_per_doc: int = 1) -> list[tuple[Any, str]]:
    out: list[tuple[Any, str]] = []
    for _ in range(rng.randint(1, 12)):
        refs = [_sentence(rng) for _ in range(refs_per_doc)]
        out.append((refs[0] if refs_per_doc == 1 else refs, _sentence(rng)))
    return out


def test_sacrebleu_aggregations_equal_lm_eval() -> None:
    metrics = pytest.importorskip("lm_eval.api.metrics")
    pytest.importorskip("sacrebleu")
    theirs = {
        "bleu": metrics.bleu,
        "chrf": metrics.chrf,
        "chrf++": metrics.chrfpp,
        "ter": metrics.ter,
    }
    rng = random.Random(27)
    for _ in range(30):
        for items in (_items(rng), _items(rng, refs_per_doc=2)):
            # as the samples file keeps them: JSON lists
            stored = json.loads(json.dumps(items))
            for name, fn in theirs.items():
                ours = aggregations.LM_EVAL[name](stored)
                assert ours == pytest.approx(float(fn(items)), abs=1e-12), (name, items)


def test_not_sacrebleu_shaped_values_are_not_rederived() -> None:
    pytest.importorskip("sacrebleu")
    assert aggregations.bleu([[1, "x"]]) is None  # a number is no reference
    assert aggregations.ter([["a b", "a"], [["a b"], "a"]]) is None  # str and list mixed
    assert aggregations.chrf([["a b", ["a", "b"]]]) is None  # not lm-eval's one prediction


def _rows(items: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {"item_id": str(i), "response": json.dumps({"scores": {"bleu,none": {"value": list(p)}}})}
        for i, p in enumerate(items)
    ]


def test_without_sacrebleu_the_headline_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = _rows([("the cat sat", "the cat sat"), ("it rains", "it rained")])
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # import sacrebleu → ImportError
    assert aggregations.sacrebleu_version() is None
    ours, how = suite.rederive(rows, "bleu,none", "bleu", {"aggregation": "bleu"})
    assert ours is None
    assert "reported by the harness, not re-derivable from the samples (aggregation bleu" in how
    assert "install sealedeval[imports] to re-derive it" in how


def _hand_made_run(folder: Path, items: list[tuple[str, str]]) -> dict[str, float]:
    """An lm-eval 0.4.13 output folder for a made-up task ``tinymt`` scored by ``bleu``,
    ``chrf`` and ``ter``: tiny-a's real results file with the task swapped, one samples line
    per document holding each metric's (reference, prediction) pair, and the headline computed
    by lm-eval's own aggregation functions on those pairs."""
    metrics = pytest.importorskip("lm_eval.api.metrics")
    (results_file,) = FIXTURE.glob("results_*.json")
    stamp = results_file.stem.removeprefix("results_")
    doc = json.loads(results_file.read_text())
    config = doc["configs"].pop("tinyqa")
    headline = {
        "bleu": float(metrics.bleu(items)),
        "chrf": float(metrics.chrf(items)),
        "ter": float(metrics.ter(items)),
    }
    n = len(items)
    config |= {
        "task": "tinymt",
        "metric_list": [
            {"metric": m, "aggregation": m, "higher_is_better": m != "ter"} for m in headline
        ],
        "filter_list": [{"name": "none", "filter": [{"function": "take_first"}]}],
    }
    doc["configs"] = {"tinymt": config}
    doc["results"] = {
        "tinymt": {"name": "tinymt", "alias": "tinymt", "sample_len": n}
        | {f"{m},none": v for m, v in headline.items()}
        | {f"{m}_stderr,none": "N/A" for m in headline}
    }
    doc["n-samples"] = {"tinymt": {"original": n, "effective": n}}
    doc["versions"] = {"tinymt": 1.0}
    doc["n-shot"] = {"tinymt": 0}
    doc["higher_is_better"] = {"tinymt": {m: m != "ter" for m in headline}}
    doc["task_hashes"] = {}
    doc["config"]["limit"] = None
    folder.mkdir(parents=True)
    (folder / results_file.name).write_text(json.dumps(doc, indent=2))
    lines = []
    for i, (ref, pred) in enumerate(items):
        prompt = json.dumps([{"role": "user", "content": f"Translate {i}"}])
        lines.append(
            {
                "doc_id": i,
                "doc": {"id": f"d{i}", "reference": ref},
                "target": ref,
                "arguments": {"gen_args_0": {"arg_0": [prompt], "arg_1": {"until": ["\n"]}}},
                "resps": [[pred]],
                "filtered_resps": [pred],
                "filter": "none",
                "metrics": list(headline),
                "doc_hash": f"{i:064x}",
                "prompt_hash": f"{i + 100:064x}",
                "target_hash": f"{i + 200:064x}",
            }
            | {m: [ref, pred] for m in headline}
        )
    (folder / f"samples_tinymt_{stamp}.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines)
    )
    return headline


def test_hand_made_run_bleu_chrf_ter_rederived_and_audited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    items = [
        ("the cat is sleeping on the sofa", "the cat sleeps on the sofa"),
        ("it has been raining since this morning", "it is raining since the morning"),
        ("we will go to the market tomorrow", "we will go to the market tomorrow"),
        ("she reads a book every evening", "every evening she is reading a book"),
        ("the train leaves at noon", "train leave at midday"),
    ]
    run = tmp_path / "run"
    headline = _hand_made_run(run, items)
    root = tmp_path / "proj"
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text(EMPTY_CONFIG)
    (root / ".gitignore").write_text("/results/\n/logs/\n__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    assert import_cli.main(["lm-eval", "--root", str(root), str(run)]) == 0
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    assert import_cli.main(["lm-eval", "--root", str(root), str(run)]) == 0

    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, {k: v for k, v in checks.items() if not v.startswith(("PASS", "WARN"))}
    assert checks["harness headline"].startswith("PASS"), checks["harness headline"]
    result = json.loads((root / "results" / "result.json").read_text())
    an = result["suites"]["tinymt"]["analysis"]
    assert an["headline_match"] is True
    assert an["rederived_with"] == {"sacrebleu": sacrebleu.__version__}
    rows = {h["metric"]: h for h in an["engines"]["tiny-a"]["headline"]}
    for m, theirs in headline.items():
        h = rows[m]
        assert h["match"] is True, h
        assert h["ours"] == pytest.approx(theirs, rel=1e-9)  # result.json rounds
        assert h["rederived_with"] == {"sacrebleu": sacrebleu.__version__}
        assert f"sacrebleu {sacrebleu.__version__}" in h["how"]
    report = (root / "results" / "report.md").read_text()
    assert "**DIFFERS**" not in report and "reported only" not in report
    assert f"Re-derived with sacrebleu {sacrebleu.__version__}" in report
