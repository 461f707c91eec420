"""Figures: PNG + SVG per suite, drawn from result.json's dict only.

A suite's figures come from its ``figures`` hook when it has one, else one figure per metric of
its analysis (``publish.generic``). Specs carry names and captions, so report.md can name and
caption every figure (and report.pdf place it) without drawing anything; only ``build_figures``
draws. The drawing toolkit lives in ``sealedeval.render.figures``, below suites and publish.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sealedeval.fsutil import write_bytes_atomic
from sealedeval.plugins import presentation_hook
from sealedeval.render.figures import FORMATS, FigureSpec, preload, render_formats

FIGURES_DIR = Path("results/figures")

PNG_DPI = 150
"""Resolution of the PNGs (report.pdf places them at the full text width, about 7 inches):
at 100 dpi their labels printed blurred; 150 dpi keeps them sharp at half the bytes of 200."""


def suite_specs(name: str, section: Mapping[str, Any]) -> list[FigureSpec]:
    fn = presentation_hook(name, "figures")
    if fn is not None:
        return list(fn(section))
    from sealedeval.publish import generic

    return generic.figure_specs(name, section)


def specs(result: Mapping[str, Any]) -> list[tuple[str, FigureSpec]]:
    """``(suite, spec)`` for every figure of every suite in ``result``, in the order report.md
    lists the suites (result.json's). Cheap: nothing is drawn."""
    out = []
    for suite, section in result.get("suites", {}).items():
        out += [(suite, s) for s in suite_specs(suite, section)]
    return out


def stem(suite: str, spec: FigureSpec) -> str:
    return f"{suite}_{spec.name}"


def _render(spec: FigureSpec, formats: Sequence[str]) -> dict[str, bytes]:
    return render_formats(spec.draw(), formats, {"png": PNG_DPI})


_PLAN: list[tuple[str, FigureSpec]] = []
"""The specs a forked worker renders by index (closures do not pickle; a fork inherits them)."""


def _render_planned(i: int, formats: Sequence[str]) -> dict[str, bytes]:
    return _render(_PLAN[i][1], formats)


def default_jobs() -> int:
    """The CPUs this process may use (Snakemake's ``threads`` caps it through ``--jobs``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class FigureJob:
    """Every figure of ``result`` being drawn: by forked worker processes from the moment the
    job is made (``jobs > 1``; ``0``: every CPU available), so the caller can do other work
    meanwhile; ``result()`` waits for ``{"golden_accuracy.png": b"...", ...}``.

    Each figure is drawn once and rendered in every format from that drawing
    (``render_formats``). A figure's bytes depend only on its spec (a test checks that 1 and 2
    jobs give the same bytes), so the order work is done in cannot show in the output.
    Workers are forked: the specs' draw closures do not pickle, and a fork inherits them.
    """

    def __init__(
        self, result: Mapping[str, Any], formats: Sequence[str] = FORMATS, jobs: int = 1
    ) -> None:
        self.plan = specs(result)
        self.formats = tuple(formats)
        self.names = [stem(suite, spec) for suite, spec in self.plan]
        if len(set(self.names)) != len(self.names):
            twice = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ValueError(f"figure {twice[0]} is planned twice")
        cpus = default_jobs()
        self.jobs = max(1, min(jobs if jobs > 0 else cpus, len(self.plan), cpus))
        self._pool: ProcessPoolExecutor | None = None
        self._pending: list[Future[dict[str, bytes]]] = []
        if self.jobs > 1 and "fork" in mp.get_all_start_methods():
            _PLAN[:] = self.plan
            preload()  # imported once here, inherited by every worker
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=mp.get_context("fork"))
            self._pending = [
                self._pool.submit(_render_planned, i, self.formats) for i in range(len(self.plan))
            ]

    def result(self) -> dict[str, bytes]:
        if self._pool is None:
            rendered = [_render(spec, self.formats) for _, spec in self.plan]
        else:
            rendered = [f.result() for f in self._pending]
        out: dict[str, bytes] = {}
        for name, files in zip(self.names, rendered, strict=True):
            for fmt in self.formats:
                out[f"{name}.{fmt}"] = files[fmt]
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
            _PLAN.clear()

    def __enter__(self) -> FigureJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_figures(
    result: Mapping[str, Any], formats: Sequence[str] = FORMATS, jobs: int = 1
) -> dict[str, bytes]:
    """``{"golden_accuracy.png": b"...", ...}`` for every registered suite in ``result``."""
    with FigureJob(result, formats, jobs) as job:
        return job.result()


def write_figure_files(root: Path, files: Mapping[str, bytes]) -> list[Path]:
    """Write ``files`` under results/figures/, removing stale figures of earlier builds."""
    out_dir = root / FIGURES_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():
        if old.is_file() and old.suffix.lstrip(".") in FORMATS and old.name not in files:
            old.unlink()
    paths = []
    for name, data in sorted(files.items()):
        write_bytes_atomic(out_dir / name, data)
        paths.append(out_dir / name)
    return paths


def write_figures(root: Path, result: Mapping[str, Any], jobs: int = 1) -> list[Path]:
    """Draw and write every figure under results/figures/ (``sealedeval figures``)."""
    return write_figure_files(root, build_figures(result, jobs=jobs))
