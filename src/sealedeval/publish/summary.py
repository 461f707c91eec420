"""The one-page summary every report opens with: per suite, what was found, in five lines.

Read from result.json's dict only (like everything in publish), so each number on the summary
page can be traced to a field of result.json: the headline is a ``stats.metrics.Metric`` of the
suite's ``analysis.metrics``, completeness is ``seal.counts``, and every comparison comes from
the suite's own analysis. report.md, report.pdf and report.html (``publish.html``) all render
the same ``SuiteSummary`` list, so the three can never disagree about the findings.

What a suite's headline is, and which of its comparisons were pre-registered, is the suite's to
say: its optional ``summary(section)`` presentation hook returns plain JSON (see ``Hints``).
Without one, the summary falls back on the metric schema: the headline is the first metric of
the analysis that has an estimate, and the comparisons are ``analysis.hypotheses`` entries with
a ``p`` (the ``tasks`` suite kind's shape) or, failing those, ``analysis.comparisons``.

What a reader must know before any number comes first: a result that is NOT AS SEALED (its
``as_sealed.deviations``: a sealed engine or comparison missing, a ledgered part gone), an
``amended`` seal with each earlier seal its runs were made under (``seal_history``), and the
engines added after the seal (``design.added_after_seal``), labelled wherever they are named,
with their comparisons listed apart from the pre-registered ones. The records carry these as
fields (``SuiteSummary.deviations``, ``.history``, ``.added_after_seal``, ``.exploratory``,
``Headline``/``Completeness.added_after_seal``) for every renderer; the lines here are the text.

The audit's verdict is not part of result.json (the audit re-derives report.md byte for byte,
so report.md cannot contain it): callers that have run it pass it in (``audit=``); otherwise the
summary says how to check.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sealedeval.plugins import presentation_hook
from sealedeval.render.md import num, p_text
from sealedeval.render.metrics import ADDED_LABEL, added_engines, engine_label
from sealedeval.seal.design import EXPLORATORY_FAMILY
from sealedeval.seal.standing import NOT_AS_SEALED

ALPHA = 0.05
"""Significance level for a verdict when the comparison does not carry its own ``alpha``:
the conventional two-sided 5% every suite's pre-registration uses (DESIGN, "Statistics")."""

AUDIT_UNKNOWN = "not recorded here (run `sealedeval audit`)"

# Directions a comparison's claim can take (``Hints`` ``comparisons[].direction``). "greater"
# claims a > b; "not_greater" claims a does not exceed b (only a significant a > b refutes it).
DIRECTIONS = ("greater", "less", "not_greater", "not_less", "equal", "two-sided")
_SYMBOL = {
    "greater": ">",
    "less": "<",
    "not_greater": "not >",
    "not_less": "not <",
    "equal": "=",
    "two-sided": "vs",
}


@dataclass(frozen=True)
class Headline:
    """One headline number: a ``Metric`` of result.json, with the groups that tell it apart
    (the engine first) as ``where``."""

    engine: str
    where: str
    estimate: float | None
    lo: float | None
    hi: float | None
    method: str
    n_ok: int
    n_error: int
    n_total: int
    unit: str
    added_after_seal: bool = False
    """The engine is not in the sealed design (``design.added_after_seal``): labelled wherever
    it is named, and its comparisons are exploratory."""


@dataclass(frozen=True)
class Completeness:
    """One run's counts, from ``seal.counts[engine]``; ``absent`` for a sealed engine with no
    rows at all (``design.missing_engines``), which makes the result NOT AS SEALED."""

    engine: str
    requests: int
    ok: int
    error: int
    missing: int
    complete: bool
    added_after_seal: bool = False
    absent: bool = False


@dataclass(frozen=True)
class EarlierSeal:
    """One earlier seal of an amended suite (result.json ``seal_history.earlier``): the runs
    made under it, the sealed files that changed since, and the headline its rows gave when
    they are still present (``headline_note`` says why there is none)."""

    commit: str
    date: str
    runs: int
    calls: int
    engines: tuple[str, ...]
    changed: tuple[str, ...]
    rows_present: bool
    headline: tuple[Headline, ...]
    headline_note: str


