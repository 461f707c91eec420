"""The suite boundary: the ``Suite`` protocol and the suite registry.

This module is deliberately *not* sealed. A suite's seal covers its own folder (presentation
excluded), its data, the shared graders it uses, ``sealedeval.keys`` and the analysis code
(``stats/``, the grade and analyze stages); the protocol that names the hooks is plumbing, so
adding a suite, here or in another package, changes no other suite's rubric hash.

A suite is any object with a ``name`` and the required methods below; everything else is an
optional hook, looked up with ``hook(suite, "name")``. Publish renders any suite from the typed
metric schema every analysis emits (``stats.metrics``); the presentation hooks only add what a
suite wants beyond that.

Registering a suite in another package (``pyproject.toml``)::

    [project.entry-points."sealedeval.suites"]
    wordcount = "my_package.suite:suite"
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sealedeval.errors import UserError
from sealedeval.registry import Registry

if TYPE_CHECKING:
    from sealedeval.config_types import Config, EngineConfig
    from sealedeval.engines.base import Request
    from sealedeval.render.figures import FigureSpec

Row = Mapping[str, Any]


@runtime_checkable
class Suite(Protocol):
    """What every suite provides. Everything here is a pure function of the config, the sealed
    inputs and the raw rows: that is what lets the audit re-derive every published byte."""

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
        items: Sequence[Row],
        engine: EngineConfig,
        model: str,
        seed: int,
    ) -> list[Request]:
        """Every planned request for one engine (ask ``engines.capabilities``, never kinds)."""
        ...

    def reference_answer(self, request: Request) -> str:
        """The deterministic ceiling's answer (the ``reference`` engine kind)."""
        ...

    def grade(self, cfg: Config, items: Sequence[Row], rows: Sequence[Row]) -> list[dict[str, Any]]:
        """Graded rows (one per request × grader) from the latest raw row per key. Each has at
        least ``stages.grade.BASE_COLUMNS``; further scalar columns are kept, typed."""
        ...

    def analyze(
        self,
        cfg: Config,
        items: Sequence[Row],
        graded: Sequence[Row],
        rows: Sequence[Row],
    ) -> dict[str, Any]:
        """The suite's analysis: JSON-able, with ``metrics`` (``stats.metrics.Metric`` list)."""
        ...


class SuiteHooks(Protocol):
    """Optional hooks (documentation and type checking; ``hook()`` looks them up).

    - ``followup_requests(cfg, items, engine, model, seed, rows)``: a second phase planned from
      the answers present (a judge grading its own transcripts).
    - ``config_schema()``: JSON Schema of ``suites.<name>`` (defaults are applied from it).
    - ``report_sections(section)``: Markdown for the suite's part of report.md, from its
      result.json section ``{"seal": ..., "analysis": ...}``; default: the metric table.
    - ``figures(section)``: ``[FigureSpec]``; default: one figure per metric.
    - ``scorecards(graded, section)``: ``{file name: CSV text}`` under results/scorecards/;
      default: ``<suite>.csv`` with one row per graded row.
    - ``regrade(root, profile, fmt, path)``: grade externally produced responses.
    - ``iter_grade(cfg, items, rows)``: ``grade``'s rows yielded one at a time; the grade stage
      streams them into columns when present (a million golden answers as four million dicts
      were most of the 1M-row build's 5.6 GB peak).
    - ``summary(section)``: the headline metric and the pre-registered comparisons of the
      report's summary page (``publish.summary.hints`` documents the shape); default: the
      first metric with an estimate and the analysis's ``hypotheses``/``comparisons``.
    - ``design_comparisons(section)``: the engine pairs the sealed design pre-registers
      (default: ``compare: [a, b]`` or ``comparisons: [[a, b], ...]``; ``seal/design.py``).
    """

    def report_sections(self, section: Mapping[str, Any]) -> str: ...

    def figures(self, section: Mapping[str, Any]) -> list[FigureSpec]: ...

    def scorecards(self, graded: Sequence[Row], section: Mapping[str, Any]) -> dict[str, str]: ...

    def config_schema(self) -> Mapping[str, Any]: ...


REQUIRED: Mapping[str, tuple[str, ...]] = {
    "rubric_inputs": (),
    "generate": ("cfg", "seed"),
    "requests": ("cfg", "items", "engine", "model", "seed"),
    "reference_answer": ("request",),
    "grade": ("cfg", "items", "rows"),
    "analyze": ("cfg", "items", "graded", "rows"),
}
"""The ``Suite`` protocol's methods and the arguments every caller passes them."""

