"""Golden prompts: the files first (a prefix the server reuses across tasks and across answer and
judge calls), then the instructions, the question last. The reference ``answer`` and the regexes
are never rendered into an answer prompt (a judge prompt shows the reference by design)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sealedeval.run.agent import json_protocol_help

SYSTEM = (
    "You answer questions about the files of a small bakery. Use only the files above. "
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
    """The files first: the judge's prompts open with the same block, so the server reuses the
    evaluated prefix across answer and judge calls (the instructions come after it)."""
    return [
        {"role": "system", "content": _answer_system(tuple(files.items()))},
        {"role": "user", "content": str(task["prompt"])},
    ]


@lru_cache(maxsize=64)
def _answer_system(files: tuple[tuple[str, str], ...]) -> str:
    """The ~4 KB system text, built once per directory variant (every task and repeat over the
    same files shares it; rebuilding it per request was a tenth of rendering a request)."""
    return f"{judge_context(dict(files))}\n\n{SYSTEM}"


def leak_check(task: Mapping[str, Any], msgs: Sequence[Mapping[str, Any]]) -> None:
    """The reference sentence must never be in what the engine sees."""
    if _leaks(str(task["answer"]), tuple(str(m["content"]) for m in msgs)):
        raise ValueError(f"golden task {task['id']}: reference answer appears in the prompt")


@lru_cache(maxsize=4096)
def _leaks(answer: str, contents: tuple[str, ...]) -> bool:
    """Checked once per distinct prompt: repeats send the same ~4 KB text many times."""
    needle = answer.strip().lower()
    return bool(needle) and needle in "\n".join(contents).lower()


# -- the agent branches: no files in the prompt, tools instead -----------------------------------

AGENT_SYSTEM = (
    "You answer questions about the files of a small bakery. The files are in a directory you "
    "cannot see: look at them with the tools before you answer. Answer in one short sentence. "
    "If the files do not contain the answer, answer exactly: The files do not say."
)


def agent_messages(
    task: Mapping[str, Any], protocol: str, tools: Sequence[str]
) -> list[dict[str, str]]:
    """The same system text for every task (a shared prefix), the question last. The ``json``
    protocol spells out its actions; ``native`` engines get the tools in the request."""
    system = AGENT_SYSTEM
    if protocol == "json":
        system = f"{AGENT_SYSTEM}\n\n{json_protocol_help(tools)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": str(task["prompt"])}]


def judge_context(files: Mapping[str, str]) -> str:
    """What every files-in-prompt call sees first (answers and judges alike): the files."""
    return f"FILES\n\n{render_files(files)}"
