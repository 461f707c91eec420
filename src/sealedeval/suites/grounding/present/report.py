"""The grounding section of report.md, rendered from the suite's result.json section only.

Presentation, not part of the seal (``GroundingSuite.rubric_inputs`` leaves ``present/`` out):
changing how a number is shown never changes what was pre-registered. The condition letters and
names come from :mod:`..conditions`, the module that renders them into the prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sealedeval.render.comparisons import comparison_block, has_records
from sealedeval.render.md import num, p_compact, pct, pval, rate_ci, table
from sealedeval.render.metrics import added_engines, engine_label
from sealedeval.suites.grounding.conditions import CONDITION_NAMES, CONDITIONS

Label = Callable[[str], str]
"""How an engine's name is shown: ``engine_label`` with whether it was added after the seal."""

_A_METRICS = (
    ("m1", "M1 value = reference"),
    ("m2", "M2 id + version"),
    ("m7", "M7 = competing rule"),
    ("m5", "M5 refusal (unanswerable)"),
    ("unjustified_abstention", "unjustified abstention"),
)


def _clustered(b: Mapping[str, Any] | None) -> str:
    """'0.667 [0.412, 0.921] (12 items)': item mean with the item-clustered 95% interval."""
    if not b or not b.get("n_items"):
        return "n/a"
    lo, hi = b.get("clustered_lo"), b.get("clustered_hi")
    ci = f" [{num(lo)}, {num(hi)}]" if lo is not None and hi is not None else " [n/a]"
    return f"{num(b['item_mean'])}{ci} ({b['n_items']} items)"


def _wilson(b: Mapping[str, Any] | None) -> str:
    if not b:
        return "n/a"
    if b.get("k") is None:
        return f"{num(b.get('rate'))} (n={b.get('n', 0)})"
    return rate_ci(b)


def _mean(b: Mapping[str, Any] | None, digits: int = 3) -> str:
    if not b or not b.get("n_items"):
        return "n/a"
    return f"{num(b['item_mean'], digits)} ({b['n_items']} items)"


def _counts(b: Mapping[str, Any]) -> str:
    return f"{b['n_ok']}/{b['n_total']} ({b['n_error']} err)"


def _m1_overview(a: Mapping[str, Any], lab: Label) -> list[str]:
    rows = []
    for eng, e in a["engines"].items():
        for role, r in e["roles"].items():
            ta = r.get("track_a", {})
            if not ta:
                continue
            label = lab(eng) if role == "primary" else f"{lab(eng)} ({role} model role)"
            rows.append([label, *[_clustered(ta.get(c, {}).get("m1")) for c in CONDITIONS]])
    if not rows:
        return []
    return [
        "### Track A at a glance: M1 by engine and condition",
        "",
        "Item means (replicates averaged within item first) with 95% intervals clustered by "
        "item; answerable items only.",
        "",
        table(["engine", *[f"{c} {CONDITION_NAMES[c]}" for c in CONDITIONS]], rows),
        "",
    ]


def _track_a(ta: Mapping[str, Any]) -> list[str]:
    conds = [c for c in CONDITIONS if c in ta]
    rows = []
    for c in conds:
        b = ta[c]
        rows.append(
            [
                f"{c} {CONDITION_NAMES[c]}",
                _counts(b),
                rate_ci(b["parse"]),
                *[_wilson(b[m]) for m, _ in _A_METRICS],
            ]
        )
    out = [
        "Call-level rates with Wilson 95% intervals (completed calls):",
        "",
        table(["condition", "ok/total", "parse success", *[n for _, n in _A_METRICS]], rows),
        "",
        "Item-level means with 95% intervals clustered by item, and M1 with errored calls "
        "counted as failures (a lower bound):",
        "",
    ]
    rows = []
    for c in conds:
        b = ta[c]
        rows.append(
            [
                f"{c} {CONDITION_NAMES[c]}",
                *[_clustered(b[m]) for m, _ in _A_METRICS],
                _wilson(b["m1"].get("errors_as_fail")),
            ]
        )
    out.append(table(["condition", *[n for _, n in _A_METRICS], "M1 (errors = fail)"], rows))
    fams = sorted({f for c in conds for f in ta[c].get("m1_by_family", {})})
    if fams:
        out += ["", "M1 by item family (item means):", ""]
        out.append(
            table(
                ["condition", *fams],
                [[c, *[_mean(ta[c].get("m1_by_family", {}).get(f)) for f in fams]] for c in conds],
            )
        )
    return [*out, ""]


def _comparisons(comps: Sequence[Mapping[str, Any]]) -> list[str]:
    if not comps:
        return []
    rows = [
        [
            c["id"],
            c["hypothesis"],
            c["metric"],
            f"{c['a']} vs {c['b']}",
            c["item_set"],
            c["direction"],
            f"{c['n_items']}" + (f" ({c['n_missing']} missing)" if c["n_missing"] else ""),
            c["a_better"],
            c["b_better"],
            c["ties"],
            num(c["mean_diff"]),
            pval(c["p"], 4),
        ]
        for c in comps
    ]
    return [
        "Pre-declared paired comparisons: exact two-sided sign test on item means (ties "
        "dropped; an item enters only if it has a completed call under both conditions).",
        "",
        table(
            [
                "id",
                "hypothesis",
                "metric",
                "A vs B",
                "items",
                "predicted",
                "n items",
                "A better",
                "B better",
                "ties",
                "mean diff",
                "p (two-sided)",
            ],
            rows,
        ),
        "",
        *_detectable(comps),
    ]


