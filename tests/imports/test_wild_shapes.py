"""Logs as they come: recognised by content, refused in plain words, every metric carried, and
imported with no hand-written config.

Real public logs nobody here wrote are read from ``../shared/wild-logs`` (third-party data,
never copied into the repository; skipped with the reason when absent). The re-derived
aggregations are checked against the harnesses' own functions (lm-eval, Inspect AI).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git
from tests.imports.project import nothing_written, publish_and_audit

from sealedeval import cli
from sealedeval.imports import cli as import_cli
from sealedeval.suites.imported import aggregations

WILD = Path(__file__).resolve().parents[2].parent / "shared" / "wild-logs"
needs_wild = pytest.mark.skipif(
    not WILD.is_dir(), reason=f"{WILD} absent (third-party logs, not in the repository)"
)
F1_RUN = WILD / "lm-eval" / "gemma2b-masakhaner-5shot"
RENAMED = WILD / "lm-eval" / "gemma2b-masakhaner-0shot-renamed"
EMPTY_CONFIG = (
    "project: {name: wild, seed: 1}\n# engines of this project\nengines: {}\nsuites: {}\n"
)


def new_project(root: Path, config: str = EMPTY_CONFIG) -> Path:
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text(config)
    (root / ".gitignore").write_text("/results/\n/logs/\n__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return root


def run_import(root: Path, harness: str, *args: str) -> int:
    return import_cli.main([harness, "--root", str(root), *args])


def import_sealed(root: Path, harness: str, *args: str) -> str:
    """The whole no-config flow: import (writes the blocks), seal, commit, import again."""
    assert run_import(root, harness, *args) == 0
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    assert run_import(root, harness, *args) == 0
    return (root / "config" / "config.yaml").read_text()


def analysis(root: Path, suite: str) -> dict[str, Any]:
    doc = json.loads((root / "results" / "result.json").read_text())
    an: dict[str, Any] = doc["suites"][suite]["analysis"]
    return an


# -- the aggregations, against the harnesses' own ---------------------------------------------


def test_lm_eval_aggregations_equal_lm_eval() -> None:
    metrics = pytest.importorskip("lm_eval.api.metrics")
    rng = random.Random(27)
    for _ in range(40):
        n = rng.randint(1, 30)
        binary = [(rng.randint(0, 1), rng.randint(0, 1)) for _ in range(n)]
        multi = [(rng.randint(0, 3), rng.randint(0, 3)) for _ in range(n)]
        ll = [-rng.random() * 5 for _ in range(n)]
        weighted = [(-rng.random() * 50, rng.randint(1, 40)) for _ in range(n)]
        cases = [
            ("f1", binary, metrics.f1_score),
            ("matthews_corrcoef", binary, metrics.matthews_corrcoef),
            ("matthews_corrcoef", multi, metrics.matthews_corrcoef),
            ("perplexity", ll, metrics.perplexity),
            ("weighted_perplexity", weighted, metrics.weighted_perplexity),
            ("bits_per_byte", weighted, metrics.bits_per_byte),
            ("median", ll, metrics.median),
            ("mean", ll, metrics.mean),
        ]
        for name, items, theirs in cases:
            ours = aggregations.LM_EVAL[name](
                [list(i) if isinstance(i, tuple) else i for i in items]
            )
            assert ours == pytest.approx(float(theirs(items)), abs=1e-12), (name, items)
    # the defaults lm-eval registers for its built-in metrics are the ones we assume
    from lm_eval.api.registry import AGGREGATION_REGISTRY, METRIC_AGGREGATION_REGISTRY

    for metric_name, agg in aggregations.LM_EVAL_DEFAULT_AGGREGATION.items():
        assert METRIC_AGGREGATION_REGISTRY[metric_name] is AGGREGATION_REGISTRY[agg], metric_name


def test_inspect_metrics_equal_inspect() -> None:
    scorer = pytest.importorskip("inspect_ai.scorer")
    from inspect_ai.scorer import SampleScore, Score

    from sealedeval.suites.imported import scores as score_values

    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(1, 12)
        values: list[Any] = [
            rng.choice(["C", "I", "P", "N", 0.25, 1, True, "yes"]) for _ in range(n)
        ]
        sample_scores = [
            SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(values)
        ]
        floats = [score_values.to_float(v) for v in values]
        assert None not in floats
        for name in ("mean", "accuracy", "stderr", "std", "var"):
            theirs = float(getattr(scorer, name)()(sample_scores))
            ours = aggregations.INSPECT[name]([float(f) for f in floats if f is not None])
            assert ours == pytest.approx(theirs, abs=1e-12), (name, values)


def test_aggregation_names() -> None:
    assert aggregations.aggregation_name("f1") == "f1"
    own = aggregations.aggregation_name("def mean(items):\n    return 0\n")
    assert own == "mean (the task's own function)" and own not in aggregations.LM_EVAL
    assert aggregations.f1_binary([["B-PER", "B-PER"]]) is None  # not lm-eval's binary f1


# -- reading: by content, plain words, one line, nothing written ------------------------------


def _bad_inputs(tmp: Path) -> list[tuple[str, str, str]]:
    """(harness, file, words the one line must hold)."""
    empty = tmp / "results_2026-01-01T00-00-00.000001.json"
    empty.write_text("")
    not_json = tmp / "log.json"
    not_json.write_text("<html>not a log</html>")
    out = [
        ("lm-eval", str(empty), "empty file"),
        ("inspect", str(empty), "empty file"),
        ("promptfoo", str(not_json), "not JSON, so not a promptfoo export"),
        ("inspect", str(not_json), "not JSON, so not an Inspect log"),
    ]
    if WILD.is_dir():
        zipped = (WILD / "inspect" / "log_streaming.eval").read_bytes()
        truncated = tmp / "cut.eval"
        truncated.write_bytes(zipped[: len(zipped) // 2])
        disguised = tmp / "results_2026-01-16T15-23-47.285735.json"
        shutil.copy(WILD / "promptfoo" / "sample-export.json", disguised)
        out += [
            ("inspect", str(truncated), "truncated or damaged zip archive"),
            ("lm-eval", str(disguised), "not lm-eval output: looks like a promptfoo export"),
            (
                "promptfoo",
                str(next(F1_RUN.glob("results_*.json"))),
                "not a promptfoo export: looks like lm-eval results",
            ),
            (
                "lm-eval",
                str(WILD / "promptfoo" / "simple-cli-output.json"),
                "looks like a promptfoo export",
            ),
            (
                "inspect",
                str(
                    WILD
                    / "inspect"
                    / "2024-08-29T15-11-17+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json"
                ),
                "holds no samples (a header-only log",
            ),
            (
                "lm-eval",
                str(WILD / "lm-eval" / "results-only"),
                "has no per-sample records",
            ),
            ("lm-eval", str(WILD / "lm-eval" / "v0-format"), "pre-0.4 lm-eval results"),
            (
                "lm-eval",
                str(WILD / "lm-eval" / "eee-math-perturbed"),
                "task math_rephrased_full has no per-sample records",
            ),
        ]
    return out


def test_bad_inputs_one_plain_line_exit_2_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = new_project(tmp_path / "proj")
    before = (root / "config" / "config.yaml").read_text()
    cases = _bad_inputs(tmp_path)
    for harness, path, words in cases:
        capsys.readouterr()
        assert run_import(root, harness, path) == 2, (harness, path)
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert err.startswith("sealedeval: error: ") and words in err, (words, err)
        assert "EOCD" not in err and "version None" not in err, err
        assert (root / "config" / "config.yaml").read_text() == before
        assert nothing_written(root)


@needs_wild
def test_renamed_results_file_and_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = new_project(tmp_path / "proj")
    before = (root / "config" / "config.yaml").read_text()
    (renamed,) = RENAMED.glob("masakhaner_*.json")
    for given in (renamed, RENAMED):
        capsys.readouterr()
        assert run_import(root, "lm-eval", "--dry-run", str(given)) == 0
        out = capsys.readouterr().out
        assert "would add to config/config.yaml: engines.google-gemma-2b: " in out
        assert '"kind":"imported","model":"google/gemma-2b"' in out
        assert "would import 185 rows (185 ok, 0 error)" in out
        assert (root / "config" / "config.yaml").read_text() == before
        assert nothing_written(root)


# -- no hand-written config, every metric carried, publish and audit pass ----------------------


@needs_wild
def test_corpus_f1_run_imports_complete_with_the_harness_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = new_project(tmp_path / "proj")
    capsys.readouterr()
    assert run_import(root, "lm-eval", str(F1_RUN)) == 0
    out = capsys.readouterr().out
    assert "added to config/config.yaml: suites.masakhaner_luo_prompt_1: " in out
    assert "nothing imported yet" in out and nothing_written(root)
    assert cli.main(["seal", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    assert run_import(root, "lm-eval", str(F1_RUN)) == 0
    config = (root / "config" / "config.yaml").read_text()
    assert "# engines of this project" in config  # the user's file edited, not replaced
    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, checks
    an = analysis(root, "masakhaner_luo_prompt_1")
    eng = an["engines"]["google-gemma-2b"]
    assert (eng["n_ok"], eng["n_error"]) == (185, 0)
    (head,) = eng["headline"]
    reported = json.loads(next(F1_RUN.glob("results_*.json")).read_text())
    theirs = reported["results"]["masakhaner_luo_prompt_1"]["f1,flexible-extract"]
    assert head["harness"] == pytest.approx(theirs, abs=1e-9)  # result.json keeps 10 digits
    assert head["match"] is None and head["ours"] is None
    assert "not re-derivable from the samples (aggregation span_f1_agg" in head["how"]
    assert an["headline_match"] is True
    report = (root / "results" / "report.md").read_text()
    assert "reported only" in report and "INCOMPLETE" not in report


@needs_wild
def test_model_not_the_configured_engines_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = (
        "project: {name: wild, seed: 1}\nengines:\n"
        "  google-gemma-2b: {kind: imported, model: google/gemma-7b}\nsuites: {}\n"
    )
    root = new_project(tmp_path / "proj", config)
    capsys.readouterr()
    assert run_import(root, "lm-eval", str(F1_RUN)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "model 'google/gemma-2b', but engine 'google-gemma-2b' is configured with model " in err
    assert (root / "config" / "config.yaml").read_text() == config and nothing_written(root)


@needs_wild
def test_cancelled_log_status_and_stderr_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("inspect_ai")
    root = new_project(tmp_path / "proj")
    log = WILD / "inspect" / "2025-05-12T20-28-13-04-00_popularity.json"
    import_sealed(root, "inspect", str(log))
    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, checks
    eng = analysis(root, "popularity")["engines"]["openai-gpt-4o-mini"]
    assert set(eng["log_status"].values()) == {"cancelled"}
    by_metric = {h["metric"]: h for h in eng["headline"]}
    assert set(by_metric) == {"accuracy", "stderr"}
    assert all(h["match"] is True for h in by_metric.values())
    report = (root / "results" / "report.md").read_text()
    assert "has status cancelled" in report


MEAN_TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, accuracy, mean, scorer, stderr, std
from inspect_ai.solver import generate


@scorer(metrics=[mean(), stderr()])
def length_score():
    async def score(state, target):
        return Score(value=len(state.output.completion) / 10)
    return score


@scorer(metrics=[accuracy(), std()])
def graded():
    async def score(state, target):
        c = state.output.completion
        return Score(value="C" if c == target.text else ("P" if c[:1] == target.text[:1] else "I"))
    return score


@task
def meantask():
    return Task(
        dataset=[Sample(id=f"s{i}", input=f"q{i}", target=t) for i, t in enumerate("abcde")],
        solver=generate(),
        scorer=[length_score(), graded()],
    )
"""


