"""Figures: PNG + SVG per suite, drawn from result.json's dict only.

A suite's figures come from its ``figures`` hook when it has one, else one figure per metric of
its analysis (``publish.generic``). Specs carry names and captions, so report.md can name and
caption every figure (and report.pdf place it) without drawing anything; only ``build_figures``
draws. The drawing toolkit lives in ``sealedeval.render.figures``, below suites and publish.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from sealedeval.fsutil import write_bytes_atomic
from sealedeval.plugins import presentation_hook
from sealedeval.render.figures import FORMATS, FigureSpec, Raster, preload, render_formats

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


Rendered = dict[str, bytes | Raster]
"""A figure's bytes per format, and under ``"raster"`` its PNG's pixels for report.pdf."""


def _render(spec: FigureSpec, formats: Sequence[str], raster: bool = False) -> Rendered:
    return render_formats(spec.draw(), formats, {"png": PNG_DPI}, raster=raster)


_PLANS: dict[str, list[tuple[str, FigureSpec]]] = {}
"""A worker's specs, by the sha256 of the result.json text they come from (specs hold draw
closures, which do not pickle: a worker receives the text and makes them itself, once)."""


def _render_from(text: str, i: int, formats: Sequence[str], raster: bool) -> Rendered:
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in _PLANS:
        _PLANS.clear()
        _PLANS[key] = specs(json.loads(text))
    return _render(_PLANS[key][i][1], formats, raster)


def default_jobs() -> int:
    """The CPUs this process may use (Snakemake's ``threads`` caps it through ``--jobs``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class FigureJob:
    """Figures drawn by worker processes (``jobs > 1``; ``0``: every CPU available) while the
    caller does other work: the workers start, and import the drawing stack, when the job is
    made (publish makes it before it builds result.json); ``submit(result_text)`` plans the
    figures, ``files(i)``/``images()`` wait for one, ``result()`` for all:
    ``{"golden_accuracy.png": b"...", ...}``.

    Each figure is drawn once and rendered in every format from that drawing
    (``render_formats``). A figure's bytes depend only on its spec (a test checks that 1 and 2
    jobs give the same bytes), so the order work is done in cannot show in the output.
    """

    def __init__(
        self, formats: Sequence[str] = FORMATS, jobs: int = 1, *, raster: bool = False
    ) -> None:
        self.formats = tuple(formats)
        # the PNGs' pixels for report.pdf (``images()``), made only when a PDF will use them
        self.raster = raster and "png" in self.formats
        cpus = default_jobs()
        self.jobs = max(1, min(jobs if jobs > 0 else cpus, cpus))
        self.names: list[str] = []
        self._plan: list[tuple[str, FigureSpec]] = []
        self._pool: ProcessPoolExecutor | None = None
        self._pending: list[Future[Rendered]] = []
        self._done: dict[int, Rendered] = {}
        if self.jobs > 1:
            method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(
                self.jobs, mp_context=mp.get_context(method), initializer=preload
            )
            self._pool.submit(int)  # a forking pool starts its workers at the first task

    def submit(self, text: str) -> FigureJob:
        """Plan every figure of the result.json ``text`` and hand them to the workers."""
        self._plan = specs(json.loads(text))
        self.names = [stem(suite, spec) for suite, spec in self._plan]
        if len(set(self.names)) != len(self.names):
            twice = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ValueError(f"figure {twice[0]} is planned twice")
        if self._pool is not None:
            self._pending = [
                self._pool.submit(_render_from, text, i, self.formats, self.raster)
                for i in range(len(self._plan))
            ]
        return self

    def files(self, i: int) -> Rendered:
        """Figure ``i``'s bytes per format, waiting for its worker (or drawn here)."""
        if self._pool is not None:
            return self._pending[i].result()
        if i not in self._done:
            self._done[i] = _render(self._plan[i][1], self.formats, self.raster)
        return self._done[i]

    def images(self) -> dict[str, Callable[[], bytes | Raster]]:
        """``{stem: load}`` in plan order for report.pdf: each ``load()`` waits for that figure
        only, so the layout can use the first figures while the rest are drawn, and gives its
        PNG's pixels (a ``Raster``) or, for a figure with transparency, the PNG."""
        return {name: partial(self._image, i) for i, name in enumerate(self.names)}

    def _image(self, i: int) -> bytes | Raster:
        files = self.files(i)
        return files.get("raster") or files["png"]

    def result(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for i, name in enumerate(self.names):
            files = self.files(i)
            for fmt in self.formats:
                data = files[fmt]
                assert isinstance(data, bytes)
                out[f"{name}.{fmt}"] = data
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> FigureJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_figures(
    result: Mapping[str, Any], formats: Sequence[str] = FORMATS, jobs: int = 1
) -> dict[str, bytes]:
    """``{"golden_accuracy.png": b"...", ...}`` for every registered suite in ``result``."""
    with FigureJob(formats, jobs) as job:
        return job.submit(json.dumps(result)).result()


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
