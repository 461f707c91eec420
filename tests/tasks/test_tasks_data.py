"""Items files in every format, custom id and target columns, and several ``tasks`` suites in one
project (each its own seal entry and report section)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.tasks._support import ARITH, arith_suite, cli, git, project, write_jsonl

from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.plugins import GenerateContext, RequestContext
from sealedeval.suites.tasks import TasksSuite
from sealedeval.suites.tasks.tables import read_table

CSV = (
    "qid,question,answer,level\n"
    "c1,Capital of France?,Paris,easy\n"
    'c2,"Largest planet, by mass?",Jupiter,hard\n'
)


def _records(root: Path, rel: str) -> list[dict[str, Any]]:
    return read_table(root, rel).rows


def test_every_format_reads_the_same_records(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "x", "target": 1}, {"id": "b", "input": "y", "target": 2}]
    write_jsonl(tmp_path / "i.jsonl", rows)
    (tmp_path / "i.json").write_text(json.dumps(rows))
    (tmp_path / "i.yaml").write_text(
        "items:\n"
        + "".join(
            f"  - {{id: {r['id']}, input: {r['input']}, target: {r['target']}}}\n" for r in rows
        )
    )
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "i.parquet")
    for rel in ("i.jsonl", "i.json", "i.yaml", "i.parquet"):
        assert _records(tmp_path, rel) == rows, rel
    (tmp_path / "i.tsv").write_text("id\tinput\ttarget\na\tx\t1\nb\ty\t2\n")
    assert _records(tmp_path, "i.tsv") == [
        {"id": "a", "input": "x", "target": "1"},
        {"id": "b", "input": "y", "target": "2"},
    ]
    t = read_table(tmp_path, "i.parquet")
    assert t.where == ["i.parquet: row 1", "i.parquet: row 2"] and t.columns == [
        "id",
        "input",
        "target",
    ]


def test_parquet_values_become_json_values(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": [1, 2],
            "input": ["a", "b"],
            "target": [[1, 2], None],
            "when": [dt.date(2024, 3, 12), dt.date(2024, 3, 13)],
            "score": [float("nan"), 0.5],
        }
    )
    pq.write_table(table, tmp_path / "i.parquet")
    rec = _records(tmp_path, "i.parquet")
    assert rec[0] == {"id": 1, "input": "a", "target": [1, 2], "when": "2024-03-12", "score": None}
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match=r"^bad\.parquet: cannot read the items file as Parquet"):
        read_table(tmp_path, "bad.parquet")


def test_custom_id_and_target_columns_from_csv(tmp_path: Path) -> None:
    (tmp_path / "caps.csv").write_text(CSV)
    suite = TasksSuite(
        "caps",
        {
            "kind": "tasks",
            "items": "caps.csv",
            "id_column": "qid",
            "target_column": "answer",
            "prompt": "{question}",
            "graders": [{"name": "includes"}],
            "engines": ["reference"],
        },
        root=tmp_path,
    )
    cfg = Config(root=tmp_path, data={}, sources=())
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    assert [i["id"] for i in items] == ["c1", "c2"] and items[1]["qid"] == "c2"
    from sealedeval.config import EngineConfig

    reqs = suite.requests(
        RequestContext(
            cfg=cfg,
            items=items,
            engine=EngineConfig(name="reference", kind="reference"),
            model="r",
            seed=1,
        )
    )
    assert reqs[1].messages[-1]["content"] == "Largest planet, by mass?"
    assert [suite.reference_answer(r) for r in reqs] == ["Paris", "Jupiter"]


@pytest.mark.slow
def test_several_suites_in_one_project(tmp_path: Path) -> None:
    choice_items = [
        {"id": "m1", "question": "2+2? A) 3 B) 4 C) 5 D) 6", "target": "B"},
        {"id": "m2", "question": "3*3? A) 9 B) 6 C) 3 D) 1", "target": "A"},
    ]
    root = project(
        tmp_path / "multi",
        {
            "arith": arith_suite(graders=[{"name": "numeric"}]),
            "quiz": {
                "kind": "tasks",
                "items": "data/quiz/items.parquet",
                "prompt": "{question}",
                "graders": [{"name": "choice"}],
                "engines": ["reference"],
                "repeats": 2,
            },
            "caps": {
                "kind": "tasks",
                "items": "data/caps.csv",
                "id_column": "qid",
                "target_column": "answer",
                "prompt": "{question}",
                "graders": [{"name": "exact"}],
                "engines": ["reference"],
            },
        },
        files={"data/caps.csv": CSV},
        git_init=False,
    )
    (root / "data/quiz").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(choice_items), root / "data/quiz/items.parquet")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    out = cli(root, "seal").stdout
    assert all(f"{s}:" in out for s in ("arith", "quiz", "caps"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seal")
    for s in ("arith", "quiz", "caps"):
        cli(root, "run", s, "--no-progress")
    cli(root, "publish")
    assert cli(root, "audit", check=False).returncode == 0
    result = json.loads((root / "results/result.json").read_text())
    assert set(result["suites"]) == {"arith", "quiz", "caps"}
    for s, n in (("arith", len(ARITH)), ("quiz", 2), ("caps", 2)):
        [acc] = [m for m in result["suites"][s]["analysis"]["metrics"] if m["metric"] == "accuracy"]
        assert (acc["estimate"], acc["n_ok"]) == (1.0, n), s
    report = (root / "results/report.md").read_text()
    assert report.index("## arith") < report.index("## caps") < report.index("## quiz")
    lock = json.loads((root / "rubric.lock").read_text())["suites"]
    assert "data/quiz/items.parquet" in lock["quiz"]["files"]
    assert "pkg:sealedeval/graders/kinds/text.py" in lock["caps"]["files"]
