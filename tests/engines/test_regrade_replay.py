"""``sealedeval regrade SUITE --from PATH``: a recorded raw run regraded as a new replay run.

In a throwaway sealed project copy (as ``test_engines_end_to_end.py``): golden's tiny profile
on the ``reference`` engine, a rubric change (g01 must now also name deploy 17) and a re-seal,
then ``regrade golden --from results/raw/golden/reference``:

- a new run bound to the new seal (rows, ledger entry), answers as recorded, the source's hash
  and ledger entry in every row's identity, the source moved out of results/raw;
- the overlay config it writes is what the printed next commands use; with it the verdicts
  differ from the old run's exactly on g01 (the changed task), and publish + audit pass;
- a source with an item id the suite does not have: the suite's item with no recorded answer
  becomes error rows, the unknown id's rows are counted and named, a resume passes;
- bad input (PATH missing, not a raw store, another suite's rows, suite not configured, a
  taken name) is one line, exit 2, and not one file written or moved.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tests.conftest import git, sealedeval, shared_fixture

from sealedeval.config import _merge
from sealedeval.stages.regrade import suite_overlay
from sealedeval.store import ledger
from sealedeval.store.raw import latest_rows, raw_files, read_raw

TINY = ("-c", "config/tiny.yaml")
Triple = tuple[str, str, int]


def _cli(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    return rc, out, err


def _rows(root: Path, engine: str) -> list[dict[str, Any]]:
    files = [f for f in raw_files(root, "golden") if f.parent.name == engine]
    return list(latest_rows(read_raw(files).to_pylist()).values())


def _triple(r: dict[str, Any]) -> Triple:
    return (str(r["item_id"]), str(r["condition"]), int(r["repeat"]))


def _verdicts(root: Path, engine: str) -> dict[Triple, bool]:
    """Golden's regex verdict (the must / mustNot rules) per answered request."""
    from sealedeval.stages import artifacts

    return {
        _triple(r): bool(r["passed"])
        for r in artifacts.read_graded(root / "results/graded/golden.parquet")
        if r["grader"] == "regex" and r["engine"] == engine
    }


def _edit_g01_must(root: Path) -> None:
    """A changed rubric: g01 now also needs the deploy it was rolled back to named as 17."""
    path = root / "data/golden/tasks.yaml"
    text = path.read_text()
    first = text.index("  - id: g01")
    at = text.index("    must:\n", first) + len("    must:\n")
    path.write_text(text[:at] + "      - 'rolled back to deploy 17'\n" + text[at:])


