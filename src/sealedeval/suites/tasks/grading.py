"""Grading a ``tasks`` suite: one graded row per answer row × configured grader.

Each row carries the base columns (``stages.grade.BASE_COLUMNS``) with ``grader`` = the kind's
name and ``grader_version`` = its version, plus ``grader_id`` (the label, or the name), the
``answer`` text, ``cluster`` (the ``cluster_by`` value, when set) and ``details`` = the kind's
details with the grader's full parameters under ``params``.

The *primary* grader (``analysis.primary``, default the first) decides the answer's
``category``, written on every grader's row of that answer: ``correct`` when it passes; else
``abstained`` when ``abstention: category``, the item is answerable (column ``answerable``,
default true) and the answer is an explicit abstention (``graders.abstention.is_abstention``);
else ``wrong``. An errored or refused call is ``error`` (never a model failure), and so is an
answer whose primary grader is a judge with no verdict stored yet. Judge calls get no graded
rows of their own: their replies are read into the ``judge`` grader's rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sealedeval.graders.abstention import is_abstention
from sealedeval.graders.base import Grade
from sealedeval.graders.kinds import verdict as jv
from sealedeval.stages.grade import graded_row
from sealedeval.store.raw import record_column
from sealedeval.suites.tasks.data import Data, answerable
from sealedeval.suites.tasks.plan import ANSWER, JUDGE, parse_judge_condition

CORRECT, WRONG, ABSTAINED, ERROR = "correct", "wrong", "abstained", "error"


GRADE_COLUMNS = (
    "condition",
    "request_key",
    "engine",
    "item_id",
    "repeat",
    "status",
    "output_text",
    "error_kind",
)
"""The raw columns grading reads (``iter_rows``, ``judge_replies``)."""


def judge_replies(
    rows: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str, str, int], dict[str, str]]:
    """(grader id, answering engine, item, repeat) → {order: reply} from ok judge rows."""
    out: dict[tuple[str, str, str, int], dict[str, str]] = defaultdict(dict)
    for (gid, eng, item, repeat, order), text in judge_reply_list(rows).items():
        out[(gid, eng, item, repeat)][order] = text
    return out


def judge_reply_list(
    rows: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str, str, int, str], str]:
    """(grader id, answering engine, item, repeat, order) → reply, from ok judge rows: a
    judge's replies in two orders are two rows, which the grade stage by chunk may read in
    two chunks (``grade_scan``: the flat form merges by key)."""
    out: dict[tuple[str, str, str, int, str], str] = {}
    for i, cond in enumerate(record_column(rows, "condition")):
        if not str(cond).startswith(JUDGE):  # most rows are answers: not parsed
            continue
        r = rows[i]
        parsed = parse_judge_condition(str(cond))
        if parsed is None or parsed[1] != "answers" or r["status"] != "ok":
            continue
        gid, _, eng, order = parsed
        out[(gid, eng, str(r["item_id"]), int(r["repeat"]), order)] = str(r["output_text"] or "")
    return out


def category(passed: bool, answer: str, *, mode: str | None, can_answer: bool) -> str:
    if passed:
        return CORRECT
    if mode == "category" and can_answer and is_abstention(answer):
        return ABSTAINED
    return WRONG


def grade_rows(
    data: Data, items: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Graded rows: one per answer row and grader, in the rows' order then the graders'."""
    return list(iter_rows(data, items, rows))


def iter_rows(
    data: Data,
    items: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    replies_found: Mapping[Any, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """``grade_rows``' rows one at a time: the grade stage takes them into columns as they
    come, so a million answers are never a million graded dicts at once
    (``benchmarks/scale.py --suite tasks``). ``replies_found``: the judges' replies in every
    row (``judge_reply_list``) when ``rows`` are a chunk of them."""
    spec = data.spec
    by_id = {str(i["id"]): i for i in items}
    if replies_found is None:
        replies = judge_replies(rows)
    else:
        replies = defaultdict(dict)
        for (gid, eng, item, repeat, order), text in replies_found.items():
            replies[(gid, eng, item, repeat)][order] = text
    # By column: a raw row read field by field (a dozen reads per answer) was a fifth of the
    # grade stage at a million answers.
    conds, keys, engines, item_ids, repeats, statuses, outputs = (
        record_column(rows, c) for c in GRADE_COLUMNS[:7]
    )
    for i, cond in enumerate(conds):
        if cond != ANSWER:
            continue
        item = by_id.get(str(item_ids[i]))
        if item is None:  # an item a smaller ``limit`` no longer selects
            continue
        cluster = {"cluster": str(item.get(spec.cluster_by))} if spec.cluster_by is not None else {}
        status = statuses[i]
        ok = status == "ok"
        answer = str(outputs[i] or "") if ok else ""
        view = data.view(item)
        grades: dict[str, Grade] = {}
        if ok:
            for g in spec.graders:
                v = view
                if g.name == "judge":
                    at = (g.id, str(engines[i]), str(item_ids[i]), int(repeats[i]))
                    got = replies.get(at)
                    orders = jv.orders(g.params)
                    v = view | {"judge_replies": [(got or {}).get(o) for o in orders]}
                grades[g.id] = data.graders[g.id](v, answer)
        if not ok:
            cat = ERROR
        else:
            prim = grades[spec.primary]
            if spec.grader(spec.primary).name == "judge" and jv.MISSING in prim.details.get(
                "verdicts", []
            ):
                cat = ERROR
            else:
                cat = category(
                    prim.passed, answer, mode=spec.abstention, can_answer=answerable(item)
                )
        ident = {
            "request_key": keys[i],
            "engine": engines[i],
            "item_id": item_ids[i],
            "condition": cond,
            "repeat": repeats[i],
            "status": status,
        }
        for g in spec.graders:
            res = grades.get(g.id)
            details: dict[str, Any] = {"params": g.params}
            if res is None:
                details["error"] = str(rows[i].get("error_kind") or status)
            else:
                details.update(res.details)
            yield graded_row(
                ident,
                grader=g.name,
                grader_version=g.version,
                score=float(res.score) if res is not None else 0.0,
                passed=bool(res.passed) if res is not None else False,
                category=cat,
                details=details,
                **cluster,
                grader_id=g.id,
                answer=answer,
            )
