"""The golden section of report.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.publish.md import num, pct, rate_ci, table


def render(section: Mapping[str, Any]) -> str:
    a = section["analysis"]
    d = a["design"]
    out = [
        "## golden — our own golden set",
        "",
        f"{a['n_items']} hand-written tasks over five files. Per engine: one greedy answer "
        f"per task and {d['repeats']} sampled answers at temperature {d['temperature']} "
        f"with fixed seeds "
        f"(max_tokens {d['max_tokens']}). Abstention is its own category. Methods: {a['methods']}.",
        "",
        "### Accuracy (greedy)",
        "",
    ]
    rows = []
    for eng, e in a["engines"].items():
        g = e["greedy"]
        rows.append(
            [
                eng,
                e["model"],
                rate_ci(g["accuracy"]),
                rate_ci(g["accuracy_lower_bound"]),
                rate_ci(g["exact"]),
                num(g["facts_partial_credit"]),
                f"{g['n_ok']}/{g['n_total']} ({g['n_error']} err)",
                f"${num(g['cost_per_attempt_usd'], 6)} / ${num(g['cost_per_solved_usd'], 6)}",
                f"{num(g['latency_per_attempt_s'], 2)} s / {num(g['latency_per_solved_s'], 2)} s",
            ]
        )
    out.append(
        table(
            [
                "engine",
                "model",
                "regex (completed)",
                "regex (errors = fail)",
                "exact",
                "facts credit",
                "ok/total",
                "cost attempt/solved",
                "latency attempt/solved",
            ],
            rows,
        )
    )
    out += [
        "",
        "Exact match measures formatting, not knowledge; it is shown beside the regex "
        "grader on the same transcripts.",
        "",
        "### Categories and abstention",
        "",
    ]
    rows = []
    for eng, e in a["engines"].items():
        g = e["greedy"]
        ab = g["abstention"]
        cats = ", ".join(f"{k} {v}" for k, v in g["categories"].items())
        score = " / ".join(num(ab["score"][t], 2) for t in sorted(ab["score"], key=float))
        rows.append(
            [
                eng,
                cats,
                pct(ab["accuracy"]),
                pct(ab["error_rate"]),
                pct(ab["abstention_rate"]),
                score,
            ]
        )
    out.append(
        table(
            [
                "engine",
                "categories",
                "accuracy",
                "error rate",
                "abstention rate",
                "score(t) t=0/0.5/0.75/0.9",
            ],
            rows,
        )
    )
    mf = [(eng, e["greedy"]["multi_fact"]) for eng, e in a["engines"].items()]
    out += [
        "",
        "Multi-fact tasks, partial credit beside all-or-nothing: "
        + "; ".join(
            f"{eng}: {num(m['partial_credit'])} vs {num(m['all_or_nothing'])} (n={m['n']})"
            for eng, m in mf
        )
        + ".",
        "",
        "### Repeats",
        "",
    ]
    rows = []
    for eng, e in a["engines"].items():
        r = e["repeats"]
        if not r["n_runs"]:
            continue
        pak = " ".join(num(r["pass_at_k"].get(str(k)), 2) for k in range(1, r["n_runs"] + 1))
        phk = " ".join(num(r["pass_hat_k"].get(str(k)), 2) for k in range(1, r["n_runs"] + 1))
        rows.append(
            [
                eng,
                " ".join(str(x) for x in r["per_run_correct"]),
                f"{num(r['per_run_mean'], 2)} ± {num(r['per_run_sd'], 2)}",
                pak,
                phk,
                r["n_error"],
            ]
        )
    out.append(
        table(
            ["engine", "per-run correct", "mean ± sd", "pass@k k=1..", "pass^k k=1..", "errors"],
            rows,
        )
        if rows
        else "No repeats in this profile."
    )
    out += [
        "",
        "pass@k suits human-filtered output, pass^k unattended agents; they move in "
        "opposite directions with k.",
        "",
    ]
    if a["comparisons"]:
        out += ["### Paired comparison (greedy, exact sign test)", ""]
        out.append(
            table(
                ["A", "B", "tasks", "A only", "B only", "p"],
                [
                    [c["a"], c["b"], c["n_items"], c["a_only"], c["b_only"], num(c["p"], 4)]
                    for c in a["comparisons"]
                ],
            )
        )
        out += [
            "",
            f"{a['n_items']} tasks cannot rank close systems; a non-significant p is not "
            "evidence of equality.",
            "",
        ]
    return "\n".join(out)
