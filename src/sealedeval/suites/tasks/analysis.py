"""The analysis plan of every ``tasks`` suite (sealed with it; the config's ``analysis`` block
chooses among its options and is sealed too).

Unit of analysis: the item. An engine's answers to an item (``repeats`` of them) are reduced to
one verdict (``analysis.reduce``: ``majority`` — more than half of its completed repeats pass —,
``any``, ``all`` or ``first``) and the headline accuracy is that verdict's rate over the items
with at least one completed answer, with a Wilson 95% interval; errored calls are counted
(``n_error``), never graded as failures, and the rate with errors counted as failures is given
beside it. The primary grader decides the verdict (``analysis.primary``); every grader's pass
rate is reported the same way.

With repeats: the mean over every completed answer with an item-clustered normal interval
(Miller 2024), the accuracy of each repeat and their spread (mean, sd), and pass@k / pass^k for
k up to the fewest completed repeats of an item (unbiased estimators). With ``cluster_by``: the
headline accuracy with a cluster-robust interval over that column.

Engines are compared on the items both completed: the mean difference of the item scores (the
share of an item's repeats that pass) with its paired standard error and normal 95% interval,
and the exact sign test on the items where they differ; every comparison also carries its
``stats.comparisons`` record (issue 15): the Holm-adjusted p across the family ``engines`` (all
the suite's engine pairs), the MDE at ``analysis.power`` (default 0.8) for the items at hand, the
items needed for ``analysis.delta`` (default 0.05) at ``analysis.alpha``, and for 0/1 verdicts on
fewer than 100 items the Beta(1,1) view. Pre-registered hypotheses (``a`` better
than ``b``, worse, or different) are tested with the exact sign test (one-sided where a
direction is given) at their ``alpha``, Holm-adjusted across the hypotheses unless
``correction: none``.

Abstention (``abstention: category``): on answerable items, the abstention rate, the accuracy
among the answers that did not abstain, and the abstention-aware score at thresholds 0, 0.5,
0.75, 0.9 (Kalai et al. 2025). Judges: each answering engine's judge pass rate, how often the
two orders agree (``swap``), the judge's agreement and κ with the primary grader, and, with a
labels file, agreement and κ with the human labels (as golden reports its judge).

Cost and latency: the engine's spend on its answers (``cost_usd`` of the raw rows), per item
and per solved item, the judge's spend on grading them, and the answer latency per solved item.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from sealedeval import stats
from sealedeval.graders import judge as jg
from sealedeval.graders.kinds import verdict as jv
from sealedeval.plugins import RowChunk, RowChunks
from sealedeval.seal.design import EXPLORATORY_FAMILY
from sealedeval.stages.artifacts import graded_column
from sealedeval.stages.grade import IDENTITY_COLUMNS
from sealedeval.stats.comparisons import (
    BINARY_TEST,
    DEFAULT_DELTA,
    DEFAULT_POWER,
    ComparisonPlan,
    adjust_families,
    paired_comparison,
)
from sealedeval.stats.metrics import (
    CONFIRMATORY,
    Metric,
    StatusCounts,
    binomial_se,
    mean_metric,
    metric,
    point_metric,
    rate_metric,
    sort_metrics,
)
from sealedeval.store.raw import record_column
from sealedeval.suites.tasks.data import AuditLabel, Data, answerable
from sealedeval.suites.tasks.grading import ABSTAINED, CORRECT, ERROR, WRONG
from sealedeval.suites.tasks.plan import ANSWER, audit_items, parse_judge_condition
from sealedeval.suites.tasks.spec import Hypothesis

THRESHOLDS = (0.0, 0.5, 0.75, 0.9)
INTERVALS = (
    "Wilson 95% score interval for rates over items (repeats reduced per item); item-clustered "
    "normal interval for means over repeats; cluster-robust normal interval with cluster_by; "
    "paired normal interval for differences; exact sign test for paired comparisons"
)

Row = Mapping[str, Any]


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {
        "k": k,
        "n": n,
        "rate": k / n if n else None,
        "lo": lo if n else None,
        "hi": hi if n else None,
    }


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def reduce_outcomes(outcomes: Sequence[bool], how: str) -> bool:
    """One verdict from an item's completed repeats (in repeat order)."""
    if how == "any":
        return any(outcomes)
    if how == "all":
        return bool(outcomes) and all(outcomes)
    if how == "first":
        return bool(outcomes) and bool(outcomes[0])
    return sum(outcomes) * 2 > len(outcomes)


def one_sided_p(k: int, n: int) -> float:
    """P(X >= k) for X ~ Bin(n, 1/2), exactly (1.0 when n = 0)."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k, n + 1))
    return float(Fraction(tail, 2**n))


ANALYZE_COLUMNS = (
    *IDENTITY_COLUMNS,
    "error_kind",
    "model",
    "finish_reason",
    "cost_usd",
    "latency_s",
    "tokens_in",
    "tokens_out",
)
"""The raw columns the analysis reads of every row (the rest of a few calibration rows)."""


_REPEAT_BITS = 30
"""A verdict's code holds its repeat in these bits (``_Verdicts``), its item above them."""