@pytest.mark.slow
def test_inspect_mean_metrics_imported_and_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    replies = {"q0": "a", "q1": "bee", "q2": "x", "q3": "dd", "q4": "e!"}

    def answer(messages: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
        out = ModelOutput.from_content("mockllm/model", replies[messages[-1].text])
        # usage given, so Inspect counts no tokens itself (that would fetch a tokenizer)
        out.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
        return out

    root = new_project(tmp_path / "proj")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "meantask.py").write_text(MEAN_TASK)
    monkeypatch.chdir(tmp_path)
    (log,) = inspect_eval(
        "tasks/meantask.py",
        model=get_model("mockllm/model", custom_outputs=answer),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.results is not None
    theirs = {
        (s.name, k): m.value for s in log.results.scores for k, m in (s.metrics or {}).items()
    }
    assert set(theirs) == {
        ("length_score", "mean"),
        ("length_score", "stderr"),
        ("graded", "accuracy"),
        ("graded", "std"),
    }
    import_sealed(root, "inspect", str(log.location))
    rc, checks = publish_and_audit(root, capsys)
    assert rc == 0, checks
    eng = analysis(root, "meantask")["engines"]["mockllm-model"]
    got = {(h["scorer"], h["metric"]): h for h in eng["headline"]}
    assert set(got) == set(theirs)
    for key, value in theirs.items():
        assert got[key]["harness"] == pytest.approx(value)
        assert got[key]["ours"] == pytest.approx(value) and got[key]["match"] is True, key


def test_an_imported_engine_has_nothing_to_call() -> None:
    import asyncio

    from sealedeval.config import EngineConfig
    from sealedeval.engines import EngineError, engine_kinds

    factory = engine_kinds.get("imported")
    engine = factory(EngineConfig(name="google-gemma-2b", kind="imported", model="google/gemma-2b"))
    assert engine.model == "google/gemma-2b"
    with pytest.raises(EngineError, match="kind imported"):
        asyncio.run(engine.start())


@needs_wild
def test_a_trimmed_log_differs_and_says_why(tmp_path: Path) -> None:
    """every_eval_ever's test logs kept 1 sample of 79 under the full run's headline: the
    headline is carried, the difference is flagged, and the reason is named."""
    pytest.importorskip("inspect_ai")
    from sealedeval.config import load_config
    from sealedeval.stages.pipeline import derive

    root = new_project(tmp_path / "proj")
    import_sealed(root, "inspect", str(WILD / "inspect" / "eee-data_intercode_ctf_local_path.json"))
    an = derive(load_config(root), "gdm_intercode_ctf").doc["analysis"]
    eng = an["engines"]["mistral-mistral-small-latest"]
    assert eng["limits_hit"] == 1
    assert {h["metric"]: h["match"] for h in eng["headline"]} == {
        "accuracy": False,
        "stderr": False,
    }
    assert all(
        m.endswith("the log holds 1 of the 79 samples its headline scored")
        for m in an["headline_mismatches"]
    )
