"""Grader *kinds*: graders configured by parameters, for suites defined by config.

The graders in ``sealedeval.graders`` are fixed functions of (item, answer) that read their rule
from the item (golden's ``must``/``mustNot``). A grader kind is a factory instead: a suite's
config names it and gives its parameters (``{name: numeric, tolerance: 0.01}``); the kind checks
them against its JSON Schema (defaults applied, so the recorded parameters are complete) and
builds a ``Configured`` grader, a pure function of (item, answer) → ``Grade`` that also says
which item fields it reads (``fields``: the suite checks every item carries them before
anything is sent) and how to check one item (``check_item``: a target that is not a number for
``numeric``, say).

Kinds are registered by name with a version in ``grader_kinds``; the version is bumped whenever
the verdict on some input can change, and the suite writes name, version and parameters into
every graded row. A package adds a kind through the entry-point group
``sealedeval.task_graders`` (``name = "my_pkg.graders"``, a module that registers on import).

The item a configured grader sees is the item record with ``target`` set to the value of the
suite's target column, so kinds never need to know the column's name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError
from sealedeval.graders.base import Grade
from sealedeval.registry import Registry

GradeFn = Callable[[Mapping[str, Any], str], Grade]
ItemCheck = Callable[[Mapping[str, Any]], str | None]
"""One item → None when the grader can grade it, else a short reason ("target 'x' is not a
number"); the suite prefixes the file, line and item id."""


@dataclass(frozen=True)
class Configured:
    """A grader kind with its parameters: what grades one answer."""

    name: str
    version: str
    params: Mapping[str, Any]
    fn: GradeFn
    fields: tuple[str, ...] = ()
    """Item fields every item must carry (not null; ``target`` also not empty)."""
    check_item: ItemCheck | None = None
    columns: tuple[str, ...] = ()
    """Further columns the items file must have (values may be empty on an item)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Kind-specific data the suite needs to plan (a judge's rubric text)."""

    def __call__(self, item: Mapping[str, Any], answer: str) -> Grade:
        return self.fn(item, answer)

    @property
    def needs_target(self) -> bool:
        return "target" in self.fields


Build = Callable[[Mapping[str, Any], Path], Configured]
"""(validated parameters, project root) → the configured grader; may read project files the
parameters name (they are sealed: ``GraderKind.files``). A parameter that cannot work (a regex
that does not compile) raises ``ValueError``; the suite reports it with the config key."""
FilesFn = Callable[[Mapping[str, Any]], list[str]]


def _no_files(params: Mapping[str, Any]) -> list[str]:
    return []


@dataclass(frozen=True)
class GraderKind:
    name: str
    version: str
    schema: Mapping[str, Any]
    """JSON Schema of the parameters (``name`` and ``label`` excluded)."""
    build_fn: Build
    files: FilesFn = _no_files
    """Project files (project-relative) the configured grader reads: sealed with the suite."""
    sources: tuple[str, ...] = ()
    """Further package sources its verdicts depend on (``pkg:`` names), sealed with it."""
    module: str = ""

    def check(self, params: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The parameters validated against the schema, defaults applied (one-line error)."""
        import jsonschema

        doc = dict(params)
        validator = jsonschema.Draft202012Validator(self.schema)
        errors = sorted(
            validator.iter_errors(doc), key=lambda e: (-len(e.absolute_path), e.message)
        )
        if errors:
            e = errors[0]
            path = ".".join(str(p) for p in e.absolute_path)
            raise UserError(f"{where}{'.' + path if path else ''}: {e.message}")
        for key, sub in (self.schema.get("properties") or {}).items():
            if key not in doc and isinstance(sub, Mapping) and "default" in sub:
                doc[key] = sub["default"]
        return doc

    def build(self, params: Mapping[str, Any], root: Path) -> Configured:
        return self.build_fn(params, root)


grader_kinds: Registry[GraderKind] = Registry("grader", group="sealedeval.task_graders")


def grader_kind(
    name: str,
    version: str,
    schema: Mapping[str, Any],
    *,
    files: FilesFn | None = None,
    sources: Sequence[str] = (),
) -> Callable[[Build], Build]:
    """Register the decorated build function as grader kind ``name`` at ``version``."""

    def deco(fn: Build) -> Build:
        kind = GraderKind(
            name, version, schema, fn, files or _no_files, tuple(sources), fn.__module__
        )
        grader_kinds.register(name, version=version)(kind)
        return fn

    return deco


def get_kind(name: str) -> GraderKind:
    return grader_kinds.get(name)


# The built-in kinds, imported on first lookup (each module registers its kinds).
for _name, _module in (
    ("exact", "text"),
    ("includes", "text"),
    ("numeric", "text"),
    ("choice", "text"),
    ("regex", "pattern"),
    ("json_schema", "structured"),
    ("judge", "verdict"),
):
    grader_kinds.add_lazy(_name, f"sealedeval.graders.kinds.{_module}")


def passed(ok: bool, details: Mapping[str, Any] | None = None) -> Grade:
    """An all-or-nothing grade."""
    return Grade(1.0 if ok else 0.0, ok, dict(details or {}))


def text_of(value: Any) -> str:
    """An item value as text (JSON for lists and mappings, so nothing is lost)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def alternatives(target: Any) -> list[Any]:
    """A target as a list of acceptable answers (a list target lists alternatives)."""
    return list(target) if isinstance(target, list) else [target]


__all__ = [
    "Configured",
    "GraderKind",
    "alternatives",
    "get_kind",
    "grader_kind",
    "grader_kinds",
    "passed",
    "text_of",
]
