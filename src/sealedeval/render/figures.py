"""Figure toolkit shared by every suite's presentation and by publish's generic figures.

A ``FigureSpec`` carries a figure's name, caption and a ``draw`` callable, so report.md can name
and caption every figure (and report.pdf place it) without drawing anything; only publish draws.
This module sits at the bottom of the package (beside ``stats``): suites import it for their
own figures, publish imports it to render them, and it imports neither.

Determinism is a feature: the backend is Agg, SVG ids use a fixed hash salt, and every writer's
metadata (dates, software versions) is removed or fixed, so two builds are byte-identical.
"""

from __future__ import annotations

import contextlib
import io
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sealedeval.render.md import p_compact, pval

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = ("png", "svg")


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a suite: ``{suite}_{name}.{png,svg}``; ``draw`` is only called to render."""

    name: str
    caption: str
    draw: Callable[[], Figure]


# Paul Tol's "bright" qualitative palette: colour-blind safe, fixed order (determinism).
PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")

# Metadata per format: no dates, no versions; these are what differ between otherwise equal runs.
_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": "sealedeval"},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": "sealedeval", "Producer": None},
}


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


def preload() -> None:
    """Import the drawing stack and load the font once, in this process: processes forked
    afterwards (publish's figure workers) inherit them instead of each paying ~0.5 s."""
    import importlib

    _mpl()
    for module in (
        "matplotlib.figure",
        "matplotlib.backends.backend_agg",
        "matplotlib.backends.backend_svg",
    ):
        importlib.import_module(module)
    from matplotlib import font_manager

    font_manager.get_font(font_manager.findfont("DejaVu Sans"))


def new_figure(width: float = 6.4, height: float = 3.6) -> Figure:
    """A figure not tied to pyplot's global state (no leaks between builds)."""
    _mpl()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def render_bytes(fig: Figure, fmt: str, dpi: float | None = None) -> bytes:
    """The figure's bytes in ``fmt``; ``dpi`` sets a raster's resolution (default: 100)."""
    buf = io.BytesIO()
    if dpi:
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt], dpi=dpi)
    else:
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
    return buf.getvalue()


@dataclass(frozen=True)
class Raster:
    """A figure's PNG pixels for report.pdf: 8-bit RGB rows, top first, zlib-compressed (a
    PDF image stream's FlateDecode). Made by the process that drew the PNG, from the pixels it
    still holds: reportlab otherwise decodes every PNG again, re-compresses it and ASCII85-encodes
    it, a quarter of report.pdf's build, in the one process that lays the PDF out."""

    width: int
    height: int
    flate_rgb: bytes


RASTER_ZLIB_LEVEL = 6
"""zlib's default: the PDF's image streams come out the size reportlab's own were."""


def _raster_of(rgba: Any) -> Raster | None:
    """The ``Raster`` of an (height, width, 4) uint8 array, or None when any pixel is not
    opaque (RGB has no alpha; such a figure goes the PNG's way)."""

    import numpy as np

    if not bool((rgba[..., 3] == 255).all()):
        return None
    height, width = rgba.shape[:2]
    rgb = np.ascontiguousarray(rgba[..., :3]).tobytes()
    return Raster(width, height, zlib.compress(rgb, RASTER_ZLIB_LEVEL))


def _raster(fig: Figure) -> Raster | None:
    """The pixels of the PNG just rendered through ``fig``'s Agg canvas."""
    import numpy as np

    return _raster_of(np.asarray(fig.canvas.buffer_rgba()))  # type: ignore[attr-defined]


def raster_from_png(data: bytes) -> Raster | None:
    """The ``Raster`` of PNG bytes (``sealedeval pdf`` reads results/figures/): the same pixels
    give the same bytes as the drawing process's, so report.pdf is the same either way."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return _raster_of(np.asarray(im.convert("RGBA")))


def _freeze_layout_svg(fig: Figure) -> None:
    """Run the figure's layout engine as savefig would for an SVG (on an SVG canvas, at 72
    dpi), then remove the engine, so the axes keep those positions and no render lays out
    again. savefig itself follows the layout with a whole draw of the figure with drawing
    disabled, before the real one; that pass only serves layouts that need a finished draw
    (``bbox_inches="tight"``), and the bytes are the same without it (a test compares)."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    engine = fig.get_layout_engine()
    if engine is None or not fig.axes:  # Figure.draw lays out only a figure with axes
        return
    FigureCanvasSVG(fig)  # becomes fig.canvas: the layout measures text as the SVG will
    with contextlib.suppress(ValueError):  # as Figure.draw: a layout that cannot fit
        engine.execute(fig)
    fig.set_layout_engine(None)


