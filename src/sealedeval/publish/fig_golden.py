"""golden figures: greedy accuracy with Wilson intervals, pass@k vs pass^k, per-run spread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sealedeval.publish.figures import new_figure, register

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _rate_bar(ax: Any, x: float, r: Mapping[str, Any], color: str, label: str | None) -> None:
    rate = r.get("rate")
    if rate is None:
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


@register("golden")
def figures(section: Mapping[str, Any]) -> dict[str, Figure]:
    a = section["analysis"]
    engines = list(a["engines"])
    out: dict[str, Figure] = {}

    fig = new_figure()
    ax = fig.add_subplot()
    for i, eng in enumerate(engines):
        g = _base(a["engines"][eng])["main"]
        _rate_bar(ax, i - 0.2, g["accuracy"], "#4477aa", "completed" if i == 0 else None)
        _rate_bar(
            ax, i + 0.2, g["accuracy_lower_bound"], "#bbbbbb", "errors = fail" if i == 0 else None
        )
    ax.set_xticks(range(len(engines)), engines)
    ax.set_xlim(-0.7, len(engines) - 0.3)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("greedy accuracy (Wilson 95% CI)")
    ax.set_title(f"golden: accuracy per engine ({a['n_items']} tasks)")
    ax.legend(loc="lower right", fontsize="small")
    out["accuracy"] = fig

    fig = new_figure()
    ax = fig.add_subplot()
    any_line = False
    for eng in engines:
        r = _base(a["engines"][eng])["repeats"]
        if not r["n_runs"]:
            continue
        ks = list(range(1, r["n_runs"] + 1))
        for key, style, lab in (("pass_at_k", "-o", "pass@k"), ("pass_hat_k", "--s", "pass^k")):
            ys = [r[key].get(str(k)) for k in ks]
            ys_f = [float("nan") if y is None else float(y) for y in ys]
            ax.plot(ks, ys_f, style, label=f"{eng} {lab}")
            any_line = True
        ax.set_xticks(ks)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("k (sampled answers)")
    ax.set_ylabel("probability")
    ax.set_title("golden: pass@k vs pass^k")
    if any_line:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no repeats in this profile", ha="center", transform=ax.transAxes)
    out["passk"] = fig

    fig = new_figure()
    ax = fig.add_subplot()
    data = [_base(a["engines"][e])["repeats"]["per_run_correct"] for e in engines]
    for i, runs in enumerate(data):
        if runs:
            ax.scatter([i] * len(runs), runs, color="#4477aa", zorder=3)
            r = _base(a["engines"][engines[i]])["repeats"]
            ax.errorbar(
                [i + 0.15], [r["per_run_mean"]], yerr=[[r["per_run_sd"] or 0.0]] * 2,
                fmt="D", color="#cc6677", capsize=4,
            )
    ax.set_xticks(range(len(engines)), engines)
    ax.set_xlim(-0.5, len(engines) - 0.5)
    ax.set_ylim(0, max(1, a["n_items"]) * 1.05)
    ax.set_ylabel(f"correct per run (of {a['n_items']})")
    ax.set_title("golden: per-run spread (points) and mean ± sd")
    out["runs"] = fig
    return out
