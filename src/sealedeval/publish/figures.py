"""Figures: PNG + SVG per suite, drawn from result.json's dict only.

Like ``report_md.SECTIONS``, ``FIGURES`` is a registry keyed by suite name: a suite's figures are
a function ``result_section -> {name: matplotlib Figure}``. Suites absent from result.json are
skipped, so a registered suite that was not run costs nothing.

Determinism is a feature: the backend is Agg, SVG ids use a fixed hash salt, and every writer's
metadata (dates, software versions) is removed or fixed, so two builds are byte-identical.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sealedeval.fsutil import write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIGURES_DIR = Path("results/figures")
FORMATS = ("png", "svg")
FigureFn = Callable[[Mapping[str, Any]], dict[str, "Figure"]]
FIGURES: dict[str, FigureFn] = {}

# Metadata per format: no dates, no versions; these are what differ between otherwise equal runs.
_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": "sealedeval"},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": "sealedeval", "Producer": None},
}


def register(suite: str) -> Callable[[FigureFn], FigureFn]:
    """Register ``fn`` as the figure builder of ``suite`` (one builder per suite)."""

    def deco(fn: FigureFn) -> FigureFn:
        FIGURES[suite] = fn
        return fn

    return deco


def _mpl() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams.update(
        {
            "svg.hashsalt": "sealedeval",
            "svg.fonttype": "path",  # glyphs as paths: no dependence on the viewer's fonts
            "font.family": "DejaVu Sans",
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "path.simplify": True,
        }
    )
    return matplotlib


def new_figure(width: float = 6.4, height: float = 3.6) -> Figure:
    """A figure not tied to pyplot's global state (no leaks between builds)."""
    _mpl()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def render_bytes(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
    return buf.getvalue()


def build_figures(result: Mapping[str, Any]) -> dict[str, bytes]:
    """``{"golden_accuracy.png": b"...", ...}`` for every registered suite in ``result``."""
    _load_builtin()
    out: dict[str, bytes] = {}
    for suite, section in sorted(result.get("suites", {}).items()):
        fn = FIGURES.get(suite)
        if fn is None:
            continue
        for name, fig in sorted(fn(section).items()):
            for fmt in FORMATS:
                out[f"{suite}_{name}.{fmt}"] = render_bytes(fig, fmt)
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


def _load_builtin() -> None:
    # Importing registers; the per-suite modules live beside this one (publish/fig_*.py).
    from sealedeval.publish import fig_golden  # noqa: F401

    for mod in ("fig_grounding", "fig_bloodpanel"):
        try:
            __import__(f"sealedeval.publish.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"sealedeval.publish.{mod}":
                raise
