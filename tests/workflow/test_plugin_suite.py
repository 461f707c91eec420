"""A fourth suite from an installed package, end to end through Snakemake.

``tests/fixtures/wordcount_suite`` is a real distribution: pip installs it (into a target
directory put on PYTHONPATH, so the test venv stays as it was), it registers ``wordcount``
through the ``sealedeval.suites`` entry point, and it ships no presentation code. The project
uses this repository's three-line Snakefile, which includes the rules and central schema shipped
in the package, unchanged; the suite must come out
with a report section, a figure, a scorecard and a passing audit — and the built-in suites'
rubric hashes must not move because it exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO, git
from tests.projects import snakemake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing"),
]

FIXTURE = REPO / "tests/fixtures/wordcount_suite"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    shutil.copytree(FIXTURE, build / "src", ignore=shutil.ignore_patterns("*.egg-info", "build"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(build / "src"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert list(target.glob("sealedeval_wordcount-*.dist-info/entry_points.txt"))
    return target


def _env(plugin: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(REPO)] + ([str(plugin)] if plugin else [])
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _cli(cwd: Path, plugin: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(plugin),
    )


def _project(dest: Path) -> Path:
    dest.mkdir()
    shutil.copy2(REPO / "Snakefile", dest / "Snakefile")  # three lines: the rules ship inside
    (dest / "config").mkdir()
    (dest / "config/config.yaml").write_text(
        "project: {name: wordcount-demo, seed: 11}\n"
        "engines:\n  reference: {kind: reference, concurrency: 2}\n"
        "suites:\n  wordcount: {engines: [reference], repeats: 2}\n"
    )
    (dest / ".gitignore").write_text("/results/\n/logs/\n/.snakemake/\n")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "project")
    return dest


def test_entry_point_suite_runs_end_to_end(plugin_path: Path, tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    listed = _cli(root, plugin_path, "suites")
    assert listed.returncode == 0, listed.stderr
    assert any(
        line.split()[:3] == ["wordcount", "sealedeval-wordcount", "0.3.1"]
        for line in listed.stdout.splitlines()
    ), listed.stdout

    seal = _cli(root, plugin_path, "seal")
    assert seal.returncode == 0, seal.stderr
    lock = json.loads((root / "rubric.lock").read_text())
    files = lock["suites"]["wordcount"]["files"]
    assert "pkg:sealedeval_wordcount/suite.py" in files
    assert "pkg:sealedeval/stats/metrics.py" in files  # the analysis code is sealed with it
    git(root, "add", "rubric.lock")
    git(root, "commit", "-qm", "seal")

    proc = subprocess.run(
        ["snakemake", "--cores", "2"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(plugin_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    result = json.loads((root / "results/result.json").read_text())
    section = result["suites"]["wordcount"]
    assert section["seal"]["counts"]["reference"] == {
        "requests": 10,
        "ok": 10,
        "error": 0,
        "refused": 0,
        "missing": 0,
        "attempt_rows": 10,
        "complete": True,
    }
    [acc] = [m for m in section["analysis"]["metrics"] if m["metric"] == "accuracy"]
    assert acc["estimate"] == 1.0 and acc["n_ok"] == 10 and acc["method"] == "wilson"
    assert 0.65 < acc["lo"] < 0.75 and acc["hi"] == 1.0  # Wilson 10/10: [0.722, 1]
    assert result["suite_sources"]["wordcount"]["source"] == "sealedeval-wordcount"

    report = (root / "results/report.md").read_text()
    assert "## wordcount" in report
    assert "| accuracy | engine=reference | 1.000 | [0.722, 1.000] | wilson |" in report
    assert "![Figure 1](figures/wordcount_metric-accuracy.svg)" in report
    for ext in ("svg", "png"):
        assert (root / f"results/figures/wordcount_metric-accuracy.{ext}").stat().st_size > 1000
    card = (root / "results/scorecards/wordcount.csv").read_text().splitlines()
    assert card[0].startswith("request_key,engine,item_id,condition,repeat,status,grader")
    assert len(card) == 1 + 10 and "topic" in card[0]
    assert (root / "results/report.pdf").read_bytes().startswith(b"%PDF")

    audit = _cli(root, plugin_path, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "3 stage files, result.json and report.md rebuilt byte for byte" in audit.stdout

    # Tampering with the graded file is caught by the stage-by-stage re-derivation.
    graded = root / "results/graded/wordcount.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(graded)
    t = t.set_column(
        t.column_names.index("passed"),
        "passed",
        pa.array([False, *t.column("passed").to_pylist()[1:]]),
    )
    pq.write_table(t, graded)
    audit = _cli(root, plugin_path, "audit")
    assert audit.returncode == 1
    assert "results/graded/wordcount.parquet differs from the re-derivation" in audit.stdout


def test_adding_a_suite_changes_no_other_rubric_hash(plugin_path: Path, tmp_path: Path) -> None:
    """The same project sealed with and without the plugin installed: every built-in suite's
    hash is identical (the protocol and registry are not sealed, nothing shared moved)."""
    code = (
        "import json, sys; from pathlib import Path; from sealedeval.seal import lock; "
        "from sealedeval.plugins import get_suite; "
        "names = ['golden', 'bloodpanel', 'grounding']; "
        "doc = lock.compute(Path(sys.argv[1]), {n: get_suite(n).rubric_inputs() for n in names}); "
        "print(json.dumps({n: doc['suites'][n]['sha256'] for n in names}))"
    )

    def hashes(plugin: Path | None) -> dict[str, str]:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(REPO)],
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(plugin),
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        out: dict[str, str] = json.loads(proc.stdout)
        return out

    without, with_plugin = hashes(None), hashes(plugin_path)
    assert without == with_plugin
    committed = json.loads((REPO / "rubric.lock").read_text())["suites"]
    assert {n: committed[n]["sha256"] for n in without} == without


def _snakemake(root: Path, plugin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return snakemake(root, *args, env=_env(plugin))


def test_a_plugin_engine_kind_with_an_option_of_its_own_runs_through_snakemake(
    plugin_path: Path, tmp_path: Path
) -> None:
    """``wordcounter`` comes from the same package through the ``sealedeval.engines`` entry
    point, with its options schema (``region`` required, ``offset``): the central schema knows
    neither, the kind's schema checks both, at Snakemake's parse time in the CLI's words."""
    root = _project(tmp_path / "proj")
    config = root / "config/config.yaml"
    config.write_text(
        "project: {name: wordcount-demo, seed: 11}\n"
        "engines:\n"
        "  reference: {kind: reference, concurrency: 2}\n"
        "  counter: {kind: wordcounter, region: eu, offset: 1}\n"
        "suites:\n  wordcount: {engines: [reference, counter], repeats: 2}\n"
    )
    git(root, "commit", "-qam", "a plugin engine")
    good = config.read_text()
    for bad, said in [
        ("region: mars", "config/config.yaml: engines.counter.region: 'mars' is not one of"),
        ("region: eu, regoin: eu", "counter.regoin: not an option of kind wordcounter; did you"),
        ("offset: 1", "config/config.yaml: engines.counter: kind wordcounter needs region"),
    ]:
        config.write_text(good.replace("region: eu, offset: 1", bad))
        proc = _snakemake(root, plugin_path, "-n")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out
        ours = [line for line in out.splitlines() if line.startswith("sealedeval: error: ")]
        assert len(ours) == 1 and said in ours[0], out
        assert "Traceback" not in out
    config.write_text(good)

    assert _cli(root, plugin_path, "seal").returncode == 0
    git(root, "add", "rubric.lock")
    git(root, "commit", "-qm", "seal")
    proc = _snakemake(root, plugin_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((root / "results/result.json").read_text())
    section = result["suites"]["wordcount"]
    assert section["seal"]["counts"]["counter"]["ok"] == 10
    accuracy = {
        m["groups"]["engine"]: m["estimate"]
        for m in section["analysis"]["metrics"]
        if m["metric"] == "accuracy"
    }
    assert accuracy == {"reference": 1.0, "counter": 0.0}  # offset 1: every count one too many
    assert result["engines"]["counter"]["model"] == "wordcounter-eu"
    audit = _cli(root, plugin_path, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
