"""The comparison table every suite's report prints from ``stats.comparisons.Comparison`` records.

One function renders what a paired comparison found and what it could have found: the
difference with its paired 95% interval, the exact p, the Holm-adjusted p across its declared
family, the MDE at the plan's power for the n at hand and the items needed for the plan's δ —
and says in words when the MDE exceeds the observed difference ("could not have detected").
For 0/1 scores on fewer than 100 items a second, labelled table gives the Beta(1, 1) view
(posterior intervals beside Wilson, P(A > B)); it never replaces the frequentist headline.
The numbers come from result.json; nothing here computes a statistic. Fixed formats:
determinism.

Issue #30: each row says its role (``confirmatory``: a family of the sealed plan, Holm;
``exploratory``: outside it, Benjamini–Hochberg) and the test the plan named for it (exact
McNemar with the mid-p beside it for 0/1 scores, the paired permutation test otherwise), and a
missing interval says why. Records written before issue #30 lack those keys and render as
before (role from the family name, the exact sign test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.render.md import num, pval, table

HEADER = (
    "comparison",
    "role",
    "family",
    "n",
    "A better / B better / ties",
    "A − B [95% CI]",
    "test",
    "p",
    "p adjusted",
    "MDE (power)",
    "n for δ",
    "could it detect the difference?",
)


def _interval(lo: Any, hi: Any, digits: int = 3) -> str:
    if lo is None or hi is None:
        return "[n/a]"
    return f"[{num(lo, digits)}, {num(hi, digits)}]"


def difference_ci(c: Mapping[str, Any]) -> str:
    """'0.300 [0.001, 0.599]', or 'n/a' without a difference; a missing interval carries its
    reason ('0.333 [n/a: no interval: 3 cases, below the 10 ...]')."""
    if c.get("diff") is None:
        return "n/a"
    if (c.get("lo") is None or c.get("hi") is None) and c.get("ci_note"):
        return f"{num(c['diff'])} [n/a: {c['ci_note']}]"
    return f"{num(c['diff'])} {_interval(c.get('lo'), c.get('hi'))}"


TEST_LABELS = {
    "exact_mcnemar": "exact McNemar",
    "paired_permutation": "paired permutation",
}
CORRECTION_LABELS = {"holm": "Holm", "benjamini-hochberg": "BH"}


def role(c: Mapping[str, Any]) -> str:
    """The record's role; a record from before issue #30 by its family's name."""
    r = c.get("role")
    if r:
        return str(r)
    return "exploratory" if str(c.get("family", "")).startswith("exploratory") else "confirmatory"


def test_label(c: Mapping[str, Any]) -> str:
    """'exact McNemar', 'paired permutation (exact, 512 flips)' or '... (Monte Carlo, 10000
    draws, seed 123)'."""
    t = str(c.get("test") or "exact_mcnemar")
    label = TEST_LABELS.get(t, t)
    perm = c.get("permutation")
    if isinstance(perm, Mapping):
        if perm.get("exact"):
            label += f" (exact, {perm.get('n_permutations')} flips)"
        else:
            label += f" (Monte Carlo, {perm.get('n_permutations')} draws, seed {perm.get('seed')})"
    return label


def p_cell(c: Mapping[str, Any]) -> str:
    """The p of the plan's test, with the mid-p McNemar beside it for 0/1 scores."""
    out = pval(c["p"], 4)
    if c.get("p_midp") is not None:
        out += f" (mid-p {pval(c['p_midp'], 4)})"
    return out


def detection_words(c: Mapping[str, Any]) -> str:
    """The verdict in words: could / could not have detected the observed difference."""
    mde, diff = c.get("mde"), c.get("diff")
    if c.get("detectable") is False and (mde is None or mde <= abs(diff or 0.0)):
        return f"**could not have detected** any difference ({c.get('mde_note')})"
    if c.get("detectable") is None or mde is None or diff is None:
        return f"MDE not estimable ({c.get('mde_note') or 'no data'})"
    if c["detectable"]:
        return f"yes: MDE {num(mde)} ≤ |{num(diff)}|"
    return f"**could not have detected** a difference of {num(abs(diff))} (MDE {num(mde)})"