HOOKS: Mapping[str, tuple[str, ...]] = {
    "followup_requests": ("cfg", "items", "engine", "model", "seed", "rows"),
    "iter_grade": ("cfg", "items", "rows"),
    "run_after": ("engine",),
    "config_schema": (),
    "report_sections": ("section",),
    "figures": ("section",),
    "scorecards": ("graded", "section"),
    "summary": ("section",),
    "design_comparisons": ("section",),
    "regrade": ("root", "profile", "fmt", "path"),
}
"""Every optional hook (``SuiteHooks`` documents each) and the arguments its caller passes:
the one list ``hook()`` looks names up in, and ``check_suite`` holds a suite against."""


def hook(suite: object, name: str) -> Any:
    """The suite's optional hook ``name``, or None (also when it is ``SuiteBase``'s
    placeholder: a suite that subclasses it and does not override a hook has none)."""
    if name not in HOOKS and name not in REQUIRED:
        raise ValueError(f"{name!r} is not a suite hook (plugins.HOOKS)")
    fn = getattr(suite, name, None)
    if getattr(fn, "__func__", None) is getattr(SuiteBase, name, None):
        return None
    return fn if callable(fn) else None


def _takes(fn: Any, args: tuple[str, ...]) -> bool:
    """Whether ``fn`` can be called with these arguments, positionally (as callers do)."""
    try:
        inspect.signature(fn).bind(*args)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): not ours to judge
        return True
    return True


def check_suite(name: str, obj: object) -> None:
    """Refuse, at registration, a suite that would fail later or silently: a protocol method
    missing, a method or hook that cannot take the arguments its caller passes, or a public
    method whose name is one letter away from a hook (``figure`` for ``figures``: the
    misspelt hook would never be called)."""
    where = f"suite {name!r} ({type(obj).__module__}.{type(obj).__qualname__})"
    if not isinstance(getattr(obj, "name", None), str):
        raise UserError(f"{where}: has no `name` string")
    for method, args in [*REQUIRED.items(), *HOOKS.items()]:
        fn = getattr(obj, method, None)
        if fn is None:
            if method in REQUIRED:
                raise UserError(f"{where}: lacks `{method}({', '.join(args)})`")
            continue
        if not callable(fn):
            raise UserError(f"{where}: `{method}` is not a method")
        if not _takes(fn, args):
            raise UserError(
                f"{where}: `{method}({', '.join(inspect.signature(fn).parameters)})` cannot "
                "be called as "
                f"`{method}({', '.join(args)})`"
            )
    known = set(REQUIRED) | set(HOOKS)
    for attr in sorted(dir(type(obj))):
        if attr.startswith("_") or attr in known or not callable(getattr(obj, attr, None)):
            continue
        close = difflib.get_close_matches(attr, sorted(known), n=1, cutoff=0.9)
        if close:
            raise UserError(
                f"{where}: `{attr}` is no hook and would never be called; did you mean "
                f"`{close[0]}`? (hooks: {', '.join(HOOKS)})"
            )


