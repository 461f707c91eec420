"""Golden analysis plan, pre-registered (this file is sealed).

Unit of analysis: the task. Rates carry Wilson 95% intervals and are given over completed requests
and, beside them, with errors counted as failures (a lower bound). Repeats (temperature > 0, fixed
seeds) give per-run correct counts with mean and sd, and pass@k / pass^k for k = 1..R, averaged over
tasks. Two engines (or branches) are compared on the greedy run with an exact two-sided sign test
on the tasks where they disagree. Twenty tasks cannot rank close systems: the report says so.

Comparisons (issue 15, ``COMPARISON_PLAN``): every comparison also carries its paired difference
with a normal 95% interval from the paired SE, the Holm-adjusted p within its family, the MDE at
80% power for the tasks at hand and the tasks needed for δ = 0.05 (``stats.comparisons``); on
fewer than 100 tasks, the Beta(1,1) view beside Wilson. Three families: ``branches`` — every pair
of branches on every engine, one family for the whole suite —, ``engines`` — the engines
compared on the base branch — and ``probes`` — the probes' paired comparisons on every engine.
All three compare 0/1 verdicts, so the plan names the exact McNemar test (the sign test on the
discordant tasks) for each, with the mid-p McNemar test beside it (issue #30).
"""

from __future__ import annotations

import itertools
import json
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sealedeval import stats
from sealedeval.run.agent import trajectory_summary
from sealedeval.stats import mean_pass_k_curves
from sealedeval.stats.comparisons import BINARY_TEST, SMALL_N, ComparisonPlan, paired_comparison
from sealedeval.stats.metrics import Metric, binomial_se, metric, point_metric, status_counts