def _reseal(root: Path) -> None:
    sealedeval(root, "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "re-seal: g01 needs deploy 17")


def _recorded_run(root: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    rc, _, err = _cli(root, "run", "golden", "--engine", "reference", *TINY, capsys=capsys)
    assert rc == 0, err
    return _rows(root, "reference")


def _next(out: str, command: str) -> list[str]:
    """The printed next command that starts with ``sealedeval <command>`` (its arguments)."""
    for line in out.splitlines():
        if line.strip().startswith(f"sealedeval {command}"):
            return shlex.split(line.split("&&")[0])[1:]
    raise AssertionError(f"no `sealedeval {command}` among the next steps:\n{out}")


@pytest.mark.slow
def test_regrade_from_a_raw_run_under_a_changed_rubric(
    project: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = project()
    old_rows = _recorded_run(root, capsys)
    rc, _, err = _cli(root, "grade", "golden", *TINY, capsys=capsys)
    assert rc == 0, err
    old_verdicts = _verdicts(root, "reference")
    assert len(old_verdicts) == len(old_rows) and all(old_verdicts.values())
    old_entry = ledger.read(root)[-1]
    old_hash = old_rows[0]["rubric_sha256"]
    _edit_g01_must(root)
    _reseal(root)
    config_before = {p: p.read_bytes() for p in (root / "config").iterdir()}

    monkeypatch.chdir(root)
    rc, out, err = _cli(
        root, "regrade", "golden", "--from", "results/raw/golden/reference", *TINY, capsys=capsys
    )
    assert rc == 0, err
    assert "moved results/raw/golden/reference → archive/raw/golden/reference" in out
    overlay = root / "config/regrade-reference-replay.yaml"
    assert f"wrote {overlay.relative_to(root)}" in out
    # the user's config files untouched; the overlay binds the replay in reference's place
    assert {p: p.read_bytes() for p in config_before} == config_before
    doc = yaml.safe_load(overlay.read_text())
    assert doc["engines"]["reference-replay"]["kind"] == "replay"
    assert doc["engines"]["reference-replay"]["source"] == "archive/raw/golden/reference"
    assert "fail_on_error" not in doc["engines"]["reference-replay"]  # every request answered
    assert doc["suites"]["golden"]["engines"] == ["reference-replay"]
    assert not (root / "results/raw/golden/reference").exists()
    assert sorted(p.name for p in (root / "archive/raw/golden/reference").glob("part-*")) == (
        sorted(Path(p["path"]).name for p in old_entry["parts"])
    )

    new_rows = _rows(root, "reference-replay")
    n = len(old_rows)
    assert f"{n} requests under rubric" in out and n == 24
    assert f"ok {n}, error 0" in out
    new_hash = new_rows[0]["rubric_sha256"]
    assert new_hash != old_hash and {r["rubric_sha256"] for r in new_rows} == {new_hash}
    assert all(r["sealed"] for r in new_rows)
    recorded = {_triple(r): r["output_text"] for r in old_rows}
    assert {_triple(r): r["output_text"] for r in new_rows} == recorded
    ident = json.loads(new_rows[0]["engine_identity"])
    assert ident["source"] == "archive/raw/golden/reference"
    assert ident["source_ledger"] == [old_entry["hash"]]
    assert ident["source_sha256"][:12] in out and old_entry["hash"][:12] in out
    entry = ledger.read(root)[-1]
    assert (entry["engine"], entry["rubric_sha256"], entry["ok"], entry["error"]) == (
        "reference-replay",
        new_hash,
        n,
        0,
    )

    # the printed next steps, as printed: analyze (with grading), then publish and audit
    git(root, "add", str(overlay.relative_to(root)), "ledger.jsonl")
    git(root, "commit", "-qm", "regrade golden/reference under the new seal")
    analyze = _next(out, "analyze")
    assert analyze[-2:] == ["-c", "config/regrade-reference-replay.yaml"]
    rc, _, err = _cli(root, *analyze, capsys=capsys)
    assert rc == 0, err
    new_verdicts = _verdicts(root, "reference-replay")
    assert set(new_verdicts) == set(old_verdicts)
    changed = {t for t in old_verdicts if new_verdicts[t] != old_verdicts[t]}
    # exactly where the rubric changed: every g01 answer, and no other
    assert changed == {t for t in old_verdicts if t[0] == "g01"} and changed
    assert not any(new_verdicts[t] for t in changed)
    rc, _, err = _cli(root, *_next(out, "publish"), capsys=capsys)
    assert rc == 0, err
    rc, audit, err = _cli(root, "audit", capsys=capsys)  # the config as result.json records it
    assert rc == 0 and "audit: passed" in audit, audit + err
    assert "config/regrade-reference-replay.yaml" in audit
    res = json.loads((root / "results/result.json").read_text())
    assert res["engines"]["reference-replay"]["source_sha256"] == ident["source_sha256"]
    counts = res["suites"]["golden"]["seal"]["counts"]
    assert list(counts) == ["reference-replay"] and counts["reference-replay"]["complete"]


def _tamper(src: Path, dest: Path, item: str, unknown: str) -> None:
    """A copy of a raw store in which ``item``'s rows answer ``unknown`` (an id the suite does
    not have) under other request keys, as a run of another item set would."""
    dest.mkdir(parents=True)
    for p in sorted(src.glob("part-*.parquet")):
        t = pq.read_table(p)
        ids = t.column("item_id").to_pylist()
        keys = t.column("request_key").to_pylist()
        hit = [i == item for i in ids]
        new_ids = [unknown if h else i for i, h in zip(ids, hit, strict=True)]
        new_keys = [
            f"{k[:-8]}{n:08x}" if h else k for n, (k, h) in enumerate(zip(keys, hit, strict=True))
        ]
        for col, values in (("item_id", new_ids), ("request_key", new_keys)):
            i = t.schema.get_field_index(col)
            t = t.set_column(i, t.schema.field(col), pa.array(values, t.schema.field(col).type))
        pq.write_table(t, dest / p.name)


@pytest.mark.slow
def test_unknown_item_ids_are_error_rows_counted_and_shown(
    project: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    root = project()
    old_rows = _recorded_run(root, capsys)
    copy = tmp_path / "elsewhere/old-run"
    _tamper(root / "results/raw/golden/reference", copy, "g03", "g99")
    rc, out, err = _cli(
        root, "regrade", "golden", "--from", str(copy), "--as", "old", *TINY, capsys=capsys
    )
    assert rc == 0, err
    n_g03 = sum(1 for r in old_rows if r["item_id"] == "g03")
    n = len(old_rows)
    assert n_g03 == 4
    assert f"ok {n - n_g03}, error {n_g03} (replay_missing {n_g03})" in out
    assert "no recorded answer (replay_missing error rows) for items: g03" in out
    assert f"{n_g03} recorded rows not replayed (unknown item ids: g99)" in out
    assert "outside the project" in out
    rows = _rows(root, "old")
    errors = [r for r in rows if r["status"] != "ok"]
    assert len(rows) == n and {r["item_id"] for r in errors} == {"g03"}
    assert {r["error_kind"] for r in errors} == {"replay_missing"}
    assert "g99" not in {r["item_id"] for r in rows}
    entry = ledger.read(root)[-1]
    assert (entry["engine"], entry["ok"], entry["error"]) == ("old", n - n_g03, n_g03)
    overlay = root / "config/regrade-old.yaml"
    doc = yaml.safe_load(overlay.read_text())
    assert doc["engines"]["old"]["fail_on_error"] == n_g03
    # reference's own rows stay (same seal, not moved): it stays in the suite beside the replay
    assert doc["suites"]["golden"]["engines"] == ["reference", "old"]
    cfgs = (*TINY, "-c", "config/regrade-old.yaml")
    # a resume (snakemake's run rule) re-asks the gaps, gets them again, and passes
    rc, _, err = _cli(root, "run", "golden", "--engine", "old", *cfgs, capsys=capsys)
    assert rc == 0, err
    assert ledger.read(root)[-1]["error"] == n_g03
    git(root, "add", "config", "ledger.jsonl")
    git(root, "commit", "-qm", "regrade a copy")
    for cmd in (("analyze", "golden", "--grade"), ("publish",)):
        rc, _, err = _cli(root, *cmd, *cfgs, capsys=capsys)
        assert rc == 0, err
    counts = json.loads((root / "results/result.json").read_text())["suites"]["golden"]["seal"]
    c = counts["counts"]["old"]
    assert (c["ok"], c["error"], c["complete"]) == (n - n_g03, n_g03, False)
    assert counts["counts"]["reference"]["complete"]
    rc, audit, err = _cli(root, "audit", capsys=capsys)
    assert rc == 0 and "audit: passed" in audit, audit + err


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    project: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = project()
    _recorded_run(root, capsys)
    _edit_g01_must(root)
    _reseal(root)
    monkeypatch.chdir(root)
    (root / "empty").mkdir()
    (root / "notraw").mkdir()
    (root / "notraw/part-0.parquet").write_text("not parquet")
    (root / "otherparquet").mkdir()
    pq.write_table(pa.table({"x": [1]}), root / "otherparquet/part-0.parquet")
    cases = [
        (("golden", "--from", "results/raw/golden/nothing"), "no such directory"),
        (("golden", "--from", "empty"), "not a raw store"),
        (("golden", "--from", "results/raw/golden"), "engine directories: reference"),
        (("golden", "--from", "notraw"), "corrupt raw-run part"),
        (("golden", "--from", "otherparquet"), "no column"),
        (("bloodpanel", "--from", "results/raw/golden/reference"), "rows of suite golden"),
        (("nosuch", "--from", "results/raw/golden/reference"), "not configured"),
        (("golden", "--from", "results/raw/golden/reference", "--as", "reference"), "--as"),
        (("golden", "--from", "results/raw/golden/reference", "--as", "local"), "engines.local"),
        (("golden", "--from", "results/raw/golden/reference", "--as", "a/b"), "--as a/b"),
        (("golden", "--from", "empty", "--format", "kantesti"), "--format"),
    ]
    before = _tree(root)
    for args, said in cases:
        rc, out, err = _cli(root, "regrade", *args, *TINY, capsys=capsys)
        assert rc == 2, (args, out, err)
        assert err.count("\n") == 1 and err.startswith("sealedeval: error:"), (args, err)
        assert said in err, (args, err)
        assert _tree(root) == before, args
    # after a regrade moved the source, the same command says where it went
    rc, _, err = _cli(
        root, "regrade", "golden", "--from", "results/raw/golden/reference", *TINY, capsys=capsys
    )
    assert rc == 0, err
    after = _tree(root)
    rc, _, err = _cli(
        root, "regrade", "golden", "--from", "results/raw/golden/reference", *TINY, capsys=capsys
    )
    assert rc == 2 and "an earlier regrade moved it to archive/raw/golden/reference" in err
    assert _tree(root) == after


GOLDEN_SECTION: dict[str, Any] = {
    "engines": ["local", "reference"],
    "compare": ["local", "reference"],
    "branch_engines": ["local", "reference"],
    "judge": {"engines": ["local", "reference"], "variants": ["v1"]},
    "probes": {"engines": ["local"], "attribute_swap": {"branch": "A"}},
    "cohorts": {"local": "curated", "reference": "all"},
    "engine_options": {"local": {"n_ctx": 16384}},
    "repeats": 3,
    "profile": "local",  # a scalar value that happens to be an engine's name: not renamed
}


def test_the_overlay_puts_the_replay_in_the_source_engines_place() -> None:
    over = suite_overlay(GOLDEN_SECTION, "local", "local-replay", keep=False)
    assert over == {
        "engines": ["local-replay", "reference"],
        "compare": ["local-replay", "reference"],
        "branch_engines": ["local-replay", "reference"],
        "judge": {"engines": ["local-replay", "reference"]},  # only what changed: it merges
        "probes": {"engines": ["local-replay"]},
        "cohorts": {"local-replay": "curated"},
    }
    merged = _merge(GOLDEN_SECTION, over)  # as load_config merges the overlay file
    assert merged["judge"] == {"engines": ["local-replay", "reference"], "variants": ["v1"]}
    assert merged["engine_options"] == GOLDEN_SECTION["engine_options"]
    assert merged["profile"] == "local" and merged["repeats"] == 3
    # the source's rows stay: it keeps its place in engines, the replay beside it
    kept = suite_overlay(GOLDEN_SECTION, "local", "local-replay", keep=True)
    assert kept["engines"] == ["local", "local-replay", "reference"]
    assert kept["branch_engines"] == ["local-replay", "reference"]
    # a source engine the suite does not name (an import): the replay is added, nothing else
    assert suite_overlay(GOLDEN_SECTION, "gpt", "gpt-replay", keep=False) == {
        "engines": ["local", "reference", "gpt-replay"]
    }


def test_the_kantesti_file_path_is_unchanged_and_exclusive_with_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path(__file__).resolve().parents[2]
    files = [shared_fixture("kantesti-v11", "responses_v11_full.json") / "responses_v11_full.json"]
    rc, out, err = _cli(
        root,
        "regrade",
        "bloodpanel",
        "--profile",
        "kantesti-v11",
        "--format",
        "kantesti",
        str(files[0]),
        capsys=capsys,
    )
    assert rc == 0, err
    assert "aggregate: composite" in out
    rc, _, err = _cli(root, "regrade", "bloodpanel", str(files[0]), capsys=capsys)
    assert rc == 2 and err.count("\n") == 1 and "--format and --profile" in err
    rc, _, err = _cli(root, "regrade", "bloodpanel", "--as", "x", str(files[0]), capsys=capsys)
    assert rc == 2 and "--as names the replay engine of --from" in err