def render_formats(
    fig: Figure,
    formats: Sequence[str],
    dpi: Mapping[str, float] | None = None,
    *,
    raster: bool = False,
) -> dict[str, bytes | Raster]:
    """``{fmt: bytes}`` for every format of ``formats`` from one drawn figure, and with
    ``raster`` the PNG's pixels as ``out["raster"]`` (a ``Raster``, when the PNG is opaque).

    The layout is computed once, as the SVG's savefig would compute it (``_freeze_layout_svg``),
    and frozen; SVG is rendered first, so its bytes equal ``render_bytes(fig, "svg")`` (report.html
    embeds the same bytes results/figures/ holds), and the other formats reuse the layout:
    constrained layout is half of a render's cost, and running it again from the previous
    render's positions made the output depend on the render order (the float drift that once
    moved SVG clip ids). A frozen layout is computed at the SVG's 72 dpi; text sizes are in
    points, so the raster's positions are the same fractions of the figure.
    The PNG is drawn on an Agg canvas attached to the figure (savefig then uses it as it is,
    the same bytes), so its pixels are still there for the raster.
    """
    order = sorted(formats, key=lambda f: (f != "svg", formats.index(f)))
    out: dict[str, bytes | Raster] = {}
    if order and order[0] == "svg":
        _freeze_layout_svg(fig)
    for i, fmt in enumerate(order):
        if i == 1:
            # None, not "none": "none" leaves a placeholder engine, and savefig still draws
            # the whole figure once (with drawing disabled) before every later format
            fig.set_layout_engine(None)
        if fmt == "png" and raster:
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            FigureCanvasAgg(fig)  # becomes fig.canvas
        out[fmt] = render_bytes(fig, fmt, dpi=(dpi or {}).get(fmt))
        if fmt == "png" and raster:
            pixels = _raster(fig)
            if pixels is not None:
                out["raster"] = pixels
    return out


Point = tuple[float, float | None, float | None]
"""(estimate, lower, upper); bounds may be missing (no interval estimable)."""


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def point(est: Any, lo: Any = None, hi: Any = None) -> Point | None:
    """A plottable point, or None when the estimate is missing (drawn as "n/a", never dropped)."""
    e = _finite(est)
    if e is None:
        return None
    return (e, _finite(lo), _finite(hi))


def wilson_point(r: Mapping[str, Any] | None) -> Point | None:
    """A rate dict ``{k, n, rate, lo, hi}`` (Wilson interval) as a point."""
    if not r or not r.get("n", 1):
        return None
    return point(r.get("rate"), r.get("lo"), r.get("hi"))


def zero_or_undefined(metrics: Sequence[Mapping[str, Any]]) -> bool:
    """True when every estimate of ``metrics`` (``stats.metrics.Metric`` dicts) is zero or
    missing/not finite: a figure of them would draw nothing but zeros and "n/a"."""
    return all((_finite(m.get("estimate")) or 0.0) == 0.0 for m in metrics)


NO_CI = "no CI"
"""Beside a bar whose estimate has no interval (too few units: the report's table says why)."""


