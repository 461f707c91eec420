"""``sealedeval.eval``: ``sealedeval run SUITE [--engine E]`` from Python.

The same code path as the command (``stages.run.run_suite`` per engine, the suite's configured
engines when none are named), so the raw rows, their keys, the ledger entry and the refusal of an
unsealed or changed rubric are the command's; what the command prints per engine is returned as
a typed record instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from sealedeval.config import load_config
from sealedeval.errors import UserError
from sealedeval.plugins import get_suite
from sealedeval.run.dispatcher import RunStats
from sealedeval.seal import lock
from sealedeval.stages.run import run_suite

PathArg = str | os.PathLike[str]


@dataclass(frozen=True)
class EngineRun:
    """One engine's run of the suite: what ``sealedeval run`` prints as its last line.

    ``requested`` counts the planned calls, ``skipped`` those already answered ok under this
    seal (a rerun resumes), ``ok`` / ``error`` the calls made now (errors after retries, by
    kind in ``errors_by_kind``)."""

    engine: str
    requested: int
    skipped: int
    ok: int
    error: int
    errors_by_kind: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_stats(cls, engine: str, stats: RunStats) -> EngineRun:
        return cls(
            engine=engine,
            requested=stats.requested,
            skipped=stats.skipped,
            ok=stats.ok,
            error=stats.error,
            errors_by_kind=MappingProxyType(dict(sorted(stats.by_kind.items()))),
        )


@dataclass(frozen=True)
class EvalResult:
    """What ``eval`` did: the suite, the seal it ran under and one ``EngineRun`` per engine.

    The rows themselves are in ``root/results/raw/<suite>/<engine>/``; ``sealedeval publish``
    grades and analyses them (``samples_df``, ``metrics_df`` and ``comparisons_df`` read the
    result)."""

    suite: str
    root: Path
    config_sources: tuple[str, ...]
    rubric_sha256: str
    seal_commit: str
    sealed: bool
    runs: tuple[EngineRun, ...]

    def run(self, engine: str) -> EngineRun:
        """The run of one engine (``KeyError`` naming the engines run when it is not one)."""
        for r in self.runs:
            if r.engine == engine:
                return r
        raise KeyError(f"{engine!r}: not run here (ran {[r.engine for r in self.runs]})")


def _names(value: str | Sequence[str] | None, what: str) -> list[str] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise UserError(f"eval: {what} must be a name or a non-empty list of names, got {value!r}")
    return names


def _config_files(config: PathArg | Sequence[PathArg] | None) -> list[Path]:
    if config is None:
        return []
    if isinstance(config, str | os.PathLike):
        return [Path(config)]
    return [Path(c) for c in config]


def eval(  # the API's verb (shadows the builtin here only), as Inspect AI's ``eval``
    suite: str,
    engines: str | Sequence[str] | None = None,
    *,
    root: PathArg = ".",
    config: PathArg | Sequence[PathArg] | None = None,
    unsealed: bool = False,
    allow_errors: bool = False,
    progress: bool = False,
) -> EvalResult:
    """Run ``suite`` on ``engines`` (default: the engines its config names), like
    ``sealedeval run SUITE [--engine E] [-c CONFIG ...]`` in ``root``.

    Args:
        suite: A configured suite (``suites.<name>`` in the merged config).
        engines: An engine name or names (``engines.<name>``); None runs the suite's own list.
        root: The project directory (its ``rubric.lock``, ``config/``, ``results/``).
        config: Config files merged over ``config/config.yaml`` in this order, as ``-c``.
        unsealed: Run without a committed seal (every row and the result say "not
            pre-registered"), as ``--unsealed``.
        allow_errors: Do not fail when more calls end in error than ``fail_on_error`` allows.
        progress: Show the progress bar on stderr.

    Raises:
        UserError: One line naming what is wrong and where: no seal or a stale one, an unknown
            suite or engine, a bad config, too many errors. Rows of the engines run before
            the failure are stored, as with the command.
    """
    names = _names(engines, "engines")
    cfg = load_config(Path(root), _config_files(config))
    section = cfg.suite(suite)
    # the seal check before any engine starts: an unsealed rubric fails here, not mid-run
    state = lock.check(cfg.root, suite, get_suite(suite, cfg).rubric_inputs(), unsealed=unsealed)
    todo = names if names is not None else list(section["engines"])
    for eng in todo:
        cfg.engine(eng)  # an unknown name is a one-line error before the first call
    runs = []
    for eng in todo:
        stats = run_suite(
            cfg, suite, eng, unsealed=unsealed, progress=progress, allow_errors=allow_errors
        )
        runs.append(EngineRun.from_stats(eng, stats))
    return EvalResult(
        suite=suite,
        root=cfg.root,
        config_sources=cfg.sources,
        rubric_sha256=state.rubric_sha256,
        seal_commit=state.seal_commit,
        sealed=state.sealed,
        runs=tuple(runs),
    )
