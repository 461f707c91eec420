"""The ``imported`` suite's part of report.md (presentation: not sealed).

The harness's own headline beside ours, per engine, scorer and log, with a flag where they
differ; then the completeness table and every metric, as for any suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.render.comparisons import comparison_block, has_records
from sealedeval.render.md import num, table
from sealedeval.render.metrics import added_engines, completeness_table, metric_table


def render(name: str, section: Mapping[str, Any]) -> str:
    an = section.get("analysis") or {}
    harness = str(an.get("harness", "inspect"))
    out = [
        f"## {name}",
        "",
        f"Imported from {harness} logs; our numbers are recomputed from the logs' samples.",
        "",
    ]
    pre = an.get("pre_registration") or {}
    if pre:
        out.append(
            f"**{pre['status']}** — {pre['after_seal']} of {pre['samples']} samples started "
            f"after the seal"
            + (
                f"; {pre['predating_seal']} before it (first sample {pre['first_sample_at']})"
                if pre.get("predating_seal")
                else ""
            )
            + "."
        )
        out.append("")
    edits = list(an.get("log_edits") or [])
    if edits:
        out += [
            f"**{len(edits)} edit(s) recorded in the logs** (applied in place by the harness; "
            "the numbers below include them):",
            "",
        ]
        for e in edits:
            what = (
                f"{e['engine']} sample {e['sample']} epoch {e['epoch']} {e['scorer']}: "
                f"{e.get('from')!r} → {e.get('value')!r}"
                if "sample" in e
                else f"{e['engine']} log {e.get('log')}: {e.get('update')}"
            )
            out.append(
                f"- {what} by {e.get('author') or 'unknown'} at {e.get('timestamp') or '?'}"
                + (f" ({e['reason']})" if e.get("reason") else "")
            )
        out.append("")
    for eng, e in sorted((an.get("engines") or {}).items()):
        for sha, status in sorted((e.get("log_status") or {}).items()):
            if status and status != "success":
                out.append(
                    f"**{eng}: log {sha[:12]} has status {status}** (the harness did not "
                    "finish it: samples it lacks are error rows, counted below)."
                )
        if e.get("limits_hit"):
            out.append(
                f"**{eng}: {e['limits_hit']} sample(s) hit a limit** (message, token, time...): "
                "error rows, not model failures."
            )
    if any(
        (s and s != "success") or e.get("limits_hit")
        for e in (an.get("engines") or {}).values()
        for s in [*(e.get("log_status") or {}).values(), ""]
    ):
        out.append("")
    rows = [
        [
            eng,
            h["scorer"],
            str(h.get("metric", "accuracy")),
            h["log"][:12],
            _value(h["harness"]),
            _value(h["ours"]),
            {True: "same", False: "**DIFFERS**"}.get(h["match"], "reported only"),
        ]
        for eng, e in sorted((an.get("engines") or {}).items())
        for h in e.get("headline") or []
    ]
    if rows:
        out.append(table(["engine", "scorer", "metric", "log", harness, "ours", "check"], rows))
        out.append("")
    libs = an.get("rederived_with") or {}
    if libs:
        # a corpus metric re-derived through a library depends on its release
        out += [
            "Re-derived with "
            + ", ".join(f"{lib} {v}" for lib, v in sorted(libs.items()))
            + " (another release may tokenise differently).",
            "",
        ]
    notes = [
        f"- {eng}/{h['scorer']} {h.get('metric')}: {h['how']}"
        for eng, e in sorted((an.get("engines") or {}).items())
        for h in e.get("headline") or []
        if h.get("match") is None and h.get("how")
    ]
    if notes:
        out += [*notes, ""]
    for eng, e in sorted((an.get("engines") or {}).items()):
        for h in e.get("headline") or []:
            c = h.get("counts")
            if c:
                out.append(
                    f"- {eng}/{h['scorer']}: {harness} counted "
                    f"{_counts(c['harness'])} (passed / failed / error); ours {_counts(c['ours'])}"
                )
    for eng, e in sorted((an.get("engines") or {}).items()):
        for h in e.get("headline") or []:
            if "ours_excluding_errors" in h:
                out.append(
                    f"- {eng}/{h['scorer']}: {harness} scores some samples we keep as error rows "
                    f"(limits); recomputed its way {num(h['ours'])}, ours without them "
                    f"{num(h['ours_excluding_errors'])}"
                )
    if any(h.get("counts") for e in (an.get("engines") or {}).values() for h in e["headline"]):
        out.append("")
    for m in an.get("headline_mismatches") or []:
        out.append(f"- headline mismatch: {m}")
    if an.get("headline_mismatches"):
        out.append("")
    counts = (section.get("seal") or {}).get("counts") or {}
    if counts:
        out.append(completeness_table(counts, added_engines(section)))
        out.append("")
    comps = list(an.get("comparisons") or [])
    if has_records(comps):
        out += [
            "### Paired comparisons",
            "",
            "Every pair of imported engines on the samples both have (sample score: the share "
            "of its epochs the primary scorer passes); all pairs are one family for Holm.",
            "",
            *comparison_block([c["paired"] for c in comps]),
        ]
    metrics = list(an.get("metrics") or [])
    if metrics:
        out += [metric_table(metrics, added_engines(section)), ""]
    out += [
        "Errored, cancelled, limited or unscored samples are counted (n error), never graded as "
        "model failures.",
        "",
    ]
    return "\n".join(out)


def _value(v: Any) -> str:
    """A headline number, or what the harness wrote when it is not one (``N/A``); ``-`` for
    a value we could not re-derive."""
    if v is None:
        return "-"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return num(float(v))
    return str(v)


def _counts(c: Mapping[str, Any]) -> str:
    return " / ".join(str(c.get(k)) for k in ("passed", "failed", "error"))
