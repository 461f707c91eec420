"""Golden rubric: which graders run on every transcript and how they map to a category.

Categories: ``correct`` (regex must/mustNot pass), ``abstained`` (an explicit "I don't know" on an
answerable task — its own category, not a failure), ``wrong``, and ``error`` (infrastructure;
never a model failure). On an ``abstain`` task the abstention *is* the correct answer.

Every answer row (branch answers, injection and swap probe answers) is graded by exact, regex,
per-fact and abstention graders on the same final answer; a branch answer the configured judge
graded (``judge/transcript/...`` rows) gets a ``judge`` graded row too, parsed from the judge's
stored reply. Judge calls and contamination-probe rows are not answers and get no graded rows
(their analysis reads the raw rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sealedeval.canonical import compact
from sealedeval.graders import graders
from sealedeval.graders import judge as _judge  # noqa: F401  (registers the judge grader)
from sealedeval.graders.abstention import is_abstention
from sealedeval.stages.grade import graded_row

GRADERS = ("regex", "exact", "facts", "abstention")


def category(task: Mapping[str, Any], regex_pass: bool, answer: str) -> str:
    if regex_pass:
        return "correct"
    if task["category"] != "abstain" and is_abstention(answer):
        return "abstained"
    return "wrong"


def grade_rows(
    tasks: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    swap_tasks: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    verdicts: Mapping[tuple[str, str, str, int], str] | None = None,
) -> list[dict[str, Any]]:
    """Graded rows. ``swap_tasks[variant][id]`` grades ``probe/swap/{variant}`` rows;
    ``verdicts[(engine, condition, item, repeat)]`` is a judge's reply on that answer."""
    return list(iter_rows(tasks, rows, swap_tasks=swap_tasks, verdicts=verdicts))


def iter_rows(
    tasks: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    swap_tasks: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    verdicts: Mapping[tuple[str, str, str, int], str] | None = None,
) -> Iterator[dict[str, Any]]:
    """``grade_rows``'s rows one at a time: the grade stage takes them into columns as they
    come, so a million answers are never four million dicts at once."""
    for r in rows:
        cond = str(r["condition"])
        if cond.startswith(("judge/", "probe/contamination/")):
            continue
        if cond.startswith("probe/swap/"):
            task = (swap_tasks or {})[cond.rsplit("/", 1)[1]][r["item_id"]]
        else:
            task = tasks[r["item_id"]]
        if r["status"] != "ok":
            yield graded_row(
                r,
                grader="-",
                grader_version="-",
                score=0.0,
                passed=False,
                category="error",
                details="{}",
            )
            continue
        answer = r["output_text"] or ""
        regex_pass = graders.get("regex")(task, answer).passed
        cat = category(task, regex_pass, answer)
        names = list(GRADERS)
        judged = (verdicts or {}).get((r["engine"], cond, r["item_id"], int(r["repeat"])))
        if judged is not None:
            names.append("judge")
        for name in names:
            g = graders.get(name)
            res = g(dict(task) | {"judge_output": judged or ""}, answer)
            yield graded_row(
                r,
                grader=g.name,
                grader_version=g.version,
                score=res.score,
                passed=res.passed,
                category=cat,
                details=compact(dict(res.details)),
            )
