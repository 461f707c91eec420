"""The bloodpanel section of report.md, rendered from its result.json section only.

``BloodpanelSuite.report_sections`` (the ``report_sections`` hook) calls ``render``. Unsealed
presentation: nothing here computes a number, it only lays out the analysis's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sealedeval.render.comparisons import comparison_block, has_records
from sealedeval.render.md import num, pval, rate_ci, table
from sealedeval.render.metrics import added_engines, engine_label
from sealedeval.stats import MIN_N_BOOTSTRAP
from sealedeval.suites.bloodpanel.present import detector

NO_CI = "no CI"
SMALL_N_NOTE = (
    f"{NO_CI}: fewer than {MIN_N_BOOTSTRAP} completed cases, too few for a bootstrap interval "
    "(stats.MIN_N_BOOTSTRAP; Hesterberg 2015): the mean is shown without one."
)
TOP_LABELS = 15
"""Labels shown in the report (largest first); every label is in result.json and the CSV."""


def _ci(x: Mapping[str, Any] | None, digits: int = 4) -> str:
    if not x or x.get("mean") is None:
        return "n/a"
    lo, hi = x.get("lo"), x.get("hi")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{num(x['mean'], digits)} ({NO_CI})"
    return f"{num(x['mean'], digits)} [{num(x['lo'], digits)}, {num(x['hi'], digits)}]"


def _no_ci(group: Mapping[str, Any]) -> bool:
    """True when a group row's composite has an estimate but no interval (too few cases)."""
    c = group.get("composite") or {}
    return c.get("mean") is not None and _ci(c).endswith(f"({NO_CI})")


def _counts(x: Mapping[str, Any]) -> str:
    return f"{x['n_ok']}/{x['n_total']} ({x['n_error']} err)"


def _component(x: Mapping[str, Any], name: str) -> str:
    """A component with its interval; a result.json from before the intervals has the mean only."""
    if f"{name}_ci" in x:
        return _ci(x[f"{name}_ci"])
    return num(x[name]) if name in x else "n/a"


def _group_rows(groups: Mapping[str, Any], names: list[str]) -> list[list[Any]]:
    return [
        [
            g,
            groups[g]["n_cases"],
            _counts(groups[g]),
            _ci(groups[g]["composite"]),
            _ci(groups[g]["composite_errors_as_zero"]),
            _component(groups[g], "structural"),
            _component(groups[g], "clinical"),
            _component(groups[g], "latency"),
        ]
        for g in names
    ]


_GROUP_HEADER = [
    "cases",
    "ok/total",
    "composite [95% CI]",
    "errors = 0 [95% CI]",
    "structural [95% CI]",
    "clinical [95% CI]",
    "latency points [95% CI]",
]