def interval_bars(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[Point | None]]],
    *,
    horizontal: bool = False,
    rotate: bool = False,
    colors: Sequence[str] = PALETTE,
    mark_no_ci: bool = False,
) -> None:
    """Grouped bars with error bars: one group per ``groups`` entry, one bar per series.

    A missing estimate is marked "n/a" at its slot, so a reader sees that something was
    planned and not estimable rather than a silently absent bar. An estimate without an
    interval (e.g. fewer units than ``stats.MIN_N_BOOTSTRAP``) gets no whisker; with
    ``mark_no_ci`` also the words ``NO_CI`` beside its bar (off by default, so the figures of
    suites that do not ask keep their bytes).
    """
    n = max(1, len(series))
    width = 0.8 / n
    for j, (label, values) in enumerate(series):
        color = colors[j % len(colors)]
        pos, est, err_lo, err_hi = [], [], [], []
        for i, v in enumerate(values):
            x = i - 0.4 + width * (j + 0.5)
            if v is None:
                if horizontal:
                    ax.text(0.01, x, "n/a", va="center", fontsize="small", color=color)
                else:
                    ax.text(
                        x,
                        0.01,
                        "n/a",
                        ha="center",
                        va="bottom",
                        rotation=90,
                        fontsize="small",
                        color=color,
                    )
                continue
            e, lo, hi = v
            if mark_no_ci and (lo is None or hi is None):
                if horizontal:
                    ax.text(e + 0.01, x, NO_CI, va="center", fontsize="x-small", color=color)
                else:
                    ax.text(x, e + 0.01, NO_CI, ha="center", va="bottom", rotation=90,
                            fontsize="x-small", color=color)  # fmt: skip
            pos.append(x)
            est.append(e)
            err_lo.append(max(0.0, e - lo) if lo is not None else 0.0)
            err_hi.append(max(0.0, hi - e) if hi is not None else 0.0)
        kw: dict[str, Any] = {
            "color": color,
            "label": label,
            "capsize": 3,
            "error_kw": {"elinewidth": 1},
        }
        if not pos:  # every estimate n/a: an invisible bar keeps the legend's colour right
            pos, est, err_lo, err_hi = [0.0], [math.nan], [0.0], [0.0]
        # A black tick at each estimate, so an estimate of 0 is visibly there (not n/a).
        tick: dict[str, Any] = {"color": "black", "linestyle": "none", "markersize": 6, "zorder": 3}
        if horizontal:
            ax.barh(pos, est, height=width, xerr=[err_lo, err_hi], **kw)
            ax.plot(est, pos, marker="|", **tick)
        else:
            ax.bar(pos, est, width=width, yerr=[err_lo, err_hi], **kw)
            ax.plot(pos, est, marker="_", **tick)
    ticks = list(range(len(groups)))
    if horizontal:
        ax.set_yticks(ticks, list(groups), fontsize="small")
        ax.set_ylim(len(groups) - 0.5, -0.5)  # first group on top, like the report's tables
    else:
        text: dict[str, Any] = {"rotation": 30, "ha": "right"} if rotate else {}
        ax.set_xticks(ticks, list(groups), fontsize="small", **text)
        ax.set_xlim(-0.5, len(groups) - 0.5)


def top_legend(ax: Axes, ncols: int = 2, top: float = 1.34) -> None:
    """The legend in headroom above 1.0 on a rate axis, where it cannot hide a bar."""
    lo = ax.get_ylim()[0]
    ax.set_ylim(lo, top)
    ax.set_yticks([t / 5 for t in range(6) if t / 5 >= lo])
    ax.legend(fontsize="x-small", ncols=ncols, loc="upper center", frameon=False)


def no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


MDE_BAND = "#dddddd"
"""Fill of the ±MDE band behind a difference (light grey: context, not data)."""


def difference_mde_figure(
    records: Sequence[Mapping[str, Any]], title: str, xlabel: str = "A − B (95% CI)"
) -> Figure:
    """Each comparison's difference with its interval over its ±MDE band.

    ``records`` are ``stats.comparisons.Comparison`` dicts (diff, lo, hi, mde, name, n, p,
    p_adj). A point inside its grey band is a difference the comparison could not have detected
    at the plan's power; a missing difference is marked "n/a" in its row, never dropped.
    """
    fig = new_figure(6.4, 1.4 + 0.5 * max(1, len(records)))
    ax = fig.add_subplot()
    for i, c in enumerate(records):
        mde = _finite(c.get("mde"))
        if mde is not None and mde > 0:
            ax.fill_betweenx([i - 0.35, i + 0.35], -mde, mde, color=MDE_BAND, linewidth=0, zorder=1)
        p = point(c.get("diff"), c.get("lo"), c.get("hi"))
        if p is None:
            ax.text(0, i, "n/a", va="center", ha="center", fontsize="small")
            continue
        e, lo, hi = p
        xerr = [[e - lo if lo is not None else 0.0], [hi - e if hi is not None else 0.0]]
        ax.errorbar([e], [i], xerr=xerr, fmt="o", color=PALETTE[0], capsize=4, zorder=3)
    ax.axvline(0, color="black", linewidth=0.5, zorder=2)
    labels = []
    for c in records:
        adj = c.get("p_adj")
        padj = f", Holm {pval(adj)}" if adj is not None else ""
        mde = c.get("mde")
        band = f", MDE {mde:.3f}" if mde is not None else ", MDE n/a"
        labels.append(f"{c['name']}\nn={c['n']}, {p_compact(c['p'])}{padj}{band}")
    ax.set_yticks(range(len(records)), labels, fontsize="x-small")
    ax.set_ylim(len(records) - 0.5, -0.5)
    ax.set_xlabel(f"{xlabel}; grey: ±MDE at the plan's power")
    ax.set_title(title, fontsize="medium")
    return fig


