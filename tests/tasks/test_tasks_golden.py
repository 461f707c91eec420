"""Golden's branch A expressed as a ``tasks`` suite: the same prompts and, on the same raw rows,
the same verdicts as the built-in golden grader. And golden's abstention classifier, directly.

Branch A is golden's files-in-the-prompt system: 20 tasks, each with its own must / mustNot
regexes, an explicit "I don't know" set apart on answerable tasks (its own category), and
repeats. As a tasks suite: the tasks become an items file (the regexes as list columns,
``answerable`` = the task is not an ``abstain`` task), the five files a ``files:`` directory
rendered into the system prompt, the regexes one ``regex`` grader reading the columns, and
``abstention: category``.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from tests.tasks._support import REPO, write_jsonl

from sealedeval.config import Config, EngineConfig
from sealedeval.graders.abstention import is_abstention
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext, RequestContext
from sealedeval.suites.golden import prompts, rubric
from sealedeval.suites.golden.items import load_files, load_tasks
from sealedeval.suites.tasks import TasksSuite

SECTION: dict[str, Any] = {
    "kind": "tasks",
    "items": "data/goldenA/items.jsonl",
    "target_column": "answer",
    "files": "data/golden/files",
    "system": "FILES\n\n{files}\n\n" + prompts.SYSTEM,
    "prompt": "{prompt}",
    "graders": [{"name": "regex", "must_column": "must", "must_not_column": "mustNot"}],
    "abstention": "category",
    "repeats": 3,
    "temperature": 0.7,
    "max_tokens": 64,
    "stop": ["\n"],
    "engines": ["local"],
}


@pytest.fixture(scope="module")
def golden_as_tasks(tmp_path_factory: pytest.TempPathFactory) -> tuple[TasksSuite, Config]:
    root = tmp_path_factory.mktemp("goldenA")
    shutil.copytree(REPO / "data/golden/files", root / "data/golden/files")
    tasks = load_tasks(REPO)
    write_jsonl(
        root / SECTION["items"],
        [t | {"answerable": t["category"] != "abstain"} for t in tasks],
    )
    cfg = Config(root=root, data={"project": {"seed": 1}, "suites": {}}, sources=())
    return TasksSuite("goldenA", SECTION, root=root), cfg


def _rows(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Raw rows as the golden branch A runs store them (A/main and A/sample x 3), answering each
    task with its reference answer, another task's answer, abstentions, an empty answer, hedged
    wrong answers with "unknown" / "no information" inside, and errored calls."""
    rows = []
    n = 0
    for i, t in enumerate(tasks):
        other = tasks[(i + 7) % len(tasks)]["answer"]
        answers = [
            t["answer"],
            other,
            "I don't know.",
            "The files do not say.",
            "",
            f"{other.rstrip('.')}; the exact figure is unknown.",
            f"There is no information about that, but {other[0].lower()}{other[1:]}",
            "Unknown.",
            None,  # an errored call
        ]
        for a in answers:
            for cond, rep in (("A/main", 0), ("A/sample", 0), ("A/sample", 1), ("A/sample", 2)):
                n += 1
                rows.append(
                    {
                        "request_key": f"k{n:05d}",
                        "engine": "local",
                        "item_id": t["id"],
                        "condition": cond,
                        "repeat": rep,
                        "status": "error" if a is None else "ok",
                        "output_text": a or "",
                    }
                )
    return rows


def test_same_verdicts_as_the_golden_grader_on_the_same_raw_rows(
    golden_as_tasks: tuple[TasksSuite, Config],
) -> None:
    suite, cfg = golden_as_tasks
    tasks = load_tasks(REPO)
    items = suite.generate(GenerateContext(cfg=cfg, seed=1234))
    assert [i["id"] for i in items] == [t["id"] for t in tasks]
    rows = _rows(tasks)
    # the tasks suite grades every answer row whatever its condition: give it its own
    mine = suite.grade(
        GradeContext(cfg=cfg, items=items, rows=[r | {"condition": "answer"} for r in rows])
    )
    theirs = rubric.grade_rows({t["id"]: t for t in tasks}, rows)
    golden_cat = {g["request_key"]: g["category"] for g in theirs}
    golden_regex = {g["request_key"]: g["passed"] for g in theirs if g["grader"] == "regex"}
    assert len(mine) == len(rows)  # one grader: one graded row per answer
    for g in mine:
        assert g["category"] == golden_cat[g["request_key"]], g
        if g["status"] == "ok":
            assert g["passed"] == golden_regex[g["request_key"]], g
        assert g["grader"] == "regex" and g["grader_version"] == "1"
        assert g["details"]["params"]["must_column"] == "must"
    cats = {c: sum(1 for g in mine if g["category"] == c) for c in golden_cat.values()}
    # every category occurs, so the comparison covers each branch of the rule
    assert set(cats) == {"correct", "wrong", "abstained", "error"}, cats


