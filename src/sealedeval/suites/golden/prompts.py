"""Golden prompts: the files first (a shared prefix the server's prompt cache reuses across all
tasks), the question last. The reference ``answer`` and the regexes are never rendered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SYSTEM = (
    "You answer questions about the files of a small bakery. Use only the files below. "
    "Answer in one short sentence. If the files do not contain the answer, reply exactly: "
    "The files do not say."
)


def render_files(files: Mapping[str, str]) -> str:
    parts = [
        f"=== {name} ({len(text.encode())} bytes) ===\n{text.rstrip()}"
        for name, text in files.items()
    ]
    return "\n\n".join(parts)


def messages(task: Mapping[str, Any], files: Mapping[str, str]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": f"{SYSTEM}\n\nFILES\n\n{render_files(files)}"},
        {"role": "user", "content": str(task["prompt"])},
    ]


def leak_check(task: Mapping[str, Any], msgs: list[dict[str, str]]) -> None:
    """The reference sentence must never be in what the engine sees."""
    text = "\n".join(m["content"] for m in msgs).lower()
    answer = str(task["answer"]).strip().lower()
    if answer and answer in text:
        raise ValueError(f"golden task {task['id']}: reference answer appears in the prompt")
