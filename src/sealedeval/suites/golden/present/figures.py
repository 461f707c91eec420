"""golden figures: accuracy with Wilson intervals, per branch, pass@k vs pass^k, per-run spread,
and the judge's consistency (calibration against human labels, order and verbosity tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sealedeval.render.comparisons import has_records
from sealedeval.render.figures import (
    FigureSpec,
    difference_mde_figure,
    interval_bars,
    new_figure,
    no_data,
    point,
    top_legend,
    wilson_point,
)
from sealedeval.render.metrics import added_engines, engine_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Label = Callable[[str], str]
"""How an engine's name is drawn: ``engine_label`` with whether it was added after the seal."""


def _rate_bar(ax: Any, x: float, r: Mapping[str, Any], color: str, label: str | None) -> None:
    rate = r.get("rate")
    if rate is None:
        ax.text(x, 0.01, "n/a", ha="center", rotation=90, fontsize="x-small")
        return
    lo, hi = r.get("lo"), r.get("hi")
    yerr = None
    if lo is not None and hi is not None:
        yerr = [[max(0.0, rate - lo)], [max(0.0, hi - rate)]]
    ax.bar([x], [rate], width=0.38, color=color, yerr=yerr, capsize=4, label=label)


def _base(e: Mapping[str, Any]) -> Mapping[str, Any]:
    """The files-in-prompt branch (A, or the first branch) — the one every engine runs."""
    branches = e.get("branches") or {}
    if not branches:
        return {"main": e["greedy"], "repeats": e["repeats"]}
    base: Mapping[str, Any] = branches["A"] if "A" in branches else branches[sorted(branches)[0]]
    return base


