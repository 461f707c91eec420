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
from array import array
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
    RowChunk,
)
from sealedeval.probes import logprobs as _logprobs  # noqa: F401  (registers logprob_probe)
from sealedeval.run import agent as _agent  # noqa: F401  (registers the agent solver)
from sealedeval.seal.design import added_engines, to_exploratory
from sealedeval.stages.artifacts import GradedRows
from sealedeval.stages.chunked import whole_rows
from sealedeval.stages.grade import IDENTITY_COLUMNS
from sealedeval.stats.comparisons import adjust_families
from sealedeval.stats.metrics import Metric, StatusCounts, sort_metrics
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

    def analyze_columns(self) -> tuple[str, ...]:
        """The raw columns golden's analysis reads of every row (``_EnginePass``)."""
        return ANALYZE_COLUMNS

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        cfg, items = ctx.cfg, ctx.items
        scfg = cfg.suite(self.name)
        tasks = {i["id"]: i for i in items}
        files = load_files(cfg.root)
        all_branches = {b.name: b for b in design.branches(scfg, _task_ids(cfg))}
        base = str(scfg.get("base_branch", "A"))
        engines: dict[str, Any] = {}
        metrics: list[Metric] = []
        correct: dict[str, dict[str, bool]] = defaultdict(dict)
        # Each engine's rows are read once, a stretch at a time, into counts (status, repeats,
        # agent runs, the top transcripts) and the handles of the few rows a table reads
        # whole (main answers, judge and probe rows, quotes); those are read again at the end.
        # All rows at once are one stretch per engine (``whole_rows``); past a chunk's rows
        # the stage gives key-prefix buckets (``stages.chunked``), whose memory does not grow
        # with the rows.
        src = ctx.chunks if ctx.chunks is not None else whole_rows(ctx.rows, ctx.graded)
        tools = {n for n, b in all_branches.items() if b.tools}
        for eng in src.engines:
            seen = _EnginePass(tools)
            for chunk in src.chunks(eng):
                seen.add(chunk)
            pool = sorted(set(seen.handles()))
            at = {h: j for j, h in enumerate(pool)}
            read = src.rows_at(pool)

            def rows_of(handles: Sequence[int], read: Sequence[Any] = read, at: Any = at) -> Any:
                return RowsAt(read, [at[h] for h in handles])

            egraded = list(src.graded_at(seen.main_graded))  # the main answers' graded rows
            jrows, prows = rows_of(seen.judge), rows_of(seen.probe)
            mains = rows_of([h for c in seen.conds if c.endswith("/main") for h in seen.main[c]])
            present = sorted({design.split_condition(c)[0] for c in seen.conds})
            labelled = judging.calibration_labels(cfg.root, jrows)
            branch_out: dict[str, Any] = {}
            branch_correct: dict[str, dict[str, bool]] = {}
            for bname in present:
                main = rows_of(seen.main.get(f"{bname}/main", []))
                main_cats = seen.main_cats.get(f"{bname}/main", [])
                sample = seen.sample.get(f"{bname}/sample") or plan.Repeats()
                b = all_branches.get(bname)
                entry: dict[str, Any] = {
                    "spec": b.describe() if b else {"solver": "unknown"},
                    "main": plan.greedy_table(tasks, main, egraded),
                    "judge": plan.judge_column(main, egraded, labelled),
                    "repeats": sample.table(sample.n_runs),
                }
                if b is not None and b.tools:
                    entry["agent"] = (seen.agent.get(bname) or plan.Agent()).table()
                branch_out[bname] = entry
                branch_correct[bname] = {
                    r["item_id"]: cat == "correct"
                    for r, cat in zip(main, main_cats, strict=True)
                    if cat != "error"
                }
            if base in branch_correct:
                correct[eng] = branch_correct[base]
            base_main = rows_of(seen.main.get(f"{base}/main", []))
            base_cats = seen.main_cats.get(f"{base}/main", [])
            counts = seen.status.counts()
            engines[eng] = {
                "model": rows_of([seen.first])[0]["model"],
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
                "top_transcripts": seen.top.table(tasks, rows_of),
                "items": {
                    r["item_id"]: {"greedy": cat, "answer": r["output_text"]}
                    for r, cat in sorted(
                        zip(base_main, base_cats, strict=True),
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


GRADE_COLUMNS = (*IDENTITY_COLUMNS, "output_text")
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


ANALYZE_COLUMNS = (*IDENTITY_COLUMNS, "error_kind", "trajectory")
"""The raw columns golden's analysis reads of every row (the rest of a few rows only)."""


class _EnginePass:
    """What golden's analysis keeps of one engine's rows, read a stretch at a time in the
    canonical order: counts for the tables over every answer (status, repeats, agent runs,
    the top transcripts) and handles of the rows a table reads whole (main answers and
    their categories, judge and probe rows, the first row); the answer conditions in the
    order they first appear."""

    def __init__(self, tools: set[str]) -> None:
        self.tools = tools
        self.status = StatusCounts()
        self.first = -1
        self.conds: list[str] = []
        self._known: set[str] = set()
        self.main: dict[str, list[int]] = {}
        self.main_cats: dict[str, list[str]] = {}
        self.main_graded: list[int] = []
        self.sample: dict[str, plan.Repeats] = {}
        self.agent: dict[str, plan.Agent] = {}
        self.top = plan.Top()
        self.judge: list[int] = []
        self.probe: list[int] = []

    def add(self, chunk: RowChunk) -> None:
        import numpy as np

        rows, cats, where = chunk.rows, chunk.categories, chunk.where
        if not len(rows):
            return
        if self.first < 0:
            self.first = int(where[0])
        self.status.add_columns(record_column(rows, "status"), record_column(rows, "error_kind"))
        conds = record_column(rows, "condition")
        codes, values = _codes(conds)
        kind = [design.condition_kind(str(c)) for c in values]
        # each condition's rows, in order; conditions in the order they first appear
        order = np.argsort(codes, kind="stable")
        cut = np.searchsorted(codes[order], np.arange(len(values) + 1))
        groups = {c: order[cut[c] : cut[c + 1]] for c in range(len(values)) if cut[c + 1] > cut[c]}
        answers = np.sort(
            np.concatenate([g for c, g in groups.items() if kind[c] == "answer"] or [order[:0]])
        )
        handle = np.asarray(where)
        main_local: list[int] = []
        for c, at in sorted(groups.items(), key=lambda cg: int(cg[1][0])):
            cond, k = str(values[c]), kind[c]
            if k != "answer":
                continue
            if cond not in self._known:
                self._known.add(cond)
                self.conds.append(cond)
            local = _index(at)  # 4 bytes a row: a list of ten million ints was ~0.4 GB
            view = RowsAt(rows, local)
            view_cats = Coded(local, cats)
            bname, what = design.split_condition(cond)
            if cond.endswith("/main"):
                self.main.setdefault(cond, []).extend(handle[at].tolist())
                self.main_cats.setdefault(cond, []).extend(view_cats)
                main_local += at.tolist()
            elif what == "sample":
                self.sample.setdefault(cond, plan.Repeats()).add(view, view_cats)
            if bname in self.tools and (what == "main" or what == "sample"):
                self.agent.setdefault(bname, plan.Agent()).add(view, view_cats)
        for k, name in (("judge", self.judge), ("probe", self.probe)):
            mine = [g for c, g in groups.items() if kind[c] == k]
            if mine:
                name.extend(handle[np.sort(np.concatenate(mine))].tolist())
        if len(answers):
            a = _index(answers)
            self.top.add(RowsAt(rows, a), Coded(a, cats), handle[answers])
        if main_local:
            self.main_graded += chunk.graded_where(sorted(main_local))

    def handles(self) -> list[int]:
        """Every row a table reads whole, and the quotes' candidates."""
        out = [self.first, *self.judge, *self.probe]
        for hs in self.main.values():
            out += hs
        for best in self.top.best.values():
            out += [w for _, _, w in best]
        return out


def _index(at: Any) -> array[int]:
    """Row indices (numpy) as the unsigned array a ``RowsAt`` view and a ``Coded`` column
    hold, without a Python int per row."""
    import numpy as np

    out = array("I")
    out.frombytes(at.astype(np.uint32).tobytes())
    return out


def _codes(col: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
    """A column as (numpy codes, distinct values): a coded column's own (through one level),
    else coded here."""
    import numpy as np

    if isinstance(col, Coded) and not isinstance(col.values, Coded):
        return np.asarray(col.code_view(), dtype=np.int64), col.values
    index: dict[Any, int] = {}
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in col), dtype=np.int64, count=len(col)
    )
    return codes, list(index)


suite = GoldenSuite()