@dataclass(frozen=True)
class Comparison:
    """One pre-registered comparison and its verdict (text a reader can act on)."""

    id: str
    claim: str
    estimate: float | None
    lo: float | None
    hi: float | None
    p: float | None
    p_adjusted: float | None
    n: int | None
    verdict: str
    mde: float | None = None
    """Minimum detectable effect at the plan's power (``stats.comparisons``), when recorded."""
    detectable: bool | None = None
    """False: the comparison could not have detected a difference of the size observed."""
    adjusted_decides: bool = True
    """Whether the verdict rests on ``p_adjusted`` (when there is one) or on ``p``: a plan that
    pre-registered unadjusted tests keeps them, with the adjusted p shown beside."""


@dataclass(frozen=True)
class SuiteSummary:
    """What one suite found. ``metric``/``label`` name the headline; ``headline`` holds one
    entry per engine (or per engine and group, as the suite chose)."""

    suite: str
    seal_status: str
    seal_commits: tuple[str, ...]
    rubric_sha256: str
    audit: str
    metric: str
    label: str
    headline: tuple[Headline, ...]
    completeness: tuple[Completeness, ...]
    comparisons: tuple[Comparison, ...]
    note: str = ""
    more_comparisons: int = field(default=0)
    deviations: tuple[str, ...] = ()
    """What the result lacks of its seal (``as_sealed.deviations``): empty when as sealed."""
    history: tuple[EarlierSeal, ...] = ()
    """The earlier seals runs were made under (status ``amended``), oldest first."""
    added_after_seal: tuple[str, ...] = ()
    exploratory: tuple[Comparison, ...] = ()
    """Comparisons with an engine added after the seal: their own family, not pre-registered."""

    @property
    def as_sealed(self) -> bool:
        return not self.deviations

    @property
    def complete(self) -> bool:
        return self.as_sealed and all(c.complete for c in self.completeness)


MAX_COMPARISONS = 16
"""At most this many comparisons on the summary page; the rest are counted ("and N more") and
all are in the suite's section of the appendix."""


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


def _i(x: Any) -> int | None:
    return None if x is None else int(x)


def verdict(
    direction: str,
    estimate: float | None,
    p: float | None,
    *,
    alpha: float = ALPHA,
    n: int | None = None,
    p_label: str = "p",
) -> str:
    """The verdict on a claim about ``a − b`` (``estimate``), tested at ``alpha`` with ``p``
    (the adjusted p when the plan corrects for multiplicity). A non-significant result is
    never reported as equality."""
    if direction not in DIRECTIONS:
        raise ValueError(f"comparison direction {direction!r}: expected one of {DIRECTIONS}")
    if n == 0 or p is None:
        return "not testable (no paired data)"
    sig = p <= alpha
    up = estimate is not None and estimate > 0
    down = estimate is not None and estimate < 0
    ptxt = p_text(p, p_label)
    if direction in ("greater", "less"):
        right, wrong = (up, down) if direction == "greater" else (down, up)
        if sig and right:
            return f"supported ({ptxt})"
        if sig and wrong:
            return f"contradicted: significant in the opposite direction ({ptxt})"
        return f"not shown ({ptxt})"
    if direction in ("not_greater", "not_less"):
        wrong = up if direction == "not_greater" else down
        if sig and wrong:
            return f"contradicted ({ptxt})"
        change = "increase" if direction == "not_greater" else "decrease"
        return f"consistent: no significant {change} ({ptxt})"
    if sig:
        return f"differ ({ptxt})"
    return f"no difference shown ({ptxt}; not evidence of equality)"


Groups = Mapping[str, str | Sequence[str]]
"""A headline's selection: each group key fixed to one value, or to a list of values (then
the summary shows one number per listed value, in the list's order, per engine)."""


def _matches(m: Mapping[str, Any], name: str, groups: Groups) -> bool:
    g = m.get("groups") or {}
    if m.get("metric") != name:
        return False
    return all(g.get(k) == v if isinstance(v, str) else g.get(k) in v for k, v in groups.items())


def _order(m: Mapping[str, Any], groups: Groups) -> tuple[Any, ...]:
    g = m.get("groups") or {}
    rank = [list(v).index(g[k]) for k, v in groups.items() if not isinstance(v, str)]
    return (str(g.get("engine", "")), *rank)


