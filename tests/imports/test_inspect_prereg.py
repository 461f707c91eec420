"""Pre-registration of imported Inspect runs (issue #14, item 5): a task sealed before it is run
audits as pre-registered; logs made before the seal import as "not pre-registered: samples
predate the seal" (verified by the audit, not failed); score edits recorded in a log are listed
with their provenance."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.conftest import git

from sealedeval import cli
from sealedeval.store.raw import latest_records, raw_files

pytest.importorskip("inspect_ai")

from tests.imports.test_inspect_import import (
    CONFIG,
    TASK,
    make_project,
    run_inspect,
    sealedeval_import,
)


def _audit(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    capsys.readouterr()
    rc = cli.main(["audit", "--root", str(root)])
    lines = capsys.readouterr().out.splitlines()[1:]
    rows = {}
    for line in lines:
        for status in (" PASS ", " FAIL ", " WARN "):
            if status in line:
                name, detail = line.split(status, 1)
                rows[name.strip()] = status.strip() + " " + detail.strip()
    return rc, rows


def _publish(root: Path, *flags: str) -> dict:
    git(root, "add", "-A")
    git(root, "commit", "-qm", "imports")
    assert cli.main(["publish", "--root", str(root), *flags]) == 0
    return json.loads((root / "results" / "result.json").read_text())


@pytest.mark.slow
def test_logs_made_before_the_seal_say_so_and_the_audit_verifies_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "proj"
    (root / "config").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "config" / "config.yaml").write_text(CONFIG)
    (root / "tasks" / "mytask.py").write_text(TASK)
    (root / ".gitignore").write_text("/results/\n/logs/\n__pycache__/\n")
    log1 = run_inspect(root, "mockllm/model")  # the harness runs first ...
    log2 = run_inspect(root, "mockllm/model2")
    time.sleep(1.1)  # git dates have whole seconds
    git(root, "init", "-q", "-b", "main")
    assert cli.main(["seal", "--root", str(root)]) == 0  # ... the seal comes after
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal after the runs")
    capsys.readouterr()
    assert sealedeval_import(root, str(log1), str(log2)) == 0
    out = capsys.readouterr().out
    assert "5 of 5 samples started before the seal: mytask is not pre-registered" in out
    rows = latest_records(raw_files(root, "mytask"))
    assert rows and not any(r["sealed"] for r in rows)
    assert all(r["seal_commit"] and r["rubric_sha256"] for r in rows)  # bound, but before it

    result = _publish(root)
    section = result["suites"]["mytask"]
    pre = section["analysis"]["pre_registration"]
    assert pre["status"] == "not pre-registered: samples predate the seal"
    assert (pre["samples"], pre["after_seal"], pre["predating_seal"]) == (10, 0, 10)
    assert section["seal"]["status"] == "not pre-registered"
    (c,) = section["analysis"]["comparisons"]  # the paired test is still there
    assert (c["a_better"], c["b_better"]) == (3, 1)
    assert (
        "not pre-registered: samples predate the seal"
        in (root / "results" / "report.md").read_text()
    )

    rc, checks = _audit(root, capsys)
    assert rc == 0, [c for c in checks.items() if not c[1].startswith("PASS")]
    assert checks["seal precedes runs"].startswith("WARN")
    assert "every imported sample predates the seal" in checks["seal precedes runs"]
    assert checks["rows bound to seal"].startswith("PASS")
    assert "mytask: 10 imported samples predate the seal" in checks["rows bound to seal"]


@pytest.mark.slow
def test_a_predating_claim_that_is_false_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows marked "predates the seal" that started after it are unsealed rows, not imports of
    old logs: the audit does not take the label on trust."""
    import pyarrow.parquet as pq

    from sealedeval.store.schema import RAW_SCHEMA

    root = make_project(tmp_path / "proj")
    log = run_inspect(root, "mockllm/model")
    assert sealedeval_import(root, str(log)) == 0
    res = _publish(root, "--allow-incomplete")  # one of the two sealed engines is imported
    assert res["status"] == "NOT AS SEALED: mytask/mockllm-model2: sealed engine has no rows"
    for part in raw_files(root, "mytask"):
        t = pq.read_table(part, schema=RAW_SCHEMA).to_pylist()
        for r in t:
            r["sealed"] = False
        import pyarrow as pa

        pq.write_table(pa.Table.from_pylist(t, schema=RAW_SCHEMA), part)
    rc, checks = _audit(root, capsys)
    assert rc == 1
    assert "5 unsealed rows" in checks["rows bound to seal"]