class _Verdicts:
    """One grader's verdicts on one engine's answers: each graded answer as one 8-byte code,
    its item's slot (``_Items``), its repeat, whether the primary grader called it correct and
    whether it passed. A dict of per-item lists was ~50 bytes an answer, a third of the
    analysis at four million answers; these are 8, and ``by_item`` gives the lists back in
    (repeat, verdict) order, as sorting each item's (repeat, verdict) pairs does."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: array[int] = array("Q")

    def add(self, slot: int, repeat: int, correct: bool, passed: bool) -> None:
        if not 0 <= repeat < 1 << _REPEAT_BITS:
            raise ValueError(f"repeat {repeat} out of range")
        self._codes.append(slot << (_REPEAT_BITS + 2) | repeat << 2 | correct << 1 | passed)

    def _split(self, bit: int) -> tuple[Any, Any, Any]:
        """(slots, repeats, verdicts) in (slot, repeat, verdict) order; ``bit``: 0 passed,
        1 correct."""
        import numpy as np

        codes = np.frombuffer(self._codes, dtype=np.uint64) if self._codes else np.zeros(0, "u8")
        slots = codes >> np.uint64(_REPEAT_BITS + 2)
        repeats = (codes >> np.uint64(2)) & np.uint64((1 << _REPEAT_BITS) - 1)
        verdicts = (codes >> np.uint64(bit)) & np.uint64(1)
        order = np.lexsort((verdicts, repeats, slots))
        return slots[order], repeats[order], verdicts[order].astype(bool)

    def by_item(self, names: Sequence[str], bit: int) -> dict[str, list[bool]]:
        """Each item's verdicts (``bit``: 0 passed, 1 correct) in repeat order, items by id."""
        import numpy as np

        slots, _, verdicts = self._split(bit)
        cuts = np.flatnonzero(np.diff(slots)) + 1
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), len(slots)]
        out = {
            names[int(slots[a])]: verdicts[a:b].tolist()
            for a, b in zip(starts, ends, strict=True)
            if b > a
        }
        return dict(sorted(out.items()))

    def by_answer(self, names: Sequence[str]) -> dict[tuple[str, int], bool]:
        """Whether each (item, repeat) passed (of two verdicts on one, the passing one)."""
        slots, repeats, passed = self._split(0)
        return {
            (names[s], r): p
            for s, r, p in zip(slots.tolist(), repeats.tolist(), passed.tolist(), strict=True)
        }


class _Items:
    """Every item id the verdicts name, as a slot number (one table for every engine)."""

    def __init__(self) -> None:
        self.slot: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, item: str) -> int:
        at = self.slot.get(item)
        if at is None:
            at = self.slot[item] = len(self.names)
            self.names.append(item)
        return at


class _Judged:
    """One judge grader's verdicts on one engine's answers, counted: its ok rows, those it
    could judge (no order missing), how many passed, whether the two orders agreed, and the
    (judge passed, primary correct) table of the answers the primary grader graded."""

    __slots__ = ("consistent", "n_answers", "n_judged", "n_pass", "table")

    def __init__(self) -> None:
        self.n_answers = self.n_judged = self.n_pass = 0
        self.consistent = [0, 0]  # (agreeing, known)
        self.table: Counter[tuple[bool, bool]] = Counter()

    def pairs(self) -> tuple[list[bool], list[bool]]:
        """The (judge, primary) verdict lists of the table (agreement and κ read counts)."""
        jj: list[bool] = []
        pp: list[bool] = []
        for (judge, prim), n in sorted(self.table.items()):
            jj += [judge] * n
            pp += [prim] * n
        return jj, pp


class _Engine:
    """What the analysis keeps of one answering engine's answers and their grades, read a
    stretch at a time in the canonical order: counts (status, categories, repeats, the
    abstention table, the judges'), exact sums (cost, latency) and, per grader, each item's
    (repeat, passed) codes. It grows with the items, not with their answers' rows."""

    def __init__(self, data: Data, name: str, answerable_ids: set[str], items: _Items) -> None:
        self.name = name
        self._items = items
        self.primary = data.spec.primary
        self._answerable = answerable_ids
        self.model: str | None = None
        self.status = StatusCounts()
        self.categories: Counter[str] = Counter()
        self.truncated = 0
        self.cost = stats.ExactSum()
        self.latency = stats.ExactSum()
        self.tokens_in = self.tokens_out = 0
        self.answered: set[str] = set()
        self.n_error_answerable = 0
        # grader id -> the answers that grader could grade (the primary grader's: completed)
        self.verdicts: dict[str, _Verdicts] = defaultdict(_Verdicts)
        self._primary_outcomes: dict[str, list[bool]] | None = None
        self.per_repeat: dict[int, list[int]] = {}  # repeat -> [completed, correct]
        # answerable item -> [correct, wrong, abstained, other] of its completed answers
        self.abstention: dict[str, list[int]] = {}
        self.judged = {g.id: _Judged() for g in data.spec.judges()}

    @property
    def n_rows(self) -> int:
        return self.status.n

    def add(self, chunk: RowChunk, answers: Sequence[int]) -> None:
        """The answer rows of a stretch (``answers``: their indices in it) and their grades."""
        rows = chunk.rows
        keys, items, statuses, kinds, finish, cost, latency, t_in, t_out = (
            _column(rows, c, record_column)
            for c in (
                "request_key",
                "item_id",
                "status",
                "error_kind",
                "finish_reason",
                "cost_usd",
                "latency_s",
                "tokens_in",
                "tokens_out",
            )
        )
        if self.model is None and answers:
            self.model = str(rows[answers[0]]["model"])
        mine = {keys[j] for j in answers}
        for j in answers:
            status, item = statuses[j], str(items[j])
            self.status.add(status, kinds[j])
            self.answered.add(item)
            if status == "ok":
                if finish[j] == "length":
                    self.truncated += 1
            elif item in self._answerable:
                self.n_error_answerable += 1
            self.tokens_in += int(t_in[j] or 0)
            self.tokens_out += int(t_out[j] or 0)
        self.cost.add(float(cost[j] or 0.0) for j in answers)
        self.latency.add(float(latency[j] or 0.0) for j in answers if statuses[j] == "ok")
        self._add_graded(chunk.graded_rows(), mine, [keys[j] for j in answers])

    def _add_graded(self, graded: Sequence[Row], mine: set[Any], answer_keys: list[Any]) -> None:
        gkeys, gids, cats, items, reps, passed, statuses, graders = (
            _column(graded, c)
            for c in (
                "request_key",
                "grader_id",
                "category",
                "item_id",
                "repeat",
                "passed",
                "status",
                "grader",
            )
        )
        # Only a judge's details are read (its verdicts in each order): without a judge the
        # column, parsed, was most of a stretch's memory.
        details = _column(graded, "details") if self.judged else _NO_DETAILS
        at = [j for j, k in enumerate(gkeys) if k in mine]
        primary = self.primary
        category: dict[Any, Any] = {}  # the primary grader's category of each answer
        correct: dict[Any, bool] = {}  # ... where it completed: correct or not
        for j in at:
            if str(gids[j]) == primary:
                category[gkeys[j]] = cats[j]
                if cats[j] != ERROR:
                    correct[gkeys[j]] = cats[j] == CORRECT
        self.categories.update(str(category.get(k, ERROR)) for k in answer_keys)
        for j in at:
            gid, item, rep = str(gids[j]), str(items[j]), int(reps[j])
            right = False
            if gid == primary:
                cat = cats[j]
                gradable = bool(cat != ERROR)
                if gradable:
                    right = cat == CORRECT
                    tally = self.per_repeat.setdefault(rep, [0, 0])
                    tally[0] += 1
                    tally[1] += right
                    if item in self._answerable:
                        kinds = self.abstention.setdefault(item, [0, 0, 0, 0])
                        kinds[_ABSTENTION_INDEX.get(str(cat), 3)] += 1
            else:
                gradable = _gradable_fields(statuses[j], graders[j], details[j])
            if gradable:
                self.verdicts[gid].add(self._items(item), rep, right, bool(passed[j]))
            judged = self.judged.get(gid)
            if judged is not None and statuses[j] == "ok":
                judged.n_answers += 1
                # a judge as the primary grader: its row's fields say, not its category
                judgeable = (
                    gradable
                    if gid != primary
                    else _gradable_fields(statuses[j], graders[j], details[j])
                )
                if judgeable:
                    judged.n_judged += 1
                    judged.n_pass += bool(passed[j])
                    agreed = (details[j] or {}).get("consistent")
                    if agreed is not None:
                        judged.consistent[0] += bool(agreed)
                        judged.consistent[1] += 1
                    if gid != primary and gkeys[j] in correct:
                        judged.table[(bool(passed[j]), correct[gkeys[j]])] += 1

    def item_outcomes(self, gid: str) -> dict[str, list[bool]]:
        """Whether each of an item's answers passed ``gid``, in repeat order, items by id."""
        found = self.verdicts.get(gid)
        return {} if found is None else found.by_item(self._items.names, 0)

    def primary_outcomes(self) -> dict[str, list[bool]]:
        """The primary verdict: correct (not merely passed) per completed answer; made once
        (every comparison, hypothesis and the items table read it: 45 pairs of 10 engines made
        it 180 times, three minutes at ten million answers). Do not change it."""
        if self._primary_outcomes is None:
            found = self.verdicts.get(self.primary)
            self._primary_outcomes = {} if found is None else found.by_item(self._items.names, 1)
        return self._primary_outcomes

    def judged_answers(self, gid: str) -> dict[tuple[str, int], bool]:
        """``gid``'s verdict on each (item, repeat) it graded (the last of equal pairs)."""
        found = self.verdicts.get(gid)
        return {} if found is None else found.by_answer(self._items.names)