def _chosen(
    metrics: Sequence[Mapping[str, Any]], name: str, groups: Groups
) -> list[Mapping[str, Any]]:
    chosen = [m for m in metrics if _matches(m, name, groups)]
    return sorted(chosen, key=lambda m: _order(m, groups))


def _headline(
    metrics: Sequence[Mapping[str, Any]],
    name: str,
    groups: Groups,
    added: Collection[str] = (),
) -> tuple[Headline, ...]:
    out = []
    for m in _chosen(metrics, name, groups):
        g = dict(m.get("groups") or {})
        engine = str(g.pop("engine", "") or "")
        fixed = {k for k, v in groups.items() if isinstance(v, str)}
        where = ", ".join(f"{k}={v}" for k, v in g.items() if k not in fixed)
        out.append(
            Headline(
                engine=engine,
                where=where,
                estimate=_f(m.get("estimate")),
                lo=_f(m.get("lo")),
                hi=_f(m.get("hi")),
                method=str(m.get("method", "")),
                n_ok=int(m.get("n_ok", 0)),
                n_error=int(m.get("n_error", 0)),
                n_total=int(m.get("n_total", 0)),
                unit=str(m.get("unit", "")),
                added_after_seal=engine in added,
            )
        )
    return tuple(out)


def _head_choice(h: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(metric, label, groups) of the suite's headline, from its ``hints``."""
    head = h.get("headline") or {}
    metric = str(head.get("metric") or "")
    groups: dict[str, str | list[str]] = {
        str(k): str(v) if isinstance(v, str) else [str(x) for x in v]
        for k, v in (head.get("groups") or {}).items()
    }
    return metric, str(head.get("label") or metric), groups


def headline_metrics(name: str, section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The metric records of the suite's headline, as result.json holds them (what an earlier
    seal's rows gave is recorded this way in ``seal_history``)."""
    metric, _, groups = _head_choice(hints(name, section))
    if not metric:
        return []
    metrics = list((section.get("analysis") or {}).get("metrics") or [])
    return [dict(m) for m in _chosen(metrics, metric, groups)]


_RECORD = {"estimate": "diff", "p_adjusted": "p_adj"}
"""Hint fields read from a ``stats.comparisons.Comparison`` record (``"paired"``) when the
hint leaves them out: the record's names where they differ, else the same name."""


def _comparison(hint: Mapping[str, Any], alpha: float) -> Comparison:
    rec: Mapping[str, Any] = hint["paired"] if isinstance(hint.get("paired"), Mapping) else {}
    c = dict(hint)
    for k in ("estimate", "lo", "hi", "p", "p_adjusted", "n", "alpha", "mde", "detectable"):
        if c.get(k) is None and rec.get(_RECORD.get(k, k)) is not None:
            c[k] = rec[_RECORD.get(k, k)]
    direction = str(c.get("direction") or "two-sided")
    est, p, padj, n = _f(c.get("estimate")), _f(c.get("p")), _f(c.get("p_adjusted")), _i(c.get("n"))
    a = float(c["alpha"]) if c.get("alpha") is not None else alpha
    adjusted = bool(c.get("adjusted_decides", True)) and padj is not None
    text = c.get("verdict") or (
        verdict(direction, est, padj, alpha=a, n=n, p_label="adjusted p")
        if adjusted
        else verdict(direction, est, p, alpha=a, n=n)
    )
    claim = c.get("claim") or f"{c.get('a', '?')} {_SYMBOL[direction]} {c.get('b', '?')}"
    return Comparison(
        id=str(c.get("id") or ""),
        claim=str(claim),
        estimate=est,
        lo=_f(c.get("lo")),
        hi=_f(c.get("hi")),
        p=p,
        p_adjusted=padj,
        n=n,
        verdict=str(text),
        mde=_f(c.get("mde")),
        detectable=None if c.get("detectable") is None else bool(c.get("detectable")),
        adjusted_decides=adjusted,
    )


_TASKS_DIRECTION = {"greater": "greater", "less": "less", "two-sided": "two-sided"}


def default_hints(section: Mapping[str, Any]) -> dict[str, Any]:
    """Hints from the metric schema and the common comparison shapes, for a suite without a
    ``summary`` hook (an installed suite, a ``tasks`` suite, a result from elsewhere)."""
    a = section.get("analysis") or {}
    metrics = list(a.get("metrics") or [])
    first = next((m for m in metrics if m.get("estimate") is not None), None)
    first = first or (metrics[0] if metrics else None)
    head: dict[str, Any] = {}
    if first is not None:
        head = {"metric": first["metric"], "groups": {}, "label": str(first["metric"])}
    comps: list[dict[str, Any]] = []
    for h in a.get("hypotheses") or []:
        if isinstance(h, Mapping) and "p" in h and "a" in h and "b" in h:
            comps.append(
                {
                    "id": h.get("id"),
                    "a": h["a"],
                    "b": h["b"],
                    "direction": _TASKS_DIRECTION.get(str(h.get("direction")), "two-sided"),
                    "estimate": h.get("difference"),
                    "p": h.get("p"),
                    "p_adjusted": h.get("p_adjusted"),
                    "alpha": h.get("alpha"),
                    "n": h.get("n_items"),
                }
            )
    if not comps:
        for c in a.get("comparisons") or []:
            if isinstance(c, Mapping) and "p" in c and "a" in c and "b" in c:
                est = c.get("difference", c.get("mean_diff"))
                ci: Mapping[str, Any] = c["ci"] if isinstance(c.get("ci"), Mapping) else {}
                comps.append(
                    {
                        "id": c.get("id"),
                        "a": c["a"],
                        "b": c["b"],
                        "direction": "two-sided",
                        "estimate": est,
                        "lo": c.get("lo", ci.get("lo")),
                        "hi": c.get("hi", ci.get("hi")),
                        "p": c.get("p"),
                        "p_adjusted": c.get("p_adjusted"),
                        "n": c.get("n_items", c.get("n_cases")),
                        "paired": c.get("paired"),
                    }
                )
    return {"headline": head, "comparisons": comps}


def hints(name: str, section: Mapping[str, Any]) -> Mapping[str, Any]:
    """The suite's ``summary`` hook's answer, else ``default_hints``.

    The hook returns ``{"headline": {"metric", "groups", "label"}, "comparisons": [{"id",
    "claim" or "a"/"b", "direction", "estimate", "lo", "hi", "p", "p_adjusted", "alpha", "n",
    "mde", "detectable", "adjusted_decides", "paired" (a ``stats.comparisons`` record that
    supplies what is left out), optional "verdict"}], "note": str, "samples": {"primary_grader",
    "target_field"}}`` — plain JSON taken from its result.json section. ``samples`` tells
    report.html's sample view which grader's verdict is the suite's own and which item field
    holds the expected answer (``publish.html.sample_view``; optional)."""
    fn = presentation_hook(name, "summary")
    if fn is not None:
        return dict(fn(section))
    return default_hints(section)


def _exploratory(hint: Mapping[str, Any], added: Collection[str]) -> bool:
    rec = hint.get("paired")
    if isinstance(rec, Mapping) and str(rec.get("family")).startswith(EXPLORATORY_FAMILY):
        return True
    return str(hint.get("a")) in added or str(hint.get("b")) in added


def _earlier(
    entry: Mapping[str, Any], metric: str, groups: Groups, added: Collection[str]
) -> EarlierSeal:
    return EarlierSeal(
        commit=str(entry.get("commit", "")),
        date=str(entry.get("date", "")),
        runs=int(entry.get("runs", 0)),
        calls=int(entry.get("calls", 0)),
        engines=tuple(str(e) for e in entry.get("engines") or ()),
        changed=tuple(str(c) for c in entry.get("changed") or ()),
        rows_present=bool(entry.get("rows_present")),
        headline=_headline(list(entry.get("headline") or []), metric, groups, added),
        headline_note=str(entry.get("headline_note") or ""),
    )


def suite_summary(
    name: str, section: Mapping[str, Any], *, audit: str | None = None
) -> SuiteSummary:
    seal = section.get("seal") or {}
    a = section.get("analysis") or {}
    h = hints(name, section)
    metric, label, groups = _head_choice(h)
    added = tuple(sorted(added_engines(section)))
    hints_all = list(h.get("comparisons") or [])
    comps = [_comparison(c, ALPHA) for c in hints_all if not _exploratory(c, added)]
    explore = [_comparison(c, ALPHA) for c in hints_all if _exploratory(c, added)]
    design = section.get("design") or {}
    absent = [str(e) for e in design.get("missing_engines") or ()]
    hist = section.get("seal_history") or {}
    return SuiteSummary(
        suite=name,
        seal_status=str(seal.get("status", "unknown")),
        seal_commits=tuple(str(c) for c in seal.get("seal_commits") or ()),
        rubric_sha256=str(seal.get("rubric_sha256", "")),
        audit=audit or AUDIT_UNKNOWN,
        metric=metric,
        label=label,
        headline=_headline(list(a.get("metrics") or []), metric, groups, added) if metric else (),
        completeness=tuple(
            Completeness(
                engine=str(e),
                requests=int(c.get("requests", 0)),
                ok=int(c.get("ok", 0)),
                error=int(c.get("error", 0)),
                missing=int(c.get("missing", 0)),
                complete=bool(c.get("complete")),
                added_after_seal=str(e) in added,
            )
            for e, c in (seal.get("counts") or {}).items()
        )
        + tuple(Completeness(e, 0, 0, 0, 0, False, absent=True) for e in absent),
        comparisons=tuple(comps[:MAX_COMPARISONS]),
        note=str(h.get("note") or ""),
        more_comparisons=max(0, len(comps) - MAX_COMPARISONS),
        deviations=tuple(str(d) for d in (section.get("as_sealed") or {}).get("deviations") or ()),
        history=tuple(_earlier(e, metric, groups, added) for e in hist.get("earlier") or ()),
        added_after_seal=added,
        exploratory=tuple(explore[:MAX_COMPARISONS]),
    )


def suite_summaries(
    result: Mapping[str, Any], *, audit: Mapping[str, str] | str | None = None
) -> list[SuiteSummary]:
    """One ``SuiteSummary`` per suite of result.json, in its order. ``audit`` is the audit's
    verdict, for every suite (a string) or per suite (a mapping), when the caller has it."""
    out = []
    for name, section in (result.get("suites") or {}).items():
        a = audit.get(name) if isinstance(audit, Mapping) else audit
        out.append(suite_summary(name, section, audit=a))
    return out


def interval_text(h: Headline | Comparison) -> str:
    if h.lo is None or h.hi is None:
        return "no interval"
    return f"[{num(h.lo)}, {num(h.hi)}]"


def _counts(n_ok: int, n_error: int, unit: str) -> str:
    return f"{n_ok} ok / {n_error} error, per {unit}" if unit else f"{n_ok} ok / {n_error} error"


def headline_text(h: Headline) -> str:
    """``reference 0.833 [0.436, 0.970] (wilson; 6 ok / 0 error, per task)``."""
    name = engine_label(h.engine, h.added_after_seal)
    who = name + (f" ({h.where})" if h.where else "") if h.engine else (h.where or "all")
    counts = _counts(h.n_ok, h.n_error, h.unit)
    if h.estimate is None:
        return f"{who} n/a ({counts})"
    if h.lo is None or h.hi is None:
        return f"{who} {num(h.estimate)}, no interval ({counts})"
    return f"{who} {num(h.estimate)} {interval_text(h)} ({h.method}; {counts})"


def completeness_text(c: Completeness) -> str:
    if c.absent:
        return f"{c.engine} no rows (sealed engine missing: {NOT_AS_SEALED})"
    state = "complete" if c.complete else "INCOMPLETE"
    missing = f", {c.missing} missing" if c.missing else ""
    who = engine_label(c.engine, c.added_after_seal)
    return f"{who} {c.ok}/{c.requests} ok, {c.error} error{missing} ({state})"


def deviation_text(s: SuiteSummary) -> str:
    """``**NOT AS SEALED**: golden/local1: sealed engine has no rows; ...`` ('' when as sealed)."""
    if s.as_sealed:
        return ""
    return f"**{NOT_AS_SEALED}**: " + "; ".join(s.deviations) + "."


def earlier_seal_text(e: EarlierSeal) -> str:
    """``seal `abc123def456` (2026-01-02 10:00 UTC): 2 runs (a, b), 24 calls; changed since:
    data/items.jsonl; headline then: a 0.900 [...]`` — or "rows not present"."""
    runs = f"{e.runs} run{'s' if e.runs != 1 else ''} ({', '.join(e.engines)}), {e.calls} calls"
    changed = ", ".join(f"`{c}`" for c in e.changed) or "nothing sealed"
    if e.headline:
        then = "headline then: " + "; ".join(headline_text(h) for h in e.headline)
    else:
        then = f"headline then: {e.headline_note or 'not recorded'}"
    return f"seal `{e.commit[:12]}` ({e.date}): {runs}; changed since: {changed}; {then}"


def history_text(s: SuiteSummary) -> str:
    """The amended suite's earlier seals in one line ('' when there are none)."""
    if not s.history:
        return ""
    k = len(s.history)
    return (
        f"Seal history: **amended** — runs were made under {k} earlier seal{'s' if k != 1 else ''}"
        " before the one in force: " + "; ".join(earlier_seal_text(e) for e in s.history) + "."
    )


def added_text(s: SuiteSummary) -> str:
    """The legend for engines added after the seal ('' when there are none)."""
    if not s.added_after_seal:
        return ""
    return (
        f"Engines {ADDED_LABEL}: {', '.join(s.added_after_seal)} (not in the sealed design; "
        "labelled wherever named; their comparisons are exploratory, in a family of their own)."
    )


def comparison_text(c: Comparison) -> str:
    """``P1 C > A on M1: **not shown (p = 0.250)**, difference 0.500 [0.1, 0.9], n = 8``."""
    ident = f"{c.id} " if c.id else ""
    extra = []
    if c.estimate is not None:
        iv = f" {interval_text(c)}" if c.lo is not None and c.hi is not None else ""
        extra.append(f"difference {num(c.estimate)}{iv}")
    if c.p_adjusted is not None and c.adjusted_decides:
        extra.append(p_text(c.p, "unadjusted p"))
    elif c.p_adjusted is not None:
        extra.append(p_text(c.p_adjusted, "adjusted p"))
    if c.n is not None:
        extra.append(f"n = {c.n}")
    if c.mde is not None:
        could = "; could not have detected the difference seen" if c.detectable is False else ""
        extra.append(f"MDE {num(c.mde)}{could}")
    tail = (", " + ", ".join(extra)) if extra else ""
    return f"{ident}{c.claim}: **{c.verdict}**{tail}"


def summary_lines(s: SuiteSummary) -> list[str]:
    """The suite's lines (Markdown list items without the bullet): what it lacks of its seal
    first, then the seal and its history, completeness, headline and comparisons."""
    commits = ", ".join(f"`{c[:12]}`" for c in s.seal_commits) or "no seal commit"
    out = [line for line in (deviation_text(s),) if line]
    seal = (
        f"**{s.seal_status}**"
        if s.as_sealed
        else f"**{NOT_AS_SEALED}** (its runs: {s.seal_status})"
    )
    out += [
        f"Seal: {seal} ({commits}); audit: {s.audit}.",
        "Completeness: "
        + ("; ".join(completeness_text(c) for c in s.completeness) or "no runs")
        + ".",
    ]
    out += [line for line in (history_text(s), added_text(s)) if line]
    if s.headline:
        out.append(f"Headline, {s.label}: " + "; ".join(headline_text(h) for h in s.headline) + ".")
    else:
        out.append("Headline: none reported by this suite's analysis.")
    if s.comparisons:
        more = f"; and {s.more_comparisons} more in the appendix" if s.more_comparisons else ""
        out.append(
            "Pre-registered comparisons: "
            + "; ".join(comparison_text(c) for c in s.comparisons)
            + more
            + "."
        )
    else:
        out.append("Pre-registered comparisons: none in this run.")
    if s.exploratory:
        out.append(
            f"Exploratory comparisons (an engine {ADDED_LABEL}; Holm within their own family, "
            "not pre-registered): " + "; ".join(comparison_text(c) for c in s.exploratory) + "."
        )
    if s.note:
        out.append(s.note)
    return out
