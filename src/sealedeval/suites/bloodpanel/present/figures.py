"""bloodpanel figures: the composite with its seeded bootstrap intervals per engine and profile,
per specialty and per label, the pre-specified over-diagnosis rate on trap cases, the spread over
repeats (when a case is answered more than once) and the paired engine comparisons.

Drawn from the suite's result.json section only (``BloodpanelSuite.figures``); unsealed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sealedeval.render.comparisons import has_records
from sealedeval.render.figures import (
    NO_CI,
    PALETTE,
    FigureSpec,
    difference_mde_figure,
    interval_bars,
    new_figure,
    point,
    top_legend,
    wilson_point,
)
from sealedeval.render.md import p_compact
from sealedeval.render.metrics import added_engines, engine_label
from sealedeval.stats import MIN_N_BOOTSTRAP
from sealedeval.suites.bloodpanel.present.report import TOP_LABELS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Label = Callable[[str], str]
"""How an engine's name is drawn: ``engine_label`` with whether it was added after the seal."""


def _ci(x: Mapping[str, Any] | None) -> Any:
    if not x:
        return None
    return point(x.get("mean"), x.get("lo"), x.get("hi"))


def _headline(a: Mapping[str, Any], lab: Label) -> Figure:
    engines = list(a["engines"])
    profiles = list(a["profiles"])
    fig = new_figure(7.2, 3.6)
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    series = []
    for p in profiles:
        head = [a["engines"][e]["profiles"][p]["headline"] for e in engines]
        series.append((f"{p}, completed", [_ci(h["composite"]) for h in head]))
        series.append((f"{p}, errors = 0", [_ci(h["composite_errors_as_zero"]) for h in head]))
    interval_bars(left, [lab(e) for e in engines], series)
    left.set_ylim(0, 1.05)
    top_legend(left)
    left.set_ylabel("composite (bootstrap 95% CI)")
    left.set_title(f"composite, {a['n_items']} cases", fontsize="medium")
    interval_bars(
        right,
        [lab(e) for e in engines],
        [
            (
                p,
                [
                    wilson_point(
                        a["engines"][e]["profiles"][p]["headline"]["traps"]["overdiagnosis"]
                    )
                    for e in engines
                ],
            )
            for p in profiles
        ],
    )
    right.set_ylim(0, 1.05)
    top_legend(right)
    right.set_ylabel("answers asserting a trap flag (Wilson 95% CI)")
    right.set_title("over-diagnosis on trap cases", fontsize="medium")
    fig.suptitle(f"bloodpanel: per engine (headline profile {a['profile']})", fontsize="medium")
    return fig


def _groups(a: Mapping[str, Any], lab: Label, key: str, names: list[str], title: str) -> Figure:
    prof = a["profile"]
    engines = list(a["engines"])
    fig = new_figure(6.4, 1.2 + 0.22 * len(names) * max(1, len(engines)) + 0.1 * len(names))
    ax = fig.add_subplot()
    series = []
    for e in engines:
        groups = a["engines"][e]["profiles"][prof][key]
        series.append(
            (lab(e), [_ci(groups[g]["composite"]) if g in groups else None for g in names])
        )
    labels = []
    for g in names:
        ns = [a["engines"][e]["profiles"][prof][key].get(g, {}).get("n_cases", 0) for e in engines]
        labels.append(f"{g} (n={'/'.join(str(n) for n in ns)})")
    interval_bars(ax, labels, series, horizontal=True, mark_no_ci=True)
    ax.set_xlim(0, 1.05)
    ax.set_xlabel(f"composite, completed answers ({prof}; bootstrap 95% CI)")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small", loc="lower right")
    return fig


def _any_without_interval(a: Mapping[str, Any], key: str) -> bool:
    """Whether some group of ``key`` has a composite estimate without an interval."""
    prof = a["profile"]
    return any(
        (p := _ci(g["composite"])) is not None and (p[1] is None or p[2] is None)
        for e in a["engines"].values()
        for g in e["profiles"][prof][key].values()
    )


def _specialties(a: Mapping[str, Any]) -> list[str]:
    prof = a["profile"]
    return sorted({g for e in a["engines"].values() for g in e["profiles"][prof]["by_specialty"]})


def _labels(a: Mapping[str, Any]) -> tuple[list[str], int]:
    """The TOP_LABELS labels with most answers (summed over engines), as report.md shows them."""
    prof = a["profile"]
    sizes: dict[str, int] = {}
    for e in a["engines"].values():
        for g, x in e["profiles"][prof]["by_label"].items():
            sizes[g] = sizes.get(g, 0) + int(x["n_total"])
    return sorted(sizes, key=lambda g: (-sizes[g], g))[:TOP_LABELS], len(sizes)


def _with_repeats(a: Mapping[str, Any]) -> list[str]:
    return [e for e, x in a["engines"].items() if x.get("repeats", {}).get("n_runs", 0) > 1]


