"""Grounding rubric: raw rows → graded rows, one per call × grader.

Every call of the design gets exactly one graded row, named by the grader that scored it and its
version, so a re-grade under a changed scorer is visible. A multi-call request (B2
select-then-answer, a B4 chain) is graded from its trajectory: the select call and the answer
call each get a row; a chain gets one row with the chain metrics (they need all three replies)
and the parse status of every round. An errored request still yields its rows, with category
``error``: errors are never dropped, and never scored as model failures.

Graders (one per call kind; the metrics live in ``details``):

==========================  ======================  =========================================
grader                      score                   details
==========================  ======================  =========================================
``grounding/track-a``       M1 (answerable) or M5   m1, m2, m5, m7, unjustified_abstention,
                            (unanswerable)          parse_ok, contract_ok, refused
``grounding/b1-gap``        gap detected (probe)    gap_detected, field_named, owner_named,
                            or control correct      false_alarm, control_correct, parse_ok
``grounding/b2-select``     recall                  precision, recall, exact, n_selected
``grounding/b2-answer``     correct                 correct, context_chars, parse_ok
``grounding/b3-disclosure`` decision accuracy       the twelve decisions' counts, critical
``grounding/b4-chain``      final answer correct    routing, owner behaviour, record, date,
                                                    parse_ok per round, step_limit
==========================  ======================  =========================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.canonical import compact
from sealedeval.stages.grade import graded_row
from sealedeval.suites.grounding.bundle import GroundingData, build_suite, score_response
from sealedeval.suites.grounding.contract import SCORER_VERSION, extract_json_object
from sealedeval.suites.grounding.design import RequestSpec
from sealedeval.suites.grounding.requests import specs_for, stage_label

__all__ = ["GRADERS", "VERSIONS", "grade_rows", "grader_of", "outputs_of"]

GRADERS: dict[str, str] = {
    "A": "grounding/track-a",
    "B1": "grounding/b1-gap",
    "B2:select": "grounding/b2-select",
    "B2": "grounding/b2-answer",
    "B3": "grounding/b3-disclosure",
    "B4": "grounding/b4-chain",
}
VERSIONS: dict[str, str] = {
    "grounding/track-a": SCORER_VERSION,
    "grounding/b1-gap": "grounding-b1/1",
    "grounding/b2-select": "grounding-b2-select/1",
    "grounding/b2-answer": "grounding-b2-answer/1",
    "grounding/b3-disclosure": "grounding-b3/1",
    "grounding/b4-chain": "grounding-b4/1",
}


def grader_of(spec: RequestSpec) -> str:
    """The grader that scores one call."""
    if spec.track == "B2" and spec.condition == "select":
        return GRADERS["B2:select"]
    return GRADERS[spec.track]


def outputs_of(row: Mapping[str, Any], specs: Sequence[RequestSpec]) -> dict[str, str]:
    """Raw replies by call id: from the trajectory for multi-call rows, else ``output_text``."""
    if len(specs) == 1:
        return {specs[0].request_id: str(row.get("output_text") or "")}
    try:
        trajectory = json.loads(row.get("trajectory") or "[]")
    except ValueError:
        trajectory = []
    return {
        str(e["call_id"]): str(e.get("output_text") or "")
        for e in trajectory
        if isinstance(e, dict) and e.get("event") == "call"
    }


def _step_limited(row: Mapping[str, Any]) -> bool:
    try:
        trajectory = json.loads(row.get("trajectory") or "[]")
    except ValueError:
        return False
    return any(isinstance(e, dict) and e.get("event") == "step_limit" for e in trajectory)


def _score_and_category(spec: RequestSpec, m: Mapping[str, Any]) -> tuple[float, bool, str]:
    """The headline score of one call, whether it passed, and a category for review."""
    parse_ok = bool(m.get("parse_ok", True))
    if spec.track == "A":
        if not parse_ok:
            return 0.0, False, "parse_failure"
        if m["m5"] is not None:
            return float(m["m5"]), bool(m["m5"]), "correct" if m["m5"] else "answered"
        if m["m1"]:
            return 1.0, True, "correct"
        if m["unjustified_abstention"]:
            return 0.0, False, "abstained"
        return 0.0, False, "competing_rule" if m["m7"] else "wrong"
    if spec.track == "B1":
        if not parse_ok:
            return 0.0, False, "parse_failure"
        if m["control_correct"] is not None:
            ok = bool(m["control_correct"])
            cat = "false_alarm" if m["false_alarm"] else ("correct" if ok else "wrong")
            return float(ok), ok, cat
        ok = bool(m["gap_detected"])
        return float(ok), ok, "gap_detected" if ok else "gap_missed"
    if spec.track == "B2" and spec.condition == "select":
        if not parse_ok:
            return 0.0, False, "parse_failure"
        return float(m["recall"]), bool(m["exact"]), "exact" if m["exact"] else "inexact"
    if spec.track == "B2":
        if not parse_ok:
            return 0.0, False, "parse_failure"
        return float(m["correct"]), bool(m["correct"]), "correct" if m["correct"] else "wrong"
    if spec.track == "B3":
        if not parse_ok:
            return 0.0, False, "parse_failure"
        acc = m["correct"] / m["decisions"]
        cat = "critical_error" if m["critical_errors"] else ("correct" if acc == 1 else "wrong")
        return float(acc), acc == 1, cat
    keys = (
        "routing_correct",
        "owner_behaviour_correct",
        "record_well_formed",
        "effective_date_correct",
        "final_correct",
    )
    complete = all(m[k] for k in keys)
    return float(m["final_correct"]), complete, "complete" if complete else "incomplete"


def _grade_ok(
    data: GroundingData, row: Mapping[str, Any], specs: Sequence[RequestSpec]
) -> list[tuple[RequestSpec, dict[str, Any]]]:
    made = outputs_of(row, specs)
    # A call the step limit skipped has no reply: it is scored as an unparseable one.
    outputs = {s.request_id: made.get(s.request_id, "") for s in specs}
    if specs[0].track == "B4":
        r3 = specs[-1]
        metrics = score_response(data, r3, outputs.get(r3.request_id, ""), outputs)
        metrics |= {
            f"parse_ok_{s.condition}": extract_json_object(outputs.get(s.request_id, "")).ok
            for s in specs
        }
        metrics["parse_ok"] = all(metrics[f"parse_ok_{s.condition}"] for s in specs)
        metrics["step_limit"] = _step_limited(row)
        return [(r3, metrics)]
    graded = []
    for spec in specs:
        metrics = score_response(data, spec, outputs.get(spec.request_id, ""), outputs)
        metrics["step_limit"] = spec.request_id not in made
        graded.append((spec, metrics))
    return graded


def grade_rows(
    rows: Sequence[Mapping[str, Any]], data: GroundingData | None = None
) -> list[dict[str, Any]]:
    """Graded rows for raw rows (the latest row per request key).

    Which calls a row stands for is read from the row itself (item, condition label, repeat;
    see :func:`~sealedeval.suites.grounding.requests.specs_for`), so grading is a pure
    function of the raw rows and the sealed scorers.
    """
    data = data or build_suite()
    out: list[dict[str, Any]] = []
    for row in rows:
        specs = specs_for(str(row["item_id"]), str(row["condition"]), int(row["repeat"]))
        if row["status"] != "ok":
            targets = [specs[-1]] if specs[0].track == "B4" else list(specs)
            for spec in targets:
                grader = grader_of(spec)
                out.append(
                    graded_row(
                        row,
                        condition=stage_label(spec),
                        grader=grader,
                        grader_version=VERSIONS[grader],
                        score=0.0,
                        passed=False,
                        category="error",
                        details="{}",
                        track=spec.track,
                        stage=spec.condition,
                        model_role=spec.model_role,
                        call_id=spec.request_id,
                    )
                )
            continue
        for spec, metrics in _grade_ok(data, row, specs):
            grader = grader_of(spec)
            score, passed, category = _score_and_category(spec, metrics)
            out.append(
                graded_row(
                    row,
                    condition=stage_label(spec),
                    grader=grader,
                    grader_version=VERSIONS[grader],
                    score=score,
                    passed=passed,
                    category=category,
                    details=compact(metrics),
                    track=spec.track,
                    stage=spec.condition,
                    model_role=spec.model_role,
                    call_id=spec.request_id,
                )
            )
    return out