def test_same_prompts_as_golden_branch_a(golden_as_tasks: tuple[TasksSuite, Config]) -> None:
    """The request messages are byte for byte golden's branch-A messages."""
    suite, cfg = golden_as_tasks
    files = load_files(REPO)
    items = suite.generate(GenerateContext(cfg=cfg, seed=99))
    engine = EngineConfig(name="local", kind="openai_chat", base_url="http://127.0.0.1:9/v1")
    reqs = suite.requests(RequestContext(cfg=cfg, items=items, engine=engine, model="m", seed=99))
    assert len(reqs) == 20 * 3
    by_task = {t["id"]: t for t in load_tasks(REPO)}
    for r in reqs:
        assert list(r.messages) == prompts.messages(by_task[r.item_id], files)
        assert r.params["stop"] == ["\n"] and r.params["temperature"] == 0.7
    # fixed seeds: the same plan twice, distinct per repeat
    again = suite.requests(
        RequestContext(
            cfg=cfg,
            items=suite.generate(GenerateContext(cfg=cfg, seed=99)),
            engine=engine,
            model="m",
            seed=99,
        )
    )
    assert [r.request_key for r in reqs] == [r.request_key for r in again]
    assert len({(r.item_id, r.params["seed"]) for r in reqs}) == len(reqs)


def test_repeats_give_pass_at_k(golden_as_tasks: tuple[TasksSuite, Config]) -> None:
    suite, cfg = golden_as_tasks
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    tasks = load_tasks(REPO)
    rows = []
    for i, t in enumerate(tasks):
        for rep in range(3):
            right = rep == 0 or i % 2 == 0  # odd tasks: right on the first repeat only
            rows.append(
                {
                    "request_key": f"{t['id']}-{rep}",
                    "engine": "local",
                    "item_id": t["id"],
                    "condition": "answer",
                    "repeat": rep,
                    "status": "ok",
                    "output_text": t["answer"] if right else "Yes.",
                    "model": "m",
                    "cost_usd": 0.0,
                    "latency_s": 0.1,
                    "tokens_in": 1,
                    "tokens_out": 1,
                    "error_kind": "",
                }
            )
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    e = a["engines"]["local"]
    assert e["repeats"]["pass_at_k"]["3"] == 1.0
    assert e["repeats"]["pass_hat_k"]["3"] == pytest.approx(0.5)
    assert e["accuracy"]["k"] == 10  # majority of 3: only the even tasks


# -- golden's abstention classifier (graders/abstention.py, version 2) ------------------------

ANSWERABLE = {"category": "lookup"}
ABSTAIN_TASK = {"category": "abstain"}


def test_an_empty_answer_is_a_failure_not_an_abstention() -> None:
    for empty in ("", "   ", "\n\t"):
        assert rubric.category(ANSWERABLE, False, empty) == "wrong"
        assert not is_abstention(empty)


@pytest.mark.parametrize(
    "answer",
    [
        "Mira made 4 deploys; the exact number is unknown.",
        "There is no information about prices, but it costs about 5 EUR.",
        "Deploy 19 failed with an unknown error.",
        "The deploy was on Tuesday. The time is unknown.",
        "Unknown, maybe 3.",
        "Probably Tuesday, but I don't know.",
        "No information, 3 deploys.",
        "Vesi Dairy, the reason is unknown.",
        "It could be 4; the files do not say.",
        "Deploy 19 has no data",
    ],
)
def test_hedged_wrong_answers_are_not_abstentions(answer: str) -> None:
    assert rubric.category(ANSWERABLE, False, answer) == "wrong"


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "The files do not say.",
        "Not mentioned in the files.",
        "Unknown.",
        "The price is unknown.",
        "No information about deploy 19.",
        "The files do not say; no phone number is given.",
        "I don't know, sorry.",
        "Unfortunately, the files do not say.",
        "The price cannot be determined from the files.",
        "The files do not contain a phone number for Koskela Mill.",
    ],
)
def test_explicit_abstentions_stay_abstentions(answer: str) -> None:
    assert rubric.category(ANSWERABLE, False, answer) == "abstained"
    # on an abstain task the abstention is graded by the regexes, never set apart
    assert rubric.category(ABSTAIN_TASK, False, answer) == "wrong"
    assert rubric.category(ABSTAIN_TASK, True, answer) == "correct"


def test_unchanged_parts_of_the_rule() -> None:
    long = "I don't know. " + "Really, truly, honestly " * 15
    assert rubric.category(ANSWERABLE, False, long) == "wrong"  # more than MAX_WORDS words
    assert rubric.category(ANSWERABLE, False, "Deploy 19 failed.") == "wrong"  # no cue
    assert rubric.category(ANSWERABLE, True, "I don't know.") == "correct"  # regex first


def _old_is_abstention(answer: str) -> bool:
    """Version 1 (before the fix), for the subset property below."""
    from sealedeval.graders.abstention import _CUES, MAX_WORDS

    text = answer.strip()
    if not text:
        return True
    return bool(_CUES.search(text)) and len(text.split()) <= MAX_WORDS


_PIECES = [
    "I don't know",
    "unknown",
    "no information",
    "the files do not say",
    "Mira",
    "4",
    "deploys",
    "but",
    "probably",
    ",",
    ";",
    ".",
    "sorry",
    "is",
    "the price",
    "not given",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=8).map(" ".join))
def test_the_fix_only_removes_abstentions(answer: str) -> None:
    """Every version-2 abstention is a version-1 abstention: nothing new is set apart."""
    if is_abstention(answer):
        assert _old_is_abstention(answer)


def test_golden_labelled_answers_keep_their_abstention_status() -> None:
    """The golden data's own abstentions (tests/golden/test_golden_data.py) still are ones."""
    doc = yaml.safe_load((REPO / "data/golden/tasks.yaml").read_text())
    refs = {t["id"]: t["answer"] for t in doc["tasks"] if t["category"] == "abstain"}
    assert len(refs) == 2 and all(is_abstention(a) for a in refs.values()), refs
