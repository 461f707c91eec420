"""Figures: PNG + SVG per suite, drawn from result.json's dict only.

A suite's figures come from its ``figures`` hook when it has one, else one figure per metric of
its analysis (``publish.generic``). Specs carry names and captions, so report.md can name and
caption every figure (and report.pdf place it) without drawing anything; only ``build_figures``
draws. The drawing toolkit lives in ``sealedeval.render.figures``, below suites and publish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sealedeval.fsutil import write_bytes_atomic
from sealedeval.plugins import presentation_hook
from sealedeval.render.figures import FORMATS, FigureSpec, render_bytes

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


def build_figures(result: Mapping[str, Any], formats: Sequence[str] = FORMATS) -> dict[str, bytes]:
    """``{"golden_accuracy.png": b"...", ...}`` for every registered suite in ``result``."""
    out: dict[str, bytes] = {}
    for suite, spec in specs(result):
        for fmt in formats:
            name = f"{stem(suite, spec)}.{fmt}"
            if name in out:
                raise ValueError(f"figure {name} is planned twice")
            # A fresh figure per format: a render runs constrained layout again from the
            # previous render's positions, so reusing one figure made the SVG's clip ids
            # depend on whether the PNG had been rendered first (float drift in the last bits).
            out[name] = render_bytes(spec.draw(), fmt, dpi=PNG_DPI if fmt == "png" else None)
    return out


def write_figures(root: Path, result: Mapping[str, Any]) -> list[Path]:
    """Write every figure under results/figures/, removing stale ones from earlier builds."""
    files = build_figures(result)
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
