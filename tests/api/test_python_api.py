"""The Python API as a notebook uses it: ``sealedeval.eval`` on the tiny profile's reference
engines in a sealed project, ``sealedeval publish``, then the results read as DataFrames whose
numbers are result.json's, from the project and from its deposit bundle."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from tests.conftest import git, make_project, sealedeval

import sealedeval as se
from sealedeval.errors import UserError
from sealedeval.publish.summary import suite_summaries

TINY = "config/tiny.yaml"
SUITES = ("golden", "bloodpanel", "grounding")
PLANNED = {"golden": 24, "bloodpanel": 16, "grounding": 34}
"""Calls the tiny profile plans on the reference engine (docs/golden.md, bloodpanel.md,
grounding.md)."""
END_TO_END = pytest.mark.slow
"""The tests on the built project: a sealed project, three suites run, a full publish (figures,
report.pdf) and a bundle, about half a minute on two idle cores."""
VOLATILE = {"started_at", "finished_at", "latency_s", "seal_commit"}
"""Raw-row fields that differ between two runs of the same requests (times; the two copies'
seal commits are made separately)."""


@dataclass
class Built:
    root: Path
    bundle: Path
    runs: dict[str, se.EvalResult]
    cli_copy: Path
    result: dict[str, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("api")
    root = make_project(base / "proj")
    sealedeval(root, "seal", "-c", TINY)  # the tiny profile's design too
    git(root, "add", "rubric.lock")
    git(root, "commit", "-qm", "Seal the tiny design")
    cli_copy = base / "cli"
    shutil.copytree(root, cli_copy, symlinks=True)
    sealedeval(cli_copy, "run", "golden", "-c", TINY, "--no-progress")
    runs = {s: se.eval(s, root=root, config=TINY) for s in SUITES}
    sealedeval(root, "publish", "-c", TINY, "--jobs", "1")
    sealedeval(root, "bundle", "-c", TINY)
    result = json.loads((root / "results/result.json").read_text(encoding="utf-8"))
    return Built(root, root / "results/deposit/bundle", runs, cli_copy, result)


def _raw(root: Path, suite: str) -> list[dict[str, Any]]:
    parts = sorted((root / "results/raw" / suite).rglob("part-*.parquet"))
    rows = [r for p in parts for r in pq.read_table(p).to_pylist()]
    return sorted(
        ({k: v for k, v in r.items() if k not in VOLATILE} for r in rows),
        key=lambda r: r["request_key"],
    )


def _same(a: Any, b: Any) -> bool:
    """result.json's None is the DataFrame's NaN; every other number must be equal."""
    if b is None:
        return a is None or (isinstance(a, float) and math.isnan(a))
    return bool(a == b)


@END_TO_END
def test_eval_is_sealed_and_returns_each_engines_run(built: Built) -> None:
    lock = json.loads((built.root / "rubric.lock").read_text(encoding="utf-8"))
    for suite, res in built.runs.items():
        assert res.sealed and res.suite == suite and res.root == built.root.resolve()
        assert res.rubric_sha256 == lock["suites"][suite]["sha256"]
        assert res.config_sources == ("config/config.yaml", TINY)
        run = res.run("reference")
        assert [r.engine for r in res.runs] == ["reference"]
        assert (run.requested, run.skipped, run.ok, run.error) == (
            PLANNED[suite],
            0,
            PLANNED[suite],
            0,
        )
        assert dict(run.errors_by_kind) == {}
    with pytest.raises(KeyError, match="ran \\['reference'\\]"):
        built.runs["golden"].run("local")


@END_TO_END
def test_eval_writes_the_rows_and_ledger_the_command_writes(built: Built) -> None:
    assert _raw(built.root, "golden") == _raw(built.cli_copy, "golden")
    entries = [
        json.loads(line)
        for line in (built.root / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [(e["suite"], e["engine"], e["planned"], e["ok"]) for e in entries] == [
        (s, "reference", PLANNED[s], PLANNED[s]) for s in SUITES
    ]


@END_TO_END
def test_a_second_eval_resumes_and_calls_nothing(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "proj"
    shutil.copytree(built.cli_copy, copy, symlinks=True)
    again = se.eval("golden", "reference", root=copy, config=[TINY])
    run = again.run("reference")
    assert (run.requested, run.skipped, run.ok, run.error) == (24, 24, 0, 0)


@END_TO_END
def test_eval_refuses_an_unsealed_rubric_and_unknown_names(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "proj"
    shutil.copytree(built.cli_copy, copy, symlinks=True)
    with pytest.raises(UserError, match="engine 'nope' is not configured"):
        se.eval("golden", ["reference", "nope"], root=copy, config=TINY)
    with pytest.raises(UserError, match="suite 'nope'"):
        se.eval("nope", root=copy, config=TINY)
    (copy / "rubric.lock").unlink()
    with pytest.raises(UserError) as e:
        se.eval("golden", root=copy, config=TINY)
    assert "rubric.lock" in str(e.value) and "\n" not in str(e.value)
    # refused before any engine started: no part and no ledger entry beyond the command's run
    assert _raw(copy, "golden") == _raw(built.cli_copy, "golden")
    ledger = (copy / "ledger.jsonl").read_text(encoding="utf-8")
    assert ledger == (built.cli_copy / "ledger.jsonl").read_text(encoding="utf-8")


@END_TO_END
def test_samples_df_holds_every_graded_row(built: Built) -> None:
    df = se.samples_df(built.root)
    graded = sorted((built.root / "results/graded").glob("*.parquet"))
    assert [g.stem for g in graded] == sorted(SUITES)
    assert len(df) == sum(pq.read_metadata(g).num_rows for g in graded)
    counts = df.groupby("suite").size().to_dict()
    assert counts == {g.stem: pq.read_metadata(g).num_rows for g in graded}
    # a sample is a graded row, not a request: bloodpanel grades each answer under two profiles
    assert counts["bloodpanel"] == 2 * PLANNED["bloodpanel"]
    assert set(df["engine"]) == {"reference"} and df["request_key"].notna().all()


@END_TO_END
def test_metrics_df_numbers_are_result_json(built: Built) -> None:
    df = se.metrics_df(built.root)
    want = [
        (suite, m)
        for suite, section in built.result["suites"].items()
        for m in section["analysis"]["metrics"]
    ]
    assert len(df) == len(want) > 0
    for (suite, m), (_, row) in zip(want, df.iterrows(), strict=True):
        assert row["suite"] == suite and row["metric"] == m["metric"]
        for k in ("estimate", "lo", "hi", "n_total", "n_ok", "n_error", "method", "unit"):
            assert _same(row[k], m[k]), (suite, m["metric"], k)
        # issue #27: the record's SE and direction are columns too
        assert _same(row["se"], m["se"]) and row["direction"] == m["direction"]
        for g, v in m["groups"].items():
            assert row[g] == v
    assert df["estimate"].dtype == "float64" and df["n_ok"].dtype == "int64"
    assert df["se"].dtype == "float64" and df["se"].notna().any()
    assert {"higher", "lower"} <= set(df["direction"])


@END_TO_END
def test_the_headline_of_every_suite_is_a_metrics_df_row(built: Built) -> None:
    df = se.metrics_df(built.root)
    heads = [(s, h) for s in suite_summaries(built.result) for h in s.headline]
    assert {s.suite for s, _ in heads} == set(SUITES)
    for s, h in heads:
        rows = df[(df["suite"] == s.suite) & (df["metric"] == s.metric)]
        rows = rows[(rows["engine"] == h.engine) & (rows["n_ok"] == h.n_ok)]
        assert any(_same(e, h.estimate) for e in rows["estimate"]), (s.suite, h)
        assert (rows["n_total"] == h.n_total).any()


@END_TO_END
def test_comparisons_df_numbers_are_result_json(built: Built) -> None:
    df = se.comparisons_df(built.root)
    assert len(df) > 0
    for _, row in df.iterrows():
        node: Any = built.result["suites"][row["suite"]]["analysis"]
        for part in row["path"].replace("[", ".[").split("."):
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        for k in ("name", "a", "b", "n", "diff", "lo", "hi", "p", "p_adj", "mde", "family"):
            assert _same(row[k], node[k]), (row["path"], k)
    counted = json.dumps(built.result["suites"]).count('"p_method"')
    assert len(df) == counted  # every record, none twice


@END_TO_END
def test_a_bundle_reads_as_its_project(built: Built) -> None:
    assert (built.bundle / "SHA256SUMS").is_file()
    pd.testing.assert_frame_equal(se.metrics_df(built.bundle), se.metrics_df(built.root))
    pd.testing.assert_frame_equal(se.comparisons_df(built.bundle), se.comparisons_df(built.root))


@END_TO_END
def test_samples_of_a_bundle_are_its_graded_files(built: Built) -> None:
    """``sealedeval bundle`` deposits the graded files (``graded__<suite>.parquet``, the flat
    name of ``results/graded/<suite>.parquet``): a reader of the deposit gets the project's
    samples."""
    assert sorted(p.name for p in built.bundle.glob("graded__*.parquet")) == sorted(
        f"graded__{s}.parquet" for s in SUITES
    )
    pd.testing.assert_frame_equal(se.samples_df(built.bundle), se.samples_df(built.root))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "not a directory"),
        (lambda d: d, "neither a sealedeval project"),
        (lambda d: (d / "results/graded").mkdir(parents=True) or d, "no graded files"),
    ],
)
def test_a_bad_source_is_one_line(tmp_path: Path, make: Any, message: str) -> None:
    src = make(tmp_path)
    with pytest.raises(UserError, match=message) as e:
        se.samples_df(src)
    assert "\n" not in str(e.value)


def test_a_bad_result_json_is_one_line_naming_it(tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "graded").mkdir(parents=True)
    with pytest.raises(UserError, match=r"result\.json: missing; run `sealedeval publish`"):
        se.metrics_df(tmp_path)
    (results / "result.json").write_text("{", encoding="utf-8")
    with pytest.raises(UserError, match=r"result\.json: not valid JSON"):
        se.comparisons_df(tmp_path)
    doc = {"suites": {"s": {"analysis": {"metrics": [{"metric": "m"}]}}}}
    (results / "result.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(UserError, match=r"suites\.s\.analysis\.metrics\[0\]: not a metric") as e:
        se.metrics_df(tmp_path)
    assert "\n" not in str(e.value)


def _python(*args: str, env: dict[str, str] | None = None) -> list[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=True, timeout=60, env=env
    ).stdout.splitlines()


def test_import_sealedeval_stays_cheap_and_names_its_version() -> None:
    heavy = "('pandas', 'pyarrow', 'sealedeval.api', 'sealedeval.run', 'importlib.metadata')"
    out = _python(
        "-c",
        f"import sys, sealedeval; print([m for m in {heavy} if m in sys.modules]); "
        "print(sealedeval.__version__); print('importlib.metadata' in sys.modules); "
        "print(sorted(set(sealedeval.__all__) - set(dir(sealedeval))))",
    )
    assert out[0] == "[]"
    from importlib.metadata import version

    assert out[1] == version("sealedeval") == se.__version__
    assert out[2] == "False"  # read from the installed METADATA without importing the module
    assert out[3] == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        se.nope  # noqa: B018


@pytest.mark.parametrize("pyproject", [True, False])
def test_a_source_tree_without_metadata_takes_pyprojects_version(
    tmp_path: Path, pyproject: bool
) -> None:
    """Nothing installed (``python -S``: no site-packages), the sources on PYTHONPATH."""
    pkg = tmp_path / "src" / "sealedeval"
    pkg.mkdir(parents=True)
    shutil.copyfile(Path(se.__file__), pkg / "__init__.py")
    shutil.copyfile(Path(se.__file__).with_name("_version.py"), pkg / "_version.py")
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(
            '[project]\nname = "sealedeval"\nversion = "9.8.7"\n', encoding="utf-8"
        )
    env = {"PYTHONPATH": str(tmp_path / "src"), "PATH": os.environ.get("PATH", "")}
    out = _python("-S", "-c", "import sealedeval; print(sealedeval.__version__)", env=env)
    assert out == ["9.8.7" if pyproject else "0+unknown"]
