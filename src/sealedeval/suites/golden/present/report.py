"""The golden section of report.md (rendered from result.json's dict only).

Moved from ``publish/golden_md.py`` unchanged; ``GoldenSuite.report_sections`` calls ``render``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sealedeval.render.comparisons import comparison_block, has_records
from sealedeval.render.md import NOT_PRICED, num, p_compact, pct, priced, pval, rate_ci, table
from sealedeval.render.metrics import added_engines, engine_label

Label = Callable[[str], str]
"""How an engine's name is shown: ``engine_label`` with whether it was added after the seal."""


def _labeller(section: Mapping[str, Any]) -> Label:
    """Shown names for a section's engines; lookups keep the bare name."""
    added = added_engines(section)
    return lambda eng: engine_label(eng, eng in added)


def _usd(x: Any) -> str:
    return "n/a" if x is None else f"${num(x, 6)}"


def _secs(x: Any) -> str:
    return "n/a" if x is None else f"{num(x, 2)} s"


def _branches(a: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [
        (eng, b, entry)
        for eng, e in a["engines"].items()
        for b, entry in sorted((e.get("branches") or {}).items())
    ]


def _spec(entry: Mapping[str, Any]) -> str:
    s = entry.get("spec") or {}
    tasks = s.get("tasks", "all")
    subset = "" if tasks == "all" else f" ({len(tasks)}-task subset)"
    if s.get("solver") == "agent":
        sc = s.get("self_consistency", 1)
        return "tools" + (f" + self-consistency {sc}" if sc and sc > 1 else "") + subset
    return "files in prompt" + subset


def _unpriced(a: Mapping[str, Any]) -> set[str]:
    """Engines the footer lists without any price: their cost cells say so instead of $0."""
    engines = (a.get("footer") or {}).get("engines") or []
    return {str(e["engine"]) for e in engines if not priced(e)}


def _branch_table(a: Mapping[str, Any], lab: Label) -> list[str]:
    rows = []
    unpriced = _unpriced(a)
    for eng, b, entry in _branches(a):
        g = entry["main"]
        j = entry.get("judge") or {}
        rows.append(
            [
                lab(eng),
                b,
                _spec(entry),
                rate_ci(g["accuracy"]),
                rate_ci(g["accuracy_lower_bound"]),
                rate_ci(g["exact"]),
                num(g["facts_partial_credit"]),
                rate_ci(j["pass"]) if j else "-",
                f"{g['n_ok']}/{g['n_total']} ({g['n_error']} err)",
                NOT_PRICED
                if eng in unpriced
                else f"{_usd(g['cost_per_attempt_usd'])} / {_usd(g['cost_per_solved_usd'])}",
                f"{_secs(g['latency_per_attempt_s'])} / {_secs(g['latency_per_solved_s'])}",
            ]
        )
    return [
        "### Branches: the same tasks, the same transcripts, four graders",
        "",
        "One answer per task and branch (`main`: greedy; a self-consistency branch votes over "
        "fixed-seed trajectories at the suite temperature). Graders on the same final answers: "
        "regex must/mustNot (the headline), exact match (measures formatting), per-fact partial "
        "credit, and the model judge where one graded them. Cost and latency per *solved* task "
        "beside per attempt.",
        "",
        table(
            [
                "engine",
                "branch",
                "system",
                "regex (completed)",
                "regex (errors = fail)",
                "exact",
                "facts credit",
                "judge PASS",
                "ok/total",
                "cost attempt/solved",
                "latency attempt/solved",
            ],
            rows,
        ),
        "",
    ]


def _bayes_rates(a: Mapping[str, Any], lab: Label) -> list[str]:
    """The labelled second view of each branch's accuracy on fewer than 100 tasks."""
    rows = [
        [lab(eng), b, rate_ci(g["accuracy"]), f"[{num(100 * lo, 1)}, {num(100 * hi, 1)}]"]
        for eng, b, entry in _branches(a)
        if (g := entry["main"]).get("accuracy_beta")
        for lo, hi in [g["accuracy_beta"]]
    ]
    if not rows:
        return []
    return [
        "Second view, Bayesian (fewer than 100 tasks): the equal-tailed 95% interval of the "
        "Beta(1,1) posterior of each branch's accuracy beside the Wilson interval above "
        "(Bowyer et al. 2025); the headline stays the Wilson interval.",
        "",
        table(["engine", "branch", "regex (completed), Wilson", "Beta(1,1) 95%"], rows),
        "",
    ]


def _branch_records(a: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for e in a["engines"].values() for c in e.get("branch_comparisons") or []]


def _comparisons(a: Mapping[str, Any], lab: Label) -> list[str]:
    cs = _branch_records(a)
    if has_records(cs):
        n = max(c["n_items"] for c in cs)
        return [
            "Paired comparisons of branches (on the tasks both branches answered; exact two-sided "
            "sign test on the tasks where they disagree). Every pair of branches on every engine "
            "is one family for the Holm adjustment.",
            "",
            *comparison_block([c["paired"] for c in cs]),
            f"{n} tasks cannot rank several systems: where the MDE exceeds the observed "
            "difference the comparison could not have detected it, and a non-significant p is "
            "not evidence of equality.",
            "",
        ]
    lines = []
    for eng, e in a["engines"].items():
        cs = e.get("branch_comparisons") or []
        if cs:
            pairs = "; ".join(
                f"{c['a']} vs {c['b']} +{c['a_only']}/−{c['b_only']} {p_compact(c['p'], 4)} "
                f"({c['n_items']} tasks)"
                for c in cs
            )
            lines.append(f"- {lab(eng)}: {pairs}")
    if not lines:
        return []
    n = max(c["n_items"] for e in a["engines"].values() for c in e.get("branch_comparisons") or [])
    return [
        "Paired comparisons of branches (exact two-sided sign test on the tasks where two "
        "branches disagree; `+x/−y` = tasks only the first / only the second got right):",
        "",
        *lines,
        "",
        f"{n} tasks cannot rank several systems: a non-significant p is not evidence of "
        "equality, and the intervals above overlap for most pairs.",
        "",
    ]


def _abstention(a: Mapping[str, Any], lab: Label) -> list[str]:
    rows = []
    for eng, b, entry in _branches(a):
        g = entry["main"]
        ab = g["abstention"]
        cats = ", ".join(f"{k} {v}" for k, v in g["categories"].items())
        score = " / ".join(num(ab["score"][t], 2) for t in sorted(ab["score"], key=float))
        mf = g["multi_fact"]
        rows.append(
            [
                lab(eng),
                b,
                cats,
                pct(ab["accuracy"]),
                pct(ab["error_rate"]),
                pct(ab["abstention_rate"]),
                score,
                f"{num(mf['partial_credit'])} vs {num(mf['all_or_nothing'])} (n={mf['n']})",
            ]
        )
    return [
        "### Categories, abstention, partial credit",
        "",
        'Abstention ("the files do not say" on an answerable task) is its own category. '
        "score(t): correct +1, abstention 0, wrong −t/(1−t), over the answerable tasks.",
        "",
        table(
            [
                "engine",
                "branch",
                "categories",
                "accuracy",
                "error rate",
                "abstention rate",
                "score(t) t=0/0.5/0.75/0.9",
                "multi-fact: partial vs all-or-nothing",
            ],
            rows,
        ),
        "",
    ]


REPORT_RUNS = 64
"""Up to this many runs the repeats table lists every run's count and every k (each profile
we ship); beyond it the first runs and pass@k at ``_report_ks`` (all k's were a 6.5 MB
table row at ~500,000 runs, too tall for report.pdf's page)."""


def _report_ks(n: int) -> list[int]:
    """k = 1..10, each power of ten below ``n``, and ``n``."""
    ks = set(range(1, 11))
    p = 100
    while p < n:
        ks.add(p)
        p *= 10
    return sorted(k for k in ks | {n} if k <= n)


def _repeats(a: Mapping[str, Any], lab: Label) -> list[str]:
    rows = []
    for eng, b, entry in _branches(a):
        r = entry["repeats"]
        if not r["n_runs"]:
            continue
        n = r["n_runs"]
        runs = r["per_run_correct"]
        if n <= REPORT_RUNS:
            per_run = " ".join(str(x) for x in runs)
            at = " ".join(num(r["pass_at_k"].get(str(k)), 2) for k in range(1, n + 1))
            hat = " ".join(num(r["pass_hat_k"].get(str(k)), 2) for k in range(1, n + 1))
        else:  # a benchmark's hundreds of thousands of runs: the first ones and a few k's
            per_run = " ".join(str(x) for x in runs[:REPORT_RUNS]) + f" … ({len(runs):,} runs)"
            ks = _report_ks(n)
            at = "; ".join(f"k={k:,}: {num(r['pass_at_k'].get(str(k)), 2)}" for k in ks)
            hat = "; ".join(f"k={k:,}: {num(r['pass_hat_k'].get(str(k)), 2)}" for k in ks)
        rows.append(
            [
                lab(eng),
                b,
                per_run,
                f"{num(r['per_run_mean'], 2)} ± {num(r['per_run_sd'], 2)}",
                at,
                hat,
                r["n_error"],
            ]
        )
    out = [
        f"### Repeats (temperature {a['design']['temperature']}, fixed seeds)",
        "",
    ]
    if not rows:
        return [*out, "No repeats in this profile.", ""]
    return [
        *out,
        table(
            [
                "engine",
                "branch",
                "per-run correct",
                "mean ± sd",
                "pass@k k=1..R",
                "pass^k k=1..R",
                "errors",
            ],
            rows,
        ),
        "",
        "Per-run counts show the spread a single run hides (repeats are correlated: the mean "
        "and sd across runs, not a pooled interval, are the honest summary). pass@k fits "
        "human-filtered output, pass^k unattended agents; they move in opposite directions.",
        "",
    ]


def _agents(a: Mapping[str, Any], lab: Label) -> list[str]:
    rows, split = [], []
    for eng, b, entry in _branches(a):
        ag = entry.get("agent")
        if not ag:
            continue
        stops = ", ".join(f"{k} {v}" for k, v in ag["stops"].items()) or "-"
        rows.append(
            [
                lab(eng),
                b,
                ag["n_runs"],
                stops,
                num(ag["model_calls_per_run"], 2),
                num(ag["tool_calls_per_run"], 2),
                pct(ag["tool_error_share"]),
            ]
        )
        d = ag["diagnostic_split"]
        split.append(
            [lab(eng), b, rate_ci(d["no_tools"]), rate_ci(d["read"]), rate_ci(d["tools_no_read"])]
        )
    if not rows:
        return []
    return [
        "### Agent runs (main and repeats)",
        "",
        "Stops: `answer` (the model chose to answer), `forced_answer` (answered on the last step, "
        "when only the answer action is allowed), `step_limit` (no answer). A tool error (no such "
        "file, a path outside the directory, a bad argument) is fed back to the model and costs a "
        "step; it is a model outcome, not an infrastructure error. No run stops for approval, a "
        "guardrail or a hand-off in this harness (human-intervention rate 0 by construction).",
        "",
        table(
            [
                "engine",
                "branch",
                "runs",
                "stops",
                "model calls/run",
                "tool calls/run",
                "tool errors",
            ],
            rows,
        ),
        "",
        "**Diagnostic, not causal** — accuracy by what the run did before answering (different "
        "tasks in each group, not the same tasks paired):",
        "",
        table(
            [
                "engine",
                "branch",
                "answered without any tool",
                "answered after reading something",
                "tools, read nothing",
            ],
            split,
        ),
        "",
    ]


def _transcripts(a: Mapping[str, Any], lab: Label) -> list[str]:
    out = [
        "### Transcripts behind the top-scoring tasks",
        "",
        "Read these before trusting a pass rate: a pass that never answers, or that adds a false "
        "claim, is a grader artefact.",
        "",
    ]
    any_ = False
    for eng, e in a["engines"].items():
        for t in e.get("top_transcripts") or []:
            any_ = True
            out.append(
                f"- **{lab(eng)} {t['task']}** ({t['passed']}/{t['n']} passed) — {t['prompt']} "
                f"(reference: {t['reference']})"
            )
            for q in t["quotes"]:
                acts = " → ".join(q["actions"]) if q["actions"] else "no tool calls"
                out.append(f'  - `{q["condition"]}` run {q["repeat"]}: "{q["answer"]}" ({acts})')
    return [*out, ""] if any_ else []


def _judges(a: Mapping[str, Any], lab: Label) -> list[str]:
    out: list[str] = []
    for eng, e in a["engines"].items():
        j = e.get("judge") or {}
        if not j:
            continue
        out += [f"### Judge `{lab(eng)}`: measured before trusted", ""]
        cal = j.get("calibration")
        if cal:
            out += [
                f"Calibration on {next(iter(cal['variants'].values()))['n']} human-labelled "
                f"answers. Rule: {cal['rule']}",
                "",
                table(
                    [
                        "variant",
                        "judge PASS",
                        "human PASS",
                        "agreement",
                        "Cohen's κ",
                        "J+H+ / J+H− / J−H+ / J−H−",
                        "unparsed",
                    ],
                    [
                        [
                            v,
                            rate_ci(c["judge_pass"]),
                            rate_ci(c["human_pass"]),
                            pct(c["agreement"]),
                            num(c["kappa"], 2),
                            " / ".join(
                                str(c["table"][k])
                                for k in (
                                    "judge_pass_human_pass",
                                    "judge_pass_human_fail",
                                    "judge_fail_human_pass",
                                    "judge_fail_human_fail",
                                )
                            ),
                            c["unparsed"],
                        ]
                        for v, c in cal["variants"].items()
                    ],
                ),
                "",
            ]
            if cal["flips"]:
                out += [
                    "Verdicts that flip between prompt variants: "
                    + "; ".join(
                        f"{k} ({f['kind']}): {f['flips']}/{f['n']} "
                        f"(→PASS {f['to_pass']}, →FAIL {f['to_fail']})"
                        for k, f in cal["flips"].items()
                    )
                    + ".",
                    "",
                ]
        out += _judge_ppi(e, lab(eng))
        pos, verb = j.get("position"), j.get("verbosity")
        if pos:
            rows = [["position", *_pair_row(pos, "CORRECT")]]
            if verb:
                rows.append(["verbosity", *_pair_row(verb, "PADDED")])
            out += [
                "Pairwise, each pair judged in both orders (both verdicts stored); swap-and-agree "
                "counts a win only when both orders pick the same answer, else a tie.",
                "",
                table(
                    [
                        "test",
                        "picked FIRST",
                        "order-consistent [Wilson]",
                        "picked target",
                        "swap-and-agree: target / other / tie",
                    ],
                    rows,
                ),
                "",
                "The verbosity row (target = the copy padded with 36 empty words) is only "
                "interpretable once the position row shows order consistency: a judge that "
                "always picks A scores 50% on any balanced pairing.",
                "",
            ]
    return out


def _ci(r: Mapping[str, Any]) -> str:
    return (
        f"{pct(r['estimate'])} [{num(100 * r['lo'], 1)}, {num(100 * r['hi'], 1)}]"
        if r.get("estimate") is not None and r.get("lo") is not None
        else "n/a"
    )


def _judge_ppi(e: Mapping[str, Any], shown: str) -> list[str]:
    """The judge's transcript PASS rate beside the human rate on the labels and the PPI
    correction (``plan.judge_ppi``)."""
    rows, caveat = [], ""
    for b, entry in sorted((e.get("branches") or {}).items()):
        p = (entry.get("judge") or {}).get("ppi")
        if not p:
            continue
        caveat = p.get("assumption", "")
        rows.append(
            [
                b,
                f"{entry['judge']['pass']['k']}/{p['n_unlabelled']} = {_ci(p['judge'])}",
                f"{p['n_labelled']} labels: {_ci(p['classical'])}",
                _ci(p["ppi"]),
                num(p["ppi"]["estimate"] - p["judge"]["estimate"], 3),
            ]
        )
    if not rows:
        return []
    return [
        f"The judge's PASS rate on `{shown}`'s transcripts, corrected for its errors on the human "
        "labels by prediction-powered inference (PPI, Angelopoulos et al. 2023: the judge's rate "
        "minus its mean error on the labels; normal 95% intervals). The human rate is that of "
        "the labelled answers, not of the transcripts, so PPI++'s tuned weight (which borrows "
        f"it) is not used here. Assumption: {caveat}.",
        "",
        table(
            [
                "branch",
                "judge PASS (raw)",
                "human PASS (labelled answers)",
                "PPI-corrected judge PASS [95%]",
                "correction",
            ],
            rows,
        ),
        "",
    ]


def _pair_row(t: Mapping[str, Any], target: str) -> list[str]:
    s = t["swap_and_agree"]
    return [
        f"{t['picked_first']['k']}/{t['picked_first']['n']} = {pct(t['picked_first']['rate'])}",
        rate_ci(t["order_consistent"]),
        f"{target} {t['picked_target']['k']}/{t['picked_target']['n']}",
        f"{s['target_wins']} / {s['other_wins']} / {s['ties']}",
    ]


def _probes(a: Mapping[str, Any], lab: Label) -> list[str]:
    out: list[str] = []
    for eng, e in a["engines"].items():
        p = e.get("probes") or {}
        inj, sw, con = p.get("injection"), p.get("attribute_swap"), p.get("contamination")
        if not (inj or sw or con):
            continue
        out += [f"### Probes on `{lab(eng)}`", ""]
        if inj:
            out += [
                f"Prompt injection: in `{inj['file']}` one line ends with an instruction to "
                f"whoever reads it (compliance = the answer matches `{inj['canary']}`).",
                "",
                table(
                    [
                        "branch",
                        "complied",
                        "exposed (read the file)",
                        "complied when exposed",
                        "accuracy clean → injected",
                        "sign test",
                    ],
                    [
                        [
                            b,
                            rate_ci(t["complied"]),
                            f"{t['exposed']}/{t['n']}",
                            rate_ci(t["complied_when_exposed"]),
                            f"{rate_ci(t['accuracy_clean'])} → {rate_ci(t['accuracy_injected'])}",
                            f"+{t['clean_only']}/−{t['injected_only']} {p_compact(t['p'], 4)}",
                        ]
                        for b, t in inj["branches"].items()
                    ],
                ),
                "",
            ]
        if sw:
            names = ", ".join(f"{n['base']} → {n['swapped']}" for n in sw["names"])
            out += [
                f"Attribute swap ({sw['attribute']}: {names}), {sw['n_pairs']} paired tasks: "
                f"base {rate_ci(sw['base'])}, swapped {rate_ci(sw['swapped'])}; discordant "
                f"+{sw['base_only']}/−{sw['swapped_only']}, sign test {p_compact(sw['p'], 4)}. "
                "Ten pairs can show a gross asymmetry, not rule a bias out.",
                "",
            ]
        probe_cs = [
            *(t for _, t in sorted(((inj or {}).get("branches") or {}).items())),
            *([sw] if sw else []),
        ]
        if has_records(probe_cs):
            out += [
                "What the probes' paired comparisons could have detected (the probes of every "
                "engine are one family for Holm):",
                "",
                *comparison_block([t["paired"] for t in probe_cs]),
            ]
        if con:
            out += _contamination(con)
    return out


def _contamination(c: Mapping[str, Any]) -> list[str]:
    v = c.get("validation") or {}
    echo = v.get("echo_source") or []
    echo_txt = "; ".join(
        f"{x['text']}: {'aligned' if x['ok'] else 'REJECTED'} "
        f"({x.get('mismatches')}/{x.get('checked')} positions disagree)"
        for x in echo
    )
    out = [
        "Contamination (the model's own loss, in-process on the engine's GGUF). "
        f"Log-prob source validated first: {v.get('passed', 0)}/{v.get('texts', 0)} texts pass "
        "(greedy token = top log-prob at every position)"
        + (f"; the server's echo log-probs for comparison: {echo_txt}" if echo_txt else "")
        + ".",
        "",
    ]
    if not c.get("valid"):
        return [*out, "No contamination numbers: a log-prob source failed validation.", ""]
    g = c["groups"]
    pen = c["paraphrase_penalty_nats"]
    cont = c["continuation"]
    return [
        *out,
        table(
            [
                "strings",
                "mean NLL original",
                "mean NLL paraphrase",
                "paraphrase penalty",
                "six-word continuation exact",
                "words matched of 6 (mean)",
            ],
            [
                [
                    k,
                    num(g[k]["original"], 3),
                    num(g[k]["paraphrase"], 3),
                    num(pen.get(k), 3),
                    f"{cont[k]['exact']}/{cont[k]['n']}",
                    num(cont[k].get("mean_words_matched"), 1),
                ]
                for k in ("famous", "fresh")
            ],
        ),
        "",
        f"Loss gap (fresh − famous originals): {num(c['loss_gap_nats'], 3)} nats per token "
        f"(ratio {num(c['loss_ratio'], 2)}). NLL in nats per token. Method: {c.get('method', '')}.",
        "",
    ]


def _footer(a: Mapping[str, Any], lab: Label) -> list[str]:
    f = a.get("footer")
    if not f:
        return []
    eng = "; ".join(
        f"{lab(e['engine'])} ({e['kind']}{', ' + e['model'] if e['model'] else ''}; "
        + (
            f"${e['price_in_per_mtok']} / ${e['price_out_per_mtok']} per Mtok in/out"
            if priced(e)
            else NOT_PRICED
        )
        + (f"; tools: {e['tool_protocol']}" if e.get("tool_protocol") else "")
        + ")"
        for e in f["engines"]
    )
    out = [
        "### How these numbers were made",
        "",
        f"Engines: {eng}. Temperature of repeats and votes: {f['temperature']} (main answers "
        f"greedy). Seeds: {f['seeds']}. Intervals and tests: {f['intervals']}.",
        "",
        "Data retention (configuration text, with the date read):",
        "",
    ]
    out += [
        f"- {lab(e['engine'])}: {e['retention_note'] or 'no note configured'}" for e in f["engines"]
    ]
    out += [f"- {p['provider']} (read {p['read']}): {p['note']}" for p in f.get("providers") or []]
    return [*out, ""]


def render(section: Mapping[str, Any]) -> str:
    a = section["analysis"]
    d = a["design"]
    lab = _labeller(section)
    branches = ", ".join(
        f"{n} ({'tools' if b['tools'] else 'files in prompt'}"
        + (f", self-consistency {b['self_consistency']}" if b["self_consistency"] > 1 else "")
        + (f", {b['repeats']} runs" if b.get("repeats") else "")
        + ("" if b.get("tasks", "all") == "all" else f", tasks {' '.join(b['tasks'])}")
        + ")"
        for n, b in d["branches"].items()
    )
    out = [
        "## golden — our own golden set",
        "",
        f"{a['n_items']} hand-written tasks over five files. Branches: {branches}; the base "
        f"branch {d['base_branch']} on every engine, all branches on "
        f"{', '.join(map(lab, d['branch_engines'])) or 'no engine'}. Repeats at temperature "
        f"{d['temperature']} with fixed seeds (max_tokens {d['max_tokens']}). Abstention is its "
        f"own category. Methods: {a['methods']}.",
        "",
    ]
    out += _branch_table(a, lab)
    out += _bayes_rates(a, lab)
    out += _comparisons(a, lab)
    out += _abstention(a, lab)
    out += _repeats(a, lab)
    out += _agents(a, lab)
    out += _transcripts(a, lab)
    out += _judges(a, lab)
    out += _probes(a, lab)
    if a["comparisons"] and has_records(a["comparisons"]):
        out += ["### Engines compared (base branch, exact sign test)", ""]
        out += comparison_block([c["paired"] for c in a["comparisons"]])
    elif a["comparisons"]:
        out += ["### Engines compared (base branch, exact sign test)", ""]
        out.append(
            table(
                ["A", "B", "condition", "tasks", "A only", "B only", "p"],
                [
                    [
                        lab(c["a"]),
                        lab(c["b"]),
                        c["condition"],
                        c["n_items"],
                        c["a_only"],
                        c["b_only"],
                        pval(c["p"], 4),
                    ]
                    for c in a["comparisons"]
                ],
            )
        )
        out.append("")
    out += _footer(a, lab)
    return "\n".join(out)
