"""The report section and the metric schema, from an in-memory run of the reference and naive
answerers (tiny profile, both model roles), without the CLI."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sealedeval.canonical import dumps
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Request
from sealedeval.run.solvers import SolveResult, get_solver
from sealedeval.stats.metrics import sort_metrics, validate_metrics
from sealedeval.suites.grounding import analysis
from sealedeval.suites.grounding.bundle import build_suite
from sealedeval.suites.grounding.design import Design, RequestSpec, build_design
from sealedeval.suites.grounding.requests import build_requests
from sealedeval.suites.grounding.rubric import grade_rows
from sealedeval.suites.grounding.suite import GroundingSuite, item_records

HARNESS = GroundingSuite()


def _rows(engine: EngineConfig) -> list[dict[str, Any]]:
    tiny = build_design("tiny", 3)
    secondary = tuple(
        RequestSpec("A", i, c, r, "secondary")
        for i in ("XORG-09", "ABST-01")
        for c in "EC"
        for r in (1, 2)
    )
    reqs = build_requests(
        Design("tiny+secondary", 3, tiny.specs + secondary),
        engine=engine,
        model=engine.name,
        seed=1,
        temperature=0.0,
        max_tokens=64,
        roles=("primary", "secondary"),
    )

    async def call(request: Request) -> Completion:
        return Completion(HARNESS.reference_answer(request), {})

    rows = []
    for r in reqs:
        res: SolveResult = asyncio.run(get_solver(r.solver)(None, r, call))  # type: ignore[arg-type]
        rows.append(
            {
                "request_key": r.request_key,
                "engine": engine.name,
                "model": engine.name,
                "item_id": r.item_id,
                "condition": r.condition,
                "repeat": r.repeat,
                "status": "ok",
                "error_kind": "",
                "output_text": res.completion.output_text,
                "trajectory": json.dumps(res.trajectory),
                "tokens_in": 1,
                "tokens_out": 1,
                "latency_s": 0.0,
            }
        )
    # one infrastructure error, which must be counted and never scored
    rows[0] = rows[0] | {"status": "error", "error_kind": "timeout", "output_text": ""}
    return rows


@pytest.fixture(scope="module")
def section() -> dict[str, Any]:
    by_id = {r["id"]: r for r in item_records(build_suite())}
    engines = {}
    for eng in (
        EngineConfig(name="naive", kind="reference", extra={"variant": "naive"}),
        EngineConfig(name="reference", kind="reference"),
    ):
        rows = _rows(eng)
        graded = grade_rows(rows)
        engines[eng.name] = analysis.analyze_engine(graded, rows, by_id) | {
            "roles_run": ["primary", "secondary"]
        }
    a = {
        "suite": "grounding",
        "design": {
            "profile": "tiny",
            "shuffle_seed": 3,
            "calls_per_engine": {"A": 24},
            "n_calls": 37,
            "order": "seeded",
            "temperature": 0.0,
            "max_tokens": 64,
            "roles": {},
        },
        "plan": analysis.plan_summary(),
        "engines": engines,
        "metrics": analysis.metrics(engines),
    }
    out: dict[str, Any] = json.loads(dumps({"analysis": a}))
    return out


def test_errors_are_counted_not_scored(section: dict[str, Any]) -> None:
    e = section["analysis"]["engines"]["reference"]
    assert (e["n_error"], e["errors_by_kind"], e["complete"]) == (1, {"timeout": 1}, False)
    assert e["n_ok"] == e["n_total"] - 1


def test_section_renders_every_part(section: dict[str, Any]) -> None:
    text = HARNESS.report_sections(section)
    for part in (
        "### Track A at a glance",
        "reference (secondary model role)",
        "#### Secondary model role (track A, conditions E and C)",
        "| P8 | H5 | M1 | C vs E |",
        "| H1 | pre-specified |",
        "| H9 | post hoc |",
        "#### B1 gap surfacing",
        "#### B2 assembly",
        "#### B3 disclosure control",
        "#### B4 collaborative completion",
        "No multiple-comparison correction is applied",
        "### Threats to validity",
        "- **construct.**",
        "- **statistical.**",
        "M1 (errors = fail)",
    ):
        assert part in text, part
    # the secondary role runs only the H5 comparison
    secondary = section["analysis"]["engines"]["reference"]["roles"]["secondary"]
    assert [c["id"] for c in secondary["comparisons"]] == ["P8"]
    assert set(secondary["track_a"]) == {"E", "C"}


def test_reference_reaches_the_ceiling_on_every_b_track(section: dict[str, Any]) -> None:
    prim = section["analysis"]["engines"]["reference"]["roles"]["primary"]
    assert prim["b1"]["records_deficient"]["gap_detected"]["rate"] == 1.0
    assert prim["b1"]["records_deficient"]["owner_named"]["rate"] == 1.0
    assert prim["b3"]["classification_records"]["accuracy"]["rate"] == 1.0
    assert prim["b3"]["no_policy"]["critical_errors"] > 0  # no rules, no way to know
    assert prim["b4"]["records"]["routing_correct"]["rate"] == 1.0
    naive = section["analysis"]["engines"]["naive"]["roles"]["primary"]
    assert naive["b4"]["records"]["routing_correct"]["rate"] == 0.0
    assert naive["b1"]["records_deficient"]["gap_detected"]["rate"] == 0.0


def _metric(section: dict[str, Any], name: str, **groups: str) -> dict[str, Any]:
    found = [
        m
        for m in section["analysis"]["metrics"]
        if m["metric"] == name and m["groups"] == dict(sorted(groups.items()))
    ]
    assert len(found) == 1, (name, groups, len(found))
    one: dict[str, Any] = found[0]
    return one


def test_metrics_follow_the_schema_and_match_the_tables(section: dict[str, Any]) -> None:
    a = section["analysis"]
    ms = validate_metrics(a["metrics"], "grounding")
    assert ms == sort_metrics(ms)
    # track A: every measure per engine x role x condition, the clustered item mean
    for eng, e in a["engines"].items():
        for role, r in e["roles"].items():
            for cond, b in r["track_a"].items():
                for m in ("m1", "m2", "m7", "m5", "unjustified_abstention"):
                    got = _metric(section, f"track_a.{m}", engine=eng, role=role, condition=cond)
                    blk = b[m]
                    assert got["method"] == "item-clustered normal" and got["unit"] == "item"
                    assert (got["lo"], got["hi"]) == (blk["clustered_lo"], blk["clustered_hi"])
                    assert got["n_ok"] == blk["n_calls"] and got["n_error"] == blk["n_error"]
                    assert got["n_total"] == got["n_ok"] + got["n_error"]
                    if blk["n_items"]:
                        assert got["estimate"] == blk["item_mean"]
                    else:
                        assert got["estimate"] is None
                parse = _metric(section, "track_a.parse", engine=eng, role=role, condition=cond)
                assert parse["method"] == "wilson"
                assert (parse["n_total"], parse["n_ok"], parse["n_error"]) == (
                    b["n_total"],
                    b["n_ok"],
                    b["n_error"],
                )
    # the errored call is in the denominators of the cell it belongs to
    ref = a["engines"]["reference"]["roles"]["primary"]
    assert (
        sum(
            m["n_error"]
            for m in a["metrics"]
            if m["metric"].endswith(".parse") and m["groups"]["engine"] == "reference"
        )
        == 1
    )
    # B tracks: the headline rates per engine (primary role), Wilson over completed calls
    gap = _metric(
        section,
        "b1.gap_detected",
        engine="reference",
        role="primary",
        condition="records_deficient",
    )
    blk = ref["b1"]["records_deficient"]["gap_detected"]
    assert (gap["estimate"], gap["lo"], gap["hi"], gap["method"]) == (
        blk["rate"],
        blk["lo"],
        blk["hi"],
        "wilson",
    )
    routing = _metric(
        section, "b4.routing_correct", engine="naive", role="primary", condition="records"
    )
    assert routing["estimate"] == 0.0 and routing["n_ok"] > 0
    acc = _metric(
        section,
        "b3.accuracy",
        engine="reference",
        role="primary",
        condition="classification_records",
    )
    assert acc["estimate"] == 1.0 and acc["unit"] == "fact decision"
    for stage in ref["b2"]:
        name = "b2.exact" if stage == "select" else "b2.correct"
        _metric(section, name, engine="reference", role="primary", condition=stage)
    h3 = _metric(section, "h3.temp_minus_comp", engine="reference", role="primary")
    assert h3["method"] == "bootstrap"
    # the secondary role has track A only
    assert not any(
        m["groups"].get("role") == "secondary" and not m["metric"].startswith("track_a.")
        for m in a["metrics"]
    )