def _detectable(comps: Sequence[Mapping[str, Any]]) -> list[str]:
    """What each comparison could have detected (issue 15): absent from older result.json."""
    if not has_records(comps):
        return []
    return [
        "What each comparison could have detected (Holm across this engine's pre-declared "
        "comparisons, reported beside the raw p the plan reads; MDE at 80% power on the items "
        "at hand):",
        "",
        *comparison_block([c["paired"] for c in comps]),
    ]


def _evidence(h: Mapping[str, Any], comps: Mapping[str, Mapping[str, Any]]) -> str:
    ev = h.get("evidence", {})
    if "comparisons" in ev:
        parts = []
        for cid in ev["comparisons"]:
            c = comps.get(cid)
            if c is not None:
                parts.append(
                    f"{cid}: {c['a']}−{c['b']} {num(c['mean_diff'])}, "
                    f"{c['a_better']}:{c['b_better']}, {p_compact(c['p'], 4)}"
                )
        return "; ".join(parts) or "not run in this profile"
    if "estimate" in ev:
        e = ev["estimate"] or {}
        if e.get("estimate") is None:
            return "not estimable in this profile"
        return (
            f"{num(e['estimate'])} [{num(e['lo'])}, {num(e['hi'])}] "
            f"({e['n_temp']} TEMP vs {e['n_comp']} COMP items, bootstrap)"
        )
    if "m2" in ev:
        return "M2: " + ", ".join(f"{c} {pct(v)}" for c, v in ev["m2"].items())
    if "b1" in ev:
        return (
            "; ".join(
                f"{c}: gap {pct(v['gap_detected'])}, field {pct(v['field_named'])}, "
                f"owner {pct(v['owner_named'])}"
                for c, v in ev["b1"].items()
            )
            or "not run in this profile"
        )
    if "critical_errors" in ev:
        return ", ".join(f"{c}: {v}" for c, v in ev["critical_errors"].items()) or "not run"
    if "routing_correct" in ev:
        return ", ".join(f"{o}: {pct(v)}" for o, v in ev["routing_correct"].items()) or "not run"
    return ""


def _hypotheses(role: Mapping[str, Any]) -> list[str]:
    hs = role.get("hypotheses", [])
    if not hs:
        return []
    comps = {c["id"]: c for c in role.get("comparisons", [])}
    rows = [[h["id"], h["flag"], h["statement"], h["evaluation"], _evidence(h, comps)] for h in hs]
    return [
        "Hypotheses (flag from the sealed plan: pre-specified before the study's version 1, "
        "or post hoc; post-hoc hypotheses carry less evidential weight):",
        "",
        table(["id", "flag", "hypothesis", "evaluation (sealed)", "this run"], rows),
        "",
    ]


def _b1(b1: Mapping[str, Any]) -> list[str]:
    if not b1:
        return []
    rows = [
        [
            c,
            _counts(b),
            rate_ci(b["parse"]),
            _wilson(b["gap_detected"]),
            _wilson(b["field_named"]),
            _wilson(b["owner_named"]),
            _wilson(b["false_alarm"]),
            _wilson(b["control_correct"]),
        ]
        for c, b in b1.items()
    ]
    return [
        "#### B1 gap surfacing",
        "",
        table(
            [
                "condition",
                "ok/total",
                "parse",
                "gap detected",
                "missing field named",
                "owner role named",
                "false alarm (controls)",
                "control accuracy",
            ],
            rows,
        ),
        "",
    ]


def _b2(b2: Mapping[str, Any]) -> list[str]:
    if not b2:
        return []
    out = ["#### B2 assembly", ""]
    sel = b2.get("select")
    if sel:
        out += [
            f"Selection ({_counts(sel)}, parse {rate_ci(sel['parse'])}): precision "
            f"{_mean(sel['precision'])}, recall {_mean(sel['recall'])}, exact set "
            f"{_wilson(sel['exact'])}, records picked {_mean(sel['n_selected'], 2)}.",
            "",
        ]
    rows = [
        [
            stage,
            _counts(b),
            rate_ci(b["parse"]),
            _wilson(b["correct"]),
            _mean(b["context_chars"], 0),
        ]
        for stage, b in b2.items()
        if stage != "select"
    ]
    if rows:
        out.append(
            table(["assembly", "ok/total", "parse", "answer accuracy", "context chars"], rows)
        )
        out.append("")
    return out


