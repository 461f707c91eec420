"""``TasksSuite``: a suite defined by a config section and a data file (``kind: tasks``).

What is sealed (``rubric_inputs``): the items file, the prompt and system files, the ``files``
directory, every file a grader reads (a labels file, a schema or rubric file), this package's
sources and the grader kinds' modules it uses (with abstention and the agent's module when they
decide verdicts), and the pre-registered part of the config section: prompt and system text,
graders with their parameters, solver, abstention, ``cluster_by`` and the ``analysis`` block
(``spec.SEALED_KEYS``). The config itself is not sealed (profiles change engines and repeats
without re-sealing), so that part is written, deterministically, to
``.sealedeval/tasks-<name>.json`` whenever the suite's inputs are listed — by ``seal``, and
again by every ``generate``, ``run`` and ``audit`` before the lock is checked. Editing the
prompt or the analysis block after the seal therefore rewrites that file, and the lock check
names it: ``.sealedeval/tasks-<name>.json changed after the seal``. Commit the file with the
lock: it is the readable pre-registration of the suite.

Everything the data can get wrong is checked before the file is written (``data.load``), so a
bad items file stops ``seal`` with one line and nothing written.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sealedeval.canonical import dumps
from sealedeval.engines.base import Request
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.graders.kinds import alternatives, text_of
from sealedeval.keys import derive_seed
from sealedeval.plugins import (
    AnalyzeContext,
    FollowupContext,
    GenerateContext,
    GradeContext,
    RequestContext,
)
from sealedeval.seal.design import sealed_pairs
from sealedeval.stages.chunked import whole_rows
from sealedeval.store.raw import latest_records, raw_files
from sealedeval.suites.tasks import analysis, data, grading, plan
from sealedeval.suites.tasks import solvers as _solvers  # noqa: F401  (registers self_consistency)
from sealedeval.suites.tasks.plan import SEED_KEY
from sealedeval.suites.tasks.spec import Spec, parse

SPEC_DIR = ".sealedeval"
SOURCES = (
    "pkg:sealedeval/suites/tasks/*.py",
    "pkg:sealedeval/suites/tasks/config.schema.yaml",
    "pkg:sealedeval/graders/base.py",
    "pkg:sealedeval/graders/kinds/__init__.py",
)


def spec_relpath(name: str) -> str:
    return f"{SPEC_DIR}/tasks-{name}.json"


def module_source(module: str) -> str:
    """``pkg:`` name of a module's source file (as the lock resolves it)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise UserError(f"grader module {module!r} is not importable; cannot seal it")
    top = importlib.util.find_spec(module.split(".")[0])
    if top is None or not top.submodule_search_locations:
        return f"pkg:{Path(spec.origin).name}"
    base = Path(next(iter(top.submodule_search_locations))).resolve().parent
    return "pkg:" + Path(spec.origin).resolve().relative_to(base).as_posix()


