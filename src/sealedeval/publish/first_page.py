"""The first page, read at a glance: per suite one table and one forest figure.

A paper's Table 1 and Figure 1: the table gives per engine the headline with its 95% interval,
how many of the planned requests came back ok, and a status word; the figure draws each
pre-registered comparison's difference with its interval against a line at zero, over the band
of differences the comparison could not have detected (±MDE, where it records one). Prose is
kept for what a table cannot say: the seal and audit line, the suite's note, and one compact
verdict per comparison.

Everything comes from ``publish.summary``'s records (``SuiteSummary``), which are read from
result.json only, so report.md, report.html and report.pdf show the same table and the same
figure (the figure is planned by ``publish.figures.specs`` like any other and drawn by the
figure workers; its bytes depend on result.json alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sealedeval.publish.summary import (
    Comparison,
    Headline,
    SuiteSummary,
    suite_summaries,
    summary_lines,
)
from sealedeval.render.figures import FigureSpec, ForestRow, forest_figure
from sealedeval.render.md import num, table
from sealedeval.render.metrics import engine_label
from sealedeval.seal.standing import NOT_AS_SEALED

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FOREST = "summary-comparisons"
"""The forest figure's name: ``results/figures/<suite>_summary-comparisons.{png,svg}``."""

TABLE_SAYS = ("Completeness:", "Headline", "Pre-registered comparisons:")
"""Lines of ``summary_lines`` the table and the figure say instead (every other line, such as
the seal's, stays on the first page as prose)."""

FOREST_CAPTION = (
    "{suite}: the pre-registered comparisons, each difference with its 95% interval (numbers "
    "on the right); dashed line: no difference; grey band: ± the minimum detectable effect at "
    "the plan's power, where the comparison records one."
)


def prose_lines(s: SuiteSummary) -> list[str]:
    """What a table cannot say: the seal and audit line, the note, anything else the summary
    adds (Markdown, without a bullet)."""
    return [line for line in summary_lines(s) if not line.startswith(TABLE_SAYS)]


def _interval(h: Headline) -> str:
    if h.estimate is None:
        return "n/a"
    if h.lo is None or h.hi is None:
        return f"{num(h.estimate)}, no interval"
    return f"{num(h.estimate)} [{num(h.lo)}, {num(h.hi)}]"


def _status(ok: int, error: int, missing: int, complete: bool) -> str:
    parts = [f"{error} error"] if error else []
    parts += [f"{missing} missing"] if missing else []
    word = "complete" if complete else "INCOMPLETE"
    return word + (f" ({', '.join(parts)})" if parts else "")


def headline_header(s: SuiteSummary) -> list[str]:
    return ["engine", f"{s.label} [95% CI]", "ok / planned", "status"]


def interval_note(s: SuiteSummary) -> str:
    """How the table's intervals were made and over what unit ('' when not recorded)."""
    methods = sorted({h.method for h in s.headline if h.method})
    units = sorted({h.unit for h in s.headline if h.unit})
    parts = [", ".join(methods)] if methods else []
    parts += [f"one unit per {' / '.join(units)}"] if units else []
    return f"95% intervals: {'; '.join(parts)}." if parts else ""


def headline_rows(s: SuiteSummary) -> list[list[str]]:
    """One row per headline number (engine, and the group the suite shows apart), then one per
    engine that ran but has no headline number, and one per sealed engine without rows: nothing
    that ran or was sealed is left out, and an engine added after the seal says so."""
    counts = {c.engine: c for c in s.completeness}
    rows: list[list[str]] = []
    seen: set[str] = set()

    def run(engine: str) -> list[str]:
        c = counts.get(engine)
        if c is None:
            return ["-", "no runs"]
        if c.absent:
            return ["-", f"no rows: sealed engine missing ({NOT_AS_SEALED})"]
        return [f"{c.ok} / {c.requests}", _status(c.ok, c.error, c.missing, c.complete)]

    for h in s.headline:
        name = engine_label(h.engine, h.added_after_seal) if h.engine else "all"
        who = name + (f" ({h.where})" if h.where else "")
        rows.append([who, _interval(h), *run(h.engine)])
        seen.add(h.engine)
    for engine, c in counts.items():
        if engine not in seen:
            rows.append([engine_label(engine, c.added_after_seal), "n/a", *run(engine)])
    return rows


