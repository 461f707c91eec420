"""Presentation of any suite from the metric schema alone.

A suite with no presentation hooks still gets a full report section (seal and completeness per
engine, then every metric with its interval, method and denominators), one figure per metric
(estimates with intervals across its groups) and a CSV scorecard of its graded rows. Everything
is a function of result.json's section (and the graded file for scorecards): determinism.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.render.figures import FigureSpec, interval_bars, new_figure, no_data, point
from sealedeval.render.md import priced
from sealedeval.render.metrics import (
    added_engines,
    completeness_table,
    groups_label,
    metric_table,
    no_figure_note,
    without_figure,
)

Section = Mapping[str, Any]


def _metrics(section: Section) -> list[Mapping[str, Any]]:
    return list((section.get("analysis") or {}).get("metrics") or [])


def _by_metric(section: Section) -> dict[str, list[Mapping[str, Any]]]:
    by_metric: dict[str, list[Mapping[str, Any]]] = {}
    for m in _metrics(section):
        by_metric.setdefault(str(m["metric"]), []).append(m)
    return by_metric


def unpriced_engines(engines: Mapping[str, Mapping[str, Any]] | None) -> set[str]:
    """The engines of result.json's ``engines`` without a price (``render.md.priced``)."""
    return {e for e, ident in (engines or {}).items() if not priced(ident)}


def report_section(
    name: str, section: Section, engines: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """The suite's section of report.md: completeness, then one row per metric. ``engines``
    (result.json's) tells which engines have no price: their cost cells say so."""
    out = [f"## {name}", ""]
    added = added_engines(section)
    counts = (section.get("seal") or {}).get("counts") or {}
    if counts:
        out.append(completeness_table(counts, added))
        out.append("")
    metrics = _metrics(section)
    if not metrics:
        out += ["No metrics were reported by this suite's analysis.", ""]
        return "\n".join(out)
    out.append(metric_table(metrics, unpriced_engines(engines), added))
    out += [
        "",
        "Estimates are over completed units (n ok); errored units (n error) are infrastructure "
        "failures, counted and never graded as model failures.",
        "",
    ]
    note = no_figure_note(metrics)
    if note:
        out += [note, ""]
    return "\n".join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "metric"


def figure_specs(name: str, section: Section) -> list[FigureSpec]:
    """One figure per metric name: each group's estimate with its interval (n/a where none);
    none of a metric that is zero or undefined everywhere (``without_figure``)."""
    skip = set(without_figure(_metrics(section)))
    added = added_engines(section)
    out = []
    for metric_name, ms in _by_metric(section).items():
        if metric_name in skip:
            continue

        def draw(
            ms: Sequence[Mapping[str, Any]] = ms,
            title: str = metric_name,
            added: frozenset[str] = added,
        ) -> Any:
            fig = new_figure(6.4, max(2.4, 0.4 * len(ms) + 1.2))
            ax = fig.add_subplot()
            if not ms:
                no_data(ax, "no data")
                return fig
            labels = [groups_label(m, added) for m in ms]
            values = [point(m["estimate"], m["lo"], m["hi"]) for m in ms]
            interval_bars(ax, labels, [(title, values)], horizontal=True)
            ax.set_title(f"{name}: {title}", fontsize="medium")
            return fig

        methods = sorted({str(m["method"]) for m in ms})
        out.append(
            FigureSpec(
                name=f"metric-{_slug(metric_name)}",
                caption=f"{name}: {metric_name} per group with its 95% interval "
                f"({', '.join(methods)}); n/a where nothing is estimable.",
                draw=draw,
            )
        )
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return str(v)


def scorecards(name: str, graded: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``{"<suite>.csv": text}``: one row per graded row, every column, fixed formats."""
    columns: dict[str, None] = {}
    for g in graded:
        for k in g:
            columns.setdefault(k, None)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(columns))
    for g in graded:
        w.writerow([_cell(g.get(c)) for c in columns])
    return {f"{name}.csv": buf.getvalue()}
