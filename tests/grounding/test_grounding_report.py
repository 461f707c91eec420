"""The report section, rendered from an in-memory run of the reference and naive answerers
(tiny profile, both model roles), without the CLI."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sealedeval.canonical import dumps
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Request
from sealedeval.publish import grounding_md
from sealedeval.run.solvers import get_solver
from sealedeval.suites.grounding import analysis
from sealedeval.suites.grounding.design import Design, RequestSpec, build_design
from sealedeval.suites.grounding.harness import GroundingSuite, item_records
from sealedeval.suites.grounding.requests import build_requests
from sealedeval.suites.grounding.rubric import grade_rows
from sealedeval.suites.grounding.suite import build_suite

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
        res = asyncio.run(get_solver(r.solver)(None, r, call))  # type: ignore[arg-type]
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
    }
    out: dict[str, Any] = json.loads(dumps({"analysis": a}))
    return out


def test_errors_are_counted_not_scored(section: dict[str, Any]) -> None:
    e = section["analysis"]["engines"]["reference"]
    assert (e["n_error"], e["errors_by_kind"], e["complete"]) == (1, {"timeout": 1}, False)
    assert e["n_ok"] == e["n_total"] - 1


def test_section_renders_every_part(section: dict[str, Any]) -> None:
    text = grounding_md.render(section)
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
