"""The suite end to end through the CLI in a sealed throwaway project:
seal → run (reference, naive) → publish, then resume and order checks on the stored rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import make_project, sealedeval

from sealedeval.store.raw import raw_files, read_raw
from sealedeval.suites.grounding.design import build_design

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    root = make_project(tmp_path_factory.mktemp("grounding") / "proj")
    for engine in ("reference", "naive"):
        sealedeval(root, "run", "grounding", "--engine", engine, "--no-progress")
    sealedeval(root, "publish")
    result = json.loads((root / "results" / "result.json").read_text())
    report = (root / "results" / "report.md").read_text()
    return root, result, report


def _track_a(result: dict[str, Any], engine: str) -> dict[str, Any]:
    a = result["suites"]["grounding"]["analysis"]
    track_a: dict[str, Any] = a["engines"][engine]["roles"]["primary"]["track_a"]
    return track_a


def test_reference_is_perfect_under_d_and_honest_under_c(
    published: tuple[Path, dict[str, Any], str],
) -> None:
    _, result, _ = published
    assert result["status"] == "pre-registered"
    ref = _track_a(result, "reference")
    assert ref["D"]["m1"]["rate"] == 1.0 and ref["D"]["m1"]["item_mean"] == 1.0
    assert ref["D"]["m2"]["rate"] == 1.0 and ref["D"]["m5"]["rate"] == 1.0
    # C has no federation records: the governed counterparty item is out of reach
    assert ref["C"]["m1"]["item_mean"] < 1.0
    assert ref["E"]["m2"]["rate"] == 0.0  # prose has no ids: M2 impossible by construction
    for cond in "ABECFD":
        assert ref[cond]["parse"]["rate"] == 1.0
        assert ref[cond]["n_error"] == 0


def test_naive_baseline_leaves_a_gap_that_grows_with_the_context(
    published: tuple[Path, dict[str, Any], str],
) -> None:
    _, result, _ = published
    ref, naive = _track_a(result, "reference"), _track_a(result, "naive")
    m1 = {c: naive[c]["m1"]["item_mean"] for c in "ABECFD"}
    assert len(set(m1.values())) == 1  # schema-only: the context block changes nothing
    gap = {c: ref[c]["m1"]["item_mean"] - m1[c] for c in "ABECFD"}
    assert gap["A"] == 0.0  # the plain reading is all the schema condition offers
    assert gap["C"] > 0.0 and gap["D"] > gap["C"]


def test_every_track_and_the_plan_are_in_the_result(
    published: tuple[Path, dict[str, Any], str],
) -> None:
    _, result, report = published
    a = result["suites"]["grounding"]["analysis"]
    prim = a["engines"]["reference"]["roles"]["primary"]
    assert {"track_a", "comparisons", "b1", "b2", "b3", "b4", "hypotheses", "h3"} <= set(prim)
    assert [c["id"] for c in prim["comparisons"]] == [f"P{n}" for n in range(1, 9)]
    assert prim["b4"]["records"]["final_correct"]["rate"] == 1.0
    assert prim["b2"]["select"]["exact"]["rate"] == 1.0
    assert prim["b3"]["classification_records"]["critical_errors"] == 0
    assert a["plan"]["correction"]["applied"] is False
    e = a["engines"]["reference"]
    assert e["n_total"] == e["n_ok"] and e["n_error"] == 0
    counts = result["suites"]["grounding"]["seal"]["counts"]["reference"]
    assert counts["complete"] and counts["missing"] == 0
    for text in (
        "## grounding — Semantic Grounding Benchmark v2",
        "No multiple-comparison correction is applied",
        "### Threats to validity",
        "pre-specified",
        "post hoc",
        "#### B1 gap surfacing",
        "#### B4 collaborative completion",
    ):
        assert text in report


def test_request_keys_are_stable_across_runs(
    published: tuple[Path, dict[str, Any], str],
) -> None:
    root, _, _ = published
    rows = read_raw([f for f in raw_files(root, "grounding") if f.parent.name == "reference"])
    n = rows.num_rows
    proc = sealedeval(root, "run", "grounding", "--engine", "reference", "--no-progress")
    assert f"requested {n}, skipped (already ok) {n}, ok 0, error 0" in proc.stderr


def test_call_order_is_reproducible_from_the_recorded_seed(
    published: tuple[Path, dict[str, Any], str],
) -> None:
    root, result, _ = published
    design = result["suites"]["grounding"]["analysis"]["design"]
    order = build_design(design["profile"], design["shuffle_seed"])
    expected = [
        (s.item_id, s.condition, s.replicate)
        for s in order.specs
        if s.group is None or s.stage == 0
    ]
    rows = read_raw([f for f in raw_files(root, "grounding") if f.parent.name == "naive"])
    ran = sorted(rows.to_pylist(), key=lambda r: r["started_at"])
    assert len(ran) == len(expected)
    got = [(r["item_id"], _first_stage(r["condition"]), r["repeat"]) for r in ran]
    assert got == expected


def _first_stage(label: str) -> str:
    label = label.split("@")[0]
    if label.startswith("B4/"):
        return "round1"
    return label.split("/")[-1].split("+")[0]


def test_publish_is_deterministic_and_audits(published: tuple[Path, dict[str, Any], str]) -> None:
    root, _, _ = published
    before = (root / "results" / "result.json").read_bytes()
    sealedeval(root, "publish")
    assert (root / "results" / "result.json").read_bytes() == before
    audit = sealedeval(root, "audit", check=False)
    assert audit.returncode == 0, audit.stdout
