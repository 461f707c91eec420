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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow.compute as pc

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
from sealedeval.stages.artifacts import GradedRows
from sealedeval.store.arrow import pa
from sealedeval.store.columns import Coded, HexKeys

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
    return {f"{name}.csv": "".join(scorecard_text(graded))}


def scorecard_text(graded: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """``scorecards``' CSV text, ``_CSV_ROWS`` rows at a time: at ten million raw rows the
    golden scorecard is 40 million lines, and one string of them (with a row list per line)
    was most of publish's memory. A column of a graded table is formatted once per distinct
    value where it is coded (per piece of a graded file); the quoting is ``csv``'s
    (``_quoted``)."""
    if isinstance(graded, GradedRows):
        columns = list(graded.names) if len(graded) else []
    else:
        seen: dict[str, None] = {}
        for g in graded:
            for k in g:
                seen.setdefault(k, None)
        columns = list(seen)
    n = len(graded)
    if not columns:  # rows without a field: an empty line each, as ``csv`` writes them
        yield "\n" * (n + 1)
        return
    yield ",".join(_quoted(c) for c in columns) + "\n"
    # a graded file's rows a row group at a time (``GradedRows.parts``): each piece's columns
    # are let go when it is written
    for piece in graded.parts() if isinstance(graded, GradedRows) else [graded]:
        m = len(piece)
        texts: dict[str, Any] = {}  # per coded column of the piece: each value's cell, once
        for start in range(0, m, _CSV_ROWS):
            stop = min(m, start + _CSV_ROWS)
            cells = [_column_cells(piece, c, start, stop, texts) for c in columns]
            yield _csv_lines(cells)


_CSV_ROWS = 65_536
"""Scorecard rows formatted per step (``scorecard_text``)."""


_COMMA, _EMPTY, _NEWLINE, _QUOTED_EMPTY = (
    pa.scalar(t, pa.large_string()) for t in (",", "", "\n", '""')
)


def _csv_lines(cells: Sequence[Any]) -> str:
    """Rows of cells (one Arrow string array per column) as CSV lines: joined in Arrow, so no
    Python string is made per row or cell (40 million golden rows of 14 cells: most of
    publish's time at ten million raw rows)."""
    if len(cells) == 1:  # ``csv`` writes a row of one empty field as "" (else a blank line)
        cells = [pc.if_else(pc.equal(cells[0], _EMPTY), _QUOTED_EMPTY, cells[0])]
    rows = pc.binary_join_element_wise(*cells, _COMMA)
    lines = pc.binary_join_element_wise(rows, _EMPTY, _NEWLINE)  # each row, then a line break
    _, offsets, data = lines.buffers()
    ends = np.frombuffer(offsets, dtype=np.int64, count=len(lines) + 1, offset=8 * lines.offset)
    return bytes(memoryview(data)[int(ends[0]) : int(ends[-1])]).decode("utf-8")


def _column_cells(
    graded: Sequence[Mapping[str, Any]], name: str, start: int, stop: int, texts: dict[str, Any]
) -> Any:
    """Column ``name``'s cells of rows ``start:stop`` as an Arrow ``large_string`` array:
    a coded column's values formatted once per piece (``texts``) and taken by code, hex keys
    spelled from their bytes, other cells one by one."""
    if isinstance(graded, GradedRows):
        col = graded.column(name)
        if isinstance(col, Coded) and isinstance(col.values, HexKeys):  # hex: never quoted
            return col.values.arrow(col.code_view()[start:stop])
        if isinstance(col, Coded) and isinstance(col.values, list):
            text = texts.get(name)
            if text is None:
                text = texts[name] = pa.array(
                    [_quoted(_cell(v)) for v in col.values], pa.large_string()
                )
            return text.take(pa.array(col.code_view()[start:stop]))
        return pa.array([_quoted(_cell(v)) for v in col[start:stop]], pa.large_string())
    return pa.array([_quoted(_cell(g.get(name))) for g in graded[start:stop]], pa.large_string())


def _csv_special() -> re.Pattern[str]:
    """The characters ``csv.writer`` (QUOTE_MINIMAL, lineterminator ``\\n``) quotes a field
    for, asked of the running Python's csv module (whether ``\\r`` is one has changed)."""
    out = []
    for c in ',"\r\n\t ':
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([c, "x"])
        if buf.getvalue().startswith('"'):
            out.append(re.escape(c))
    return re.compile("|".join(out))


_SPECIAL = _csv_special()


def _quoted(text: str) -> str:
    """A CSV field as ``csv.writer`` (QUOTE_MINIMAL, ``,`` and ``"``) writes it in a row of
    several fields: quoted, its quotes doubled, when it holds a delimiter, a quote or a line
    break."""
    if _SPECIAL.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text