@dataclass(frozen=True)
class ForestRow:
    """One row of a forest figure: a difference with its interval, the MDE the comparison
    records (its band), the row's label and the numbers printed on the right."""

    label: str
    estimate: float | None
    lo: float | None
    hi: float | None
    mde: float | None = None
    note: str = ""


FOREST_ROW_IN = 0.26
"""Inches per comparison row: a label of the x-small font with room between rows."""

FOREST_WIDTH_IN = 8.0
"""Wider than the other figures (6.4 in): report.pdf scales every figure to the text width,
so a wide forest is a short one, and the first page keeps a suite's table and its figure
together."""

FOREST_MIN_SPAN = 0.05
"""Smallest half-width of the x axis: a row of zero differences with zero-width intervals
still gets a visible axis around its zero line."""


def forest_figure(rows: Sequence[ForestRow], title: str, xlabel: str) -> Figure:
    """A forest plot, the way a paper's Figure 1 reads: one row per comparison, its
    difference as a point with its 95% interval, a line at zero (no difference), and where
    the comparison records a minimum detectable effect, the band ±MDE shaded grey behind it
    (a point inside its band is a difference it could not have detected). The labels name
    the comparison on the left and print its numbers on the right; a missing difference is
    "n/a" in its row, never dropped. The x axis is symmetric around zero."""
    n = max(1, len(rows))
    fig = new_figure(FOREST_WIDTH_IN, 0.9 + FOREST_ROW_IN * n)
    ax = fig.add_subplot()
    span = FOREST_MIN_SPAN
    for r in rows:
        for v in (r.estimate, r.lo, r.hi, r.mde):
            f = _finite(v)
            if f is not None:
                span = max(span, abs(f))
    span *= 1.1
    for i, r in enumerate(rows):
        mde = _finite(r.mde)
        if mde is not None and mde > 0:
            ax.fill_betweenx([i - 0.38, i + 0.38], -mde, mde, color=MDE_BAND, linewidth=0, zorder=1)
        p = point(r.estimate, r.lo, r.hi)
        if p is None:
            ax.text(0, i, "n/a", va="center", ha="center", fontsize="small", zorder=3)
            continue
        e, lo, hi = p
        xerr = [[e - lo if lo is not None else 0.0], [hi - e if hi is not None else 0.0]]
        ax.errorbar(
            [e], [i], xerr=xerr, fmt="s", markersize=5, color=PALETTE[0], capsize=3, zorder=3
        )
    ax.axvline(0, color="black", linewidth=0.8, linestyle="--", zorder=2)
    ax.set_xlim(-span, span)
    ticks = list(range(len(rows)))
    ax.set_yticks(ticks, [r.label for r in rows], fontsize="x-small")
    ax.set_ylim(n - 0.5, -0.5)
    right = ax.twinx()
    right.set_ylim(n - 0.5, -0.5)
    right.set_yticks(ticks, [r.note for r in rows], fontsize="x-small")
    right.tick_params(length=0)
    ax.set_xlabel(xlabel, fontsize="small")
    ax.tick_params(axis="x", labelsize="x-small")
    ax.set_title(title, fontsize="medium")
    if not rows:
        no_data(ax, "no comparison")
    return fig
