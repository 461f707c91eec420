"""Golden tasks: hand-written data in ``data/golden/``, validated on load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from sealedeval.errors import UserError

TASKS = Path("data/golden/tasks.yaml")
FILES = Path("data/golden/files")
CATEGORIES = {"lookup", "count", "compare", "multi_fact", "abstain"}
_REQUIRED = ("id", "prompt", "answer", "must", "category")


def load_tasks(root: Path, limit: int | None = None) -> list[dict[str, Any]]:
    path = root / TASKS
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{TASKS}: golden tasks file not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"{TASKS}: invalid YAML ({e})") from None
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list) or not tasks:
        raise UserError(f"{TASKS}: expected a mapping with a non-empty 'tasks' list")
    seen: set[str] = set()
    out = []
    for i, t in enumerate(tasks):
        where = f"{TASKS}: tasks[{i}]"
        if not isinstance(t, dict):
            raise UserError(f"{where}: not a mapping")
        for key in _REQUIRED:
            if key not in t:
                raise UserError(f"{where}: missing {key!r}")
        if t["id"] in seen:
            raise UserError(f"{where}: duplicate id {t['id']!r}")
        if t["category"] not in CATEGORIES:
            raise UserError(f"{where}: unknown category {t['category']!r}")
        for key in ("must", "mustNot", "facts"):
            for pat in t.get(key) or []:
                try:
                    re.compile(pat)
                except re.error as e:
                    raise UserError(f"{where}.{key}: bad regex {pat!r} ({e})") from None
        seen.add(t["id"])
        out.append(
            {
                "id": str(t["id"]),
                "prompt": str(t["prompt"]),
                "answer": str(t["answer"]),
                "must": list(t.get("must") or []),
                "mustNot": list(t.get("mustNot") or []),
                "facts": list(t.get("facts") or []),
                "category": str(t["category"]),
                "files": list(t.get("files") or []),
            }
        )
    return out[:limit] if limit else out


def load_files(root: Path) -> dict[str, str]:
    """The five files, by name, in sorted order (the prompt lists them in this order)."""
    d = root / FILES
    if not d.is_dir():
        raise UserError(f"{FILES}: golden files directory not found")
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(d.iterdir()) if p.is_file()}
