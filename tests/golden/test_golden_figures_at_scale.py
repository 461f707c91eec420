"""Golden's pass@k and per-run figures at a benchmark's scale (hundreds of thousands of runs
per task) draw a bounded number of points and say what they drew; a shipped profile's
figures draw every k and every run, as before."""

from __future__ import annotations

from typing import Any

import pytest

from sealedeval.suites.golden.present import figures as gf


def _analysis(n_runs: int) -> dict[str, Any]:
    repeats = {
        "n_runs": n_runs,
        "pass_at_k": {str(k): 1 - 0.5**k for k in range(1, n_runs + 1)},
        "pass_hat_k": {str(k): 0.5**k for k in range(1, n_runs + 1)},
        "per_run_correct": [k % 7 for k in range(n_runs)],
        "per_run_mean": 3.0,
        "per_run_sd": 2.0,
        "n_error": 0,
    }
    return {"n_items": 7, "engines": {"e": {"branches": {"A": {"repeats": repeats}}}}}


def _points(fig: Any) -> list[int]:
    ax = fig.axes[0]
    return [len(line.get_xdata()) for line in ax.get_lines()] + [
        len(c.get_offsets()) for c in ax.collections
    ]


@pytest.mark.parametrize("n_runs", [5, 64])
def test_a_small_profile_draws_every_k_and_run(n_runs: int) -> None:
    a = _analysis(n_runs)
    fig = gf._passk(a, str)
    assert _points(fig)[:2] == [n_runs, n_runs]
    assert [t for t in fig.axes[0].get_xticks()] == list(range(1, n_runs + 1))
    runs = gf._runs(a, str)
    assert n_runs in _points(runs) and "drawn" not in runs.axes[0].get_title()


def test_a_benchmark_scale_profile_draws_a_bounded_figure() -> None:
    n_runs = 200_000
    a = _analysis(n_runs)
    fig = gf._passk(a, str)
    lines = fig.axes[0].get_lines()
    assert [len(x.get_xdata()) for x in lines] == [gf.PASSK_POINTS] * 2
    xs = list(lines[0].get_xdata())
    assert xs[: gf.PASSK_TICKS] == list(range(1, gf.PASSK_TICKS + 1)) and xs[-1] == n_runs
    assert (
        list(lines[0].get_ydata())[-1]
        == a["engines"]["e"]["branches"]["A"]["repeats"]["pass_at_k"][str(n_runs)]
    )
    assert len(fig.axes[0].get_xticks()) < 20
    runs = gf._runs(a, str)
    assert gf.RUNS_SHOWN in _points(runs)
    assert f"{gf.RUNS_SHOWN:,} runs an engine drawn" in runs.axes[0].get_title()


@pytest.mark.parametrize("n_runs", [5, 64, 200_000])
def test_the_repeats_table_lists_every_k_up_to_64_runs_and_a_few_beyond(n_runs: int) -> None:
    from sealedeval.suites.golden.present import report as gr

    a = _analysis(n_runs) | {"design": {"temperature": 0.7}}
    text = "\n".join(gr._repeats(a, str))
    row = next(line for line in text.splitlines() if line.startswith("| e |"))
    if n_runs <= gr.REPORT_RUNS:
        assert row.count(" 0.50 ") >= 1 and f"({n_runs:,} runs)" not in row
        assert len(row.split("|")[5].split()) == n_runs  # pass@k: one value per k
    else:
        assert len(row) < 2_000 and f"({n_runs:,} runs)" in row
        assert "k=1: 0.50" in row and f"k={n_runs:,}: 1.00" in row and "k=100,000:" in row
