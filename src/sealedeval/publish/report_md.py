"""report.md: rendered from result.json's dict only, so it re-derives byte for byte.

Each suite's section comes from its ``report_sections`` hook when it has one, else from the
metric schema every analysis emits (``publish.generic``); publish imports no suite module, it
looks suites up in the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.plugins import presentation_hook
from sealedeval.publish import generic
from sealedeval.publish.figures import specs, stem
from sealedeval.publish.first_page import FOREST, summary_markdown
from sealedeval.render.figures import FigureSpec
from sealedeval.render.md import price_text, table
from sealedeval.render.metrics import added_engines, added_in_any, engine_label


def section_markdown(
    name: str,
    section: Mapping[str, Any],
    engines: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    render = presentation_hook(name, "report_sections")
    if render is not None:
        return str(render(section))
    return generic.report_section(name, section, engines)


def figure_refs(suite: str, figs: list[FigureSpec], number: dict[str, int]) -> list[str]:
    """The suite's figures as Markdown images (SVG; the PNG lies beside it), each followed by its
    numbered caption. report.pdf places the PNG wherever report.md references a figure."""
    if not figs:
        return []
    out = [f"### {suite}: figures", ""]
    for f in figs:
        s = stem(suite, f)
        n = number[s]
        out += [f"![Figure {n}](figures/{s}.svg)", f"*Figure {n}. {f.caption}*", ""]
    return out


APPENDIX = "## Appendix: the tables behind the summary"
"""The heading between the summary page and the detail; report.pdf breaks the page here."""


def render_report(result: Mapping[str, Any]) -> str:
    """report.md: the one-page summary first (``publish.summary``, the same one report.pdf and
    report.html open with), then the appendix: seal and completeness, every suite's section
    and figures, engines, the raw-run manifest."""

    out = [
        f"# {result['project']} — evaluation report",
        "",
        f"Rubric lock sha256 `{result['rubric_lock_sha256']}`; config "
        f"{', '.join(result['config']['sources'])} "
        f"(sha256 `{result['config']['sha256'][:16]}`).",
        "",
        summary_markdown(result),
        APPENDIX,
        "",
        "## Seal and completeness",
        "",
    ]
    rows = []
    for name, s in result["suites"].items():
        seal = s["seal"]
        added = added_engines(s)
        for eng, c in seal["counts"].items():
            rows.append(
                [
                    name,
                    engine_label(eng, eng in added),
                    seal["status"]
                    if (s.get("as_sealed") or {}).get("ok", True)
                    else f"NOT AS SEALED ({seal['status']} runs)",
                    ", ".join(x[:12] for x in seal["seal_commits"]) or "-",
                    c["requests"],
                    c["ok"],
                    c["error"],
                    c["missing"],
                    "complete" if c["complete"] else "INCOMPLETE",
                ]
            )
    out.append(
        table(
            [
                "suite",
                "engine",
                "seal",
                "seal commit",
                "requests",
                "ok",
                "error",
                "missing",
                "state",
            ],
            rows,
        )
    )
    out += [
        "",
        "Errors are infrastructure failures (never graded as model failures) and are "
        "never dropped: each table shows n_ok and n_error, and headline rates are given over "
        "completed requests and with errors counted as failures.",
        "",
    ]
    figs = specs(result)
    number = {stem(suite, f): i for i, (suite, f) in enumerate(figs, start=1)}
    for name, s in result["suites"].items():
        out += [section_markdown(name, s, result.get("engines")), ""]
        own = [f for suite, f in figs if suite == name and f.name != FOREST]
        out += figure_refs(name, own, number)
    out += ["## Engines", ""]
    late = added_in_any(result)
    out.append(
        table(
            ["engine", "kind", "model", "price in/out per Mtok"],
            [
                [
                    engine_label(k, k in late),
                    e.get("kind", ""),
                    e.get("model", ""),
                    price_text(e),
                ]
                for k, e in result["engines"].items()
            ],
        )
    )
    out += ["", "## Raw-run manifest", ""]
    out.append(
        table(
            ["file", "rows", "sha256"],
            [[m["path"], m["rows"], f"`{m['sha256'][:16]}…`"] for m in result["manifest"]],
        )
    )
    out += [
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(result["versions"].items())) + ".",
        "",
    ]
    return "\n".join(out)