_ABSTENTION_INDEX = {CORRECT: 0, WRONG: 1, ABSTAINED: 2}


class _NoDetails:
    """The details column of a suite without a judge: never read (``_gradable_fields`` reads
    a row's details only for a judge's row)."""

    def __getitem__(self, j: int) -> None:
        return None


_NO_DETAILS: Any = _NoDetails()


class _JudgeCalls:
    """What the analysis keeps of the judge calls (every engine's ``judge/`` rows), read a
    stretch at a time: per (judge engine, grader) the status counts and the handles of its
    ok calibration calls (their replies are read again at the end); per judge engine its
    first model, status counts and cost; per answering engine the cost of judging it."""

    def __init__(self) -> None:
        self.by_grader: dict[tuple[str, str], StatusCounts] = {}
        self.calibration: dict[tuple[str, str], list[int]] = {}
        self.by_engine: dict[str, tuple[str, StatusCounts, stats.ExactSum]] = {}
        self.on_answers: dict[str, stats.ExactSum] = defaultdict(stats.ExactSum)
        self._parsed: dict[str, tuple[str, str, str, str] | None] = {}

    def add(self, engine: str, chunk: RowChunk, calls: Sequence[int]) -> None:
        if not calls:
            return
        rows = chunk.rows
        conds, statuses, kinds, cost = (
            _column(rows, c, record_column)
            for c in ("condition", "status", "error_kind", "cost_usd")
        )
        if engine not in self.by_engine:
            first = rows[calls[0]]["model"]
            self.by_engine[engine] = (str(first), StatusCounts(), stats.ExactSum())
        _, counts, spent = self.by_engine[engine]
        counts.add_columns((statuses[j] for j in calls), (kinds[j] for j in calls))
        spent.add(float(cost[j] or 0.0) for j in calls)
        judging: dict[str, list[float]] = defaultdict(list)
        for j in calls:
            cond = str(conds[j])
            if cond not in self._parsed:
                self._parsed[cond] = parse_judge_condition(cond)
            parsed = self._parsed[cond]
            if parsed is None:
                continue
            gid, what, judged, _ = parsed
            key = (engine, gid)
            self.by_grader.setdefault(key, StatusCounts()).add(statuses[j], kinds[j])
            if what == "calibration" and statuses[j] == "ok":
                self.calibration.setdefault(key, []).append(int(chunk.where[j]))
            if what == "answers":
                judging[judged].append(float(cost[j] or 0.0))
        for judged, values in judging.items():
            self.on_answers[judged].add(values)


def _column(
    rows: Sequence[Row],
    name: str,
    read: Callable[[Sequence[Row], str], Sequence[Any]] = graded_column,
) -> Sequence[Any]:
    """A graded column (``read``: ``record_column`` for a raw one), by column where the rows
    hold columns; ``None`` where a hand-made row lacks it (``finish_reason``)."""
    try:
        column: Sequence[Any] = read(rows, name)
    except KeyError:
        return [r.get(name) for r in rows]
    return column


def _gradable_fields(status: Any, grader: Any, details: Any) -> bool:
    """Whether a grader could grade an answer (not the primary grader's row: its category
    says), from its row's fields."""
    if status != "ok":
        return False
    d = details or {}
    return not (grader == "judge" and jv.MISSING in (d.get("verdicts") or []))