ABSTENTION_THRESHOLDS = (0.0, 0.5, 0.75, 0.9)
INTERVALS = "Wilson 95% score interval for rates; exact two-sided sign test for paired comparisons"
COMPARISON_PLAN = ComparisonPlan(
    families={
        "branches": "every pair of branches on every engine (main answers), the whole suite",
        "engines": "the engines compared on the base branch's main answers",
        "probes": "every engine's probe comparisons: injection (clean vs injected, per branch) "
        "and attribute swap (base vs swapped)",
    },
    delta=0.05,
    alpha=0.05,
    power=0.8,
    correction="holm",
    # every golden comparison is on 0/1 verdicts (correct or not): exact McNemar, mid-p beside
    tests={"branches": BINARY_TEST, "engines": BINARY_TEST, "probes": BINARY_TEST},
)
"""Pre-registered with the suite (this file is sealed): families, each family's test, δ, α,
power, correction."""


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else math.nan, "lo": lo, "hi": hi}


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def greedy_table(
    tasks: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    graded: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One greedy answer per task: accuracy, graders side by side, abstention, cost, latency."""
    by_key = {r["request_key"]: r for r in rows}
    cats: Counter[str] = Counter()
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    cat_of: dict[str, str] = {}
    for g in graded:
        if g["request_key"] not in by_key:
            continue
        cat_of[g["request_key"]] = g["category"]
        if g["grader"] != "-":
            scores[g["grader"]][g["request_key"]] = float(g["score"])
    for key in by_key:
        cats[cat_of.get(key, "error")] += 1
    n_total = len(by_key)
    n_error = cats["error"]
    n_ok = n_total - n_error
    correct = cats["correct"]
    by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    for key, r in by_key.items():
        by_cat[tasks[r["item_id"]]["category"]][cat_of.get(key, "error")] += 1
    ok_rows = [r for r in by_key.values() if r["status"] == "ok"]
    cost = sum(float(r["cost_usd"]) for r in by_key.values())
    latency = sum(float(r["latency_s"]) for r in ok_rows)
    facts = [scores["facts"][k] for k in scores["facts"]]
    multi = [
        scores["facts"][k] for k in scores["facts"] if len(tasks[by_key[k]["item_id"]]["facts"]) > 1
    ]
    answerable = [
        cat_of[k]
        for k in by_key
        if cat_of.get(k) != "error" and tasks[by_key[k]["item_id"]]["category"] != "abstain"
    ]
    a_c, a_w, a_a = (answerable.count(c) for c in ("correct", "wrong", "abstained"))
    return {
        "n_total": n_total,
        "n_ok": n_ok,
        "n_error": n_error,
        "categories": dict(sorted(cats.items())),
        "accuracy": rate(correct, n_ok),
        # issue 15: the Beta(1,1) posterior interval beside Wilson on fewer than 100 tasks
        "accuracy_beta": list(stats.beta_interval(correct, n_ok)) if 0 < n_ok < SMALL_N else None,
        "accuracy_lower_bound": rate(correct, n_total),
        "exact": rate(sum(1 for v in scores["exact"].values() if v == 1.0), n_ok),
        "facts_partial_credit": sum(facts) / len(facts) if facts else math.nan,
        "multi_fact": {
            "n": len(multi),
            "partial_credit": sum(multi) / len(multi) if multi else math.nan,
            "all_or_nothing": sum(1 for v in multi if v == 1.0) / len(multi) if multi else math.nan,
        },
        "by_task_category": {
            c: {"correct": v["correct"], "n": sum(v.values())} for c, v in sorted(by_cat.items())
        },
        "abstention": {
            "n_answerable": len(answerable),
            "accuracy": _ratio(a_c, len(answerable)),
            "error_rate": _ratio(a_w, len(answerable)),
            "abstention_rate": _ratio(a_a, len(answerable)),
            "score": {
                str(t): stats.abstention_score(a_c, a_w, a_a, t) if answerable else math.nan
                for t in ABSTENTION_THRESHOLDS
            },
        },
        "tokens_in": sum(int(r["tokens_in"]) for r in by_key.values()),
        "tokens_out": sum(int(r["tokens_out"]) for r in by_key.values()),
        "cost_usd": cost,
        "cost_per_attempt_usd": _ratio(cost, n_total),
        "cost_per_solved_usd": _ratio(cost, correct),
        "latency_per_attempt_s": _ratio(latency, len(ok_rows)),
        "latency_per_solved_s": _ratio(latency, correct),
    }


def categories(rows: Sequence[Mapping[str, Any]], graded: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each row's category off its graded rows by request key ("error" where it has none)."""
    cat_of = {g["request_key"]: g["category"] for g in graded}
    return [cat_of.get(r["request_key"], "error") for r in rows]


def repeats_table(
    rows: Sequence[Mapping[str, Any]],
    graded: Sequence[Mapping[str, Any]],
    n_runs: int,
    *,
    cats: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Per-run correct counts (mean, sd) and pass@k / pass^k for k = 1..n_runs. Each row's
    category is read off ``graded``, or given as ``cats`` (row by row: the analysis has
    them by raw row)."""
    acc = Repeats()
    acc.add(rows, categories(rows, graded) if cats is None else cats)
    return acc.table(n_runs)


class Outcomes(Sequence[int]):
    """A task's trials as ``mean_pass_k_curves`` reads them: ``c`` successes among ``n``
    (pass@k and pass^k depend on the two counts only, not on the trials' order), held as
    the counts: a benchmark's ten million sample rows were a byte each."""

    __slots__ = ("c", "n")

    def __init__(self) -> None:
        self.n = self.c = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(self)[i]
        j = range(self.n)[i]  # an IndexError past the trials, as a list's
        return 1 if j < self.c else 0

    def __iter__(self) -> Iterator[int]:
        return itertools.chain(itertools.repeat(1, self.c), itertools.repeat(0, self.n - self.c))


class Repeats:
    """``repeats_table``'s counts, taken a stretch of rows at a time (the analysis by chunk:
    ``stages.chunked``): per-run correct counts, each task's trials (``Outcomes``), the rows
    and errors, the largest run index seen. The same table whatever the stretches."""

    def __init__(self) -> None:
        self.correct_at: array[int] = array("q")  # correct answers by run index
        self.trials: dict[str, Outcomes] = {}
        self.n_total = self.n_error = 0
        self.n_runs = 0  # the largest run index seen, plus one (error rows too)

    def add(self, rows: Sequence[Mapping[str, Any]], cats: Sequence[str]) -> None:
        trials = self.trials
        for r, cat in zip(rows, cats, strict=True):
            self.n_total += 1
            run = int(r["repeat"])
            self.n_runs = max(self.n_runs, run + 1)
            if cat == "error":
                self.n_error += 1
                continue
            ok = cat == "correct"
            t = trials.get(r["item_id"])
            if t is None:
                t = trials[r["item_id"]] = Outcomes()
            t.n += 1
            if ok:
                t.c += 1
                if run >= 0:
                    if run >= len(self.correct_at):
                        self.correct_at.extend([0] * (run + 1 - len(self.correct_at)))
                    self.correct_at[run] += 1

    def table(self, n_runs: int) -> dict[str, Any]:
        """The table over ``n_runs`` runs (a correct answer's run index past them is not
        counted per run)."""
        have = self.correct_at
        per_run = [have[k] if k < len(have) else 0 for k in range(n_runs)]
        mean, sd = stats.mean_sd([float(x) for x in per_run]) if n_runs else (math.nan, math.nan)
        # every k in one pass over the counts (linear in repeats; one k at a time was quadratic)
        trials = self.trials
        at, hat = mean_pass_k_curves(trials, n_runs) if trials and n_runs else ([], [])
        return {
            "n_runs": n_runs,
            "n_total": self.n_total,
            "n_error": self.n_error,
            "per_run_correct": per_run,
            "per_run_mean": mean,
            "per_run_sd": sd,
            "pass_at_k": {str(k): v for k, v in enumerate(at, 1)},
            "pass_hat_k": {str(k): v for k, v in enumerate(hat, 1)},
        }


def compare(
    a: str,
    b: str,
    correct: Mapping[str, Mapping[str, bool]],
    *,
    family: str = "engines",
    name: str | None = None,
) -> dict[str, Any]:
    """Exact sign test on tasks both engines completed; ``correct[engine][item]``. ``paired`` is
    the comparison record (``stats.comparisons``; Holm is filled in once the family is whole)."""
    common = sorted(set(correct.get(a, {})) & set(correct.get(b, {})))
    a_only = sum(1 for i in common if correct[a][i] and not correct[b][i])
    b_only = sum(1 for i in common if correct[b][i] and not correct[a][i])
    return {
        "a": a,
        "b": b,
        "condition": "greedy",
        "n_items": len(common),
        "a_only": a_only,
        "b_only": b_only,
        "p": stats.sign_test(a_only, b_only),
        "paired": paired_comparison(
            name or f"{a} vs {b}",
            family,
            a,
            b,
            {i: [float(v)] for i, v in correct.get(a, {}).items()},
            {i: [float(v)] for i, v in correct.get(b, {}).items()},
            COMPARISON_PLAN,
            unit="task",
        ),
    }


# -- branches (issue #5): the same tasks through different systems ------------------------------


PPI_CAVEAT = (
    "the human-labelled answers are a fixed calibration set (40 of the embedded model's sampled "
    "answers, 20 written near the rule's boundary), not a random draw from these transcripts: "
    "the correction holds as far as the judge errs on them as on the transcripts"
)
"""What the golden PPI estimate assumes and its data does not guarantee (said in the report)."""

PPI_LAMBDA = 1.0
"""Golden corrects with plain PPI (λ = 1: the judge's mean minus its mean error on the labels),
not PPI++'s tuned λ. PPI++ gives the human labels' own mean weight 1 − λ, which estimates the
transcripts' rate only when the labels are a random draw from them; golden's calibration set is
not (it is enriched with boundary cases on purpose), so only the judge's *error* is carried
over. A suite with a sealed random audit subset (``tasks``: ``human_audit``) uses PPI++."""


def judge_ppi(
    judge_verdicts: Sequence[bool], labelled: tuple[Sequence[float], Sequence[float]]
) -> dict[str, Any]:
    """The judge's transcript PASS rate corrected by its errors on the human labels
    (prediction-powered inference, Angelopoulos et al. 2023: ``stats.ppi_mean`` at
    ``PPI_LAMBDA``), with the judge's raw rate and the human rate on the labels beside it.
    Empty when either side has fewer than two."""
    human, judge = labelled
    if len(human) < stats.MIN_LABELLED or len(judge_verdicts) < stats.MIN_UNLABELLED:
        return {}
    fu = [1.0 if v else 0.0 for v in judge_verdicts]
    r = stats.ppi_mean(human, judge, fu, lam=PPI_LAMBDA)
    return r.as_dict() | {"assumption": PPI_CAVEAT}


def judge_column(
    rows: Sequence[Mapping[str, Any]],
    graded: Sequence[Mapping[str, Any]],
    labelled: tuple[Sequence[float], Sequence[float]] = ((), ()),
) -> dict[str, Any]:
    """The judge grader on the same transcripts: PASS rate (Wilson) and its agreement / κ with
    the regex grader on the rows it judged; with ``labelled`` (human, judge) verdicts on the
    calibration answers, the PPI-corrected PASS rate (``judge_ppi``). Empty when no judge
    graded these rows."""
    keys = {r["request_key"] for r in rows}
    jv = {
        g["request_key"]: bool(g["passed"])
        for g in graded
        if g["grader"] == "judge" and g["request_key"] in keys
    }
    rv = {
        g["request_key"]: bool(g["passed"])
        for g in graded
        if g["grader"] == "regex" and g["request_key"] in keys
    }
    common = sorted(set(jv) & set(rv))
    if not common:
        return {}
    j = [jv[k] for k in common]
    r = [rv[k] for k in common]
    out = {
        "pass": rate(sum(j), len(j)),
        "agreement_with_regex": stats.agreement(j, r),
        "kappa_with_regex": stats.cohen_kappa(j, r),
    }
    ppi = judge_ppi(j, labelled)
    if ppi:
        out["ppi"] = ppi
    return out


def agent_table(rows: Sequence[Mapping[str, Any]], cats: Sequence[str]) -> dict[str, Any]:
    """How agent runs stopped, how much they looked, and the diagnostic split.

    The split compares runs that answered without calling any tool with runs that answered after
    reading something (a successful ``read_file`` or ``grep``); runs that only listed files or
    whose tool calls all failed are the third row. The groups are different tasks, not the same
    tasks paired, so the split is diagnostic, not causal. ``cats``: each row's category.
    """
    acc = Agent()
    acc.add(rows, cats)
    return acc.table()


class Agent:
    """``agent_table``'s counts, taken a stretch of rows at a time (order does not enter)."""

    def __init__(self) -> None:
        self.stops: Counter[str] = Counter()
        self.groups: dict[str, list[int]] = {
            "no_tools": [0, 0],
            "read": [0, 0],
            "tools_no_read": [0, 0],
        }
        self.calls = self.tools_n = self.tool_errors = self.n = 0

    def add(self, rows: Sequence[Mapping[str, Any]], cats: Sequence[str]) -> None:
        for r, cat in zip(rows, cats, strict=True):
            if cat == "error":
                continue
            self.n += 1
            s = trajectory_summary(json.loads(r["trajectory"] or "[]"))
            self.stops.update(s["stops"])
            self.calls += s["model_calls"]
            self.tools_n += s["tool_calls"]
            self.tool_errors += s["tool_errors"]
            g = "no_tools" if s["tool_calls"] == 0 else "read" if s["reads"] else "tools_no_read"
            self.groups[g][0] += cat == "correct"
            self.groups[g][1] += 1

    def table(self) -> dict[str, Any]:
        n = self.n
        return {
            "n_runs": n,
            "stops": dict(sorted(self.stops.items())),
            "model_calls_per_run": _ratio(self.calls, n),
            "tool_calls_per_run": _ratio(self.tools_n, n),
            "tool_error_share": _ratio(self.tool_errors, self.tools_n),
            "diagnostic_split": {g: rate(k, m) for g, (k, m) in self.groups.items()},
        }


def branch_comparisons(
    correct: Mapping[str, Mapping[str, bool]], engine: str = ""
) -> list[dict[str, Any]]:
    """Every pair of branches on the ``main`` answers: exact sign test on discordant tasks (family
    ``branches``, adjusted over every engine's pairs by the caller)."""
    names = sorted(correct)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            label = f"{engine}: {a} vs {b}" if engine else f"{a} vs {b}"
            c = compare(a, b, correct, family="branches", name=label)
            c["condition"] = "main"
            out.append(c)
    return out


def top_transcripts(
    tasks: Mapping[str, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    cats: Sequence[str],
    *,
    n_tasks: int = 3,
    per_task: int = 2,
) -> list[dict[str, Any]]:
    """The transcripts behind the top-scoring tasks, for a human to read: a pass that never
    answers, or adds a false claim, is a grader artefact no aggregate shows. Tasks ranked by
    pass rate over every answer row (ties by id); up to ``per_task`` passing rows quoted each.
    ``cats``: each row's category."""
    acc = Top(per_task)
    acc.add(rows, cats, range(len(rows)))
    return acc.table(tasks, lambda at: [rows[j] for j in at], n_tasks=n_tasks)


class Top:
    """``top_transcripts``' counts, taken a stretch of rows at a time in the rows' order:
    per task its answered and passing rows, and its first ``per_task`` passing rows by
    (condition, run index), ties in the rows' order (as a stable sort of all of them would
    have them), each held as the caller's handle to read it again. A row object per answer
    was ~350 MB at ten million rows (``benchmarks/scale.py``)."""

    def __init__(self, per_task: int = 2) -> None:
        self.per_task = per_task
        self.n: Counter[str] = Counter()
        self.correct: Counter[str] = Counter()
        self.best: dict[str, list[tuple[tuple[str, int], int, Any]]] = {}
        self.seen = 0

    def add(
        self, rows: Sequence[Mapping[str, Any]], cats: Sequence[str], where: Sequence[Any]
    ) -> None:
        """``where``: each row's handle (what ``table``'s ``read`` is given back)."""
        for r, cat, w in zip(rows, cats, where, strict=True):
            if cat == "error":
                continue
            tid = r["item_id"]
            self.n[tid] += 1
            if cat != "correct":
                continue
            self.correct[tid] += 1
            self.seen += 1
            entry = ((r["condition"], int(r["repeat"])), self.seen, w)
            best = self.best.setdefault(tid, [])
            if len(best) < self.per_task or entry[:2] < best[-1][:2]:
                best.append(entry)
                best.sort(key=lambda e: e[:2])
                del best[self.per_task :]

    def table(
        self,
        tasks: Mapping[str, Mapping[str, Any]],
        read: Callable[[list[Any]], Sequence[Mapping[str, Any]]],
        *,
        n_tasks: int = 3,
    ) -> list[dict[str, Any]]:
        """The quoted tasks; ``read(handles)``: the rows of those handles, in that order."""
        scored = [(-self.correct[tid] / n, tid, self.correct[tid], n) for tid, n in self.n.items()]
        out = []
        for _, tid, k, n in sorted(scored)[:n_tasks]:
            if k == 0:
                break
            quotes = []
            for r in read([w for _, _, w in self.best.get(tid, [])]):
                traj = json.loads(r["trajectory"] or "[]")
                actions = [
                    f"{t['name']}({next(iter(t.get('arguments', {}).values()), '')})"
                    + ("" if t.get("ok") else " -> error")
                    for t in traj
                    if t.get("type") == "tool"
                ]
                quotes.append(
                    {
                        "condition": r["condition"],
                        "repeat": int(r["repeat"]),
                        "answer": r["output_text"],
                        "actions": actions,
                    }
                )
            out.append(
                {
                    "task": tid,
                    "prompt": tasks[tid]["prompt"],
                    "reference": tasks[tid]["answer"],
                    "passed": k,
                    "n": n,
                    "quotes": quotes,
                }
            )
        return out


# -- the typed metric list (stats.metrics): what publish and an auditor read without golden ------

JUDGE_TESTS = ("position", "verbosity")


def _from_rate(
    name: str,
    groups: Mapping[str, Any],
    r: Mapping[str, Any],
    *,
    n_ok: int,
    n_error: int,
    unit: str,
) -> Metric:
    """A ``Metric`` from one of this plan's ``rate`` dicts: the same numbers the report shows,
    None where the rate has no denominator."""
    has = bool(r.get("n"))
    return metric(
        name,
        groups,
        r.get("rate") if has else None,
        r.get("lo") if has else None,
        r.get("hi") if has else None,
        method="wilson",
        n_total=n_ok + n_error,
        n_ok=n_ok,
        n_error=n_error,
        unit=unit,
        se=binomial_se(int(r["k"]), int(r["n"])) if has else None,
    )


_plain = point_metric


def _branch_metrics(engine: str, bname: str, b: Mapping[str, Any]) -> list[Metric]:
    g = {"engine": engine, "branch": bname}
    m = b["main"]
    ok, err = int(m["n_ok"]), int(m["n_error"])
    out = [
        _from_rate("greedy_accuracy", g, m["accuracy"], n_ok=ok, n_error=err, unit="task"),
        _from_rate(
            "greedy_accuracy_errors_as_failures",
            g,
            m["accuracy_lower_bound"],
            n_ok=ok,
            n_error=err,
            unit="task",
        ),
    ]
    rep = b["repeats"]
    if rep["pass_at_k"]:
        k = max(int(x) for x in rep["pass_at_k"])
        err = int(rep["n_error"])
        ok = int(rep["n_total"]) - err
        for key in ("pass_at_k", "pass_hat_k"):
            out.append(
                _plain(
                    key,
                    g | {"k": k},
                    rep[key][str(k)],
                    n_ok=ok,
                    n_error=err,
                    unit="task",
                    method="unbiased estimator",
                )
            )
    j = b.get("judge") or {}
    if j:
        ok = int(j["pass"]["n"])
        err = max(0, int(m["n_total"]) - ok)  # greedy answers without a judge + regex pair
        out.append(_from_rate("judge_pass", g, j["pass"], n_ok=ok, n_error=err, unit="task"))
        if p := j.get("ppi"):
            pp = p["ppi"]
            out.append(
                metric(
                    "judge_pass_ppi",
                    g,
                    pp["estimate"],
                    pp["lo"],
                    pp["hi"],
                    method="PPI normal",
                    n_total=ok + err,
                    n_ok=ok,
                    n_error=err,
                    unit="task",
                )
            )
        for name, key in (
            ("judge_regex_agreement", "agreement_with_regex"),
            ("judge_regex_kappa", "kappa_with_regex"),
        ):
            out.append(_plain(name, g, j.get(key), n_ok=ok, n_error=err, unit="task"))
    return out


def engine_metrics(
    engine: str, entry: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
) -> list[Metric]:
    """One engine's metrics, read from its analysis ``entry`` (``GoldenSuite.analyze``'s
    ``engines[engine]``, so they are the report's numbers) and its raw ``rows`` (the judge's
    error counts per condition).

    Per branch: greedy accuracy over completed tasks and with errors counted as failures
    (Wilson, unit task); pass@k and pass^k at the largest k sampled (unbiased estimator, no
    interval; counts are the sampled requests); the judge's PASS rate and its agreement and κ
    with the regex grader on the greedy answers both graded, and that rate corrected by the
    judge's errors on the human labels (PPI, ``judge_pass_ppi``). Per judge prompt variant:
    agreement (Wilson) and κ with the human labels; per pairwise test: order consistency.
    """
    out: list[Metric] = []
    for bname, b in sorted((entry.get("branches") or {}).items()):
        out += _branch_metrics(engine, bname, b)
    judge = entry.get("judge") or {}
    variants = (judge.get("calibration") or {}).get("variants") or {}
    for variant, cal in sorted(variants.items()):
        g = {"engine": engine, "variant": variant}
        sc = status_counts(r for r in rows if r["condition"] == f"judge/calibration/{variant}")
        n, err = int(cal["n"]), int(sc["n_error"])
        t = cal.get("table") or {}
        agree = int(t.get("judge_pass_human_pass", 0)) + int(t.get("judge_fail_human_fail", 0))
        out.append(
            _from_rate(
                "judge_human_agreement", g, rate(agree, n), n_ok=n, n_error=err, unit="answer"
            )
        )
        out.append(
            _plain("judge_human_kappa", g, cal.get("kappa"), n_ok=n, n_error=err, unit="answer")
        )
    for test in JUDGE_TESTS:
        pt = judge.get(test)
        if not pt:
            continue
        planned = {r["item_id"] for r in rows if r["condition"].startswith(f"judge/{test}/")}
        oc = pt["order_consistent"]
        n = int(oc["n"])
        out.append(
            _from_rate(
                "judge_order_consistent",
                {"engine": engine, "test": test},
                oc,
                n_ok=n,
                n_error=max(0, len(planned) - n),
                unit="pair",
            )
        )
    return out
