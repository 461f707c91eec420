"""``sealedeval export``: result.json as Every Eval Ever records that validate against the
official schema, with result.json's numbers, byte-identical on re-export; the graded rows as
one tidy table pandas reads back equal to ``samples_df``; bad input refused in one line.

The schema is not committed here (third-party data): the session fixture downloads the official
``every-eval-ever`` wheel (MIT) with pip and reads ``every_eval_ever/schemas/eval.schema.json``
from it, and skips, naming why, where PyPI cannot be reached. docs/export.md says which
versions and where from.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest
from tests.conftest import git, make_project, sealedeval

import sealedeval as se
from sealedeval.canonical import dumps
from sealedeval.publish import export
from sealedeval.stages.artifacts import graded_path, write_graded
from sealedeval.stats import Z_95, item_se, wilson
from sealedeval.stats.metrics import mean_metric, metric, point_metric, rate_metric

HERE = Path(__file__).resolve().parent
RESULT_ALL = HERE / "result_all.json"
"""A real result.json of every suite on the reference engines, golden's judge on
(tests/publish/make_fixture.py)."""
WHEELS = {"0.2.2": "0.2.3rc1", "0.3.0": "0.3.0"}
"""Schema version → the every-eval-ever release whose wheel carries it."""
SCHEMA_IN_WHEEL = "every_eval_ever/schemas/eval.schema.json"
TINY = "config/tiny.yaml"


# -- the official schema ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def eee_schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Schema version → the schema, read from the official wheel (pip download, cached for
    the session); the requesting test is skipped where PyPI cannot be reached."""
    where = tmp_path_factory.mktemp("eee-wheels")
    out = {}
    for version, release in WHEELS.items():
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"every-eval-ever=={release}",
                "--no-deps",
                "--python-version",
                "3.12",  # the wheels declare Requires-Python >= 3.12; nothing is installed
                "--only-binary=:all:",
                "-d",
                str(where / release),
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        wheels = sorted((where / release).glob("every_eval_ever-*.whl"))
        if proc.returncode != 0 or not wheels:
            reason = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            pytest.skip(f"every-eval-ever=={release} not downloadable from PyPI: {reason}")
        with zipfile.ZipFile(wheels[0]) as z:
            schema = json.loads(z.read(SCHEMA_IN_WHEEL))
        assert schema["version"] == version
        out[version] = schema
    return out


def _validate(schema: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    v = jsonschema.Draft7Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in v.iter_errors(doc)]


# -- helpers ----------------------------------------------------------------------------------


def _project_with(tmp_path: Path, result: bytes) -> Path:
    root = tmp_path / "proj"
    (root / "results").mkdir(parents=True)
    (root / "results/result.json").write_bytes(result)
    return root


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {
        p.relative_to(out).as_posix(): json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(out.rglob("*.json"))
        if p.name != export.EEE_INDEX
    }


def _tree(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
    }


def _cells(df: pd.DataFrame, *, empty_is_missing: bool = False) -> dict[str, list[Any]]:
    """Column → values with every missing value (None, NaN; "" if asked) as None."""
    out = {}
    for c in df.columns:
        out[str(c)] = [
            None
            if v is None
            or (isinstance(v, float) and math.isnan(v))
            or (empty_is_missing and v == "")
            else v
            for v in df[c].tolist()
        ]
    return out


def _result_with(metrics: list[dict[str, Any]], engines: tuple[str, ...] = ("e1",)) -> bytes:
    """A minimal result.json: one suite ``s`` with ``metrics``, a manifest part per engine."""
    doc = {
        "engines": {
            e: {"kind": "openai_chat", "model": f"org/{e}-model", "name": e} for e in engines
        },
        "format": "sealedeval.result/1",
        "manifest": [
            {"path": f"results/raw/s/{e}/part-20261201T222451123456-abcd-00000.parquet"}
            for e in engines
        ],
        "project": "p",
        "rubric_lock_sha256": "ab" * 32,
        "suites": {"s": {"analysis": {"metrics": metrics}, "seal": {"rubric_sha256": "cd" * 32}}},
        "versions": {"sealedeval": "9.9.9"},
    }
    return dumps(doc).encode()


# -- EEE: schema, numbers, determinism --------------------------------------------------------