def _share(
    name: str,
    groups: Mapping[str, Any],
    by_item: Mapping[str, Sequence[float]],
    n_error: int,
    unit: str,
) -> Metric:
    """A proportion over items: Wilson when each item has one value, else the item-clustered
    mean (replicates are not independent)."""
    values = [v for vs in by_item.values() for v in vs]
    ids = [i for i, vs in by_item.items() for _ in vs]
    if all(len(vs) == 1 for vs in by_item.values()):
        k = int(sum(values))
        return rate_metric(name, groups, k, len(values), n_error=n_error, unit=unit)
    return mean_metric(name, groups, values, ids, n_error=n_error, unit=unit)


_plain = point_metric


def _engine_entry(
    data: Data, e: _Engine, item_ids: Sequence[str], calls: _JudgeCalls
) -> tuple[dict[str, Any], list[Metric]]:
    spec = data.spec
    how = spec.reduce
    counts = e.status.counts()
    g: dict[str, Any] = {"engine": e.name}
    metrics: list[Metric] = []
    prim = e.primary_outcomes()
    reduced = {i: reduce_outcomes(v, how) for i, v in prim.items() if v}
    n_items = len(item_ids)
    n_ok_items = len(reduced)
    k = sum(reduced.values())
    acc = rate(k, n_ok_items)
    metrics.append(
        rate_metric("accuracy", g, k, n_ok_items, n_error=n_items - n_ok_items, unit="item")
    )
    lower = rate(k, n_items)
    metrics.append(
        metric(
            "accuracy_errors_as_failures",
            g,
            lower["rate"],
            lower["lo"],
            lower["hi"],
            method="wilson",
            n_total=n_items,
            n_ok=n_ok_items,
            n_error=n_items - n_ok_items,
            unit="item",
            se=binomial_se(k, n_items),
        )
    )
    entry: dict[str, Any] = {
        "model": e.model or "",
        **counts,
        "complete": counts["n_error"] == 0,
        "n_items": n_items,
        "n_items_ok": n_ok_items,
        "n_items_error": n_items - n_ok_items,
        "accuracy": acc,
        "accuracy_errors_as_failures": lower,
    }
    entry["categories"] = {c: e.categories.get(c, 0) for c in (CORRECT, WRONG, ABSTAINED, ERROR)}
    entry["truncated_answers"] = e.truncated
    # repeats: mean over answers, per-repeat accuracy and spread, pass@k / pass^k
    repeats = int(spec.get("repeats", 1))
    n_answers_ok = sum(len(v) for v in prim.values())
    n_answers_err = e.n_rows - n_answers_ok
    if repeats > 1:
        values = [float(x) for v in prim.values() for x in v]
        ids = [i for i, v in prim.items() for _ in v]
        mean_m = mean_metric("accuracy_mean", g, values, ids, n_error=n_answers_err, unit="item")
        metrics.append(mean_m)
        per_repeat = []
        for rep in range(repeats):
            n_rep, k_rep = e.per_repeat.get(rep, (0, 0))
            n_err = n_items - n_rep
            per_repeat.append(rate(k_rep, n_rep) | {"repeat": rep, "n_error": n_err})
            metrics.append(
                rate_metric(
                    "accuracy_by_repeat",
                    g | {"repeat": rep},
                    k_rep,
                    n_rep,
                    n_error=n_err,
                    unit="item",
                )
            )
        rates = [float(p["rate"]) for p in per_repeat if p["rate"] is not None]
        mean, sd = stats.mean_sd(rates) if rates else (math.nan, math.nan)
        k_max = min((len(v) for v in prim.values()), default=0)
        at: list[float] = []
        hat: list[float] = []
        if k_max >= 1:
            at, hat = stats.mean_pass_k_curves(dict(prim), k_max)
        entry["repeats"] = {
            "n_runs": repeats,
            "per_repeat": per_repeat,
            "mean": mean,
            "sd": sd,
            "mean_over_answers": {
                "estimate": mean_m["estimate"],
                "lo": mean_m["lo"],
                "hi": mean_m["hi"],
            },
            "pass_at_k": {str(i): v for i, v in enumerate(at, 1)},
            "pass_hat_k": {str(i): v for i, v in enumerate(hat, 1)},
        }
        metrics.append(
            _plain("accuracy_repeat_sd", g, sd, len(rates), repeats - len(rates), "repeat")
        )
        if k_max >= 1:
            for key, curve in (("pass_at_k", at), ("pass_hat_k", hat)):
                metrics.append(
                    _plain(
                        key,
                        g | {"k": k_max},
                        curve[-1],
                        n_answers_ok,
                        n_answers_err,
                        "item",
                        method="unbiased estimator",
                    )
                )
    # cluster_by: the headline accuracy with a cluster-robust interval
    if spec.cluster_by is not None:
        cl = {str(i["id"]): str(i.get(spec.cluster_by)) for i in data.items}
        ids = sorted(reduced)
        vals = [1.0 if reduced[i] else 0.0 for i in ids]
        est = sum(vals) / len(vals) if vals else None
        se = stats.clustered_se(vals, [cl[i] for i in ids]) if vals else math.nan
        lo = hi = None
        if est is not None and math.isfinite(se):
            lo, hi = max(0.0, est - stats.Z_95 * se), min(1.0, est + stats.Z_95 * se)
        n_clusters = len({cl[i] for i in ids})
        entry["clustered"] = {
            "by": spec.cluster_by,
            "n_clusters": n_clusters,
            "estimate": est,
            "se": se,
            "lo": lo,
            "hi": hi,
        }
        metrics.append(
            metric(
                "accuracy_clustered",
                g | {"cluster_by": spec.cluster_by},
                est,
                lo,
                hi,
                method="cluster-robust normal",
                n_total=n_items,
                n_ok=n_ok_items,
                n_error=n_items - n_ok_items,
                unit=f"item (clusters: {spec.cluster_by})",
                se=se,
            )
        )
    # every grader's pass rate, reduced the same way
    graders: dict[str, Any] = {}
    for ge in spec.graders:
        per_item = e.item_outcomes(ge.id)
        red = [reduce_outcomes(v, how) for v in per_item.values() if v]
        graders[ge.id] = {"name": ge.name, "version": ge.version, "pass": rate(sum(red), len(red))}
        metrics.append(
            rate_metric(
                "pass_rate",
                g | {"grader": ge.id},
                sum(red),
                len(red),
                n_error=n_items - len(red),
                unit="item",
            )
        )
    entry["graders"] = graders
    if spec.abstention == "category":
        entry["abstention"], more = _abstention(data, e, g)
        metrics += more
    entry["cost"], more = _cost(e, calls, sum(reduced.values()), n_items, g)
    metrics += more
    return entry, metrics


