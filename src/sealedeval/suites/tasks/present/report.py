"""A ``tasks`` suite's part of report.md, from its result.json section alone.

Completeness per engine; the headline table (accuracy with its Wilson interval, the rate with
errors counted as failures, mean over repeats, cost and latency per solved item); the paired
comparisons and pre-registered hypotheses; judges; every metric with its interval, method and
denominators (the same table publish renders for any suite); and the item-level table: each
item's verdict per engine (passed repeats / completed repeats), up to ``MAX_ITEMS`` rows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sealedeval.render.comparisons import comparison_block, has_records
from sealedeval.render.md import NOT_PRICED, num, pval, rate_ci, table
from sealedeval.render.metrics import added_engines, engine_label, metric_table, no_figure_note

MAX_ITEMS = 200


def _ci(lo: Any, hi: Any) -> str:
    if lo is None or hi is None:
        return "-"
    return f"[{num(lo)}, {num(hi)}]"


def _money(x: Any, spent: Any = None) -> str:
    """A cost cell; ``not priced`` when the engine's total spend (``spent``) is exactly zero:
    the dispatcher prices every token it is told a price for, so a spend of zero over completed
    calls means the engine has no price in the config (result.json's ``engines`` section says
    which), and "$0.000000" would read as "free"."""
    if spent is not None and float(spent) == 0.0:
        return NOT_PRICED
    return "n/a" if x is None else f"${float(x):.6f}"


def _seconds(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.3f} s"


def _completeness(section: Mapping[str, Any], added: Collection[str]) -> list[str]:
    counts = (section.get("seal") or {}).get("counts") or {}
    if not counts:
        return []
    return [
        table(
            ["engine", "requests", "ok", "error", "missing", "state"],
            [
                [
                    engine_label(e, e in added),
                    c["requests"],
                    c["ok"],
                    c["error"],
                    c["missing"],
                    "complete" if c["complete"] else "INCOMPLETE",
                ]
                for e, c in counts.items()
            ],
        ),
        "",
    ]


def _headline(a: Mapping[str, Any], added: Collection[str]) -> list[str]:
    rows = []
    for name, e in (a.get("engines") or {}).items():
        if "accuracy" not in e:
            continue
        rep = e.get("repeats") or {}
        mean = rep.get("mean_over_answers") or {}
        cost = e.get("cost") or {}
        rows.append(
            [
                engine_label(name, name in added),
                rate_ci(e["accuracy"]),
                rate_ci(e["accuracy_errors_as_failures"]),
                f"{num(mean.get('estimate'))} {_ci(mean.get('lo'), mean.get('hi'))}"
                if mean
                else "-",
                f"{e['n_items_ok']} / {e['n_items_error']}",
                _money(cost.get("cost_per_solved_item_usd"), cost.get("cost_usd")),
                _seconds(cost.get("latency_per_solved_item_s")),
            ]
        )
    if not rows:
        return []
    d = a.get("design") or {}
    return [
        f"Primary grader `{d.get('primary')}`; repeats reduced per item by "
        f"`{d.get('reduce')}`; {d.get('repeats')} repeat(s) at temperature "
        f"{d.get('temperature')}; solver `{d.get('solver')}`.",
        "",
        table(
            [
                "engine",
                "accuracy (items, Wilson 95%)",
                "errors as failures",
                "mean over repeats",
                "items ok / error",
                "cost per solved item",
                "latency per solved item",
            ],
            rows,
        ),
        "",
    ]


def _comparisons(a: Mapping[str, Any]) -> list[str]:
    cs = a.get("comparisons") or []
    out: list[str] = []
    if has_records(cs):
        out += [
            "### Paired comparisons",
            "",
            "Every engine pair on the items both completed (item score: the share of its "
            "repeats that pass); Holm adjusts within each family: `engines`, the pairs of the "
            "sealed design, and `exploratory`, any pair with an engine added after the seal.",
            "",
            *comparison_block([c["paired"] for c in cs]),
        ]
    elif cs:
        out += [
            "### Paired comparisons",
            "",
            table(
                [
                    "a",
                    "b",
                    "items",
                    "a better",
                    "b better",
                    "difference a − b (95%)",
                    "sign test p",
                ],
                [
                    [
                        c["a"],
                        c["b"],
                        c["n_items"],
                        c["a_better"],
                        c["b_better"],
                        f"{num(c['difference'])} {_ci(c['lo'], c['hi'])}",
                        pval(c["p"], 4),
                    ]
                    for c in cs
                ],
            ),
            "",
        ]
    hs = a.get("hypotheses") or []
    if hs:
        out += [
            "### Pre-registered hypotheses",
            "",
            table(
                ["id", "hypothesis", "items", "p", "p adjusted", "alpha", "result"],
                [
                    [
                        h["id"],
                        f"{h['a']} {_DIRECTION[h['direction']]} {h['b']}",
                        h["n_items"],
                        pval(h["p"], 4),
                        f"{pval(h['p_adjusted'], 4)} ({h['correction']})",
                        num(h["alpha"]),
                        "rejected H0" if h["rejected"] else "not rejected",
                    ]
                    for h in hs
                ],
            ),
            "",
        ]
    return out


_DIRECTION = {"greater": "better than", "less": "worse than", "two-sided": "differs from"}


def _judges(a: Mapping[str, Any]) -> list[str]:
    js = a.get("judges") or {}
    if not js:
        return []
    out = ["### Judges", ""]
    rows = []
    for gid, j in js.items():
        for eng, s in (j.get("answers") or {}).items():
            oc = s.get("order_consistent")
            rows.append(
                [
                    gid,
                    j["engine"],
                    eng,
                    rate_ci(s["pass"]),
                    s["n_missing"],
                    rate_ci(oc) if oc else "-",
                    num(s.get("kappa_with_primary")),
                ]
            )
    out += [
        table(
            [
                "grader",
                "judge",
                "answers of",
                "judge PASS",
                "no verdict",
                "order consistent",
                "κ with primary",
            ],
            rows,
        ),
        "",
    ]
    cal_rows = []
    for gid, j in js.items():
        for variant, c in ((j.get("calibration") or {}).get("variants") or {}).items():
            cal_rows.append(
                [gid, j["engine"], variant, c["n"], num(c["agreement"]), num(c["kappa"])]
            )
    if cal_rows:
        out += [
            "Calibration against the human labels:",
            "",
            table(["grader", "judge", "order", "labels", "agreement", "Cohen's κ"], cal_rows),
            "",
        ]
    return out


def _est(iv: Mapping[str, Any]) -> str:
    return f"{num(iv.get('estimate'))} {_ci(iv.get('lo'), iv.get('hi'))}"


def _human_audit(a: Mapping[str, Any]) -> list[str]:
    """The sealed human audit: judge rate, human rate, PPI++ estimate side by side."""
    ha = a.get("human_audit") or {}
    if not ha:
        return []
    out = [
        "### Human audit of the judge",
        "",
        f"Sealed subset: {ha['n']} items drawn from the rubric hash ({', '.join(ha['items'])}); "
        f"labels from `{ha['labels']}` ({ha['status']}). The judge `{ha['judge']}` "
        f"(grader `{ha['grader']}`) graded every answer; a person labelled the subset's. "
        "Prediction-powered inference (PPI++, Angelopoulos, Duchi & Zrnic 2024) corrects the "
        "judge's rate by its errors on the labelled answers; normal 95% intervals. Effective n: "
        "the human labels a human-only estimate would need for PPI++'s standard error.",
        "",
    ]
    rows = []
    for eng, s in (ha.get("engines") or {}).items():
        p = s.get("ppi")
        rows.append(
            [
                eng,
                rate_ci(s["judge_pass"]),
                f"{s['n_labelled']}/{s['n_subset_answers']}",
                _est(p["classical"]) if p else "-",
                _est(p["ppi_pp"]) if p else "-",
                num(p["lam"], 2) if p else "-",
                num(p["effective_n"], 1) if p else "-",
                num(p["width_ratio"], 2) if p else "-",
            ]
        )
    out += [
        table(
            [
                "answers of",
                "judge PASS (raw)",
                "labelled",
                "human PASS (subset)",
                "PPI++ judge PASS",
                "λ",
                "effective n",
                "width vs human-only",
            ],
            rows,
        ),
        "",
    ]
    return out


def _sequential(a: Mapping[str, Any]) -> list[str]:
    """The sealed sequential rule, each look it made, where it stopped and the calls saved."""
    sq = a.get("sequential") or {}
    if not sq:
        return []
    ea, eb = sq["compare"]
    out = [
        "### Sequential comparison",
        "",
        f"Sealed rule: `{ea}` against `{eb}` on the paired item score difference a − b, in the "
        f"sealed item order, looked at after {', '.join(str(n) for n in sq['planned_looks'])} "
        f"items per engine (max n {sq['max_n']}); stop at the first look whose "
        f"{sq['method']} at α = {num(sq['alpha'])} (over all looks together) excludes 0.",
        "",
    ]
    rows = [
        [str(i), str(lk["n"]), num(lk["mean"]), _ci(lk["lo"], lk["hi"]), lk["decision"]]
        for i, lk in enumerate(sq.get("looks") or [], 1)
    ]
    if rows:
        out += [table(["look", "n", "a − b", "confidence sequence", "decision"], rows), ""]
    out.append(
        f"Stopped at n = {sq['stopped_at']} of {sq['max_n']} ({sq['decision']}): "
        f"{sq['items_saved']} items per engine and {sq['calls_saved']} answer calls not made "
        f"({sq['calls_made']} made of {sq['calls_at_max_n']} at max n)."
    )
    if sq.get("violation"):
        out.append(f"**The run broke the sealed rule: {sq['violation']}.**")
    out.append("")
    return out


def _metrics(a: Mapping[str, Any], added: Collection[str]) -> list[str]:
    ms = a.get("metrics") or []
    if not ms:
        return ["No metrics were reported.", ""]
    # no spend at all over an engine's completed calls: it has no price (see ``_money``)
    unpriced = {
        str(name)
        for name, e in (a.get("engines") or {}).items()
        if (e.get("cost") or {}).get("cost_usd") == 0
    }
    note = no_figure_note(ms)
    return [
        "### Metrics",
        "",
        metric_table(ms, unpriced, added),
        "",
        "Estimates are over completed units (n ok); errored units (n error) are infrastructure "
        "failures, counted and never graded as model failures.",
        "",
        *([note, ""] if note else []),
    ]


def _cell(v: Mapping[str, Any] | None) -> str:
    if not v or not v.get("n"):
        return "error"
    passed = "pass" if v.get("passed") else "fail"
    n = int(v["n"])
    if n == 1:
        return passed
    return f"{passed} ({round(float(v['mean']) * n)}/{n})"


def _items(a: Mapping[str, Any], added: Collection[str]) -> list[str]:
    items = a.get("items") or {}
    if not items:
        return []
    engines = sorted({e for row in items.values() for e in row})
    ids = list(items)
    out = [
        "### Items",
        "",
        table(
            ["item", *(engine_label(e, e in added) for e in engines)],
            [[i, *(_cell(items[i].get(e)) for e in engines)] for i in ids[:MAX_ITEMS]],
        ),
        "",
    ]
    if len(ids) > MAX_ITEMS:
        out += [
            f"The first {MAX_ITEMS} of {len(ids)} items; every graded row is in the scorecard CSV.",
            "",
        ]
    return out


def render(name: str, section: Mapping[str, Any]) -> str:
    a = section.get("analysis") or {}
    added = added_engines(section)
    out = [f"## {name}", ""]
    out += _completeness(section, added)
    out += _headline(a, added)
    out += _comparisons(a)
    out += _judges(a)
    out += _human_audit(a)
    out += _sequential(a)
    out += _metrics(a, added)
    out += _items(a, added)
    return "\n".join(out)