@pytest.mark.parametrize("version", list(WHEELS))
def test_every_record_validates_against_the_official_schema(
    tmp_path: Path, eee_schemas: dict[str, dict[str, Any]], version: str
) -> None:
    root = _project_with(tmp_path, RESULT_ALL.read_bytes())
    out, exp = export.write_eee(root, schema_version=version)
    records = _records(out)
    assert set(records) == set(exp.files)
    assert {"golden/reference.json", "grounding/naive.json"} <= set(records)
    # the 0.2.2 export holds nothing 0.3.0 refuses: it validates against both
    against = list(WHEELS) if version == "0.2.2" else [version]
    for name, doc in records.items():
        assert doc["schema_version"] == version
        for schema in against:
            assert _validate(eee_schemas[schema], doc) == [], (name, schema)
    index = json.loads((out / export.EEE_INDEX).read_text(encoding="utf-8"))
    assert index["files"] == {
        name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in records
    }


def test_schema_0_2_2_refuses_a_continuous_score_without_bounds(
    eee_schemas: dict[str, dict[str, Any]],
) -> None:
    """Why the 0.2.2 export leaves unbounded metrics out: none of the ways to write them
    validates (the premise of ``export.UNBOUNDED_0_2_2``)."""
    doc = json.loads(
        export.eee_export(RESULT_ALL.read_bytes(), RESULT_ALL).files["golden/reference.json"]
    )
    config = doc["evaluation_results"][0]["metric_config"]
    for score_range in ({}, {"score_type": "continuous"}):
        for k in ("score_type", "min_score", "max_score"):
            config.pop(k, None)
        config.update(score_range)
        assert _validate(eee_schemas["0.2.2"], doc) != []


@pytest.mark.parametrize("version", list(WHEELS))
def test_numbers_are_result_json_s_and_nothing_is_dropped_silently(version: str) -> None:
    data = RESULT_ALL.read_bytes()
    result = json.loads(data)
    exp = export.eee_export(data, RESULT_ALL, schema_version=version)
    exported: dict[tuple[str, str, str], dict[str, Any]] = {}
    for name, text in exp.files.items():
        doc = json.loads(text)
        suite, engine = name.removesuffix(".json").split("/")
        engine_rec = result["engines"][engine]
        assert doc["model_info"]["id"] == engine_rec["model"]
        assert doc["model_info"]["name"] == engine
        assert doc["source_metadata"]["additional_details"]["result_json_sha256"] == (
            hashlib.sha256(data).hexdigest()
        )
        assert (
            doc["source_metadata"]["additional_details"]["rubric_lock_sha256"]
            == (result["rubric_lock_sha256"])
        )
        assert doc["source_metadata"]["source_type"] == "evaluation_run"
        assert doc["source_metadata"]["evaluator_relationship"] == "third_party"
        for r in doc["evaluation_results"]:
            key = (suite, engine, r["evaluation_result_id"])
            assert key not in exported
            exported[key] = r
    skipped = {(n.suite, n.metric, json.dumps(n.groups, sort_keys=True)) for n in exp.not_exported}
    total = 0
    for suite, section in result["suites"].items():
        for m in section["analysis"]["metrics"]:
            total += 1
            params = {k: v for k, v in sorted(m["groups"].items()) if k != "engine"}
            cell = ",".join(f"{k}={v}" for k, v in params.items())
            rid = f"{suite}/{m['metric']}" + (f"[{cell}]" if cell else "")
            r = exported.get((suite, m["groups"].get("engine", ""), rid))
            if r is None:
                assert (suite, m["metric"], json.dumps(m["groups"], sort_keys=True)) in skipped
                assert (
                    "engine" not in m["groups"]
                    or m["estimate"] is None
                    or (version == "0.2.2" and m["method"] != "wilson")
                )
                continue
            assert r["score_details"]["score"] == m["estimate"]
            assert r["metric_config"]["metric_parameters"] == params
            assert r["metric_config"]["metric_name"] == m["metric"]
            details = r["score_details"]["details"]
            assert [details[k] for k in ("n_total", "n_ok", "n_error", "unit")] == [
                str(m[k]) for k in ("n_total", "n_ok", "n_error", "unit")
            ]
            ci = r["score_details"]["uncertainty"].get("confidence_interval")
            if m["lo"] is None:
                assert ci is None
            else:
                assert (ci["lower"], ci["upper"], ci["method"]) == (m["lo"], m["hi"], m["method"])
                assert ci["confidence_level"] == 0.95
    assert len(exported) + len(exp.not_exported) == total
    assert len(exported) > 0


