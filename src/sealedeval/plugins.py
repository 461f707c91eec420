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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast, runtime_checkable

from sealedeval.errors import UserError
from sealedeval.registry import EntryInfo, Registry

if TYPE_CHECKING:
    from sealedeval.config_types import Config, EngineConfig
    from sealedeval.engines.base import Request
    from sealedeval.render.figures import FigureSpec
    from sealedeval.stats.comparisons import Comparison
    from sealedeval.stats.metrics import Metric

Row = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class GenerateContext:
    """What ``generate`` reads: the merged config and the suite's seed (derived from the rubric
    hash, so new rules draw new items)."""

    cfg: Config
    seed: int


@dataclass(frozen=True, kw_only=True)
class RequestContext:
    """What ``requests`` reads: the items (as generated), the engine it plans calls for, the
    model it was configured with and the suite's seed."""

    cfg: Config
    items: Sequence[Row]
    engine: EngineConfig
    model: str
    seed: int


@dataclass(frozen=True, kw_only=True)
class FollowupContext(RequestContext):
    """What ``followup_requests`` reads: a request context plus the raw rows stored so far (a
    second phase is planned from the answers present)."""

    rows: Sequence[Row]


@dataclass(frozen=True, kw_only=True)
class GradeContext:
    """What ``grade`` and ``iter_grade`` read: the items and the latest raw row per key.

    ``shared`` is None when ``rows`` are all the latest rows. When the stage grades a chunk of
    them at a time (a suite with ``grade_columns`` and ``grade_scan``), ``rows`` are one chunk
    and ``shared`` what ``grade_scan`` found in all chunks: what grading a row reads of other
    rows (a judge's reply on an answer)."""

    cfg: Config
    items: Sequence[Row]
    rows: Sequence[Row]
    shared: Mapping[str, Mapping[Any, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class RowChunk:
    """A stretch of one engine's latest rows, in the canonical order (engine, then key), with
    each row's category off its graded rows (``"error"`` where it has none)."""

    rows: Sequence[Row]
    categories: Sequence[str]
    where: Sequence[int]
    """Each row's handle, for ``RowChunks.rows_at``."""
    graded_where: Callable[[Sequence[int]], list[int]]
    """The handles (``RowChunks.graded_at``) of the graded rows of the rows at these indices
    of ``rows``, in graded order."""
    graded_rows: Callable[[], Sequence[Row]]
    """The graded rows of all of ``rows``, in graded order (an analysis that reads every
    answer's grades: read when called, held by the stretch's reader only)."""


class RowChunks(Protocol):
    """The latest rows and their graded rows, an engine's rows a stretch at a time
    (``stages.chunked``): what an analysis reads when the rows are too many to hold."""

    engines: Sequence[str]
    """The engines with rows, in string order."""

    def chunks(self, engine: str) -> Iterator[RowChunk]:
        """The engine's rows, stretch after stretch, in the canonical order."""
        ...

    def rows_at(self, where: Sequence[int]) -> Sequence[Row]:
        """The rows of these handles, in that order (a few: they are read again)."""
        ...

    def graded_at(self, where: Sequence[int]) -> Sequence[Row]:
        """The graded rows of these handles (ascending), in that order."""
        ...


@dataclass(frozen=True, kw_only=True)
class AnalyzeContext(GradeContext):
    """What ``analyze`` reads: a grade context plus the graded rows.

    ``chunks`` is None when ``rows`` and ``graded`` are all the rows. Set (a suite with
    ``analyze_columns``, past a chunk's rows), ``rows`` and ``graded`` are empty and the rows
    are read through it."""

    graded: Sequence[Row]
    chunks: RowChunks | None = None


@dataclass(frozen=True, kw_only=True)
class ScorecardContext:
    """What ``scorecards`` reads: the graded rows and the suite's result.json section."""

    graded: Sequence[Row]
    section: Section


@dataclass(frozen=True, kw_only=True)
class RegradeContext:
    """What ``regrade`` reads: the project, the grading profile, the format of the externally
    produced file and its path."""

    root: Path
    profile: str
    fmt: str
    path: Path
    key: Path | None = None
    partial: bool = False


class Analysis(TypedDict, total=False):
    """The analysis document a suite's ``analyze`` returns (its result.json ``analysis``): the
    keys the framework reads. ``metrics`` is required (``stages.analyze`` checks it); a suite
    adds keys of its own, which publish passes to the suite's presentation hooks untouched."""

    metrics: list[Metric]
    comparisons: list[Comparison]
    hypotheses: list[Mapping[str, Any]]
    engines: Mapping[str, Any]
    status_counts: Mapping[str, Any]


class Section(TypedDict):
    """A suite's part of result.json, as publish hands it to the presentation hooks."""

    seal: Mapping[str, Any]
    analysis: Analysis


class Item(TypedDict):
    """The keys of an item record every stage reads. A suite's items carry more keys (the
    prompt material, the reference answer, the per-item seed); they are read as ``Row``."""

    id: str


@runtime_checkable
class Suite(Protocol):
    """What every suite provides. Everything here is a pure function of the config, the sealed
    inputs and the raw rows: that is what lets the audit re-derive every published byte.

    Each method takes one frozen context record (``GenerateContext``, ``RequestContext``, ...):
    a suite reads the fields it needs, and a field added later breaks no suite."""

    name: str

    def rubric_inputs(self) -> list[str]:
        """Glob patterns of everything sealed for this suite (``pkg:`` for package sources)."""
        ...

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        """Item records (JSON-serialisable, each with an ``id``). Deterministic given the
        context."""
        ...

    def requests(self, ctx: RequestContext) -> list[Request]:
        """Every planned request for one engine (ask ``engines.capabilities``, never kinds)."""
        ...

    def reference_answer(self, request: Request) -> str:
        """The deterministic ceiling's answer (the ``reference`` engine kind)."""
        ...

    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        """Graded rows (one per request × grader) from the latest raw row per key. Each has at
        least ``stages.grade.BASE_COLUMNS`` (``stages.grade.graded_row`` builds them); further
        scalar columns are kept, typed."""
        ...

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        """The suite's analysis (``Analysis``): JSON-able, with ``metrics``
        (``stats.metrics.Metric`` list)."""
        ...


class SuiteHooks(Protocol):
    """Optional hooks (documentation and type checking; ``hook()`` looks them up).

    - ``followup_requests(ctx: FollowupContext)``: a second phase planned from the answers
      present (a judge grading its own transcripts).
    - ``iter_requests(ctx: RequestContext)``: ``requests``' requests yielded one at a time, in
      the same order; the analysis, which reads only their keys (planned against present),
      uses it when present (a million ``tasks`` requests held at once were ~0.8 GB).
    - ``iter_grade(ctx: GradeContext)``: ``grade``'s rows yielded one at a time; the grade stage
      streams them into columns when present (a million golden answers as four million dicts
      were most of the 1M-row build's 5.6 GB peak).
    - ``grade_table(ctx: GradeContext)``: the graded rows as a table built column-wise
      (``stages.grade.GradedTable``: each row its raw row's index and a ``Verdict``), for a
      suite whose graded rows keep their raw row's identity; preferred over ``iter_grade`` and
      ``grade`` when present (no dict per graded row: golden's grade stage at a million
      answers).
    - ``grade_columns()`` and ``grade_scan(ctx: GradeContext)``, together: the suite's grading
      may be given a chunk of the latest rows at a time (a key-prefix bucket of one engine, in
      the canonical order; ``stages.chunked``), so the grade stage's memory does not grow with
      the rows. ``grade_columns`` names the raw columns grading reads (others are read from
      the parts when asked for, slowly); ``grade_scan`` returns, for one chunk, what grading
      a row needs of other rows, as mappings by name; the stage merges every chunk's (union of
      each mapping) and hands the result to ``grade_table`` / ``iter_grade`` /
      ``grade`` as ``ctx.shared``.
    - ``analyze_columns()``: the suite's ``analyze`` can read the rows a stretch at a time
      (``AnalyzeContext.chunks``), and these are the raw columns it reads of every row
      (carried with each stretch; others are read from the parts when asked for).
    - ``run_after(engine)``: the engines whose runs this engine's run must follow (a judge
      grades their answers).
    - ``config_schema()``: JSON Schema of ``suites.<name>`` (defaults are applied from it).
    - ``report_sections(section: Section)``: Markdown for the suite's part of report.md;
      default: the metric table.
    - ``figures(section: Section)``: ``[FigureSpec]``; default: one figure per metric.
    - ``scorecards(ctx: ScorecardContext)``: ``{file name: CSV text}`` under
      results/scorecards/; default: ``<suite>.csv`` with one row per graded row.
    - ``regrade(ctx: RegradeContext)``: grade externally produced responses.
    - ``summary(section: Section)``: the headline metric and the pre-registered comparisons of
      the report's summary page (``publish.summary.hints`` documents the shape); default: the
      first metric with an estimate and the analysis's ``hypotheses``/``comparisons``.
    - ``design_comparisons(section)``: the engine pairs the sealed design pre-registers
      (default: ``compare: [a, b]`` or ``comparisons: [[a, b], ...]``; ``seal/design.py``).
    """

    def followup_requests(self, ctx: FollowupContext) -> list[Request]: ...

    def iter_requests(self, ctx: RequestContext) -> Iterator[Request]: ...

    def iter_grade(self, ctx: GradeContext) -> Iterator[dict[str, Any]]: ...

    def grade_table(self, ctx: GradeContext) -> Sequence[Row]: ...

    def grade_columns(self) -> Sequence[str]: ...

    def grade_scan(self, ctx: GradeContext) -> Mapping[str, Mapping[Any, Any]]: ...

    def analyze_columns(self) -> Sequence[str]: ...

    def run_after(self, engine: str) -> list[str]: ...

    def config_schema(self) -> Mapping[str, Any]: ...

    def report_sections(self, section: Section) -> str: ...

    def figures(self, section: Section) -> list[FigureSpec]: ...

    def scorecards(self, ctx: ScorecardContext) -> dict[str, str]: ...

    def regrade(self, ctx: RegradeContext) -> Any: ...

    def summary(self, section: Section) -> Mapping[str, Any]: ...

    def design_comparisons(self, section: Mapping[str, Any]) -> list[tuple[str, str]]: ...


CONTEXTS: Mapping[str, type] = {
    "generate": GenerateContext,
    "requests": RequestContext,
    "grade": GradeContext,
    "analyze": AnalyzeContext,
    "followup_requests": FollowupContext,
    "iter_requests": RequestContext,
    "iter_grade": GradeContext,
    "grade_table": GradeContext,
    "grade_scan": GradeContext,
    "scorecards": ScorecardContext,
    "regrade": RegradeContext,
}
"""The context record each method or hook that reads more than one thing is called with."""

REQUIRED: Mapping[str, tuple[str, ...]] = {
    "rubric_inputs": (),
    "generate": ("ctx",),
    "requests": ("ctx",),
    "reference_answer": ("request",),
    "grade": ("ctx",),
    "analyze": ("ctx",),
}
"""The ``Suite`` protocol's methods and the arguments every caller passes them."""

HOOKS: Mapping[str, tuple[str, ...]] = {
    "followup_requests": ("ctx",),
    "iter_requests": ("ctx",),
    "iter_grade": ("ctx",),
    "grade_table": ("ctx",),
    "grade_columns": (),
    "grade_scan": ("ctx",),
    "analyze_columns": (),
    "run_after": ("engine",),
    "config_schema": (),
    "report_sections": ("section",),
    "figures": ("section",),
    "scorecards": ("ctx",),
    "summary": ("section",),
    "design_comparisons": ("section",),
    "regrade": ("ctx",),
}
"""Every optional hook (``SuiteHooks`` documents each) and the arguments its caller passes:
the one list ``hook()`` looks names up in, and ``check_suite`` holds a suite against."""

_POSITIONAL: Mapping[str, tuple[str, ...]] = {
    "generate": ("cfg", "seed"),
    "requests": ("cfg", "items", "engine", "model", "seed"),
    "grade": ("cfg", "items", "rows"),
    "analyze": ("cfg", "items", "graded", "rows"),
    "followup_requests": ("cfg", "items", "engine", "model", "seed", "rows"),
    "iter_requests": ("cfg", "items", "engine", "model", "seed"),
    "iter_grade": ("cfg", "items", "rows"),
    "grade_table": ("cfg", "items", "rows"),
    "scorecards": ("graded", "section"),
    "regrade": ("root", "profile", "fmt", "path"),
}
"""The argument lists of sealedeval 0.1's contract, before the context records: a suite still
written that way is told what its method takes now (not only that it cannot be called)."""


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
            ctx = CONTEXTS.get(method)
            migrate = (
                f" (the context record `{ctx.__name__}` carries {', '.join(_POSITIONAL[method])})"
                if ctx is not None and _takes(fn, _POSITIONAL[method])
                else ""
            )
            want = f"{method}(ctx: {ctx.__name__})" if ctx else f"{method}({', '.join(args)})"
            raise UserError(
                f"{where}: `{method}({', '.join(inspect.signature(fn).parameters)})` cannot "
                f"be called as `{want}`{migrate}"
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

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        raise NotImplementedError

    def requests(self, ctx: RequestContext) -> list[Request]:
        raise NotImplementedError

    def reference_answer(self, request: Request) -> str:
        raise NotImplementedError

    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        raise NotImplementedError

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        raise NotImplementedError

    def followup_requests(self, ctx: FollowupContext) -> list[Request]:
        return []

    def iter_requests(self, ctx: RequestContext) -> Iterator[Request]:
        raise NotImplementedError  # a placeholder: ``hook()`` finds no hook here

    def iter_grade(self, ctx: GradeContext) -> Iterator[dict[str, Any]]:
        return iter(())

    def grade_table(self, ctx: GradeContext) -> Sequence[Row]:
        raise NotImplementedError  # a placeholder: ``hook()`` finds no hook here

    def run_after(self, engine: str) -> list[str]:
        return []

    def config_schema(self) -> Mapping[str, Any]:
        return {}

    def report_sections(self, section: Section) -> str:
        return ""

    def figures(self, section: Section) -> list[FigureSpec]:
        return []

    def scorecards(self, ctx: ScorecardContext) -> dict[str, str]:
        return {}

    def summary(self, section: Section) -> Mapping[str, Any]:
        return {}

    def design_comparisons(self, section: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def regrade(self, ctx: RegradeContext) -> Any:
        return None


def presentation_hook(name: str, hook_name: str) -> Any:
    """A presentation hook of the suite ``name``, or None: also None when the suite is not
    installed here (a result from someone else's suite still renders, from its metrics)."""
    from sealedeval.errors import UserError

    bound = (_ACTIVE.get() or {}).get(name)
    if bound is not None:
        return hook(bound.suite, hook_name)
    try:
        suite = suites.get(name)
    except UserError:
        return None
    return hook(suite, hook_name)


suites: Registry[Suite] = Registry("suite", group="sealedeval.suites", check=check_suite)

# The built-in suites, imported on first lookup only (start-up: a golden run never imports
# grounding's catalog and harness).
for _name, _target in (
    ("golden", "sealedeval.suites.golden.suite:suite"),
    ("bloodpanel", "sealedeval.suites.bloodpanel.suite:suite"),
    ("grounding", "sealedeval.suites.grounding.suite:suite"),
):
    suites.add_lazy(_name, _target)


SuiteFactory = Callable[..., Suite]
suite_kinds: Registry[SuiteFactory] = Registry("suite kind", group="sealedeval.suite_kinds")
"""Suite *kinds*: factories ``(name, section, root=project) -> Suite`` for suites defined by config
(``suites.<name>.kind: tasks``); the configured name is bound in ``suites`` by ``configure``."""
suite_kinds.add_lazy("tasks", "sealedeval.suites.tasks.suite:TasksSuite")
suite_kinds.add_lazy("imported", "sealedeval.suites.imported.suite:ImportedSuite")


@dataclass(frozen=True)
class BoundSuite:
    """A suite bound from a kind by one config: the object and where it comes from."""

    suite: Suite
    info: EntryInfo


def bind(name: str, section: Mapping[str, Any], root: Path | None = None) -> BoundSuite:
    """The configured suite ``name`` of kind ``section["kind"]``, checked like a registered
    suite (``check_suite``); ``root`` is the project the config belongs to (the suite's data
    paths are under it). The loader keeps it in ``Config.bound``: nothing global changes, so
    two projects loaded in one process (a notebook) never see each other's suites."""
    kind = str(section["kind"])
    factory = suite_kinds.get(kind)
    kind_info = suite_kinds.info(kind)
    obj = factory(name, section, root=root if root is not None else Path("."))
    check_suite(name, obj)
    info = EntryInfo(
        name,
        source=kind_info.source,
        version=kind_info.version,
        params={"kind": kind},
        target=kind_info.target,
    )
    return BoundSuite(obj, info)


_ACTIVE: ContextVar[Mapping[str, BoundSuite] | None] = ContextVar(
    "sealedeval_bound_suites", default=None
)
"""The bound suites of the project being published in this context (``presenting``): publish
renders from result.json alone, so a kind suite's presentation hooks are found here."""


@contextmanager
def presenting(cfg: Config) -> Iterator[None]:
    """Within the block, ``presentation_hook`` finds ``cfg``'s kind-bound suites (the report
    of a ``tasks`` suite is its own, not the generic one). Context-local: reset on exit, and
    other threads and tasks are not affected."""
    token = _ACTIVE.set(cfg.bound)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def get_suite(name: str, cfg: Config | None = None) -> Suite:
    """The suite by name: bound by ``cfg`` from a kind, built in, or from an installed
    package's entry point."""
    bound = cfg.bound.get(name) if cfg is not None else None
    if bound is not None:
        return cast(Suite, bound.suite)
    return suites.get(name)


def suite_config_schema(name: str, *, kind: bool = False) -> Mapping[str, Any] | None:
    """The JSON Schema of ``suites.<name>``: a ``config.schema.yaml`` beside the suite's module
    (found without importing the suite, so loading a config stays cheap), else the suite's
    ``config_schema()`` hook, else None (only the common keys are checked)."""
    import importlib.util

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


def suite_info(name: str, cfg: Config | None = None) -> dict[str, Any]:
    """Where a suite comes from and its version (recorded in graded rows and result.json)."""
    bound = cfg.bound.get(name) if cfg is not None else None
    if bound is not None:
        return cast(BoundSuite, bound).info.public()
    return suites.info(name).public()