def _abstention(data: Data, e: _Engine, g: dict[str, Any]) -> tuple[dict[str, Any], list[Metric]]:
    # an item's values in any order: a mean of 0/1 values is exact whatever their order
    c = sum(k[0] for k in e.abstention.values())
    w = sum(k[1] for k in e.abstention.values())
    a = sum(k[2] for k in e.abstention.values())
    n_err = e.n_error_answerable
    abst = {i: [1.0] * k[2] + [0.0] * (k[0] + k[1] + k[3]) for i, k in e.abstention.items()}
    answered = {i: [1.0] * k[0] + [0.0] * (k[1] + k[3]) for i, k in e.abstention.items()}
    answered = {i: v for i, v in answered.items() if v}
    metrics = [
        _share("abstention_rate", g, abst, n_err, "item"),
        _share("selective_accuracy", g, answered, n_err, "item"),
    ]
    n = c + w + a
    scores = {str(t): stats.abstention_score(c, w, a, t) if n else math.nan for t in THRESHOLDS}
    for t, s in scores.items():
        metrics.append(_plain("abstention_score", g | {"t": t}, s, n, n_err, "answer"))
    return {
        "n_answerable_answers": n,
        "correct": c,
        "wrong": w,
        "abstained": a,
        "abstention_rate": _ratio(a, n),
        "selective_accuracy": _ratio(c, c + w),
        "score": scores,
    }, metrics


def _cost(
    e: _Engine, calls: _JudgeCalls, solved: int, n_items: int, g: dict[str, Any]
) -> tuple[dict[str, Any], list[Metric]]:
    cost = e.cost.value
    n_ok = e.status.ok
    latency = e.latency.value
    judging = calls.on_answers[e.name].value if e.name in calls.on_answers else 0.0
    n_err = e.n_rows - n_ok
    out = {
        "cost_usd": cost,
        "tokens_in": e.tokens_in,
        "tokens_out": e.tokens_out,
        "cost_per_item_usd": _ratio(cost, n_items),
        "cost_per_solved_item_usd": _ratio(cost, solved),
        "judging_cost_usd": judging,
        "cost_per_solved_item_with_judging_usd": _ratio(cost + judging, solved),
        "latency_s": latency,
        "latency_per_answer_s": _ratio(latency, n_ok),
        "latency_per_solved_item_s": _ratio(latency, solved),
        "solved_items": solved,
    }
    metrics = [
        _plain("cost_usd", g, cost, n_ok, n_err, "request"),
        _plain(
            "cost_per_solved_item_usd", g, out["cost_per_solved_item_usd"], solved, n_err, "item"
        ),
        _plain(
            "latency_per_solved_item_s", g, out["latency_per_solved_item_s"], solved, n_err, "item"
        ),
    ]
    return out, metrics


def item_mean_comparison(
    a: str,
    b: str,
    outcomes_a: Mapping[str, Sequence[bool]],
    outcomes_b: Mapping[str, Sequence[bool]],
    how: str,
    *,
    unit: str = "item",
) -> dict[str, Any]:
    """Two engines compared on the items both answered: each item's mean verdict over its
    repeats, the mean difference with a paired normal interval, and the exact sign test on the
    differences; each side's accuracy after ``how`` reduces the repeats. One function for every
    suite that compares verdict lists (tasks, imported): the same pair gives the same numbers
    whichever suite reports it. ``se`` is None where it is undefined (fewer than two items)."""
    ma = {i: sum(v) / len(v) for i, v in outcomes_a.items() if v}
    mb = {i: sum(v) / len(v) for i, v in outcomes_b.items() if v}
    common = sorted(set(ma) & set(mb))
    xa = [ma[i] for i in common]
    xb = [mb[i] for i in common]
    diffs = [x - y for x, y in zip(xa, xb, strict=True)]
    n_pos, n_neg, p = stats.sign_test_items(diffs) if diffs else (0, 0, 1.0)
    d = sum(diffs) / len(diffs) if diffs else None
    se = stats.paired_se(xa, xb) if len(diffs) >= 2 else math.nan
    lo = hi = None
    if d is not None and math.isfinite(se):
        lo, hi = d - stats.Z_95 * se, d + stats.Z_95 * se
    ra = sum(reduce_outcomes(outcomes_a[i], how) for i in common)
    rb = sum(reduce_outcomes(outcomes_b[i], how) for i in common)
    return {
        "a": a,
        "b": b,
        "n_items": len(common),
        "a_accuracy": rate(ra, len(common)),
        "b_accuracy": rate(rb, len(common)),
        "a_better": n_pos,
        "b_better": n_neg,
        "ties": len(common) - n_pos - n_neg,
        "difference": d,
        "se": se if math.isfinite(se) else None,
        "lo": lo,
        "hi": hi,
        "p": p,
        "test": f"exact two-sided sign test on the {unit}s' score differences",
    }


def _paired(a: _Engine, b: _Engine, how: str) -> dict[str, Any]:
    return item_mean_comparison(a.name, b.name, a.primary_outcomes(), b.primary_outcomes(), how)


Pairs = frozenset[tuple[str, str]]


def confirmatory(a: str, b: str, sealed: Pairs | None) -> bool:
    """Whether the pair is in the sealed design's comparisons (every pair is when no design
    was sealed: then none is pre-registered, and the status says so)."""
    return sealed is None or (min(a, b), max(a, b)) in sealed