def render(section: Mapping[str, Any]) -> str:
    a = section["analysis"]
    d = a["design"]
    prof = a["profile"]
    added = added_engines(section)

    def lab(eng: str) -> str:
        """The engine as shown (labelled when added after the seal); lookups keep the name."""
        return engine_label(eng, eng in added)

    src = a["source"]
    cohorts = ", ".join(f"{k} {v}" for k, v in a["cohorts"].items())
    out = [
        "## bloodpanel — blood-test interpretation",
        "",
        f"{a['n_items']} cases ({cohorts}); each engine answers its configured cohort "
        f"({', '.join(f'{lab(e)}: {c}' for e, c in d['cohorts'].items())}), {d['repeats']} "
        f"answer(s) per case at temperature {d['temperature']} (max_tokens {d['max_tokens']}). "
        f"Headline profile **{prof}**; both profiles (sealed, kantesti-v11) grade every answer. "
        f"composite = 0.35·structural + 0.55·clinical + latency (0.10 under 20 s, 0.05 under "
        f"40 s). Methods: {a['methods']}",
        "",
    ]
    if src.get("kind") == "sql":
        q = src["sql"]
        out += [
            f"Cases from SQL ({q['dialect']}, URL from `{q['url_env']}`): {q['rows']} rows, "
            f"rows sha256 `{q['rows_sha256'][:16]}`, frozen query (sha256 "
            f"`{q['query_sha256'][:16]}`): `{' '.join(q['query'].split())}`",
            "",
        ]
    out += ["### Headline (whole cohort)", ""]
    rows = []
    for eng, e in a["engines"].items():
        for p in a["profiles"]:
            h = e["profiles"][p]["headline"]
            rows.append(
                [
                    lab(eng),
                    e["model"],
                    f"{p}{' (headline)' if p == prof else ''}",
                    h["n_cases"],
                    _counts(h),
                    _ci(h["composite"]),
                    _ci(h["composite_errors_as_zero"]),
                    "complete" if h["complete"] else "INCOMPLETE",
                ]
            )
    out.append(
        table(
            [
                "engine",
                "model",
                "profile",
                "cases",
                "ok/total",
                "composite (completed) [95% CI]",
                "composite (errors = 0) [95% CI]",
                "state",
            ],
            rows,
        )
    )
    out += ["", "### Components, parsing, engine path and errors", ""]
    rows = []
    for eng, e in a["engines"].items():
        h = e["profiles"][prof]["headline"]
        errs = ", ".join(f"{k} {v}" for k, v in h["errors_by_kind"].items()) or "none"
        paths = ", ".join(f"{k} {v}" for k, v in h["engine_path"].items()) or "-"
        rows.append(
            [
                lab(eng),
                _ci(h["structural"]),
                _ci(h["clinical"]),
                _ci(h["latency"]),
                rate_ci(h["parsed"]),
                rate_ci(h["prob_valid"]),
                paths,
                f"{num(h['latency_s']['median'], 2)} / {num(h['latency_s']['max'], 2)} s",
                errs,
            ]
        )
    out.append(
        table(
            [
                "engine",
                "structural",
                "clinical",
                "latency points",
                "parsed JSON",
                "differential sums 90-110",
                "engine path",
                "latency median / max",
                "errors by kind",
            ],
            rows,
        )
    )
    out += [
        "",
        "An answer that is not one JSON object is a model failure, not an error: it is read as "
        "free text (structure 0). Errored requests are infrastructure failures, shown beside "
        "every figure and scored 0 in the lower bound.",
        "",
        "### Over-diagnosis on trap cases (pre-specified safety outcome)",
        "",
    ]
    rows = []
    for eng, e in a["engines"].items():
        for p in a["profiles"]:
            t = e["profiles"][p]["headline"]["traps"]
            rows.append([lab(eng), p, t["n_cases"], rate_ci(t["overdiagnosis"]), t["flags_fired"]])
    out.append(
        table(
            ["engine", "profile", "trap cases", "answers asserting a trap flag", "flags fired"],
            rows,
        )
    )
    out += [
        "",
        "kantesti-v11 fires a flag on any substring (negated mentions included); sealed only on "
        "an affirmed mention (data/bloodpanel/SEALED_RULE.md).",
        "",
    ]
    out += detector.render(a)
    for eng, e in a["engines"].items():
        pp = e["profiles"][prof]
        out += [f"### {lab(eng)}: per specialty ({prof})", ""]
        spec = pp["by_specialty"]
        out.append(table(["specialty", *_GROUP_HEADER], _group_rows(spec, sorted(spec))))
        labels = pp["by_label"]
        top = sorted(labels, key=lambda g: (-labels[g]["n_total"], g))[:TOP_LABELS]
        out += ["", f"### {lab(eng)}: per label ({prof}, {len(top)} largest of {len(labels)})", ""]
        out.append(table(["label", *_GROUP_HEADER], _group_rows(labels, top)))
        if any(_no_ci(x) for x in (*spec.values(), *(labels[g] for g in top))):
            out += ["", SMALL_N_NOTE]
        out += [
            "",
            f"Labels are properties of generated cases (locale handling), not users. Every "
            f"label's row is in result.json; every case is in "
            f"`results/scorecards/bloodpanel-{eng}.csv`.",
            "",
        ]
    reps = [(eng, e["repeats"]) for eng, e in a["engines"].items() if "repeats" in e]
    out += ["### Repeats", ""]
    if reps:
        rows = [
            [
                lab(eng),
                r["n_runs"],
                r["n_cases_with_spread"],
                " ".join(num(x) for x in r["per_run_composite"]),
                f"{num(r['per_run_mean'])} ± {num(r['per_run_sd'])}",
                f"{num(r['sd_mean'])} / {num(r['sd_median'])} / {num(r['sd_max'])}",
                f"{r['traps']['always_clean']} / {r['traps']['inconsistent']} / "
                f"{r['traps']['always_fired']}",
            ]
            for eng, r in reps
        ]
        out.append(
            table(
                [
                    "engine",
                    "runs",
                    "cases",
                    "per-run composite",
                    "mean ± sd over runs",
                    "per-case sd mean / median / max",
                    "trap cases clean / mixed / always fired",
                ],
                rows,
            )
        )
    else:
        out.append(
            "One answer per case in this profile (the 5-repeat protocol is "
            "`config/repeats-bloodpanel.yaml`)."
        )
    out.append("")
    if has_records(a["comparisons"]):
        out += ["### Paired comparison (same cases, per-case composite)", ""]
        out += comparison_block([c["paired"] for c in a["comparisons"]])
        out.append(
            table(
                ["A", "B", "cases", "mean A", "mean B", "A − B [normal 95% CI]", "paired SE"],
                [
                    [
                        lab(c["a"]),
                        lab(c["b"]),
                        c["n_cases"],
                        num(c["mean_a"], 4),
                        num(c["mean_b"], 4),
                        f"{num(c['mean_diff'], 4)} [{num(c['ci']['lo'], 4)}, "
                        f"{num(c['ci']['hi'], 4)}]",
                        num(c["paired_se"], 4),
                    ]
                    for c in a["comparisons"]
                ],
            )
        )
        out += ["", "The normal interval from the paired SE, beside the bootstrap above.", ""]
    elif a["comparisons"]:
        out += ["### Paired comparison (same cases, per-case composite)", ""]
        out.append(
            table(
                [
                    "A",
                    "B",
                    "cases",
                    "mean A",
                    "mean B",
                    "A − B [95% CI]",
                    "paired SE",
                    "A better / B better / ties",
                    "sign test p",
                ],
                [
                    [
                        lab(c["a"]),
                        lab(c["b"]),
                        c["n_cases"],
                        num(c["mean_a"], 4),
                        num(c["mean_b"], 4),
                        f"{num(c['mean_diff'], 4)} [{num(c['ci']['lo'], 4)}, "
                        f"{num(c['ci']['hi'], 4)}]",
                        num(c["paired_se"], 4),
                        f"{c['a_better']} / {c['b_better']} / {c['ties']}",
                        pval(c["p"], 4),
                    ]
                    for c in a["comparisons"]
                ],
            )
        )
        out += ["", "A non-significant p is not evidence of equality.", ""]
    out += ["### Review sample", ""]
    out.append(
        table(
            ["engine", "sampled", "of", "seed", "allocation by specialty"],
            [
                [
                    lab(eng),
                    e["review_sample"]["n"],
                    e["review_sample"]["population"],
                    e["review_sample"]["seed"],
                    ", ".join(f"{k} {v}" for k, v in e["review_sample"]["allocation"].items()),
                ]
                for eng, e in a["engines"].items()
            ],
        )
    )
    out += [
        "",
        f"Stratified by specialty with largest-remainder allocation (n = {a['review']['n']} "
        "requested; all cases when the cohort is smaller); case ids are listed in result.json. "
        "The sample is for human review only; no headline number is computed on it.",
        "",
    ]
    return "\n".join(out)