def test_judge_metrics_name_their_judge_and_others_do_not() -> None:
    exp = export.eee_export(RESULT_ALL.read_bytes(), RESULT_ALL, schema_version="0.3.0")
    doc = json.loads(exp.files["golden/reference.json"])
    judged = {
        r["metric_config"]["metric_name"]: r["metric_config"].get("llm_scoring")
        for r in doc["evaluation_results"]
    }
    assert {"judge_pass", "judge_human_agreement", "judge_order_consistent"} <= set(judged)
    for name, scoring in judged.items():
        if name.startswith("judge_"):
            assert scoring is not None, name
            assert scoring["judges"] == [{"model_info": doc["model_info"]}]
            assert "golden" in scoring["input_prompt"]
        else:
            assert scoring is None, name
    variant = next(
        r
        for r in doc["evaluation_results"]
        if r["metric_config"]["metric_parameters"].get("variant")
    )
    v = variant["metric_config"]["metric_parameters"]["variant"]
    assert f"variant {v}" in variant["metric_config"]["llm_scoring"]["input_prompt"]


def test_standard_errors_are_the_intervals_own() -> None:
    """A normal interval's SE is the item-clustered SE it was built from; a Wilson interval's is
    the binomial SE at the interval's own denominator, n_ok or n_total, whichever built it."""
    values = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25]
    items = ["a", "a", "b", "b", "c", "c", "d", "d"]
    lo, hi = wilson(3, 10)
    metrics = [
        dict(mean_metric("mean", {"engine": "e1"}, values, items)),
        dict(rate_metric("rate", {"engine": "e1"}, 7, 9, n_error=3)),
        # errors counted as failures: the denominator is n_total, not n_ok
        dict(
            metric(
                "errs",
                {"engine": "e1"},
                0.3,
                lo,
                hi,
                method="wilson",
                n_total=10,
                n_ok=8,
                n_error=2,
                unit="task",
            )
        ),
        # an interval no denominator reproduces gets no SE
        dict(
            metric(
                "odd",
                {"engine": "e1"},
                0.3,
                0.1,
                0.9,
                method="wilson",
                n_total=10,
                n_ok=10,
                n_error=0,
                unit="task",
            )
        ),
        dict(point_metric("kappa", {"engine": "e1"}, 0.4, 10, 0, "item")),
    ]
    exp = export.eee_export(_result_with(metrics), Path("r.json"), schema_version="0.3.0")
    got = {
        r["metric_config"]["metric_name"]: r["score_details"]["uncertainty"]
        for r in json.loads(exp.files["s/e1.json"])["evaluation_results"]
    }
    se_mean = item_se(values, items)
    assert got["mean"]["standard_error"]["value"] == pytest.approx(se_mean, rel=1e-8)
    assert got["mean"]["confidence_interval"]["upper"] == pytest.approx(
        metrics[0]["estimate"] + Z_95 * se_mean, rel=1e-9
    )
    assert got["rate"]["standard_error"]["value"] == pytest.approx(
        math.sqrt(7 / 9 * 2 / 9 / 9), rel=1e-8
    )
    assert got["rate"]["num_samples"] == 9
    assert got["errs"]["standard_error"]["value"] == pytest.approx(
        math.sqrt(0.3 * 0.7 / 10), rel=1e-8
    )
    assert got["errs"]["num_samples"] == 10
    assert "standard_error" not in got["odd"] and "confidence_interval" in got["odd"]
    assert got["kappa"] == {"num_samples": 10}