def comparison_plan(data: Data, *, exploratory: bool = False) -> ComparisonPlan:
    """The suite's comparison plan from its sealed ``analysis`` block (δ, α, power; the family
    ``engines`` holding the engine pairs of the sealed design, and, when an engine was added
    after the seal, ``exploratory`` holding the pairs with it, Benjamini–Hochberg-adjusted on
    their own)."""
    an = data.spec.analysis
    families = {"engines": "every pair of engines the suite compares, on the items both did"}
    if exploratory:
        families[EXPLORATORY_FAMILY] = (
            "the pairs with an engine added after the seal (not pre-registered)"
        )
    return ComparisonPlan(
        families=families,
        delta=float(an.get("delta", DEFAULT_DELTA)),
        alpha=float(an.get("alpha", 0.05)),
        power=float(an.get("power", DEFAULT_POWER)),
        correction="holm",
        # the primary verdict is 0/1 (correct or not): exact McNemar, mid-p beside (issue #30)
        tests=dict.fromkeys(families, BINARY_TEST),
    )


def _pairs(data: Data, engines: Mapping[str, _Engine]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in data.spec.comparisons if a in engines and b in engines]


def _comparisons(
    data: Data, engines: Mapping[str, _Engine], n_items: int, sealed: Pairs | None
) -> tuple[list[dict[str, Any]], list[Metric]]:
    out, metrics = [], []
    pairs = _pairs(data, engines)
    cplan = comparison_plan(data, exploratory=any(not confirmatory(a, b, sealed) for a, b in pairs))
    for a, b in pairs:
        c = _paired(engines[a], engines[b], data.spec.reduce)
        c["paired"] = paired_comparison(
            f"{a} vs {b}",
            "engines" if confirmatory(a, b, sealed) else EXPLORATORY_FAMILY,
            a,
            b,
            {i: [float(x) for x in v] for i, v in engines[a].primary_outcomes().items() if v},
            {i: [float(x) for x in v] for i, v in engines[b].primary_outcomes().items() if v},
            cplan,
        )
        out.append(c)
        g = {"a": a, "b": b}
        n = int(c["n_items"])
        role = c["paired"]["role"]  # confirmatory: a pair of the sealed design's family
        metrics.append(
            metric(
                "difference",
                g,
                c["difference"],
                c["lo"],
                c["hi"],
                method="paired normal",
                n_total=n_items,
                n_ok=n,
                n_error=n_items - n,
                unit="item",
                role=role,
                se=c["se"],
            )
        )
        metrics.append(
            _plain(
                "sign_test_p",
                g,
                c["p"],
                n,
                n_items - n,
                "item",
                method="exact sign test",
                role=role,
            )
        )
        metrics.append(
            _plain(
                "mcnemar_midp",
                g,
                c["paired"]["p_midp"],
                n,
                n_items - n,
                "item",
                method="mid-p McNemar (Fagerland et al. 2013)",
                role=role,
            )
        )
    adjust_families([c["paired"] for c in out])
    return out, metrics


def _hypotheses(
    data: Data, engines: Mapping[str, _Engine], n_items: int
) -> tuple[list[dict[str, Any]], list[Metric]]:
    hs: list[Hypothesis] = [h for h in data.spec.hypotheses if h.a in engines and h.b in engines]
    rows = []
    for h in hs:
        c = _paired(engines[h.a], engines[h.b], data.spec.reduce)
        pos, neg = int(c["a_better"]), int(c["b_better"])
        if h.direction == "greater":
            p = one_sided_p(pos, pos + neg)
        elif h.direction == "less":
            p = one_sided_p(neg, pos + neg)
        else:
            p = stats.sign_test(pos, neg)
        rows.append((h, c, p))
    correction = str(data.spec.analysis.get("correction", "holm"))
    raw = [p for _, _, p in rows]
    adjusted = stats.holm(raw) if correction == "holm" and raw else raw
    out, metrics = [], []
    for (h, c, p), adj in zip(rows, adjusted, strict=True):
        rejected = adj <= h.alpha
        out.append(
            {
                "id": h.id,
                "a": h.a,
                "b": h.b,
                "direction": h.direction,
                "alpha": h.alpha,
                "correction": correction,
                "n_items": c["n_items"],
                "a_better": c["a_better"],
                "b_better": c["b_better"],
                "difference": c["difference"],
                "lo": c["lo"],
                "hi": c["hi"],
                "p": p,
                "p_adjusted": adj,
                "rejected": rejected,
                "test": "exact sign test" + ("" if h.direction == "two-sided" else ", one-sided"),
            }
        )
        g = {"hypothesis": h.id, "a": h.a, "b": h.b, "direction": h.direction}
        n = int(c["n_items"])
        metrics.append(
            _plain(
                "hypothesis_p",
                g,
                p,
                n,
                n_items - n,
                "item",
                method="exact sign test",
                role=CONFIRMATORY,  # a hypothesis the sealed spec declares
            )
        )
        metrics.append(
            _plain(
                "hypothesis_p_adjusted",
                g,
                adj,
                n,
                n_items - n,
                "item",
                method=f"exact sign test, {correction}",
                role=CONFIRMATORY,
            )
        )
    return out, metrics


def _judges(
    data: Data, engines: Mapping[str, _Engine], calls: _JudgeCalls, src: RowChunks
) -> tuple[dict[str, Any], list[Metric]]:
    out: dict[str, Any] = {}
    metrics: list[Metric] = []
    spec = data.spec
    for gr in spec.judges():
        judge = str(gr.params["engine"])
        orders = list(jv.orders(gr.params))
        counts = calls.by_grader.get((judge, gr.id)) or StatusCounts()
        entry: dict[str, Any] = {
            "engine": judge,
            "orders": orders,
            **counts.counts(),
            "answers": {},
        }
        for name, e in sorted(engines.items()):
            g = {"grader": gr.id, "judge": judge, "engine": name}
            jd = e.judged[gr.id]
            missing = jd.n_answers - jd.n_judged
            sub: dict[str, Any] = {
                "n_answers": jd.n_answers,
                "n_judged": jd.n_judged,
                "n_missing": missing,
                "pass": rate(jd.n_pass, jd.n_judged),
            }
            metrics.append(
                rate_metric("judge_pass", g, jd.n_pass, jd.n_judged, n_error=missing, unit="answer")
            )
            if len(orders) > 1:
                agreed, known = jd.consistent
                sub["order_consistent"] = rate(agreed, known)
                metrics.append(
                    rate_metric(
                        "judge_order_consistent",
                        g,
                        agreed,
                        known,
                        n_error=jd.n_answers - known,
                        unit="answer",
                    )
                )
            if gr.id != spec.primary:
                jj, pp = jd.pairs()
                sub["agreement_with_primary"] = stats.agreement(jj, pp) if jj else None
                sub["kappa_with_primary"] = stats.cohen_kappa(jj, pp) if jj else None
                for key, val in (
                    ("judge_primary_agreement", sub["agreement_with_primary"]),
                    ("judge_primary_kappa", sub["kappa_with_primary"]),
                ):
                    metrics.append(_plain(key, g, val, len(jj), jd.n_answers - len(jj), "answer"))
            entry["answers"][name] = sub
        labels = data.labels.get(gr.id)
        if labels:
            replies = src.rows_at(calls.calibration.get((judge, gr.id), []))
            entry["calibration"], more = _calibration(gr.id, judge, orders, labels, replies)
            metrics += more
        out[gr.id] = entry
    return out, metrics


