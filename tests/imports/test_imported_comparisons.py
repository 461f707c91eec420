"""Issue 15 for imported runs: the paired comparison of two imported engines carries its
stats.comparisons record (difference + interval, exact and Holm-adjusted p over every pair, MDE
and n for δ, the Beta view on < 100 samples), and the imported section's report renders it.

Vector: the Inspect mockllm pair of ``test_inspect_import`` (samples s1-s5; model right on s1 s2
s4 s5, model2 on s3 s5 over two epochs, reduced per sample) — 3 vs 1 discordant, p = 0.625."""

from __future__ import annotations

import pytest

from sealedeval import stats
from sealedeval.render.comparisons import HEADER
from sealedeval.stats.comparisons import adjust_families
from sealedeval.suites.imported import present
from sealedeval.suites.imported import suite as imported

A = {"s1": [True], "s2": [True], "s3": [False], "s4": [True], "s5": [True]}
B = {
    "s1": [False, False],
    "s2": [False, False],
    "s3": [True, True],
    "s4": [False, False],
    "s5": [True, True],
}
C = {s: [True] for s in A}


def test_paired_record_of_two_imported_engines() -> None:
    c = imported._paired("m1", "m2", A, B, "majority")
    r = c["paired"]
    assert (r["a_better"], r["b_better"], r["ties"], r["n"]) == (3, 1, 1, 5)
    assert r["p"] == c["p"] == pytest.approx(0.625)
    assert r["diff"] == pytest.approx(c["difference"]) and r["lo"] == pytest.approx(c["lo"])
    vc = stats.variance_components(
        {k: [float(x) for x in v] for k, v in A.items()},
        {k: [float(x) for x in v] for k, v in B.items()},
    )
    assert (vc.k_a, vc.k_b) == (1, 2)
    assert r["mde"] == pytest.approx(stats.mde_paired(vc.omega2, vc.sigma2_a, vc.sigma2_b, 1, 2, 5))
    assert r["detectable"] is False and r["unit"] == "sample"
    assert r["bayes"] is not None and r["bayes"]["p_a_better"] == stats.prob_a_better(3, 1)
    assert r["bayes"]["a_rate"] is None  # model2 has two epochs: no single-trial rate


def test_holm_over_every_imported_pair_and_the_report() -> None:
    cs = [
        imported._paired("m1", "m2", A, B, "majority"),
        imported._paired("m1", "m3", A, C, "majority"),
        imported._paired("m2", "m3", B, C, "majority"),
    ]
    adjust_families([c["paired"] for c in cs])
    ps = [c["p"] for c in cs]
    assert [c["paired"]["p_adj"] for c in cs] == pytest.approx(stats.holm(ps))
    md = present.render("mytask", {"analysis": {"comparisons": cs, "engines": {}}})
    assert "| " + " | ".join(HEADER) + " |" in md
    row = next(line for line in md.splitlines() if line.startswith("| m1 vs m2 |"))
    cells = [x.strip() for x in row.strip("|").split("|")]
    col = HEADER.index
    assert (
        cells[col("p adjusted")].endswith("(Holm, of 3)")
        and "could not have detected" in cells[col("could it detect the difference?")]
    )
    assert "Second view, Bayesian" in md