@pytest.mark.slow
def test_a_task_sealed_before_it_ran_is_pre_registered_and_score_edits_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
    from inspect_ai.scorer import ScoreEdit

    root = make_project(tmp_path / "proj")  # sealed and committed first
    path = run_inspect(root, "mockllm/model")
    log = read_eval_log(str(path))
    edit_score(
        log,
        "s3",
        "match",
        ScoreEdit(
            value="C",
            provenance=ProvenanceData(author="reviewer", reason="synonym accepted"),
        ),
    )
    write_eval_log(log, str(path))
    other = run_inspect(root, "mockllm/model2")  # the design seals both engines
    assert sealedeval_import(root, str(path), str(other)) == 0
    result = _publish(root)
    an = result["suites"]["mytask"]["analysis"]
    assert an["pre_registration"]["status"] == (
        "pre-registered: every sample started after the seal"
    )
    (e,) = an["log_edits"]
    assert (e["engine"], e["sample"], e["epoch"], e["scorer"]) == (
        "mockllm-model",
        "s3",
        1,
        "match",
    )
    assert (e["from"], e["value"]) == ("I", "C")  # the scorer said I; the reviewer made it C
    assert (e["author"], e["reason"]) == ("reviewer", "synonym accepted")
    assert e["timestamp"].endswith("Z")
    # the edited value is what the log now says, and Inspect recomputed its headline: both 1.0
    ours = an["engines"]["mockllm-model"]["scorers"]["match"]["accuracy"]["rate"]
    assert ours == pytest.approx(1.0) and an["headline_match"]
    md = (root / "results" / "report.md").read_text()
    assert "1 edit(s) recorded in the logs" in md
    assert "mockllm-model sample s3 epoch 1 match: 'I' → 'C' by reviewer" in md
    rc, checks = _audit(root, capsys)
    assert rc == 0, [c for c in checks.items() if not c[1].startswith("PASS")]


CLUSTER_TASK = TASK.replace(
    'Sample(id=f"s{i}", input=f"q{i}", target=t)',
    'Sample(id=f"s{i}", input=f"q{i}", target=t, metadata={"passage": "p" + str(i // 2)})',
)


@pytest.mark.slow
def test_clustered_interval_and_cost_per_solved_sample(tmp_path: Path) -> None:
    """``cluster_by: metadata.passage``: s0-s1, s2-s3 and s4 share passages; the interval is
    the cluster-robust one over those three clusters, and cost/latency are per solved sample."""
    from sealedeval import stats

    config = CONFIG.replace(
        "    sources: [tasks/mytask.py]",
        "    sources: [tasks/mytask.py]\n    cluster_by: metadata.passage",
    )
    root = make_project(tmp_path / "proj", config, CLUSTER_TASK)
    logs = [str(run_inspect(root, m)) for m in ("mockllm/model", "mockllm/model2")]
    assert sealedeval_import(root, *logs) == 0
    an = _publish(root)["suites"]["mytask"]["analysis"]
    e = an["engines"]["mockllm-model"]
    c = e["clustered"]
    solved = [1.0, 1.0, 1.0, 0.0, 1.0]  # model: right on s0 s1 s2 s4
    want = stats.clustered_se(solved, ["p0", "p0", "p1", "p1", "p2"])
    assert (c["by"], c["clusters"], c["without_field"]) == ("metadata.passage", 3, 0)
    assert c["rate"] == pytest.approx(0.8) and c["se"] == pytest.approx(want)
    assert c["se"] != pytest.approx(stats.clustered_se(solved, list(range(5))))  # clusters count
    assert c["lo"] == pytest.approx(max(0.0, 0.8 - stats.Z_95 * want))
    rows = [r for r in latest_records(raw_files(root, "mytask")) if r["engine"] == "mockllm-model"]
    p = e["per_solved"]
    assert p["solved"] == 4
    assert p["latency_per_solved_s"] == pytest.approx(sum(r["latency_s"] for r in rows) / 4)
    assert p["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows))
    names = {m["metric"] for m in an["metrics"]}
    assert {"accuracy_clustered", "cost_per_solved", "latency_per_solved"} <= names