def _calibration(
    gid: str, judge: str, orders: Sequence[str], labels: Sequence[Any], calls: Sequence[Row]
) -> tuple[dict[str, Any], list[Metric]]:
    """The judge against the human labels, from its ok calibration calls (in row order: the
    last reply to a label in an order is the one read)."""
    replies: dict[tuple[str, str], str] = {}
    for r in calls:
        parsed = parse_judge_condition(str(r["condition"]))
        if parsed is not None:
            replies[(str(r["item_id"]), parsed[3])] = str(r["output_text"] or "")
    human = {lab.id: lab.label for lab in labels}
    verdicts: dict[str, dict[str, str]] = {
        o: {lid: jg.parse_verdict(replies[(lid, o)]) for lid in human if (lid, o) in replies}
        for o in orders
    }
    combined = {
        lid: (jg.PASS if all(verdicts[o].get(lid) == jg.PASS for o in orders) else jg.FAIL)
        for lid in human
        if all(lid in verdicts[o] for o in orders)
    }
    views = {o: verdicts[o] for o in orders}
    if len(orders) > 1:
        views["swap_and_agree"] = combined
    out: dict[str, Any] = {"n_labels": len(human), "variants": {}}
    metrics: list[Metric] = []
    for name, vd in views.items():
        ids = sorted(vd)
        cal = jg.calibration([vd[i] for i in ids], [human[i] for i in ids])
        out["variants"][name] = cal
        g = {"grader": gid, "judge": judge, "variant": name}
        t = cal["table"]
        agree = int(t["judge_pass_human_pass"]) + int(t["judge_fail_human_fail"])
        missing = len(human) - len(ids)
        metrics.append(
            rate_metric("judge_human_agreement", g, agree, len(ids), n_error=missing, unit="answer")
        )
        metrics.append(_plain("judge_human_kappa", g, cal["kappa"], len(ids), missing, "answer"))
    return out, metrics


def _human_audit(
    data: Data,
    engines: Mapping[str, _Engine],
    subset: Sequence[str],
    labels: Sequence[AuditLabel] | None,
) -> tuple[dict[str, Any], list[Metric]]:
    """``analysis.human_audit``: per answering engine, the judge's PASS rate on all its
    answers, the human PASS rate on the labelled answers of the sealed subset, and the judge's
    rate corrected by prediction-powered inference (PPI++ with the tuned λ, Angelopoulos, Duchi
    & Zrnic 2024: ``stats.ppi_mean``), with the power gain (effective n of the labels, interval
    width over the human-only one). The labelled set is the answers of the subset's items;
    the unlabelled set is the judge's verdicts on every other item's answers. The unit is the
    answer (repeats of an item count as answers, as the judge's PASS rate does)."""
    ha = data.spec.human_audit
    if ha is None:
        return {}, []
    out: dict[str, Any] = {
        "grader": ha.grader,
        "judge": str(data.spec.grader(ha.grader).params["engine"]),
        "n": ha.n,
        "labels": ha.labels,
        "items": list(subset),
        "status": "awaiting labels" if labels is None else "labelled",
        "engines": {},
    }
    metrics: list[Metric] = []
    inside = set(subset)
    human = {(lab.engine, lab.item, lab.repeat): lab.label == jg.PASS for lab in labels or []}
    for name, e in sorted(engines.items()):
        judged = e.judged_answers(ha.grader)
        pairs = [
            (human[(name, i, r)], p)
            for (i, r), p in sorted(judged.items())
            if (name, i, r) in human
        ]
        rest = [float(p) for (i, _), p in sorted(judged.items()) if i not in inside]
        planned = sum(1 for (i, _) in judged if i in inside)
        k_all = sum(judged.values())
        sub: dict[str, Any] = {
            "judge_pass": rate(k_all, len(judged)),
            "n_subset_answers": planned,
            "n_labelled": len(pairs),
            "n_unlabelled": len(rest),
        }
        g = {"grader": ha.grader, "engine": name}
        if len(pairs) >= stats.MIN_LABELLED and len(rest) >= stats.MIN_UNLABELLED:
            y = [float(h) for h, _ in pairs]
            f = [float(p) for _, p in pairs]
            r = stats.ppi_mean(y, f, rest)
            sub["ppi"] = r.as_dict()
            for mname, iv, method in (
                ("human_audit_pass", r.classical, "normal"),
                ("judge_pass_ppi", r.ppi_pp, "PPI++ normal"),
            ):
                metrics.append(
                    metric(
                        mname,
                        g,
                        iv.estimate,
                        iv.lo,
                        iv.hi,
                        method=method,
                        n_total=planned,
                        n_ok=len(pairs),
                        n_error=planned - len(pairs),
                        unit="answer",
                    )
                )
        out["engines"][name] = sub
    return out, metrics


def _items_table(
    data: Data, engines: Mapping[str, _Engine], item_ids: Sequence[str]
) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {i: {} for i in item_ids}
    for name in sorted(engines):  # one engine's outcomes at a time
        outs = engines[name].primary_outcomes()
        for i, row in out.items():
            v = outs.get(i) or []
            row[name] = {
                "n": len(v),
                "mean": sum(v) / len(v) if v else None,
                "passed": reduce_outcomes(v, data.spec.reduce) if v else None,
            }
    return out


