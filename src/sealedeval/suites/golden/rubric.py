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
from sealedeval.stages.artifacts import GradedRows
from sealedeval.stages.grade import GradedTable, Verdict, graded_row
from sealedeval.store.raw import record_column

GRADERS = ("regex", "exact", "facts", "abstention")


def category(task: Mapping[str, Any], regex_pass: bool, answer: str) -> str:
    if regex_pass:
        return "correct"
    if task["category"] != "abstain" and is_abstention(answer):
        return "abstained"
    return "wrong"


ERROR = Verdict("-", "-", 0.0, False, "error", "{}")
"""A row whose call failed: one graded row, never a model failure."""

MEMO_MAX = 65_536
"""Distinct (task, answer, judge reply) verdict lists kept while grading (then cleared): the
graders are pure functions of these, and answers repeat (a task's greedy answer in every
branch run, short answers across samples)."""


def grade_answer(task: Mapping[str, Any], answer: str, judged: str | None) -> list[Verdict]:
    """Every grader's verdict on one answer, in ``GRADERS`` order (+ ``judge`` when a judge
    replied); the category comes from the regex grader and the abstention check."""
    names = [*GRADERS, "judge"] if judged is not None else list(GRADERS)
    item = dict(task) | {"judge_output": judged or ""}
    results = [(g, g(item, answer)) for g in map(graders.get, names)]
    cat = category(task, results[GRADERS.index("regex")][1].passed, answer)
    return [
        Verdict(g.name, g.version, res.score, res.passed, cat, compact(dict(res.details)))
        for g, res in results
    ]


def _task(
    tasks: Mapping[str, Mapping[str, Any]],
    swap_tasks: Mapping[str, Mapping[str, Mapping[str, Any]]] | None,
    cond: str,
    item: str,
) -> Mapping[str, Any]:
    if cond.startswith("probe/swap/"):
        return (swap_tasks or {})[cond.rsplit("/", 1)[1]][item]
    return tasks[item]


def _graded(cond: str) -> bool:
    """Judge calls and contamination probes are not answers: no graded rows."""
    return not cond.startswith(("judge/", "probe/contamination/"))


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
    """``grade_rows``' rows one at a time (graders in ``GRADERS`` order, then ``judge``)."""
    replies = verdicts or {}
    for r in rows:
        cond = str(r["condition"])
        if not _graded(cond):
            continue
        task = _task(tasks, swap_tasks, cond, r["item_id"])
        if r["status"] != "ok":
            yield graded_row(r, **ERROR._asdict())
            continue
        judged = replies.get((r["engine"], cond, r["item_id"], int(r["repeat"])))
        for v in grade_answer(task, r["output_text"] or "", judged):
            yield graded_row(r, **v._asdict())


def table(
    tasks: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    swap_tasks: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    verdicts: Mapping[tuple[str, str, str, int], str] | None = None,
) -> GradedRows:
    """``grade_rows``' rows as a column-wise table (``GradedTable``), each raw row's verdicts
    in grader-name order (the canonical order: the stage's sort then moves nothing), equal
    answers to a task graded once (``MEMO_MAX``)."""
    out = GradedTable(rows)
    error = [out.code(ERROR)]
    memo: dict[tuple[int, str, str | None], list[int]] = {}
    replies = verdicts or {}
    conds, items, status, answers = (
        record_column(rows, c) for c in ("condition", "item_id", "status", "output_text")
    )
    engines = record_column(rows, "engine") if replies else ()
    repeats = record_column(rows, "repeat") if replies else ()
    for i, cond in enumerate(conds):
        if not _graded(cond):
            continue
        task = _task(tasks, swap_tasks, cond, items[i])
        if status[i] != "ok":
            out.add_codes(i, error)
            continue
        answer = answers[i] or ""
        judged = replies.get((engines[i], cond, items[i], int(repeats[i]))) if replies else None
        key = (id(task), answer, judged)
        codes = memo.get(key)
        if codes is None:
            ranked = sorted(grade_answer(task, answer, judged), key=lambda v: v.grader)
            codes = [out.code(v) for v in ranked]
            if len(memo) >= MEMO_MAX:
                memo.clear()
            memo[key] = codes
        out.add_codes(i, codes)
    return out.done()
