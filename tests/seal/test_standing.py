"""``seal.standing``: the facts publish states before anyone reads a number (fast, no CLI)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sealedeval.seal import standing
from sealedeval.store import ledger


def _part(root: Path, rel: str, data: bytes) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _entry(suite: str, engine: str, rubric: str, parts: list[tuple[str, str]], **kw: Any) -> dict:
    return {
        "kind": "run",
        "suite": suite,
        "engine": engine,
        "rubric_sha256": rubric,
        "seal_commit": "c" * 40,
        "sealed": True,
        "parts": [{"path": p, "sha256": h, "rows": 1} for p, h in parts],
        "ok": 1,
        "error": 0,
        "outcome": "done",
    } | kw


LOCK = {"suites": {"s": {"sha256": "NOW", "files": {}}}}


HINT = " (an interrupted run? running its engine again resumes and records it)"


def test_parts_missing_changed_and_unledgered_are_stated(tmp_path: Path) -> None:
    a = _part(tmp_path, "results/raw/s/e1/part-a.parquet", b"a")
    b = _part(tmp_path, "results/raw/s/e1/part-b.parquet", b"b")
    ledger.append(tmp_path, _entry("s", "e1", "NOW", [("results/raw/s/e1/part-a.parquet", a)]))
    ledger.append(tmp_path, _entry("s", "e1", "NOW", [("results/raw/s/e1/part-b.parquet", "x")]))
    ledger.append(tmp_path, _entry("s", "e2", "NOW", [("results/raw/s/e2/part-c.parquet", "c")]))
    # a run under an earlier seal whose parts were moved aside, as the run's error says
    ledger.append(tmp_path, _entry("s", "e2", "OLD", [("results/raw/s/e2/part-old.parquet", "o")]))
    present = {
        "results/raw/s/e1/part-a.parquet": a,
        "results/raw/s/e1/part-b.parquet": b,
        "results/raw/s/e1/part-z.parquet": "z",
    }
    assert standing.part_deviations(tmp_path, LOCK, present) == [
        ("s", "s/e2: 1 ledgered raw part missing"),
        ("s", "results/raw/s/e1/part-b.parquet differs from the ledger"),
        ("s", "results/raw/s/e1/part-z.parquet was written by no ledgered run" + HINT),
    ]
    # hashed from the files when no manifest is given: the same verdict for the two real parts
    assert standing.part_deviations(tmp_path, LOCK) == [
        ("s", "s/e2: 1 ledgered raw part missing"),
        ("s", "results/raw/s/e1/part-b.parquet differs from the ledger"),
    ]


def test_without_a_ledger_parts_are_left_to_the_audit(tmp_path: Path) -> None:
    _part(tmp_path, "results/raw/s/e1/part-a.parquet", b"a")
    assert standing.part_deviations(tmp_path, LOCK) == []


def test_pilots_and_resume_checks_are_not_runs() -> None:
    run = _entry("s", "e", "NOW", [])
    check = _entry("s", "e", "NOW", [], ok=0, error=0)
    failed = _entry("s", "e", "NOW", [], ok=0, error=0, outcome="failed")
    pilot = _entry("s", "e", "NOW", [], kind="pilot")
    assert standing.counted([run, check, failed, pilot]) == [run, failed]


def test_design_and_rows_deviations() -> None:
    d = {
        "missing_engines": ["b"],
        "changed_engines": ["c"],
        "missing_comparisons": ["a vs b"],
    }
    assert standing.design_deviations("s", d) == [
        "s/b: sealed engine has no rows",
        "s/c: sealed engine answered by another model",
        "s: sealed comparison a vs b missing",
    ]
    assert standing.design_deviations("s", {}) == []
    mixed = {"pre_registered": True, "rubric_sha256": "mixed:OLD,NOW"}
    assert standing.rows_deviations("s", LOCK, mixed) == [
        "s: rows under another rubric hash than the seal's (mixed:OLD,NOW)"
    ]
    assert (
        standing.rows_deviations("s", LOCK, {"pre_registered": True, "rubric_sha256": "NOW"}) == []
    )
    # unsealed rows are "not pre-registered", which the status already says
    assert (
        standing.rows_deviations("s", LOCK, {"pre_registered": False, "rubric_sha256": "X"}) == []
    )


def test_overall_status_is_the_weakest_claim() -> None:
    assert standing.overall_status(["pre-registered"], []) == "pre-registered"
    assert standing.overall_status(["pre-registered", "amended"], []) == "amended"
    assert standing.overall_status(["amended", "not pre-registered"], []) == "not pre-registered"
    devs = ["a", "b", "c", "d", "e"]
    assert standing.overall_status(["pre-registered"], devs) == (
        "NOT AS SEALED: a; b; c; and 2 more"
    )


def test_changed_files_between_two_locks() -> None:
    then = {"suites": {"s": {"files": {"x": "1", "y": "2", "gone": "3"}}}}
    now = {"suites": {"s": {"files": {"x": "1", "y": "9", "new": "4"}}}}
    assert standing.changed_files(then, now, "s") == ["gone", "new", "y"]
    assert standing.changed_files(None, now, "s") == [
        "(rubric.lock at that commit is not in this history)"
    ]
