"""Golden's tables over every answer are counts taken a stretch of rows at a time
(``plan.Repeats``, ``plan.Agent``, ``plan.Top``: the analysis by chunk): any cut of the rows
into stretches gives the table of all of them at once, and the top transcripts are the rows
a stable sort of all passing rows quotes."""

from __future__ import annotations

import heapq
import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.stats import mean_pass_k_curves
from sealedeval.suites.golden import plan

row = st.fixed_dictionaries(
    {
        "item_id": st.sampled_from(["t1", "t2", "t3", "t4"]),
        "condition": st.sampled_from(["A/main", "A/sample", "B/sample"]),
        "repeat": st.integers(-1, 5),
        "trajectory": st.sampled_from(
            [
                "",
                "[]",
                json.dumps(
                    [{"type": "tool", "name": "read_file", "arguments": {"p": "a"}, "ok": True}]
                ),
                json.dumps([{"type": "tool", "name": "list_files", "arguments": {}, "ok": False}]),
            ]
        ),
        "output_text": st.text(max_size=3),
    }
)
cat = st.sampled_from(["correct", "wrong", "abstained", "error"])


def _stretches(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = sorted({0, n, *(c for c in cuts if c <= n)})
    return list(itertools.pairwise(bounds))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(row, max_size=30), data=st.data(), cuts=st.lists(st.integers(0, 30), max_size=5)
)
def test_tables_taken_a_stretch_at_a_time_are_the_tables_of_all_rows(
    rows: list[dict[str, Any]], data: st.DataObject, cuts: list[int]
) -> None:
    cats = data.draw(st.lists(cat, min_size=len(rows), max_size=len(rows)))
    n_runs = data.draw(st.integers(0, 7))
    tasks = {t: {"prompt": f"p {t}", "answer": f"a {t}"} for t in ("t1", "t2", "t3", "t4")}
    rep, agent, top = plan.Repeats(), plan.Agent(), plan.Top()
    for a, b in _stretches(len(rows), cuts):
        rep.add(rows[a:b], cats[a:b])
        agent.add(rows[a:b], cats[a:b])
        top.add(rows[a:b], cats[a:b], range(a, b))
    assert rep.table(n_runs) == plan.repeats_table(rows, (), n_runs, cats=cats)
    assert agent.table() == plan.agent_table(rows, cats)
    assert top.table(tasks, lambda at: [rows[j] for j in at]) == plan.top_transcripts(
        tasks, rows, cats
    )

    # the quoted rows: per task, the first two passing rows of a stable sort by (condition,
    # run index), as heapq.nsmallest picks them
    for t in top.table(tasks, lambda at: [rows[j] for j in at]):
        passing = [
            r
            for r, c in zip(rows, cats, strict=True)
            if c == "correct" and r["item_id"] == t["task"]
        ]
        want = heapq.nsmallest(2, passing, key=lambda r: (r["condition"], int(r["repeat"])))
        assert [q["answer"] for q in t["quotes"]] == [r["output_text"] for r in want]
    # a task's trials as counts are its trials for pass@k, in any order
    if rep.trials and n_runs:
        listed = {k: list(v) for k, v in rep.trials.items()}
        assert mean_pass_k_curves(rep.trials, n_runs) == mean_pass_k_curves(listed, n_runs)
        for v in rep.trials.values():
            assert len(list(v)) == len(v) and sum(v) == v.c and list(v)[: v.c] == [1] * v.c
