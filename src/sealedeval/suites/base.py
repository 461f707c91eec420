"""The suite contract and registry.

A suite owns four things: its items (generated or hand-written), its prompts and answer contract,
its rubric (graders applied to raw rows), and its analysis plan. Everything a suite computes is a
pure function of the config, the sealed inputs and the raw rows, which is what lets ``audit``
re-derive result.json byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sealedeval.canonical import compact
from sealedeval.config import Config, EngineConfig
from sealedeval.engines.base import Request
from sealedeval.registry import Registry


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the config seed, the rubric hash and any labels.

    Deriving item and sampling seeds from the rubric hash makes the generated items provably
    depend on the sealed rubric: a different rubric gives different cases.
    """
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def request_key(
    suite: str,
    item_id: str,
    condition: str,
    repeat: int,
    engine: str,
    model: str,
    params: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Stable key: everything that changes the answer (like Inspect's cache key) goes in."""
    doc = {
        "suite": suite,
        "item": item_id,
        "condition": condition,
        "repeat": repeat,
        "engine": engine,
        "model": model,
        "params": dict(params),
        "messages": list(messages),
        "tools": list(tools),
    }
    return hashlib.sha256(compact(doc).encode()).hexdigest()[:32]


class Suite(Protocol):
    name: str

    def rubric_inputs(self) -> list[str]:
        """Glob patterns of everything sealed for this suite (``pkg:`` for package sources)."""
        ...

    def generate(self, cfg: Config, seed: int) -> list[dict[str, Any]]:
        """Item records (JSON-serialisable). Deterministic given cfg and seed."""
        ...

    def requests(
        self,
        cfg: Config,
        items: Sequence[Mapping[str, Any]],
        engine: EngineConfig,
        model: str,
        seed: int,
    ) -> list[Request]: ...

    def reference_answer(self, request: Request) -> str: ...

    def grade(
        self, cfg: Config, items: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """Graded rows (one per request × grader) from the latest raw row per key."""
        ...

    def analyze(
        self,
        cfg: Config,
        items: Sequence[Mapping[str, Any]],
        graded: Sequence[Mapping[str, Any]],
        rows: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]: ...


suites: Registry[Suite] = Registry("suite")


# Suite packages register themselves on import; add a new suite's module here.
SUITE_MODULES = (
    "sealedeval.suites.golden",
    "sealedeval.suites.bloodpanel",
    "sealedeval.suites.grounding",
)


def _load() -> None:
    import importlib

    for mod in SUITE_MODULES:
        importlib.import_module(mod)


def get_suite(name: str) -> Suite:
    _load()
    return suites.get(name)


def all_suites() -> list[Suite]:
    _load()
    return [suites.get(n) for n in suites.names()]
