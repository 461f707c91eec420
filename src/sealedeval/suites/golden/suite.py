"""The ``golden`` suite: our own hand-written tasks over five files, graded several ways.

Design per engine (``design.py``): each enabled *branch* — files in the prompt (``single``), the
files through tools (``agent``), tools + self-consistency — answers every task once (``main``:
greedy, so the branch table reproduces; a self-consistency branch votes over fixed-seed
trajectories) and ``repeats`` times at ``temperature`` with fixed per-task seeds. The base branch
runs on every engine; the others on ``branch_engines``. Configured judge engines also run the
judge measurements (``judging.py``) and grade their own transcripts in a second phase; configured
probe engines run the injection, attribute-swap and (engines declaring log-probs only)
contamination probes (``probing.py``). Every call is a raw row, so the audit covers all of it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sealedeval.config import Config
from sealedeval.engines.base import Request
from sealedeval.keys import derive_seed
from sealedeval.plugins import (
    AnalyzeContext,
    FollowupContext,
    GenerateContext,
    GradeContext,
    RequestContext,
)
from sealedeval.probes import logprobs as _logprobs  # noqa: F401  (registers logprob_probe)
from sealedeval.run import agent as _agent  # noqa: F401  (registers the agent solver)
from sealedeval.seal.design import added_engines, to_exploratory
from sealedeval.stages.artifacts import GradedRows, graded_column
from sealedeval.stages.grade import by_raw_row, raw_positions
from sealedeval.stats.comparisons import adjust_families
from sealedeval.stats.metrics import Metric, sort_metrics, status_counts
from sealedeval.store.columns import Coded
from sealedeval.store.raw import RowsAt, record_column
from sealedeval.suites.golden import design, judging, plan, probing, prompts, rubric
from sealedeval.suites.golden.items import (
    load_attribute_swap,
    load_files,
    load_retention,
    load_tasks,
)

if TYPE_CHECKING:
    from sealedeval.render.figures import FigureSpec


def _task_ids(cfg: Config) -> set[str]:
    """Every task id of the set (not only a ``limit``ed prefix): what a branch subset may name."""
    return {t["id"] for t in load_tasks(cfg.root)}


def _probe_tables(probes: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The probe tables that carry a comparison record (injection per branch, attribute swap)."""
    inj = (probes.get("injection") or {}).get("branches") or {}
    out = [inj[b] for b in sorted(inj)]
    if probes.get("attribute_swap"):
        out.append(probes["attribute_swap"])
    return out