def _accuracy(a: Mapping[str, Any], lab: Label) -> Figure:
    engines = list(a["engines"])
    fig = new_figure()
    ax = fig.add_subplot()
    for i, eng in enumerate(engines):
        g = _base(a["engines"][eng])["main"]
        _rate_bar(ax, i - 0.2, g["accuracy"], "#4477aa", "completed" if i == 0 else None)
        _rate_bar(
            ax, i + 0.2, g["accuracy_lower_bound"], "#bbbbbb", "errors = fail" if i == 0 else None
        )
    ax.set_xticks(range(len(engines)), [lab(e) for e in engines])
    ax.set_xlim(-0.7, len(engines) - 0.3)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("greedy accuracy (Wilson 95% CI)")
    ax.set_title(f"golden: accuracy per engine ({a['n_items']} tasks)")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def _branch_rows(a: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [
        (eng, b, entry)
        for eng, e in a["engines"].items()
        for b, entry in sorted((e.get("branches") or {}).items())
    ]


def _n_tasks(branch: Mapping[str, Any]) -> int:
    """Tasks a branch answered greedily (errors included: the errors-as-failures rate's n)."""
    return int((branch["main"].get("accuracy_lower_bound") or {}).get("n", 0))


def _branches(a: Mapping[str, Any], lab: Label) -> Figure:
    rows = _branch_rows(a)
    fig = new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    # branches run on different task subsets (B and C on a few in the default profile)
    groups = [f"{lab(eng)}\n{b} ({_n_tasks(r)} tasks)" for eng, b, r in rows]
    series = [
        ("regex, completed", [wilson_point(r["main"]["accuracy"]) for _, _, r in rows]),
        (
            "regex, errors = fail",
            [wilson_point(r["main"]["accuracy_lower_bound"]) for _, _, r in rows],
        ),
        ("exact match", [wilson_point(r["main"]["exact"]) for _, _, r in rows]),
        ("judge PASS", [wilson_point((r.get("judge") or {}).get("pass")) for _, _, r in rows]),
    ]
    interval_bars(ax, groups, series)
    ax.set_ylim(0, 1.05)
    top_legend(ax, ncols=4, top=1.2)
    ax.set_ylabel("rate (Wilson 95% CI)")
    ax.set_title("golden: graders per engine and branch")
    return fig


PASSK_TICKS = 64
"""Up to this many runs every k is drawn, marked and ticked (every profile we ship); beyond
it the curves are drawn through ``PASSK_POINTS`` k's and the axis ticks itself: a benchmark
with ~500,000 runs per task made a tick and a marker per k (a figure worker past 5 GB)."""

PASSK_POINTS = 400
"""k's a long pass@k curve is drawn through: 1..64, then evenly spaced, and the last."""


def _passk_ks(n: int) -> list[int]:
    """The k's drawn: all of 1..n up to ``PASSK_TICKS`` runs, else ``PASSK_POINTS`` of them."""
    if n <= PASSK_TICKS:
        return list(range(1, n + 1))
    rest = PASSK_POINTS - PASSK_TICKS
    spaced = {PASSK_TICKS + (n - PASSK_TICKS) * i // rest for i in range(1, rest + 1)}
    return sorted(set(range(1, PASSK_TICKS + 1)) | spaced | {n})


RUNS_SHOWN = 1_000
"""Runs of one engine drawn as points at most (evenly spaced in run order beyond it; the mean
and sd are over all of them, and the title says how many are drawn)."""


def _passk(a: Mapping[str, Any], lab: Label) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    any_line = False
    for eng in a["engines"]:
        r = _base(a["engines"][eng])["repeats"]
        if not r["n_runs"]:
            continue
        ks = _passk_ks(r["n_runs"])
        few = len(ks) == r["n_runs"] <= PASSK_TICKS
        for key, style, name in (("pass_at_k", "-o", "pass@k"), ("pass_hat_k", "--s", "pass^k")):
            ys = [r[key].get(str(k)) for k in ks]
            ys_f = [float("nan") if y is None else float(y) for y in ys]
            ax.plot(
                ks,
                ys_f,
                style if few else style.replace("o", "").replace("s", ""),
                label=f"{lab(eng)} {name}",
            )
            any_line = True
        if few:
            ax.set_xticks(ks)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("k (sampled answers)")
    ax.set_ylabel("probability")
    ax.set_title("golden: pass@k vs pass^k")
    if any_line:
        ax.legend(fontsize="small")
    else:
        no_data(ax, "no repeats in this profile")
    return fig


def _runs(a: Mapping[str, Any], lab: Label) -> Figure:
    engines = list(a["engines"])
    thinned = False
    fig = new_figure()
    ax = fig.add_subplot()
    for i, eng in enumerate(engines):
        r = _base(a["engines"][eng])["repeats"]
        runs = r["per_run_correct"]
        if len(runs) > RUNS_SHOWN:
            thinned = True
            runs = [runs[j * len(runs) // RUNS_SHOWN] for j in range(RUNS_SHOWN)]
        if runs:
            ax.scatter([i] * len(runs), runs, color="#4477aa", zorder=3)
            ax.errorbar(
                [i + 0.15],
                [r["per_run_mean"]],
                yerr=[[r["per_run_sd"] or 0.0]] * 2,
                fmt="D",
                color="#cc6677",
                capsize=4,
            )
        else:
            ax.text(i, 0.5, "no repeats", ha="center", fontsize="small")
    ax.set_xticks(range(len(engines)), [lab(e) for e in engines])
    ax.set_xlim(-0.5, len(engines) - 0.5)
    ax.set_ylim(0, max(1, a["n_items"]) * 1.05)
    ax.set_ylabel(f"correct per run (of {a['n_items']})")
    shown = f" ({RUNS_SHOWN:,} runs an engine drawn)" if thinned else ""
    ax.set_title(f"golden: per-run spread (points{shown}) and mean ± sd")
    return fig


def _judges(a: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {eng: e["judge"] for eng, e in a["engines"].items() if e.get("judge")}


def _judge(a: Mapping[str, Any], lab: Label) -> Figure:
    judges = _judges(a)
    fig = new_figure(7.2, 6.4)
    grid = fig.add_gridspec(2, 2)
    left = fig.add_subplot(grid[0, :])
    right = fig.add_subplot(grid[1, 0])
    regex = fig.add_subplot(grid[1, 1])

    cal = [
        (eng, v, c)
        for eng, j in judges.items()
        for v, c in sorted(((j.get("calibration") or {}).get("variants") or {}).items())
    ]
    if cal:
        groups = [f"{lab(eng)}\n{v}" for eng, v, _ in cal]
        interval_bars(
            left,
            groups,
            [
                ("judge PASS", [wilson_point(c["judge_pass"]) for _, _, c in cal]),
                ("human PASS", [wilson_point(c["human_pass"]) for _, _, c in cal]),
                ("agreement", [point(c["agreement"]) for _, _, c in cal]),
                ("Cohen's κ", [point(c["kappa"]) for _, _, c in cal]),
            ],
        )
        left.set_ylim(min(0.0, *(c["kappa"] or 0.0 for _, _, c in cal)) - 0.02, 1.05)
        left.axhline(0, color="black", linewidth=0.5)
        top_legend(left, ncols=4, top=1.2)
        n = cal[0][2]["n"]
        left.set_title(f"calibration on {n} human-labelled answers", fontsize="medium")
    else:
        no_data(left, "no calibration calls")
        left.set_title("calibration", fontsize="medium")
    left.set_ylabel("rate (Wilson 95% CI)")

    pairs = [
        (eng, test, j[test])
        for eng, j in judges.items()
        for test in ("position", "verbosity")
        if j.get(test)
    ]
    if pairs:
        interval_bars(
            right,
            [f"{lab(eng)}\n{test}" for eng, test, _ in pairs],
            [
                ("order-consistent", [wilson_point(t["order_consistent"]) for *_, t in pairs]),
                ("picked first", [wilson_point(t["picked_first"]) for *_, t in pairs]),
                ("picked target", [wilson_point(t["picked_target"]) for *_, t in pairs]),
            ],
            colors=("#228833", "#ccbb44", "#aa3377"),
        )
        right.axhline(0.5, color="black", linewidth=0.5, linestyle=":")
        right.set_ylim(0, 1.05)
        top_legend(right)
    else:
        no_data(right, "no pairwise tests")
        right.set_ylim(0, 1.05)
    right.set_title("pairwise, both orders", fontsize="medium")

    graded = [(eng, b, r["judge"]) for eng, b, r in _branch_rows(a) if r.get("judge")]
    if graded:
        interval_bars(
            regex,
            [f"{lab(eng)}\n{b}" for eng, b, _ in graded],
            [
                ("agreement", [point(j.get("agreement_with_regex")) for *_, j in graded]),
                ("Cohen's κ", [point(j.get("kappa_with_regex")) for *_, j in graded]),
            ],
            colors=("#66ccee", "#aa3377"),
        )
        regex.set_ylim(-0.05, 1.05)
        top_legend(regex)
    else:
        no_data(regex, "judge graded no transcripts")
        regex.set_ylim(-0.05, 1.05)
    regex.set_title("judge vs regex grader, same answers", fontsize="medium")
    fig.suptitle("golden: judge consistency", fontsize="medium")
    return fig


def figure_specs(section: Mapping[str, Any]) -> list[FigureSpec]:
    """The golden figures for one result.json section (``{"seal": ..., "analysis": ...}``)."""
    a = section["analysis"]
    n = a["n_items"]
    added = added_engines(section)

    def lab(eng: str) -> str:
        return engine_label(eng, eng in added)

    out = [
        FigureSpec(
            "accuracy",
            f"golden: greedy accuracy per engine on the base branch ({n} tasks), over completed "
            "requests and with errors counted as failures, Wilson 95% intervals.",
            lambda: _accuracy(a, lab),
        )
    ]
    if _branch_rows(a):
        out.append(
            FigureSpec(
                "branches",
                "golden: each grader's rate per engine and branch (regex over completed "
                "requests and with errors = fail, exact match, model judge), Wilson 95% "
                "intervals; n/a where a grader did not run.",
                lambda: _branches(a, lab),
            )
        )
    out += [
        FigureSpec(
            "passk",
            "golden: pass@k (at least one of k sampled answers right) against pass^k (all k "
            "right) on the base branch, per engine.",
            lambda: _passk(a, lab),
        ),
        FigureSpec(
            "runs",
            "golden: tasks right in each sampled run (points) and the mean ± sd over runs.",
            lambda: _runs(a, lab),
        ),
    ]
    if _judges(a):
        out.append(
            FigureSpec(
                "judge",
                "golden: judge consistency — PASS rates of judge and humans, agreement and "
                "Cohen's κ per prompt variant; order consistency and first/target picks in the "
                "position and verbosity tests (dotted line: 50%); agreement and κ with the "
                "regex grader on the branch transcripts it judged (n/a: κ undefined when a "
                "grader gives one label). Wilson 95% intervals.",
                lambda: _judge(a, lab),
            )
        )
    comps = [c for e in a["engines"].values() for c in e.get("branch_comparisons") or []]
    comps += list(a.get("comparisons") or [])
    if has_records(comps):
        records = [c["paired"] for c in comps]
        out.append(
            FigureSpec(
                "comparisons",
                "golden: paired differences in greedy accuracy (branches on each engine, then "
                "engines on the base branch) with normal 95% intervals from the paired SE, over "
                "the ±MDE band at 80% power for the tasks each pair shares (grey): a difference "
                "inside its band could not have been detected.",
                lambda: difference_mde_figure(
                    records, "golden: paired comparisons and what they could detect"
                ),
            )
        )
    return out
