"""The hand-written judge and probe data: labels, prompt variants, pairs, pad, sentences."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sealedeval.graders import graders
from sealedeval.suites.golden.items import (
    load_contamination,
    load_human_labels,
    load_judge_pairs,
    load_judge_prompts,
    load_tasks,
)

ROOT = Path(__file__).resolve().parents[2]
TASKS = {t["id"]: t for t in load_tasks(ROOT)}


def test_sixty_labelled_answers_under_the_written_rule() -> None:
    doc = load_human_labels(ROOT, set(TASKS))
    assert (
        "states the fact the question asks for and contradicts nothing in the files"
        in (doc["rule"])
    )
    answers = doc["answers"]
    assert [a["id"] for a in answers] == [f"h{i:02d}" for i in range(1, 61)]
    assert Counter(a["task"] for a in answers) == dict.fromkeys(TASKS, 3)
    labels = Counter(a["human"] for a in answers)
    assert labels["PASS"] >= 10 and labels["FAIL"] >= 10  # both common enough for kappa
    assert all(a["why"] and a["source"] for a in answers)
    model = [a for a in answers if a["source"].startswith("smollm2")]
    assert len(model) == 40


def test_regex_and_human_disagree_only_where_documented() -> None:
    """The regex grader is stricter than the rule on purpose; every disagreement is one the
    labels file explains (so it is measured, not assumed away)."""
    regex = graders.get("regex")
    answers = load_human_labels(ROOT, set(TASKS))["answers"]
    differ = [
        a["id"]
        for a in answers
        if regex(TASKS[a["task"]], a["answer"]).passed != (a["human"] == "PASS")
    ]
    assert differ == ["h33", "h51", "h53", "h56", "h58"]


def test_prompt_variants_differ_only_where_they_say() -> None:
    pr = load_judge_prompts(ROOT)
    assert sorted(pr["pointwise"]) == ["v1", "v2", "v3", "v4"]
    for a, b in pr["label_order_pairs"]:
        ta, tb = pr["pointwise"][a], pr["pointwise"][b]
        assert ta != tb
        assert Counter(ta.replace(".", " ").split()) == Counter(tb.replace(".", " ").split())
        assert ta.index("PASS") < ta.index("FAIL")
        assert tb.index("FAIL") < tb.index("PASS")
    assert len(pr["pad"].split()) == 36


def test_judge_pairs_are_clearly_right_and_clearly_wrong() -> None:
    regex = graders.get("regex")
    pairs = load_judge_pairs(ROOT, set(TASKS))
    assert [p["task"] for p in pairs] == sorted(TASKS)
    for p in pairs:
        assert regex(TASKS[p["task"]], p["right"]).passed, p
        assert not regex(TASKS[p["task"]], p["wrong"]).passed, p


def test_contamination_sentences() -> None:
    data = load_contamination(ROOT)
    s = data["sentences"]
    assert Counter(x["kind"] for x in s) == {"famous": 5, "fresh": 5}
    assert len({x["id"] for x in s}) == 10
    for x in s:
        assert len(x["text"].split()) >= 2 * data["prefix_words"]
        assert x["paraphrase"] != x["text"]