def _b3(b3: Mapping[str, Any]) -> list[str]:
    if not b3:
        return []
    rows = [
        [
            c,
            _counts(b),
            rate_ci(b["parse"]),
            rate_ci(b["precision"]),
            rate_ci(b["recall"]),
            rate_ci(b["accuracy"]),
            f"{b['critical_errors']} ({rate_ci(b['critical_rate'])})",
        ]
        for c, b in b3.items()
    ]
    return [
        "#### B3 disclosure control",
        "",
        table(
            [
                "condition",
                "ok/total",
                "parse",
                "disclosure precision",
                "disclosure recall",
                "decision accuracy",
                "critical disclosures",
            ],
            rows,
        ),
        "",
        "A critical disclosure (customer identities, discount terms or a carrier's "
        "operational data to its competitor) is counted separately from accuracy.",
        "",
    ]


def _b4(b4: Mapping[str, Any]) -> list[str]:
    if not b4:
        return []
    rows = [
        [
            own,
            _counts(b),
            " / ".join(pct(b[f"parse_{r}"]["rate"]) for r in ("round1", "round2", "round3")),
            _wilson(b["routing_correct"]),
            _wilson(b["owner_behaviour_correct"]),
            _wilson(b["record_well_formed"]),
            _wilson(b["effective_date_correct"]),
            _wilson(b["final_correct"]),
        ]
        for own, b in b4.items()
    ]
    return [
        "#### B4 collaborative completion (coordinator + four owner agents)",
        "",
        table(
            [
                "ownership",
                "chains ok/total",
                "parse r1 / r2 / r3",
                "routing",
                "owner behaviour",
                "record well-formed",
                "effective date",
                "final answer",
            ],
            rows,
        ),
        "",
    ]


def _engine(eng: str, e: Mapping[str, Any], lab: Label) -> list[str]:
    kinds = ", ".join(f"{k} {v}" for k, v in e["errors_by_kind"].items()) or "none"
    out = [
        f"### Engine `{lab(eng)}` ({e['model']})",
        "",
        f"Requests {e['n_ok']}/{e['n_total']} ok, {e['n_error']} errors ({kinds})"
        + ("" if e["complete"] else " — INCOMPLETE")
        + f"; tokens in/out {e['tokens_in']}/{e['tokens_out']}; "
        f"engine time {num(e['latency_s'], 1)} s. Model roles: {', '.join(e['roles_run'])}.",
        "",
    ]
    for role, r in e["roles"].items():
        if role != "primary":
            out += [f"#### {role.capitalize()} model role (track A, conditions E and C)", ""]
        if "track_a" in r:
            if role == "primary":
                out += ["#### Track A", ""]
            out += _track_a(r["track_a"])
            out += _comparisons(r.get("comparisons", []))
        if role == "primary":
            out += _hypotheses(r)
            out += _b1(r.get("b1", {}))
            out += _b2(r.get("b2", {}))
            out += _b3(r.get("b3", {}))
            out += _b4(r.get("b4", {}))
    return out


def render(section: Mapping[str, Any]) -> str:
    a = section["analysis"]
    d = a["design"]
    plan = a["plan"]
    added = added_engines(section)

    def lab(eng: str) -> str:
        """The engine as shown (labelled when added after the seal); lookups keep the name."""
        return engine_label(eng, eng in added)

    calls = d.get("calls_per_engine") or {}
    out = [
        "## grounding — Semantic Grounding Benchmark v2",
        "",
        "Does an agent apply the definition an organisation holds on the question's date, and "
        "does it gain more from structured, versioned records than from prose with the same "
        "content? Six conditions differ only in the context block between the data tables "
        "and the question (A schema, B deficient prose, E complete prose, C records, F records "
        "+ inert padding of the federation block's length, D records + federation).",
        "",
        f"Design: profile `{d['profile']}`, {d['n_calls']} calls per engine ("
        + ", ".join(f"{k} {v}" for k, v in calls.items())
        + f"); call order: {d['order']}, seed {d['shuffle_seed']}. Temperature "
        f"{d['temperature']}, max_tokens {d['max_tokens']}, tools off, neutral system prompt, "
        "one JSON object per answer under a fixed contract (parse success is reported as a "
        "result).",
        "",
        *[
            f"Engine `{lab(eng)}` runs profile `{p['profile']}` instead: {p['n_calls']} calls ("
            + ", ".join(f"{k} {v}" for k, v in (p.get("calls") or {}).items())
            + f"); call order: {p.get('order') or d['order']}, seed {p['shuffle_seed']}.\n"
            for eng, p in (d.get("engine_profiles") or {}).items()
        ],
        f"Unit of analysis: {plan['unit_of_analysis']}; {plan['replicate_handling']}. "
        f"Intervals: {plan['intervals']}. Parse failures: {plan['parse_failures']}. "
        f"Errors: {plan['errors']}.",
        "",
        f"**Multiple comparisons.** {plan['correction']['statement']}",
        "",
    ]
    out += _m1_overview(a, lab)
    for eng, e in a["engines"].items():
        out += _engine(eng, e, lab)
    out += ["### Metric caveats", ""]
    out += [f"- {c}" for c in plan["metric_caveats"]]
    out += ["", "### Threats to validity", ""]
    out += [f"- **{k}.** {v}" for k, v in plan["threats_to_validity"].items()]
    out.append("")
    return "\n".join(out)
