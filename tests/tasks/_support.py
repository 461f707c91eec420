"""Helpers for the ``tasks`` suite tests: a throwaway project made only of a config file and
data (what a user of the installed package has), driven through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from tests.projects import sealedeval

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env=os.environ | GIT_ENV,
    ).stdout.strip()


def cli(
    cwd: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return sealedeval(cwd, *args, check=check, env=env)


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ARITH: list[dict[str, Any]] = [
    {"id": f"q{i:02d}", "input": f"{i} + {i + 3}", "target": 2 * i + 3, "topic": f"t{i % 3}"}
    for i in range(1, 13)
]


def project(
    root: Path,
    suites: Mapping[str, Any],
    *,
    engines: Mapping[str, Any] | None = None,
    items: Sequence[Mapping[str, Any]] | None = ARITH,
    items_path: str = "data/arith/items.jsonl",
    files: Mapping[str, str] | None = None,
    git_init: bool = True,
) -> Path:
    """A project: config/config.yaml, an items file, further files; a git repository."""
    root.mkdir(parents=True, exist_ok=True)
    cfg = {
        "project": {"name": "tasks-test", "seed": 11},
        "engines": dict(engines or {"reference": {"kind": "reference", "concurrency": 4}}),
        "suites": dict(suites),
    }
    (root / "config").mkdir(exist_ok=True)
    (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    if items is not None:
        write_jsonl(root / items_path, items)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text("/results/\n/logs/\n/.snakemake/\n")
    if git_init:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "project")
    return root


def arith_suite(**over: Any) -> dict[str, Any]:
    return {
        "kind": "tasks",
        "items": "data/arith/items.jsonl",
        "prompt": "What is {input}? Reply with the number only.",
        "graders": [{"name": "exact"}],
        "engines": ["reference"],
    } | over


def plan_requests(
    suite: Any, cfg: Any, engine: Any, seed: int, *, items: Any = None, model: str = "m"
) -> list[Any]:
    """The requests ``suite`` plans for ``engine`` (its items generated at ``seed`` unless given):
    what the run stage asks the suite, in one call."""
    from sealedeval.plugins import GenerateContext, RequestContext

    if items is None:
        items = suite.generate(GenerateContext(cfg=cfg, seed=seed))
    return list(
        suite.requests(RequestContext(cfg=cfg, items=items, engine=engine, model=model, seed=seed))
    )