def headline_table(s: SuiteSummary) -> str:
    """The suite's Table 1 (Markdown)."""
    return table(headline_header(s), headline_rows(s))


def forest_rows(comparisons: Sequence[Comparison]) -> list[ForestRow]:
    out = []
    for c in comparisons:
        if c.estimate is None:
            note = "n/a"
        elif c.lo is None or c.hi is None:
            note = f"{num(c.estimate)}, no interval"
        else:
            note = f"{num(c.estimate)} [{num(c.lo)}, {num(c.hi)}]"
        label = f"{c.id} {c.claim}".strip()
        out.append(ForestRow(label, c.estimate, c.lo, c.hi, c.mde, note))
    return out


def forest_spec(s: SuiteSummary) -> FigureSpec | None:
    """The suite's Figure 1, or None when it has no comparison to draw."""
    if not s.comparisons:
        return None
    rows = forest_rows(s.comparisons)
    title = f"{s.suite}: pre-registered comparisons"

    def draw() -> Figure:
        return forest_figure(rows, title, "difference A − B (95% interval)")

    return FigureSpec(name=FOREST, caption=FOREST_CAPTION.format(suite=s.suite), draw=draw)


def verdict_line(c: Comparison) -> str:
    """``P1 C > A: **not shown (p = 0.250)**; could not have detected the difference seen``."""
    ident = f"{c.id} " if c.id else ""
    blind = "; could not have detected the difference seen" if c.detectable is False else ""
    return f"{ident}{c.claim}: **{c.verdict}**{blind}"


def verdict_lines(s: SuiteSummary) -> list[str]:
    if not s.comparisons:
        return ["Pre-registered comparisons: none in this run."]
    out = [verdict_line(c) for c in s.comparisons]
    if s.more_comparisons:
        out.append(f"and {s.more_comparisons} more in the suite's section of the appendix")
    return out


def suite_markdown(s: SuiteSummary, figure: tuple[int, str] | None) -> list[str]:
    """The suite's block of the first page: prose, Table 1, Figure 1 (``figure`` = its number
    and file stem, when it has one) and the verdicts, as report.md lines."""
    out = [line for p in prose_lines(s) for line in (p, "")]
    out += [headline_table(s), ""]
    note = interval_note(s)
    if note:
        out += [note, ""]
    if figure is not None:
        n, stem = figure
        caption = FOREST_CAPTION.format(suite=s.suite)
        out += [f"![Figure {n}](figures/{stem}.svg)", f"*Figure {n}. {caption}*", ""]
    out += [f"- {line}" for line in verdict_lines(s)]
    out.append("")
    return out


def summary_markdown(
    result: Mapping[str, Any], *, audit: Mapping[str, str] | str | None = None
) -> str:
    """The summary page as Markdown: a heading, then per suite a heading, the lines a table
    cannot say, its headline table, its forest figure and its verdicts
    (``suite_markdown``)."""
    out = [
        "## Summary",
        "",
        f"Status: **{result.get('status', 'unknown')}**. Each line below is taken from "
        "result.json; the tables behind it are in the appendix.",
        "",
    ]
    n = 0
    for s in suite_summaries(result, audit=audit):
        out += [f"### {s.suite}", ""]
        figure = None
        if s.comparisons:  # its forest figure (``publish.figures.summary_specs``)
            n += 1
            figure = (n, f"{s.suite}_{FOREST}")
        out += suite_markdown(s, figure)
    return "\n".join(out)