def _holm(c: Mapping[str, Any]) -> str:
    if c.get("p_adj") is None:
        return "n/a"
    how = CORRECTION_LABELS.get(str(c.get("correction", "holm")), str(c.get("correction")))
    return f"{pval(c['p_adj'], 4)} ({how}, of {c.get('family_size', '?')})"


def comparison_rows(records: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [
        [
            c["name"],
            role(c),
            c["family"],
            c["n"],
            f"{c['a_better']} / {c['b_better']} / {c['ties']}",
            difference_ci(c),
            test_label(c),
            p_cell(c),
            _holm(c),
            f"{num(c['mde'])} ({c['power']:.0%})" if c.get("mde") is not None else "n/a",
            f"{c['n_needed_for_delta']} (δ = {c['delta']:g})"
            if c.get("n_needed_for_delta") is not None
            else "n/a",
            detection_words(c),
        ]
        for c in records
    ]


def comparison_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown table of ``records`` (every column of ``HEADER``)."""
    return table(list(HEADER), comparison_rows(records))


def _rate(r: Mapping[str, Any] | None) -> str:
    if not r:
        return "n/a"
    w, b = r.get("wilson") or [None, None], r.get("beta") or [None, None]
    return f"{r['k']}/{r['n']}: Wilson {_interval(*w)} · Beta {_interval(*b)}"


def bayes_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The Beta(1, 1) second view of the records that have one ('' when none has)."""
    rows = [
        [c["name"], c["n"], _rate(b.get("a_rate")), _rate(b.get("b_rate")), num(b["p_a_better"])]
        for c in records
        if (b := c.get("bayes"))
    ]
    if not rows:
        return ""
    return table(["comparison", "n", "rate A", "rate B", "P(A > B)"], rows)


def methods_note(records: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on how the columns were computed (from the records themselves)."""
    if not records:
        return ""
    c = records[0]
    ci = sorted({str(r["ci_method"]) for r in records})
    tests = sorted({str(r["p_method"]) for r in records})
    midp = any(r.get("p_midp") is not None for r in records)
    return (
        f"Intervals: {'; '.join(ci)}. p: the test the sealed plan names for the family "
        f"({'; '.join(tests)})"
        + (
            "; mid-p: the mid-p McNemar test (Fagerland, Lydersen & Laake 2013), less "
            "conservative than the exact test, printed beside it"
            if midp
            else ""
        )
        + ". Role: confirmatory — a family of the sealed, pre-registered plan, p adjusted by "
        "Holm across its family (of m); exploratory — outside it (e.g. an engine added after "
        "the seal), p adjusted by Benjamini–Hochberg (BH) across its family. MDE: the smallest "
        f"true difference a two-sided α = {c['alpha']:g} test detects with power "
        f"{c['power']:.0%} on these n items (Miller 2024 Eq. 9 inverted, variances estimated "
        "from these scores); n for δ: items needed to detect the plan's δ. A non-significant p "
        "where the MDE exceeds the observed difference says nothing about equality."
    )


def comparison_block(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Table, methods note and (when any) the labelled Bayesian view, as report lines."""
    if not records:
        return []
    out = [comparison_table(records), "", methods_note(records), ""]
    bt = bayes_table(records)
    if bt:
        out += [
            "Second view, Bayesian (0/1 scores, n < 100; Beta(1,1) prior): equal-tailed 95% "
            "posterior interval beside Wilson, and the posterior probability that A's rate "
            "exceeds B's from the discordant split. It does not replace the p-values above.",
            "",
            bt,
            "",
        ]
    return out


def has_records(comparisons: Sequence[Mapping[str, Any]], key: str = "paired") -> bool:
    """True when every comparison carries its record under ``key`` (result.json written since
    issue 15; older sections keep their old table)."""
    return bool(comparisons) and all(isinstance(c.get(key), Mapping) for c in comparisons)
