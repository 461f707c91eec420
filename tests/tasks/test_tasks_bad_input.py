"""Bad input to a ``tasks`` suite, through the real CLI: one line naming the file, line or item
id (or the config key), exit 2, and nothing written — no lock, no sealed spec, no results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.tasks._support import ARITH, arith_suite, cli, git, project, write_jsonl

ITEMS = "data/arith/items.jsonl"


def _written(root: Path) -> list[str]:
    made = [
        p
        for p in ("rubric.lock", ".sealedeval", "results", "ledger.jsonl", "logs")
        if (root / p).exists()
    ]
    return made


def _one_line_error(proc: Any) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("sealedeval: error: "), err
    assert proc.stdout == ""
    return str(err.removeprefix("sealedeval: error: "))


def _items(rows: list[dict[str, Any]]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        write_jsonl(root / ITEMS, rows)

    return write


def _text(rel: str, data: bytes) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)

    return write


CASES: list[tuple[str, dict[str, Any], Callable[[Path], None] | None, list[str]]] = [
    (
        "unknown grader",
        arith_suite(graders=[{"name": "exactt"}]),
        None,
        ["suites.arith.graders[0].name: unknown grader 'exactt'; did you mean 'exact'?"],
    ),
    (
        "bad grader parameter",
        arith_suite(graders=[{"name": "numeric", "tolerance": "small"}]),
        None,
        ["suites.arith.graders[0].tolerance: 'small' is not of type 'number'"],
    ),
    (
        "template names a missing column",
        arith_suite(prompt="Q: {question}"),
        None,
        [
            "suites.arith.prompt: names column 'question', which data/arith/items.jsonl does not "
            "have (columns: id, input, target, topic)"
        ],
    ),
    (
        "prompt file names a missing column",
        arith_suite(prompt=None, prompt_file="prompts/arith.txt"),
        _text("prompts/arith.txt", b"Solve {problem}.\n"),
        ["prompts/arith.txt: names column 'problem', which data/arith/items.jsonl"],
    ),
    (
        "template column empty on one item",
        arith_suite(prompt="{input} ({note})"),
        _items([r | {"note": "x"} for r in ARITH[:2]] + [ARITH[2] | {"note": None}]),
        ["data/arith/items.jsonl:3: item 'q03': column 'note' is empty (the prompt names it)"],
    ),
    (
        "duplicate id",
        arith_suite(),
        _items([ARITH[0], ARITH[1], ARITH[0] | {"target": 9}]),
        ["data/arith/items.jsonl:3: duplicate id 'q01' (first at data/arith/items.jsonl:1)"],
    ),
    (
        "empty id",
        arith_suite(),
        _items([ARITH[0], ARITH[1] | {"id": " "}]),
        ["data/arith/items.jsonl:2: empty id (column 'id')"],
    ),
    (
        "no id column",
        arith_suite(),
        _items([{"input": "1+1", "target": 2}]),
        ["data/arith/items.jsonl: no 'id' column for the item ids"],
    ),
    (
        "empty items file",
        arith_suite(),
        _text(ITEMS, b"\n\n"),
        ["data/arith/items.jsonl: no items (the file is empty)"],
    ),
    (
        "target missing where a grader needs one",
        arith_suite(),
        _items([ARITH[0], {k: v for k, v in ARITH[1].items() if k != "target"}]),
        [
            "data/arith/items.jsonl:2: item 'q02' has no target (column 'target'; grader 'exact' "
            "needs one)"
        ],
    ),
    (
        "no target column at all",
        arith_suite(graders=[{"name": "includes"}]),
        _items([{k: v for k, v in r.items() if k != "target"} for r in ARITH]),
        [
            "data/arith/items.jsonl: grader 'includes' needs a target, but the file has no "
            "'target' column"
        ],
    ),
    (
        "a target the grader cannot use",
        arith_suite(graders=[{"name": "numeric"}]),
        _items([ARITH[0], ARITH[1] | {"target": "seven"}]),
        ["data/arith/items.jsonl:2: item 'q02': target 'seven' is not a number (grader 'numeric')"],
    ),
    (
        "unreadable: missing file",
        arith_suite(items="data/arith/missing.jsonl"),
        None,
        ["data/arith/missing.jsonl: items file not found"],
    ),
    (
        "unreadable: not UTF-8",
        arith_suite(),
        _text(ITEMS, b'{"id": "q1", "input": "\xff\xfe", "target": 1}\n'),
        ["data/arith/items.jsonl: cannot read the items file: not UTF-8 text"],
    ),
    (
        "unreadable: broken JSON line",
        arith_suite(),
        _text(ITEMS, b'{"id": "q1", "input": "1", "target": 1}\n{"id": "q2", \n'),
        ["data/arith/items.jsonl:2: not valid JSON"],
    ),
    (
        "unreadable: a directory",
        arith_suite(items="data/dir.jsonl"),
        lambda root: (root / "data/dir.jsonl").mkdir(parents=True),
        ["data/dir.jsonl: is a directory, not an items file"],
    ),
    (
        "unknown format",
        arith_suite(items="data/arith/items.xlsx"),
        _text("data/arith/items.xlsx", b"PK"),
        ["data/arith/items.xlsx: unknown items file format (use one of .csv, .json, .jsonl"],
    ),
    (
        "csv: duplicate id names the line",
        arith_suite(items="data/arith/items.csv"),
        _text("data/arith/items.csv", b"id,input,target\nq1,1+1,2\nq2,2+2,4\nq1,3+3,6\n"),
        ["data/arith/items.csv:4: duplicate id 'q1' (first at data/arith/items.csv:2)"],
    ),
    (
        "judge engine not run with the suite",
        arith_suite(graders=[{"name": "judge", "engine": "gpt", "rubric": "r"}]),
        None,
        ["suites.arith.graders[0].engine: 'gpt' is not in suites.arith.engines"],
    ),
    (
        "analysis names an unknown grader",
        arith_suite(analysis={"primary": "regex"}),
        None,
        ["suites.arith.analysis.primary: 'regex' is not one of the graders (exact)"],
    ),
    (
        "labels file names an unknown item",
        arith_suite(
            graders=[
                {"name": "exact"},
                {
                    "name": "judge",
                    "engine": "reference",
                    "rubric": "r",
                    "labels": "data/labels.jsonl",
                },
            ]
        ),
        _text(
            "data/labels.jsonl",
            b'{"item": "q01", "answer": "9", "label": "PASS"}\n'
            b'{"item": "zz", "answer": "1", "label": "FAIL"}\n',
        ),
        ["data/labels.jsonl:2: item 'zz' is not in data/arith/items.jsonl"],
    ),
]


@pytest.mark.parametrize(
    ("suite", "setup", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    tmp_path: Path,
    suite: dict[str, Any],
    setup: Callable[[Path], None] | None,
    expect: list[str],
) -> None:
    suite = {k: v for k, v in suite.items() if v is not None}
    root = project(tmp_path / "p", {"arith": suite}, git_init=False)
    if setup is not None:
        setup(root)
    msg = _one_line_error(cli(root, "seal", check=False))
    for part in expect:
        assert part in msg, msg
    assert _written(root) == []


def test_bad_data_after_the_seal_stops_run_with_nothing_written(tmp_path: Path) -> None:
    """The same checks run before every run: an items file broken after the seal stops
    ``sealedeval run`` before the lock check, and no raw directory or ledger appears."""
    root = project(tmp_path / "p", {"arith": arith_suite()})
    cli(root, "seal")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    write_jsonl(root / ITEMS, [*ARITH, ARITH[3]])
    msg = _one_line_error(cli(root, "run", "arith", "--no-progress", check=False))
    assert (
        msg == "data/arith/items.jsonl:13: duplicate id 'q04' (first at data/arith/items.jsonl:4)"
    )
    assert not (root / "results").exists() and not (root / "ledger.jsonl").exists()


@pytest.mark.slow
def test_a_config_edit_after_the_seal_is_named(tmp_path: Path) -> None:
    """The prompt and the analysis block are sealed through .sealedeval/tasks-arith.json."""
    import yaml

    root = project(tmp_path / "p", {"arith": arith_suite()})
    cli(root, "seal")
    assert (root / ".sealedeval/tasks-arith.json").exists()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    cfg_path = root / "config/config.yaml"
    original = cfg_path.read_text()
    for edit in (
        {"prompt": "{input} = ?"},
        {"analysis": {"reduce": "any"}},
        {"graders": [{"name": "exact", "case_sensitive": True}]},
    ):
        cfg = yaml.safe_load(original)
        cfg["suites"]["arith"].update(edit)
        cfg_path.write_text(yaml.safe_dump(cfg))
        msg = _one_line_error(cli(root, "run", "arith", "--no-progress", check=False))
        assert msg.startswith("rubric.lock: .sealedeval/tasks-arith.json changed after the seal"), (
            msg
        )
        assert not (root / "results").exists()
    # a profile setting is not sealed: more repeats run under the same seal
    cfg = yaml.safe_load(original)
    cfg["suites"]["arith"]["repeats"] = 2
    cfg_path.write_text(yaml.safe_dump(cfg))
    cli(root, "run", "arith", "--no-progress")
    assert git(root, "status", "--porcelain", ".sealedeval") == ""