def test_the_record_s_own_se_and_direction_are_exported(
    eee_schemas: dict[str, dict[str, Any]],
) -> None:
    """Issue #27: a record's ``se`` is exported as it is (even where no interval would give
    it), its ``direction`` is ``lower_is_better``; a record without them (older result.json)
    falls back to the interval-derived SE and ``direction_declared: no``."""
    boot = metric(
        "mean_score",
        {"engine": "e1"},
        0.4,
        0.2,
        0.7,
        method="bootstrap",
        n_total=12,
        n_ok=12,
        n_error=0,
        unit="case",
        se=0.123,
    )
    rate = rate_metric("trap_flag_rate", {"engine": "e1"}, 2, 8)
    acc = rate_metric("accuracy", {"engine": "e1"}, 6, 8)
    old = {k: v for k, v in rate_metric("error_rate", {"engine": "e1"}, 2, 8).items()}
    del old["se"], old["direction"]
    p = dict(point_metric("sign_test_p", {"engine": "e1"}, 0.3, 8, 0, "item"))
    exp = export.eee_export(
        _result_with([dict(boot), dict(rate), dict(acc), old, p]),
        Path("r.json"),
        schema_version="0.3.0",
    )
    doc = json.loads(exp.files["s/e1.json"])
    assert _validate(eee_schemas["0.3.0"], doc) == []
    got = {r["metric_config"]["metric_name"]: r for r in doc["evaluation_results"]}
    unc = {k: r["score_details"]["uncertainty"] for k, r in got.items()}
    assert unc["mean_score"]["standard_error"]["value"] == 0.123
    assert unc["trap_flag_rate"]["standard_error"]["value"] == pytest.approx(
        math.sqrt(0.25 * 0.75 / 8), rel=1e-9
    )
    # the older record: the SE reconstructed from its Wilson interval, the same number
    assert unc["error_rate"]["standard_error"]["value"] == pytest.approx(
        unc["trap_flag_rate"]["standard_error"]["value"], rel=1e-12
    )
    cfg = {k: r["metric_config"] for k, r in got.items()}
    declared = {k: c["additional_details"]["direction_declared"] for k, c in cfg.items()}
    assert {k: c["lower_is_better"] for k, c in cfg.items()} == {
        "mean_score": False,
        "trap_flag_rate": True,
        "accuracy": False,
        "error_rate": False,  # not declared by the old record: the schema's required default
        "sign_test_p": False,
    }
    assert declared == {
        "mean_score": "yes",
        "trap_flag_rate": "yes",
        "accuracy": "yes",
        "error_rate": "no",
        "sign_test_p": "no",
    }


@pytest.mark.slow
def test_the_same_result_json_exports_the_same_bytes(tmp_path: Path) -> None:
    first = _project_with(tmp_path / "a", RESULT_ALL.read_bytes())
    second = _project_with(tmp_path / "b", RESULT_ALL.read_bytes())
    sealedeval(first, "export", "eee")
    sealedeval(second, "export", "eee")
    a, b = _tree(first / export.EEE_DIR), _tree(second / export.EEE_DIR)
    assert a == b and len(a) > 3
    sealedeval(first, "export", "eee")  # again, over the first export
    assert _tree(first / export.EEE_DIR) == a
    # a different result.json is a different export (the content hash is in every record)
    changed = json.loads(RESULT_ALL.read_text(encoding="utf-8"))
    changed["status"] = "exploratory"
    (second / "results/result.json").write_text(dumps(changed), encoding="utf-8")
    sealedeval(second, "export", "eee")
    assert _tree(second / export.EEE_DIR) != a


@pytest.mark.slow
def test_options_reach_the_records_and_a_re_export_removes_only_its_own_stale_files(
    tmp_path: Path,
) -> None:
    m1 = dict(rate_metric("acc", {"engine": "e1"}, 3, 4))
    m2 = dict(rate_metric("acc", {"engine": "e2"}, 1, 4))
    root = _project_with(tmp_path, _result_with([m1, m2], engines=("e1", "e2")))
    out = tmp_path / "eee"
    sealedeval(
        root,
        "export",
        "eee",
        "-o",
        str(out),
        "--relationship",
        "first_party",
        "--organization",
        "Lab X",
    )
    doc = json.loads((out / "s/e2.json").read_text(encoding="utf-8"))
    assert doc["source_metadata"]["evaluator_relationship"] == "first_party"
    assert doc["source_metadata"]["source_organization_name"] == "Lab X"
    assert doc["model_info"]["id"] == "org/e2-model"
    assert doc["evaluation_timestamp"] == "2026-12-01T22:24:51Z"
    (out / "notes.txt").write_text("mine")
    (root / "results/result.json").write_bytes(_result_with([m1]))
    sealedeval(root, "export", "eee", "-o", str(out))
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "index.json",
        "notes.txt",
        "s/e1.json",
    ]


# -- bad input --------------------------------------------------------------------------------