class SuiteBase:
    """A base for suites: the protocol's methods raise until defined, and every optional hook
    is here with its arguments, as a placeholder ``hook()`` treats as absent (the defaults
    described in ``SuiteHooks`` then apply). Subclassing is optional: any object with the
    protocol's methods is a suite. Either way the registry checks it (``check_suite``)."""

    name: str = ""

    def rubric_inputs(self) -> list[str]:
        raise NotImplementedError

    def generate(self, cfg: Config, seed: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def requests(
        self, cfg: Config, items: Sequence[Row], engine: EngineConfig, model: str, seed: int
    ) -> list[Request]:
        raise NotImplementedError

    def reference_answer(self, request: Request) -> str:
        raise NotImplementedError

    def grade(self, cfg: Config, items: Sequence[Row], rows: Sequence[Row]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def analyze(
        self, cfg: Config, items: Sequence[Row], graded: Sequence[Row], rows: Sequence[Row]
    ) -> dict[str, Any]:
        raise NotImplementedError

    def followup_requests(
        self,
        cfg: Config,
        items: Sequence[Row],
        engine: EngineConfig,
        model: str,
        seed: int,
        rows: Sequence[Row],
    ) -> list[Request]:
        return []

    def iter_grade(self, cfg: Config, items: Sequence[Row], rows: Sequence[Row]) -> Any:
        return iter(())

    def run_after(self, engine: str) -> list[str]:
        return []

    def config_schema(self) -> Mapping[str, Any]:
        return {}

    def report_sections(self, section: Mapping[str, Any]) -> str:
        return ""

    def figures(self, section: Mapping[str, Any]) -> list[FigureSpec]:
        return []

    def scorecards(self, graded: Sequence[Row], section: Mapping[str, Any]) -> dict[str, str]:
        return {}

    def summary(self, section: Mapping[str, Any]) -> Mapping[str, Any]:
        return {}

    def design_comparisons(self, section: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def regrade(self, root: Path, profile: str, fmt: str, path: Path) -> Any:
        return None


def presentation_hook(name: str, hook_name: str) -> Any:
    """A presentation hook of the suite ``name``, or None: also None when the suite is not
    installed here (a result from someone else's suite still renders, from its metrics)."""
    from sealedeval.errors import UserError

    try:
        suite = suites.get(name)
    except UserError:
        return None
    return hook(suite, hook_name)


suites: Registry[Suite] = Registry("suite", group="sealedeval.suites", check=check_suite)

# The built-in suites, imported on first lookup only (start-up: a golden run never imports
# grounding's catalog and harness).
for _name, _target in (
    ("golden", "sealedeval.suites.golden:suite"),
    ("bloodpanel", "sealedeval.suites.bloodpanel.suite:suite"),
    ("grounding", "sealedeval.suites.grounding:suite"),
):
    suites.add_lazy(_name, _target)


SuiteFactory = Callable[..., Suite]
suite_kinds: Registry[SuiteFactory] = Registry("suite kind", group="sealedeval.suite_kinds")
"""Suite *kinds*: factories ``(name, section, root=project) -> Suite`` for suites defined by config
(``suites.<name>.kind: tasks``); the configured name is bound in ``suites`` by ``configure``."""
suite_kinds.add_lazy("tasks", "sealedeval.suites.tasks:TasksSuite")
suite_kinds.add_lazy("imported", "sealedeval.suites.imported.suite:ImportedSuite")


def configure(name: str, section: Mapping[str, Any], root: Path | None = None) -> None:
    """Bind the configured suite ``name`` of ``section["kind"]`` (called when a config loads);
    ``root`` is the project the config belongs to (the suite's data paths are under it)."""
    from sealedeval.registry import EntryInfo

    kind = str(section["kind"])
    factory = suite_kinds.get(kind)
    kind_info = suite_kinds.info(kind)
    obj = factory(name, section, root=root if root is not None else Path("."))
    info = EntryInfo(
        name,
        source=kind_info.source,
        version=kind_info.version,
        params={"kind": kind},
        target=kind_info.target,
    )
    suites.replace(name, obj, info)


def get_suite(name: str) -> Suite:
    """The suite by name: built in, or from an installed package's entry point."""
    return suites.get(name)


def suite_config_schema(name: str, *, kind: bool = False) -> Mapping[str, Any] | None:
    """The JSON Schema of ``suites.<name>``: a ``config.schema.yaml`` beside the suite's module
    (found without importing the suite, so loading a config stays cheap), else the suite's
    ``config_schema()`` hook, else None (only the common keys are checked)."""
    import importlib.util
    from pathlib import Path

    from sealedeval import yamlio

    reg: Registry[Any] = suite_kinds if kind else suites
    target = reg.target(name)
    module = target.partition(":")[0]
    # find_spec("a.b") imports "a" (not "a.b"): look in the target's parent package first, so
    # a target like "pkg.suite:suite" never imports the suite's package just to find its schema
    candidates = [module.rpartition(".")[0], module] if "." in module else [module]
    for cand in filter(None, candidates):
        spec = importlib.util.find_spec(cand)
        where: list[Path] = []
        if spec is not None and spec.submodule_search_locations:
            where = [Path(p) for p in spec.submodule_search_locations]
        elif spec is not None and spec.origin:
            where = [Path(spec.origin).parent]
        for d in where:
            f = d / "config.schema.yaml"
            if f.is_file():
                doc = yamlio.safe_load(f.read_text(encoding="utf-8"))
                return doc if isinstance(doc, dict) else None
    fn = hook(reg.get(name), "config_schema")
    return fn() if fn is not None else None


def suite_info(name: str) -> dict[str, Any]:
    """Where a suite comes from and its version (recorded in graded rows and result.json)."""
    return suites.info(name).public()
