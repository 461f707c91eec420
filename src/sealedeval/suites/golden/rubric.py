"""Golden rubric: which graders run on every transcript and how they map to a category.

Categories: ``correct`` (regex must/mustNot pass), ``abstained`` (an explicit "I don't know" on an
answerable task — its own category, not a failure), ``wrong``, and ``error`` (infrastructure;
never a model failure). On an ``abstain`` task the abstention *is* the correct answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.canonical import compact
from sealedeval.graders import graders
from sealedeval.graders.abstention import is_abstention

GRADERS = ("regex", "exact", "facts", "abstention")


def category(task: Mapping[str, Any], regex_pass: bool, answer: str) -> str:
    if regex_pass:
        return "correct"
    if task["category"] != "abstain" and is_abstention(answer):
        return "abstained"
    return "wrong"


def grade_rows(
    tasks: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rows:
        task = tasks[r["item_id"]]
        base = {
            "request_key": r["request_key"],
            "engine": r["engine"],
            "item_id": r["item_id"],
            "condition": r["condition"],
            "repeat": int(r["repeat"]),
            "status": r["status"],
        }
        if r["status"] != "ok":
            out.append(
                base
                | {
                    "grader": "-",
                    "grader_version": "-",
                    "score": 0.0,
                    "passed": False,
                    "category": "error",
                    "details": "{}",
                }
            )
            continue
        answer = r["output_text"] or ""
        regex_pass = graders.get("regex")(task, answer).passed
        cat = category(task, regex_pass, answer)
        for name in GRADERS:
            g = graders.get(name)
            res = g(task, answer)
            out.append(
                base
                | {
                    "grader": g.name,
                    "grader_version": g.version,
                    "score": res.score,
                    "passed": res.passed,
                    "category": cat,
                    "details": compact(dict(res.details)),
                }
            )
    return out
