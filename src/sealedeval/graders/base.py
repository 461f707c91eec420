"""The grader contract: a pure function of (item, answer text) → Grade.

Graders are registered through ``@grader(name, version)``; the version is bumped whenever the
verdict on some input can change, and is written into every graded row so an old grading can be
told apart from a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sealedeval.registry import Registry


@dataclass(frozen=True)
class Grade:
    score: float
    passed: bool
    details: Mapping[str, Any] = field(default_factory=dict)


GradeFn = Callable[[Mapping[str, Any], str], Grade]


@dataclass(frozen=True)
class Grader:
    name: str
    version: str
    fn: GradeFn

    def __call__(self, item: Mapping[str, Any], answer: str) -> Grade:
        return self.fn(item, answer)


graders: Registry[Grader] = Registry("grader")


def grader(name: str, version: str) -> Callable[[GradeFn], GradeFn]:
    def deco(fn: GradeFn) -> GradeFn:
        graders.register(name)(Grader(name, version, fn))
        return fn

    return deco
