"""Figures: PNG + SVG per suite, drawn from result.json's dict only.

A suite's figures come from its ``figures`` hook when it has one, else one figure per metric of
its analysis (``publish.generic``). Specs carry names and captions, so report.md can name and
caption every figure (and report.pdf place it) without drawing anything; only ``build_figures``
draws. The drawing toolkit lives in ``sealedeval.render.figures``, below suites and publish.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import pickle
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from sealedeval.fsutil import write_bytes_atomic
from sealedeval.plugins import presentation_hook
from sealedeval.publish import generic
from sealedeval.publish.first_page import forest_spec
from sealedeval.publish.summary import suite_summaries
from sealedeval.render.figures import FORMATS, FigureSpec, Raster, preload, render_formats

FIGURES_DIR = Path("results/figures")

PNG_DPI = 150
"""Resolution of the PNGs (report.pdf places them at the full text width, about 7 inches):
at 100 dpi their labels printed blurred; 150 dpi keeps them sharp at half the bytes of 200."""


def suite_specs(name: str, section: Mapping[str, Any]) -> list[FigureSpec]:
    fn = presentation_hook(name, "figures")
    if fn is not None:
        return list(fn(section))

    return generic.figure_specs(name, section)


def summary_specs(result: Mapping[str, Any]) -> list[tuple[str, FigureSpec]]:
    """``(suite, spec)`` of the first page's figures: each suite's forest of its
    pre-registered comparisons (``publish.first_page``), for the suites that have any."""

    out = []
    for s in suite_summaries(result):
        spec = forest_spec(s)
        if spec is not None:
            out.append((s.suite, spec))
    return out


def specs(result: Mapping[str, Any]) -> list[tuple[str, FigureSpec]]:
    """``(suite, spec)`` for every figure in ``result``: the first page's (``summary_specs``)
    first, so they are Figures 1..k, then every suite's, in the order report.md lists the
    suites (result.json's). Cheap: nothing is drawn."""
    out = summary_specs(result)
    for suite, section in result.get("suites", {}).items():
        out += [(suite, s) for s in suite_specs(suite, section)]
    return out


def stem(suite: str, spec: FigureSpec) -> str:
    return f"{suite}_{spec.name}"


Rendered = dict[str, bytes | Raster]
"""A figure's bytes per format, and under ``"raster"`` its PNG's pixels for report.pdf."""


def _render(spec: FigureSpec, formats: Sequence[str], raster: bool = False) -> Rendered:
    return render_formats(spec.draw(), formats, {"png": PNG_DPI}, raster=raster)


def default_jobs() -> int:
    """The CPUs this process may use (Snakemake's ``threads`` caps it through ``--jobs``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_ALL_CLAIMED = 2**31 - 1
"""The figure counter's value once the caller gives up: no worker claims another figure."""


def _claim(counter: Any, n: int) -> int | None:
    """The next figure nobody has drawn yet, or None when all ``n`` are claimed."""
    with counter.get_lock():
        i = int(counter.value)
        if i >= n:
            return None
        counter.value = i + 1
    return i


def _sendable(e: Exception, name: str) -> Exception:
    """``e`` as the caller will raise it: with the worker's traceback as a note, or (when it does
    not pickle) a RuntimeError naming it."""
    note = f"in the figure worker drawing {name}:\n{traceback.format_exc()}"
    try:
        pickle.dumps(e)
    except Exception:
        e = RuntimeError(f"{type(e).__name__}: {e}")
    e.add_note(note)
    return e


def _draw_claimed(
    plan: list[tuple[str, FigureSpec]],
    out: Connection,
    counter: Any,
    formats: Sequence[str],
    raster: bool,
) -> None:
    """Draw figures until none is left, sending ``(i, rendered, error)`` for each; stop early
    when the caller has closed its end (it gave up, or died)."""
    while (i := _claim(counter, len(plan))) is not None:
        suite, spec = plan[i]
        try:
            sent: tuple[int, Rendered | None, Exception | None] = (
                i,
                _render(spec, formats, raster),
                None,
            )
        except Exception as e:
            sent = (i, None, _sendable(e, stem(suite, spec)))
        try:
            out.send(sent)
        except OSError:  # BrokenPipeError: nobody reads any more
            return


def _first_worker(
    text_in: Connection,
    text_out: Connection,
    readers: list[Connection],
    writers: list[Connection],
    counter: Any,
    formats: Sequence[str],
    raster: bool,
) -> None:
    """The first figure process: it imports the drawing stack while the caller builds
    result.json, plans the figures once the text arrives, then forks the other workers, which
    inherit the imported stack and the plan (importing it and planning in every worker was a
    third of the workers' CPU), and draws with them."""
    text_out.close()
    for r in readers:
        r.close()
    preload()
    try:
        text = text_in.recv_bytes().decode("utf-8")
    except EOFError:  # closed before submit: nothing to draw
        return
    finally:
        text_in.close()
    plan = specs(json.loads(text))
    children = []
    for k in range(1, len(writers)):
        pid = os.fork()
        if pid == 0:  # a worker: only its own pipe stays open
            code = 1
            try:
                for j, w in enumerate(writers):
                    if j != k:
                        w.close()
                _draw_claimed(plan, writers[k], counter, formats, raster)
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    for w in writers[1:]:
        w.close()
    _draw_claimed(plan, writers[0], counter, formats, raster)
    writers[0].close()
    for pid in children:
        os.waitpid(pid, 0)


class _Workers:
    """``jobs`` figure processes forked in a chain (``_first_worker``), each claiming the next
    undrawn figure from a shared counter and sending it back on a pipe of its own, which a
    thread of the caller's drains as figures arrive (a worker blocked on a full pipe while the
    caller laid out report.pdf sat idle). A worker that dies closes its pipe: waiting for a
    figure ends in an error, never a hang; a caller that gives up (or dies) makes the workers
    stop after the figure they are drawing."""

    def __init__(self, jobs: int, formats: Sequence[str], raster: bool) -> None:
        ctx = mp.get_context("fork")
        self._counter = ctx.Value("i", 0)
        text_in, self._text = ctx.Pipe(duplex=False)
        pipes = [ctx.Pipe(duplex=False) for _ in range(jobs)]
        self._readers, writers = [r for r, _ in pipes], [w for _, w in pipes]
        self._proc = ctx.Process(
            target=_first_worker,
            args=(text_in, self._text, self._readers, writers, self._counter, formats, raster),
            daemon=True,  # ended with this process; its children are os.fork()s, not Processes
        )
        self._proc.start()
        text_in.close()
        for w in writers:
            w.close()
        self._got: dict[int, tuple[Rendered | None, Exception | None]] = {}
        self._ended = False  # every worker's pipe is closed: nothing more will arrive
        self._arrived = threading.Condition()
        self._thread: threading.Thread | None = None

    def send_text(self, text: str) -> None:
        """Hand the first worker result.json's text, then collect figures, in a thread: the
        worker may still be importing, and a pipe holds 64 KiB."""
        self._thread = threading.Thread(target=self._run, args=(text,), daemon=True)
        self._thread.start()

    def _run(self, text: str) -> None:
        with contextlib.suppress(OSError):  # the worker died: its pipe's EOF says so below
            self._text.send_bytes(text.encode("utf-8"))
        self._text.close()
        open_ = list(self._readers)
        while open_:
            for conn in wait(open_):
                assert isinstance(conn, Connection)
                try:
                    j, rendered, error = conn.recv()
                except EOFError:  # that worker is done (or died)
                    open_.remove(conn)
                    conn.close()
                    continue
                with self._arrived:
                    self._got[j] = (rendered, error)
                    self._arrived.notify_all()
        with self._arrived:
            self._ended = True
            self._arrived.notify_all()

    def get(self, i: int, name: str) -> Rendered:
        with self._arrived:
            self._arrived.wait_for(lambda: i in self._got or self._ended)
            if i not in self._got:
                raise RuntimeError(f"figure {name}: the figure workers exited without drawing it")
            rendered, error = self._got[i]
        if error is not None:
            raise error
        assert rendered is not None
        return rendered

    def close(self) -> None:
        """Stop the workers after the figures they are drawing and wait for them to end."""
        with self._counter.get_lock():
            self._counter.value = _ALL_CLAIMED
        if self._thread is None:  # never submitted: the first worker reads EOF and ends
            self._text.close()
            for conn in self._readers:
                conn.close()
        else:
            self._thread.join(timeout=120)
        self._proc.join(timeout=60)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join()


class FigureJob:
    """Figures drawn by worker processes (``jobs > 1``; ``0``: every CPU available) while the
    caller does other work: the first worker starts, and imports the drawing stack, when the
    job is made (publish makes it before it builds result.json); ``submit(result_text)`` plans
    the figures, ``files(i)``/``images()`` wait for one, ``result()`` for all:
    ``{"golden_accuracy.png": b"...", ...}``. Without ``fork`` (Windows) they are drawn in
    this process.

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
        if "fork" not in mp.get_all_start_methods():
            self.jobs = 1
        self.names: list[str] = []
        self._plan: list[tuple[str, FigureSpec]] = []
        self._workers = _Workers(self.jobs, self.formats, self.raster) if self.jobs > 1 else None
        self._done: dict[int, Rendered] = {}

    def submit(self, text: str) -> FigureJob:
        """Plan every figure of the result.json ``text`` and hand them to the workers (once)."""
        if self._plan:
            raise RuntimeError("FigureJob.submit: the figures are already planned")
        self._plan = specs(json.loads(text))
        self.names = [stem(suite, spec) for suite, spec in self._plan]
        if len(set(self.names)) != len(self.names):
            twice = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ValueError(f"figure {twice[0]} is planned twice")
        if self._workers is not None:
            self._workers.send_text(text)
        return self

    def files(self, i: int) -> Rendered:
        """Figure ``i``'s bytes per format, waiting for its worker (or drawn here)."""
        if self._workers is not None:
            return self._workers.get(i, self.names[i])
        if i not in self._done:
            self._done[i] = _render(self._plan[i][1], self.formats, self.raster)
        return self._done[i]

    def slots(self) -> list[tuple[str, str, str]]:
        """``(suite, stem, caption)`` of every planned figure, in plan order (report.html's
        places for them)."""
        return [(suite, stem(suite, spec), spec.caption) for suite, spec in self._plan]

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
        if self._workers is not None:
            self._workers.close()
            self._workers = None

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