class GoldenSuite:
    name = "golden"

    def rubric_inputs(self) -> list[str]:
        return [
            "data/golden/tasks.yaml",
            "data/golden/files/*",
            "data/golden/human_labels.yaml",
            "data/golden/judge_prompts.yaml",
            "data/golden/judge_pairs.yaml",
            "data/golden/injection.yaml",
            "data/golden/attribute_swap.yaml",
            "data/golden/contamination.yaml",
            "pkg:sealedeval/graders/*.py",
            "pkg:sealedeval/suites/golden/*.py",
            "pkg:sealedeval/run/agent.py",
            "pkg:sealedeval/probes/*.py",
        ]

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        cfg, seed = ctx.cfg, ctx.seed
        scfg = cfg.suite(self.name)
        tasks = load_tasks(cfg.root, scfg.get("limit"))
        files = load_files(cfg.root)
        out = []
        for t in tasks:
            prompts.leak_check(t, prompts.messages(t, files))
            out.append(t | {"seed": derive_seed(seed, t["id"])})
        return out

    def requests(self, ctx: RequestContext) -> list[Request]:
        """Ordered so consecutive calls share a prompt prefix (the server reuses what the previous
        call evaluated): the files-in-prompt branch and the judge calls (same files block first),
        the swapped and injected directories, then the agent branches and the in-process probe."""
        cfg, items, engine, model, seed = ctx.cfg, ctx.items, ctx.engine, ctx.model, ctx.seed
        scfg = cfg.suite(self.name)
        files = load_files(cfg.root)
        ids = _task_ids(cfg)
        mine = design.engine_branches(scfg, engine.name, ids)
        by_name = {b.name: b for b in mine}
        known = {b.name for b in design.branches(scfg, ids)}
        tasks = {t["id"]: t for t in items}
        out: list[Request] = []
        for b in mine:
            if not b.tools:
                out += design.branch_requests(scfg, engine, model, items, files, b)
        out += judging.judge_requests(cfg.root, scfg, engine, model, tasks, files, seed)
        out += probing.probe_requests(
            cfg.root, scfg, engine, model, items, files, by_name, seed, agents=False, known=known
        )
        for b in mine:
            if b.tools:
                out += design.branch_requests(scfg, engine, model, items, files, b)
        out += probing.probe_requests(
            cfg.root, scfg, engine, model, items, files, by_name, seed, agents=True, known=known
        )
        return out

    def followup_requests(self, ctx: FollowupContext) -> list[Request]:
        """Phase 2: a judge engine grades its own branch answers once they are stored."""
        cfg, items, engine, model, seed, rows = (
            ctx.cfg,
            ctx.items,
            ctx.engine,
            ctx.model,
            ctx.seed,
            ctx.rows,
        )
        scfg = cfg.suite(self.name)
        tasks = {t["id"]: t for t in items}
        return judging.transcript_requests(
            cfg.root, scfg, engine, model, tasks, load_files(cfg.root), seed, rows
        )

    def reference_answer(self, request: Request) -> str:
        """The ceiling: the task's answer, a judge's human label / right letter; wrapped in the
        request's JSON contract when it has one (an ``answer`` action of the agent protocol, the
        judge's ``verdict`` / ``choice`` object)."""
        text = str(request.item.get("reference_reply", request.item.get("answer", "")))
        rf = request.params.get("response_format")
        if not rf:
            return text
        props = ((rf.get("json_schema") or {}).get("schema") or {}).get("properties") or {}
        if "action" in props:
            return json.dumps({"action": "answer", "argument": text})
        # a judge contract: the one required field carries the label / letter
        return json.dumps({next(iter(props)): text})

    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        return list(self.iter_grade(ctx))

    def iter_grade(self, ctx: GradeContext) -> Iterator[dict[str, Any]]:
        """``grade``'s rows one at a time (the optional hook the grade stage streams)."""
        tasks, swap, verdicts = self._grade_inputs(ctx)
        return rubric.iter_rows(tasks, ctx.rows, swap_tasks=swap, verdicts=verdicts)

    def grade_table(self, ctx: GradeContext) -> GradedRows:
        """The same rows as a column-wise table (what the grade stage uses)."""
        tasks, swap, verdicts = self._grade_inputs(ctx)
        return rubric.table(tasks, ctx.rows, swap_tasks=swap, verdicts=verdicts)

    def grade_columns(self) -> tuple[str, ...]:
        """The raw columns golden's grading reads (``rubric.table`` and ``_verdicts``)."""
        return GRADE_COLUMNS

    def grade_scan(self, ctx: GradeContext) -> dict[str, Mapping[Any, Any]]:
        """What grading an answer reads of other rows: the judge's replies on it."""
        return {"verdicts": _verdicts(ctx.rows)}

    def _grade_inputs(
        self, ctx: GradeContext
    ) -> tuple[
        dict[str, Any], dict[str, dict[str, Any]] | None, Mapping[tuple[str, str, str, int], str]
    ]:
        """The tasks by id, the attribute-swap variants' tasks (when swap rows are present)
        and the judge's replies on answers, by (engine, answer condition, item, repeat): from
        every row (``ctx.shared``, when the rows are one chunk), as a judge row may be in
        another chunk than the answer it judged."""
        cfg, items, rows = ctx.cfg, ctx.items, ctx.rows
        verdicts = _verdicts(rows) if ctx.shared is None else ctx.shared.get("verdicts", {})
        swap = None
        if any(c.startswith("probe/swap/") for c in record_column(rows, "condition")):
            sw = load_attribute_swap(cfg.root, load_files(cfg.root))
            swap = {v: {t["id"]: t for t in ts} for v, ts in sw["tasks"].items()}
        return {i["id"]: i for i in items}, swap, verdicts

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        cfg, items, graded, rows = ctx.cfg, ctx.items, ctx.graded, ctx.rows
        scfg = cfg.suite(self.name)
        tasks = {i["id"]: i for i in items}
        files = load_files(cfg.root)
        all_branches = {b.name: b for b in design.branches(scfg, _task_ids(cfg))}
        base = str(scfg.get("base_branch", "A"))
        engines: dict[str, Any] = {}
        metrics: list[Metric] = []
        correct: dict[str, dict[str, bool]] = defaultdict(dict)
        # Columns first, rows only where a table reads them: at a million answers a pass over
        # every row per table was most of the analysis (``benchmarks/scale.py``). Categories
        # by raw row (a byte each), not by request key: a dict of ten million keys was ~1 GB.
        ecol, ccol = (record_column(rows, c) for c in ("engine", "condition"))
        kind = {c: design.condition_kind(c) for c in set(ccol)}
        at_raw = raw_positions(graded, rows)
        cats = by_raw_row(graded, rows, "category", "error", positions=at_raw)
        main_at = [i for i, c in enumerate(ccol) if kind[c] == "answer" and c.endswith("/main")]
        main_graded = _graded_of(at_raw, main_at, graded_column(graded, "engine"))
        # Views by position, not lists of rows: each row is read when a table reads it (at ten
        # million rows, lists by engine and condition held one row object per slot).
        at_engine: dict[str, RowsAt[Mapping[str, Any]]] = {}
        for i, e in enumerate(ecol):
            view = at_engine.get(e)
            if view is None:
                view = at_engine[e] = RowsAt(rows)
            view.append(i)
        for eng in sorted(at_engine):
            erows = at_engine[eng]
            idx = erows.positions
            egraded = [graded[j] for j in main_graded[eng]]  # the main answers' graded rows
            counts = status_counts(erows)
            answers = RowsAt(rows, (i for i in idx if kind[ccol[i]] == "answer"))
            by_cond: dict[str, RowsAt[Mapping[str, Any]]] = {}
            for i in idx:
                c = ccol[i]
                if kind[c] == "answer":
                    view = by_cond.get(c)
                    if view is None:
                        view = by_cond[c] = RowsAt(rows)
                    view.append(i)
            jrows = RowsAt(rows, (i for i in idx if kind[ccol[i]] == "judge"))
            prows = RowsAt(rows, (i for i in idx if kind[ccol[i]] == "probe"))
            mains = RowsAt(
                rows, (i for c, v in by_cond.items() if c.endswith("/main") for i in v.positions)
            )
            present = sorted({design.split_condition(c)[0] for c in by_cond})
            labelled = judging.calibration_labels(cfg.root, jrows)
            branch_out: dict[str, Any] = {}
            branch_correct: dict[str, dict[str, bool]] = {}
            for bname in present:
                main = by_cond.get(f"{bname}/main") or RowsAt(rows)
                sample = by_cond.get(f"{bname}/sample") or RowsAt(rows)
                n_runs = max((int(r["repeat"]) + 1 for r in sample), default=0)
                b = all_branches.get(bname)
                entry: dict[str, Any] = {
                    "spec": b.describe() if b else {"solver": "unknown"},
                    "main": plan.greedy_table(tasks, main, egraded),
                    "judge": plan.judge_column(main, egraded, labelled),
                    "repeats": plan.repeats_table(sample, (), n_runs, cats=_at(cats, sample)),
                }
                if b is not None and b.tools:
                    both = RowsAt(rows, main.positions + sample.positions)
                    entry["agent"] = plan.agent_table(both, _at(cats, both))
                branch_out[bname] = entry
                branch_correct[bname] = {
                    r["item_id"]: cat == "correct"
                    for r, cat in zip(main, _at(cats, main), strict=True)
                    if cat != "error"
                }
            if base in branch_correct:
                correct[eng] = branch_correct[base]
            base_main = by_cond.get(f"{base}/main") or RowsAt(rows)
            engines[eng] = {
                "model": rows[idx[0]]["model"],
                **counts,  # n_total, n_ok, n_error, errors_by_kind
                "complete": counts["n_error"] == 0,
                "branches": branch_out,
                "branch_comparisons": plan.branch_comparisons(branch_correct, eng),
                "judge": judging.judge_analysis(cfg.root, scfg, jrows, tasks),
                "probes": {
                    "injection": probing.injection_analysis(cfg.root, prows + mains, tasks, files),
                    "attribute_swap": probing.swap_analysis(cfg.root, prows, files),
                    "contamination": probing.contamination_analysis(cfg.root, prows),
                },
                "top_transcripts": plan.top_transcripts(tasks, answers, _at(cats, answers)),
                "items": {
                    r["item_id"]: {"greedy": cat, "answer": r["output_text"]}
                    for r, cat in sorted(
                        zip(base_main, _at(cats, base_main), strict=True),
                        key=lambda rc: rc[0]["item_id"],
                    )
                },
            }
            metrics += plan.engine_metrics(eng, engines[eng], jrows)
        names = sorted(engines)
        pair = scfg.get("compare") or names[:2]
        comparisons = []
        if len(pair) == 2 and all(p in engines for p in pair):
            c = plan.compare(pair[0], pair[1], correct, name=f"{pair[0]} vs {pair[1]} ({base})")
            c["condition"] = f"{base}/main"
            comparisons.append(c)
        # an engine added after the seal: its comparisons leave the sealed families
        late = added_engines(cfg, self.name, names)
        to_exploratory(
            [c["paired"] for e in sorted(late) for c in engines[e]["branch_comparisons"]]
            + [t["paired"] for e in sorted(late) for t in _probe_tables(engines[e]["probes"])]
            + [c["paired"] for c in comparisons if {c["a"], c["b"]} & late]
        )
        # Holm over each whole family: every engine's branch pairs, the engine pairs
        adjust_families(
            [c["paired"] for e in engines.values() for c in e["branch_comparisons"]]
            + [c["paired"] for c in comparisons]
            + [t["paired"] for e in engines.values() for t in _probe_tables(e["probes"])]
        )
        return {
            "suite": self.name,
            "n_items": len(items),
            "design": {
                "base_branch": base,
                "branches": {n: b.describe() for n, b in sorted(all_branches.items())},
                "branch_engines": list(scfg.get("branch_engines") or []),
                "repeats": scfg["repeats"],
                "temperature": scfg["temperature"],
                "max_tokens": scfg["max_tokens"],
                "agent": dict(scfg.get("agent") or {}),
                "judge": dict(scfg.get("judge") or {}),
                "probes": dict(scfg.get("probes") or {}),
            },
            "engines": engines,
            "comparisons": comparisons,
            "comparison_plan": plan.COMPARISON_PLAN.describe(),
            "methods": plan.INTERVALS,
            "footer": self._footer(cfg, sorted(engines)),
            "metrics": sort_metrics(metrics),
        }

    def report_sections(self, section: Mapping[str, Any]) -> str:
        """The golden part of report.md, from its result.json section (presentation is not
        sealed: imported here, never by the modules above)."""
        from sealedeval.suites.golden.present import report

        return report.render(section)

    def figures(self, section: Mapping[str, Any]) -> list[FigureSpec]:
        """The golden figures (accuracy, branches, pass@k, runs, judge); nothing is drawn."""
        from sealedeval.suites.golden.present import figures

        return figures.figure_specs(section)

    def summary(self, section: Mapping[str, Any]) -> dict[str, Any]:
        """The headline and pre-registered comparisons of the report's summary page."""
        from sealedeval.suites.golden.present import summary

        return summary.summary(section)

    def _footer(self, cfg: Config, engines: list[str]) -> dict[str, Any]:
        """Model, temperature, seeds, prices, interval methods; provider retention notes as
        configuration text with the date they were read."""
        scfg = cfg.suite(self.name)
        out = []
        for name in engines:
            e = cfg.data["engines"].get(name, {})
            out.append(
                {
                    "engine": name,
                    "kind": e.get("kind", ""),
                    "model": e.get("model", ""),
                    "price_in_per_mtok": e.get("price_in_per_mtok", 0),
                    "price_out_per_mtok": e.get("price_out_per_mtok", 0),
                    "tool_protocol": (
                        design.tool_protocol(cfg.engine(name))
                        if name in cfg.data["engines"]
                        else ""
                    ),
                    "retention_note": e.get("retention_note", ""),
                }
            )
        return {
            "engines": out,
            "temperature": scfg["temperature"],
            "seeds": (
                f"project seed {cfg.seed}; item seeds derive from it and the rubric hash, each "
                "request's sampling seed from its item seed, condition and run index (stored "
                "in every raw row); self-consistency trajectories add a fixed offset per index"
            ),
            "intervals": plan.INTERVALS,
            "providers": load_retention(cfg.root),
        }