class TasksSuite:
    """A suite from config + data. ``root`` is the project root (the config's); without it,
    the current directory (where ``sealedeval`` and Snakemake run)."""

    def __init__(self, name: str, section: Mapping[str, Any], root: Path | str | None = None):
        self.name = name
        self.spec: Spec = parse(name, section)
        self.root = Path(root).resolve() if root is not None else Path.cwd().resolve()

    def _data(self, root: Path | None = None) -> data.Data:
        return data.load(self.spec, (root or self.root).resolve())

    # -- the seal ---------------------------------------------------------------------------
    def sealed_document(self) -> str:
        """The text of ``.sealedeval/tasks-<name>.json`` (canonical JSON of ``Spec.sealed``)."""
        return dumps(self.spec.sealed())

    def write_spec(self, root: Path | None = None) -> Path:
        path = (root or self.root) / spec_relpath(self.name)
        text = self.sealed_document()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
        return path

    def rubric_inputs(self) -> list[str]:
        self._data()  # every data error first: nothing is written for a bad input
        self.write_spec()
        spec = self.spec
        out = [spec_relpath(self.name), spec.items]
        for k in ("prompt_file", "system_file"):
            if spec.get(k):
                out.append(str(spec.get(k)))
        if spec.files:
            out.append(f"{spec.files.rstrip('/')}/**/*")
        out += list(SOURCES)
        for g in spec.graders:
            out += g.kind.files(g.params)
            out.append(module_source(g.kind.module))
            out += list(g.kind.sources)
        if spec.abstention == "category":
            out.append("pkg:sealedeval/graders/abstention.py")
        if spec.solver in ("agent", "self_consistency"):
            out.append("pkg:sealedeval/run/agent.py")
        return list(dict.fromkeys(out))

    def design_comparisons(self, section: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The engine pairs the sealed design holds: ``analysis.comparisons`` as the spec reads
        it (``all`` = every pair of the profile's answering engines)."""
        return list(parse(self.name, section).comparisons)

    # -- items and requests -----------------------------------------------------------------
    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        cfg, seed = ctx.cfg, ctx.seed
        d = self._data(cfg.root)
        limit = self.spec.get("limit")
        items = d.items[: int(limit)] if limit else d.items
        return [dict(i) | {SEED_KEY: derive_seed(seed, i["id"])} for i in items]

    def requests(self, ctx: RequestContext) -> list[Request]:
        return list(self.iter_requests(ctx))

    def iter_requests(self, ctx: RequestContext) -> Iterator[Request]:
        """``requests`` one at a time (the analysis reads only the planned keys)."""
        cfg, items, engine, model, seed = ctx.cfg, ctx.items, ctx.engine, ctx.model, ctx.seed
        d = self._data(cfg.root)
        yield from plan.answer_requests(d, items, engine, model)
        yield from plan.calibration_requests(d, engine, model, seed)

    def followup_requests(self, ctx: FollowupContext) -> list[Request]:
        """Phase 2: a judge engine grades the stored answers of every answering engine (read
        from the suite's raw store, not only this engine's ``rows``)."""
        cfg, items, engine, model, seed = ctx.cfg, ctx.items, ctx.engine, ctx.model, ctx.seed
        if engine.name not in self.spec.judge_engines():
            return []

        everything = latest_records(raw_files(cfg.root, self.name))
        return plan.judge_requests(self._data(cfg.root), items, engine, model, seed, everything)

    def run_after(self, engine: str) -> list[str]:
        """The engines whose answers ``engine`` judges: its run should follow theirs."""
        if engine not in self.spec.judge_engines():
            return []
        return [e for e in self.spec.answering if e != engine]

    def reference_answer(self, request: Request) -> str:
        """The ceiling: the item's target (the first alternative of a list target, unless the
        primary grader reads JSON); a judge call's verdict (the human label, or whether the
        answer contains the target); wrapped in the request's JSON contract when it has one."""
        rf = request.params.get("response_format") or {}
        props = ((rf.get("json_schema") or {}).get("schema") or {}).get("properties") or {}
        if request.condition.startswith(plan.JUDGE):
            reply = str(request.item.get("reference_reply", "PASS"))
            return json.dumps({"verdict": reply}) if "verdict" in props else reply
        target = request.item.get(self.spec.target_column)
        if target is None:
            text = ""
        elif self.spec.grader(self.spec.primary).name == "json_schema":
            text = text_of(target)
        else:
            text = text_of(alternatives(target)[0])
        if "action" in props:
            return json.dumps({"action": "answer", "argument": text})
        return text

    # -- grading and analysis ---------------------------------------------------------------
    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        return list(self.iter_grade(ctx))

    def iter_grade(self, ctx: GradeContext) -> Iterator[dict[str, Any]]:
        """``grade``'s rows one at a time (what the grade stage uses)."""
        found = None if ctx.shared is None else ctx.shared.get("judge_replies", {})
        return grading.iter_rows(self._data(ctx.cfg.root), ctx.items, ctx.rows, found)

    def grade_columns(self) -> tuple[str, ...]:
        """The raw columns grading reads (the grade stage carries them with each chunk)."""
        return grading.GRADE_COLUMNS

    def grade_scan(self, ctx: GradeContext) -> dict[str, Mapping[Any, Any]]:
        """What grading an answer reads of other rows: the judges' replies on it."""
        return {"judge_replies": grading.judge_reply_list(ctx.rows)}

    def analyze_columns(self) -> tuple[str, ...]:
        """The raw columns the analysis reads of every row (``analysis._Engine``)."""
        return analysis.ANALYZE_COLUMNS

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        cfg, items = ctx.cfg, ctx.items
        d = self._data(cfg.root)
        labels = None
        if self.spec.human_audit is not None:
            subset = set(plan.audit_items(items, self.spec.human_audit.n))
            labels = data.load_audit_labels(self.spec, cfg.root, d.where, subset)
        # The rows a stretch at a time: past a chunk's rows the stage gives key-prefix
        # buckets (``stages.chunked``); rows held whole are one stretch per engine.
        src = ctx.chunks if ctx.chunks is not None else whole_rows(ctx.rows, ctx.graded)
        return analysis.analyze(
            d, items, src, sealed=sealed_pairs(cfg, self.name), audit_labels=labels
        )

    # -- presentation (not sealed: present/ is outside the sealed *.py glob) ----------------
    def report_sections(self, section: Mapping[str, Any]) -> str:
        from sealedeval.suites.tasks.present import report

        return report.render(self.name, section)