def _repeats(a: Mapping[str, Any], lab: Label) -> Figure:
    engines = _with_repeats(a)
    fig = new_figure(7.2, 3.6)
    left, right = fig.subplots(1, 2)
    for i, e in enumerate(engines):
        r = a["engines"][e]["repeats"]
        runs = [x for x in r["per_run_composite"] if x is not None]
        color = PALETTE[i % len(PALETTE)]
        left.scatter([i] * len(runs), runs, color=color, zorder=3, s=14)
        if r["per_run_mean"] is not None:
            left.errorbar(
                [i + 0.18],
                [r["per_run_mean"]],
                yerr=[[r["per_run_sd"] or 0.0]] * 2,
                fmt="D",
                color="black",
                capsize=4,
            )
        sds = [c["sd"] for c in r.get("per_case", []) if c.get("sd") is not None]
        if sds:
            right.boxplot([sds], positions=[i], widths=0.5, showfliers=True)
        else:  # too many cases to list in result.json: the summary it does hold
            sm = [x for x in (r["sd_mean"], r["sd_median"], r["sd_max"]) if x is not None]
            right.scatter([i] * len(sm), sm, marker="_", s=200, color=color)
    for ax in (left, right):
        ax.set_xticks(range(len(engines)), [lab(e) for e in engines])
        ax.set_xlim(-0.6, len(engines) - 0.4)
    left.set_ylim(0, 1.05)
    left.set_ylabel("mean composite per run")
    left.set_title("per run (points), mean ± sd (diamond)", fontsize="medium")
    right.set_ylim(bottom=0)
    right.set_ylabel("sd of the composite over repeats")
    right.set_title("per case spread", fontsize="medium")
    fig.suptitle("bloodpanel: spread across repeats", fontsize="medium")
    return fig


def _comparisons(a: Mapping[str, Any], lab: Label) -> Figure:
    comps = a["comparisons"]
    fig = new_figure(6.4, 1.4 + 0.45 * len(comps))
    ax = fig.add_subplot()
    for i, c in enumerate(comps):
        p = point(c["mean_diff"], c["ci"]["lo"], c["ci"]["hi"])
        if p is None:
            ax.text(0, i, "n/a", va="center", ha="center", fontsize="small")
            continue
        e, lo, hi = p
        xerr = [[e - lo if lo is not None else 0.0], [hi - e if hi is not None else 0.0]]
        ax.errorbar([e], [i], xerr=xerr, fmt="o", color="#4477aa", capsize=4)
    ax.axvline(0, color="black", linewidth=0.5)
    ax.set_yticks(
        range(len(comps)),
        [
            f"{lab(c['a'])} − {lab(c['b'])}\n{c['n_cases']} cases, {p_compact(c['p'], 3)}"
            for c in comps
        ],
        fontsize="small",
    )
    ax.set_ylim(len(comps) - 0.5, -0.5)
    ax.set_xlabel("paired difference in mean composite (95% CI)")
    ax.set_title("bloodpanel: paired engine comparisons (same cases)", fontsize="medium")
    return fig


def figure_specs(section: Mapping[str, Any]) -> list[FigureSpec]:
    """The suite's figures (the ``figures`` hook), named and captioned; nothing is drawn until
    publish calls a spec's ``draw``."""
    a = section["analysis"]
    prof = a["profile"]
    added = added_engines(section)

    def lab(eng: str) -> str:
        return engine_label(eng, eng in added)

    boot = "seeded stratified bootstrap 95% intervals"
    labels, n_labels = _labels(a)
    out = [
        FigureSpec(
            "composite",
            f"bloodpanel: composite per engine under each rubric profile, over completed answers "
            f"and with errors scored 0 ({boot}); over-diagnosis on trap cases (Wilson 95%).",
            lambda: _headline(a, lab),
        ),
        FigureSpec(
            "specialty",
            f"bloodpanel: composite per specialty and engine ({prof}; {boot}; n = cases per "
            + (
                f"engine; no interval below {MIN_N_BOOTSTRAP} cases, marked '{NO_CI}')."
                if _any_without_interval(a, "by_specialty")
                else "engine)."
            ),
            lambda: _groups(
                a, lab, "by_specialty", _specialties(a), "bloodpanel: composite per specialty"
            ),
        ),
        FigureSpec(
            "labels",
            f"bloodpanel: composite per label, the {len(labels)} largest of {n_labels} "
            f"({prof}; {boot}); every label is in result.json and the scorecards.",
            lambda: _groups(
                a,
                lab,
                "by_label",
                labels,
                f"bloodpanel: composite per label ({len(labels)} of {n_labels})",
            ),
        ),
    ]
    reps = _with_repeats(a)
    if reps:
        out.append(
            FigureSpec(
                "repeats",
                "bloodpanel: spread across repeats — mean composite of each run with the mean ± "
                "sd over runs, and the sd of each case's composite over its repeats "
                f"({', '.join(map(lab, reps))}).",
                lambda: _repeats(a, lab),
            )
        )
    if has_records(a["comparisons"]):
        records = [c["paired"] for c in a["comparisons"]]
        out.append(
            FigureSpec(
                "comparisons",
                "bloodpanel: paired differences in per-case composite between engines on the "
                "cases both completed (seeded paired bootstrap 95% intervals), over the ±MDE band "
                "at 80% power for those cases (grey): a difference inside its band could not have "
                "been detected.",
                lambda: difference_mde_figure(
                    records,
                    "bloodpanel: paired engine comparisons (same cases)",
                    "paired difference in mean composite (95% CI)",
                ),
            )
        )
    elif a["comparisons"]:
        out.append(
            FigureSpec(
                "comparisons",
                "bloodpanel: paired differences in per-case composite between engines on the "
                "cases both completed (normal interval from the paired SE; sign-test p).",
                lambda: _comparisons(a, lab),
            )
        )
    return out