GRADE_COLUMNS = ("request_key", "engine", "item_id", "condition", "repeat", "status", "output_text")
"""The raw columns golden's grading reads: a graded row's identity, the answer."""


def _verdicts(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str, int], str]:
    """The judge's replies on answers among ``rows`` (its ok ``judge/transcript/...`` rows),
    by (engine, answer condition, item, repeat)."""
    conds = record_column(rows, "condition")
    judged = [i for i, c in enumerate(conds) if c.startswith("judge/transcript/")]
    return {
        (
            r["engine"],
            r["condition"].removeprefix("judge/transcript/"),
            r["item_id"],
            int(r["repeat"]),
        ): r["output_text"] or ""
        for r in (rows[i] for i in judged)
        if r["status"] == "ok"
    }


def _at(by_raw: Sequence[str], view: RowsAt[Mapping[str, Any]]) -> Sequence[str]:
    """``by_raw`` (a value per raw row) for the rows of ``view``, in its order."""
    return Coded(view.positions, by_raw)


def _graded_of(at_raw: Any, raw: Sequence[int], engines: Sequence[str]) -> dict[str, list[int]]:
    """The graded rows (positions, in graded order) of the raw rows ``raw``, by engine: a
    chunk of positions at a time (40 million graded rows at ten million raw rows)."""
    import numpy as np

    wanted = np.array(sorted(raw), dtype=np.int64)
    out: dict[str, list[int]] = defaultdict(list)
    for start in range(0, len(at_raw), _CHUNK):
        hit = np.isin(np.asarray(at_raw[start : start + _CHUNK], dtype=np.int64), wanted)
        for j in (np.flatnonzero(hit) + start).tolist():
            out[engines[j]].append(j)
    return out


_CHUNK = 1 << 20
"""Graded rows per step of ``_graded_of``."""


suite = GoldenSuite()