def _refused(root: Path, *args: str, says: str) -> None:
    before = _tree(root)
    proc = sealedeval(root, "export", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sealedeval: error: "), proc.stderr
    assert says in lines[0]
    assert _tree(root) == before, "nothing may be written"


@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _refused(empty, "eee", says="results/result.json: missing")
    _refused(empty, "samples", says="no graded files")
    _refused(empty, "everything", says="unknown export (eee or samples)")
    broken = _project_with(tmp_path / "broken", b"{not json")
    _refused(broken, "eee", says="not valid JSON")
    root = _project_with(tmp_path / "ok", RESULT_ALL.read_bytes())
    _refused(root, "eee", "--schema", "0.1", says="unknown version")
    _refused(root, "eee", "--relationship", "friend", says="unknown")
    foreign = root / "theirs"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    _refused(root, "eee", "-o", str(foreign), says="not empty")
    write_graded(graded_path(root, "s"), [{"request_key": "k", "score": 1.0}])
    _refused(root, "samples", "--format", "xlsx", says="unknown format (parquet or csv)")
    no_engine = [dict(rate_metric("acc", {"battery": "x"}, 1, 2))]
    unexportable = _project_with(tmp_path / "none", _result_with(no_engine))
    _refused(unexportable, "eee", says="nothing to export")


# -- the tidy per-sample table ----------------------------------------------------------------


@pytest.mark.slow
def test_tidy_samples_read_back_equal_to_samples_df(tmp_path: Path) -> None:
    """Nested and mixed-kind columns become JSON text (the one change); everything else reads
    back as samples_df holds it, in both formats."""
    root = tmp_path / "proj"
    write_graded(
        graded_path(root, "alpha"),
        [
            {
                "request_key": "a1",
                "engine": "e1",
                "item_id": "i1",
                "score": 1.0,
                "passed": True,
                "details": {"hits": [1, 2]},
                "label": "x",
            },
            {
                "request_key": "a2",
                "engine": "e1",
                "item_id": "i2",
                "score": 0.0,
                "passed": False,
                "details": None,
                "label": "",
            },
        ],
    )
    write_graded(
        graded_path(root, "beta"),
        [{"request_key": "b1", "engine": "e2", "item_id": "i1", "score": 0.5, "label": 3}],
    )
    df = se.samples_df(root)
    assert export.json_text_columns(df) == ["details", "label"]
    for fmt, read in (("parquet", pd.read_parquet), ("csv", pd.read_csv)):
        sealedeval(root, "export", "samples", "--format", fmt)
        path = root / f"results/export/samples.{fmt}"
        back = read(path)
        assert list(back.columns) == list(df.columns)
        for c in ("details", "label"):
            back[c] = [json.loads(v) if isinstance(v, str) else None for v in back[c]]
        csv = fmt == "csv"
        assert _cells(back, empty_is_missing=csv) == _cells(df, empty_is_missing=csv), fmt
        first = path.read_bytes()
        sealedeval(root, "export", "samples", "--format", fmt)
        assert path.read_bytes() == first


# -- a built tiny project, end to end ---------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("export") / "proj")
    sealedeval(root, "seal", "-c", TINY)
    git(root, "add", "rubric.lock")
    git(root, "commit", "-qm", "Seal the tiny design")
    for suite in ("golden", "bloodpanel", "grounding"):
        sealedeval(root, "run", suite, "-c", TINY, "--no-progress")
    sealedeval(root, "publish", "-c", TINY, "--jobs", "1")
    return root


@pytest.mark.slow
def test_a_published_project_exports_valid_records_and_its_samples(
    built: Path, eee_schemas: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    result = json.loads((built / "results/result.json").read_text(encoding="utf-8"))
    proc = sealedeval(built, "export", "eee")
    assert "wrote 3 Every Eval Ever 0.2.2 records" in proc.stdout
    records = _records(built / export.EEE_DIR)
    assert set(records) == {f"{s}/reference.json" for s in result["suites"]}
    for name, doc in records.items():
        assert _validate(eee_schemas["0.2.2"], doc) == [], name
        suite = name.split("/")[0]
        published = {
            (m["metric"], json.dumps(m["groups"], sort_keys=True)): m["estimate"]
            for m in result["suites"][suite]["analysis"]["metrics"]
        }
        for r in doc["evaluation_results"]:
            groups = {"engine": "reference", **r["metric_config"]["metric_parameters"]}
            key = (r["metric_config"]["metric_name"], json.dumps(groups, sort_keys=True))
            assert r["score_details"]["score"] == published[key]
    copy = tmp_path / "copy"
    shutil.copytree(built / export.EEE_DIR, copy)
    sealedeval(built, "export", "eee")
    assert _tree(built / export.EEE_DIR) == _tree(copy)

    df = se.samples_df(built)
    for fmt, read in (("parquet", pd.read_parquet), ("csv", pd.read_csv)):
        proc = sealedeval(built, "export", "samples", "--format", fmt)
        assert f"wrote {len(df)} graded rows" in proc.stdout
        back = read(built / f"results/export/samples.{fmt}")
        assert list(back.columns) == list(df.columns)
        assert _cells(back, empty_is_missing=fmt == "csv") == _cells(
            df, empty_is_missing=fmt == "csv"
        )
    assert set(df["suite"]) == set(result["suites"])