def _sequential(data: Data, items: Sequence[Row], engines: Mapping[str, _Engine]) -> dict[str, Any]:
    """The sealed sequential rule replayed on the rows present (``analysis.sequential``).

    The values are the paired item scores a − b (an item's score: the share of its completed
    answers the primary grader calls correct; an answer in error scores 0) over the items in
    the sealed item order (``items`` as generated), as far as both engines answered. ``n_used``
    counts the items either engine answered: a run that stopped where the rule did not say so,
    or went on after it said stop, or answered items out of order, gets a ``violation`` (the
    audit FAILs it); the looks, the stop and the calls not made follow from the replay alone,
    so the run stage and the audit read the same numbers."""
    sp = data.spec.sequential
    assert sp is not None
    a, b = sp.compare
    order = [str(i["id"]) for i in items]
    answered = {e: engines[e].answered if e in engines else set() for e in (a, b)}
    score = {
        e: {i: (sum(v) / len(v) if v else 0.0) for i, v in engines[e].primary_outcomes().items()}
        if e in engines
        else {}
        for e in (a, b)
    }
    used = answered[a] | answered[b]
    values: list[float] = []
    for i in order:
        if i not in answered[a] or i not in answered[b]:
            break
        values.append(score[a].get(i, 0.0) - score[b].get(i, 0.0))
    res = stats.sequential_rule(values, sp.looks, alpha=sp.alpha)
    violation = None
    if set(order[: len(used)]) != used:
        violation = "items answered outside the sealed item order"
    elif used:
        violation = stats.check_stop(values, sp.looks, len(used), alpha=sp.alpha)
    calls = sum(engines[e].n_rows for e in (a, b) if e in engines)
    per_item = calls / len(used) if used else 0.0
    stopped = res.stopped_at if res.decision != "continue" else len(used)
    return {
        "compare": [a, b],
        "planned_looks": list(sp.looks),
        "max_n": sp.max_n,
        "alpha": sp.alpha,
        "method": res.method,
        "rho": res.rho,
        "bounds": [-1.0, 1.0],
        "looks": [
            {"n": lk.n, "mean": lk.mean, "lo": lk.lo, "hi": lk.hi, "decision": lk.decision}
            for lk in res.looks
        ],
        "n_used": len(used),
        "n_paired": len(values),
        "stopped_at": stopped,
        "decision": res.decision,
        "items_saved": sp.max_n - stopped,
        "calls_made": calls,
        "calls_at_max_n": round(per_item * sp.max_n),
        "calls_saved": round(per_item * sp.max_n) - calls,
        "violation": violation,
    }


def analyze(
    data: Data,
    items: Sequence[Row],
    src: RowChunks,
    *,
    sealed: Pairs | None = None,
    audit_labels: Sequence[AuditLabel] | None = None,
) -> dict[str, Any]:
    """The suite's analysis of the rows of ``src`` (every engine's latest rows with their
    graded rows, a stretch at a time: ``stages.chunked``; ``whole_rows`` when they are
    held); ``sealed``: the engine pairs of the sealed design (the confirmatory family;
    ``seal.design.sealed_pairs``), None when no design was sealed; ``audit_labels``: the
    human-audit labels (``data.load_audit_labels``), None while none were given."""
    spec = data.spec
    item_ids = sorted(str(i["id"]) for i in items)
    answerable_ids = {str(i["id"]) for i in data.items if answerable(i)}
    engines: dict[str, _Engine] = {}
    calls = _JudgeCalls()
    slots = _Items()
    for name in src.engines:
        for chunk in src.chunks(name):
            conds = record_column(chunk.rows, "condition")
            answers = [j for j, c in enumerate(conds) if c == ANSWER]
            if answers:
                e = engines.get(name)
                if e is None:
                    e = engines[name] = _Engine(data, name, answerable_ids, slots)
                e.add(chunk, answers)
            calls.add(name, chunk, [j for j, c in enumerate(conds) if str(c).startswith("judge/")])
    out_engines: dict[str, Any] = {}
    metrics: list[Metric] = []
    for n, e in engines.items():
        entry, more = _engine_entry(data, e, item_ids, calls)
        out_engines[n] = entry
        metrics += more
    comparisons, more = _comparisons(data, engines, len(item_ids), sealed)
    metrics += more
    hypotheses, more = _hypotheses(data, engines, len(item_ids))
    metrics += more
    judges, more = _judges(data, engines, calls, src)
    metrics += more
    human_audit: dict[str, Any] = {}
    if spec.human_audit is not None:
        subset = audit_items(items, spec.human_audit.n)
        human_audit, more = _human_audit(data, engines, subset, audit_labels)
        metrics += more
    for j in spec.judge_engines():
        if j in calls.by_engine:
            model, counts, spent = calls.by_engine[j]
            out_engines.setdefault(j, {"model": model})
            out_engines[j]["judging"] = counts.counts() | {"cost_usd": spent.value}
    out: dict[str, Any] = {
        "suite": spec.suite,
        "kind": "tasks",
        "n_items": len(item_ids),
        "design": {
            "primary": spec.primary,
            "reduce": spec.reduce,
            "graders": [g.describe() for g in spec.graders],
            "solver": spec.solver,
            "samples": spec.samples,
            "repeats": int(spec.get("repeats", 1)),
            "temperature": float(spec.get("temperature", 0.0)),
            "max_tokens": int(spec.get("max_tokens", 256)),
            "abstention": spec.abstention,
            "cluster_by": spec.cluster_by,
            "comparisons": [list(p) for p in spec.comparisons],
        },
        "engines": out_engines,
        "comparisons": comparisons,
        "comparison_plan": comparison_plan(
            data, exploratory=any(not confirmatory(a, b, sealed) for a, b in _pairs(data, engines))
        ).describe(),
        "hypotheses": hypotheses,
        "judges": judges,
        "items": _items_table(data, engines, item_ids),
        "methods": INTERVALS,
        "metrics": sort_metrics(metrics),
    }
    if human_audit:
        out["human_audit"] = human_audit
    if spec.sequential is not None:
        out["sequential"] = _sequential(data, items, engines)
    return out
