"""grounding figures: track A's M1/M2/M7 per condition and engine with item-clustered intervals,
and one summary panel per B track (gap surfacing, assembly, disclosure, collaboration).

Presentation, not sealed; publish draws the specs :func:`figure_specs` returns (through
``GroundingSuite.figures``) as ``grounding_<name>.{png,svg}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sealedeval.render.comparisons import has_records
from sealedeval.render.figures import (
    FigureSpec,
    Point,
    difference_mde_figure,
    interval_bars,
    new_figure,
    no_data,
    point,
    top_legend,
    wilson_point,
)
from sealedeval.render.metrics import added_engines, engine_label
from sealedeval.suites.grounding.conditions import CONDITION_NAMES, CONDITIONS, Condition

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Label = Callable[[str], str]
"""How an engine's name is drawn: ``engine_label`` with whether it was added after the seal."""

_TRACK_A = (
    ("m1", "M1: value = reference"),
    ("m2", "M2: definition id + version"),
    ("m7", "M7: answered with the competing rule"),
)


def _clustered(b: Mapping[str, Any] | None) -> Point | None:
    if not b or not b.get("n_items"):
        return None
    return point(b.get("item_mean"), b.get("clustered_lo"), b.get("clustered_hi"))


def _series_a(a: Mapping[str, Any], lab: Label) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, track_a) per engine and model role, primary first, as the report lists them."""
    out = []
    for eng, e in a["engines"].items():
        roles = sorted(e["roles"].items(), key=lambda kv: (kv[0] != "primary", kv[0]))
        for role, r in roles:
            if r.get("track_a"):
                out.append(
                    (lab(eng) if role == "primary" else f"{lab(eng)} ({role})", r["track_a"])
                )
    return out


def _conditions(series: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Condition]:
    present = {c for _, ta in series for c in ta}
    return [c for c in CONDITIONS if c in present]


def _track_a(a: Mapping[str, Any], lab: Label) -> Figure:
    series = _series_a(a, lab)
    conds = _conditions(series)
    fig = new_figure(7.2, 7.0)
    axes = fig.subplots(len(_TRACK_A), 1, sharex=True)
    groups = [c + "\n" + CONDITION_NAMES[c].replace(" + ", " +\n") for c in conds]
    for ax, (metric, title) in zip(axes, _TRACK_A, strict=True):
        interval_bars(
            ax,
            groups,
            [(lab, [_clustered(ta.get(c, {}).get(metric)) for c in conds]) for lab, ta in series],
        )
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("item mean")
        ax.set_title(title, fontsize="medium")
    top_legend(axes[0], ncols=max(2, len(series)))
    fig.suptitle(
        "grounding track A: per condition and engine (95% intervals clustered by item)",
        fontsize="medium",
    )
    return fig


def _primaries(a: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        (eng, e["roles"]["primary"]) for eng, e in a["engines"].items() if "primary" in e["roles"]
    ]


def _b_panel(
    ax: Axes,
    engines: Sequence[tuple[str, Mapping[str, Any]]],
    track: str,
    metrics: Sequence[tuple[str, str]],
    title: str,
    keep: Any = None,
) -> None:
    """One track's panel: groups = (engine, condition), one bar per metric (Wilson 95%)."""
    groups, rows = [], []
    for eng, role in engines:
        for cond, block in sorted((role.get(track) or {}).items()):
            if keep is None or keep(cond):
                groups.append(f"{eng}: {cond}" if len(engines) > 1 else cond)
                rows.append(block)
    if not rows:
        no_data(ax, f"{track} not run in this profile")
        ax.set_xticks([])
        ax.set_ylim(0, 1.05)
    else:
        interval_bars(
            ax,
            groups,
            [(lab, [wilson_point(b.get(m)) for b in rows]) for m, lab in metrics],
            rotate=True,
        )
        ax.set_ylim(0, 1.05)
        top_legend(ax)
    ax.set_title(title, fontsize="small")


def _b_tracks(a: Mapping[str, Any], lab: Label) -> Figure:
    engines = [(lab(eng), role) for eng, role in _primaries(a)]
    fig = new_figure(8.0, 6.4)
    (b1, b2), (b3, b4) = fig.subplots(2, 2)
    _b_panel(
        b1,
        engines,
        "b1",
        (
            ("gap_detected", "gap detected"),
            ("field_named", "field named"),
            ("owner_named", "owner named"),
            ("false_alarm", "false alarm"),
        ),
        "B1 gap surfacing",
    )
    _b_panel(
        b2,
        engines,
        "b2",
        (("correct", "answer accuracy"),),
        "B2 assembly",
        keep=lambda stage: stage != "select",
    )
    _b_panel(
        b3,
        engines,
        "b3",
        (
            ("precision", "precision"),
            ("recall", "recall"),
            ("accuracy", "decisions"),
            ("critical_rate", "critical"),
        ),
        "B3 disclosure control",
    )
    _b_panel(
        b4,
        engines,
        "b4",
        (
            ("routing_correct", "routing"),
            ("owner_behaviour_correct", "owner behaviour"),
            ("record_well_formed", "record"),
            ("final_correct", "final answer"),
        ),
        "B4 collaborative completion",
    )
    for ax in (b1, b3):
        ax.set_ylabel("rate (Wilson 95% CI)")
    fig.suptitle("grounding track B: per condition (completed calls)", fontsize="medium")
    return fig


def _has_b(a: Mapping[str, Any]) -> bool:
    return any(role.get(t) for _, role in _primaries(a) for t in ("b1", "b2", "b3", "b4"))


def figure_specs(section: Mapping[str, Any]) -> list[FigureSpec]:
    """The grounding figures of one result.json section (``{"seal": ..., "analysis": ...}``):
    track A when any engine ran it, track B when any B track ran; nothing is drawn here."""
    a = section["analysis"]
    added = added_engines(section)

    def lab(eng: str) -> str:
        return engine_label(eng, eng in added)

    out = []
    if _series_a(a, lab):
        out.append(
            FigureSpec(
                "track_a",
                "grounding track A: M1 (value equals the reference), M2 (definition id and "
                "version named) and M7 (competing rule applied) per condition and engine; item "
                "means with 95% intervals clustered by item, answerable items only.",
                lambda: _track_a(a, lab),
            )
        )
    if _has_b(a):
        out.append(
            FigureSpec(
                "track_b",
                "grounding track B: B1 gap surfacing, B2 answer accuracy per assembly, B3 "
                "disclosure precision/recall/decisions and critical disclosures, B4 routing "
                "and final answers per ownership; call-level Wilson 95% intervals.",
                lambda: _b_tracks(a, lab),
            )
        )
    records = _records(a, lab)
    if records:
        out.append(
            FigureSpec(
                "comparisons",
                "grounding: the pre-declared paired comparisons per engine and model role, "
                "difference of item means with normal 95% intervals from the paired SE over the "
                "±MDE band at 80% power for the items each pair shares (grey): a difference "
                "inside its band could not have been detected.",
                lambda: difference_mde_figure(
                    records, "grounding: pre-declared comparisons and what they could detect"
                ),
            )
        )
    return out


def _records(a: Mapping[str, Any], lab: Label) -> list[dict[str, Any]]:
    """Every comparison record, named by engine and role (none in an older result.json)."""
    out = []
    for eng, e in sorted((a.get("engines") or {}).items()):
        for role, r in (e.get("roles") or {}).items():
            comps = r.get("comparisons") or []
            if not has_records(comps):
                continue
            for c in comps:
                out.append(
                    dict(c["paired"]) | {"name": f"{lab(eng)} ({role}) {c['paired']['name']}"}
                )
    return out
