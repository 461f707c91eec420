"""The ``bloodpanel`` suite adapter: the pure core wired into the Suite protocol (sealed).

Items are the curated 15 (``data/bloodpanel/curated.yaml``, optionally the first ``limit``),
``synthetic_n`` generated cases (seed derived from the suite seed, hence from the rubric hash)
and, with ``source: {kind: sql, ...}``, the cases a frozen query returns. Each item is
``Case.to_record()`` plus ``id`` (= the opaque ``case_uid``, also the raw rows' item id),
``cohort`` (curated / synthetic / sql) and a per-case ``seed``. Every rendered prompt passes
``prompts.leak_check`` before an item exists.

Which cohort an engine answers comes from config (``cohorts: {local: curated, reference:
all}``; an engine not named answers all). Requests: case × ``repeats``, condition ``report``;
what each engine gets follows its declared capabilities (``engines.capabilities``), never its
kind's name. Chat engines that honour a JSON Schema (``json_schema``) get ``response_format``
(the report's schema) so even a tiny model's answer parses, and one with ``bounded_output`` (the
embedded model) the length-bounded variant, so its answer also closes within ``max_tokens``;
engines without ``chat`` (the reference ceiling, a PDF upload service) take no chat parameters;
engines with ``input_pdf`` also get the case as a laboratory-report PDF (``pdf``, in
``Request.attachments``, rendered for them only). The attachment is not part of the request key
(it is a deterministic function of the item), so keys do not depend on it.

Grading (``grade_row``): each latest raw row is graded under both profiles, ``sealed`` and
``kantesti-v11``; the graded row names grader and version and carries the composite and its
components as extra columns. An errored request is graded ``status=error`` (composite 0,
category ``error``) and counted, never dropped. An answer that is not one JSON object is a
model failure, not an error: it is read as free text (structure 0, keywords and flags still
read), category ``unparsed``. ``passed`` means completed with no trap flag fired.

Analysis: ``plan`` (sealed) per engine and profile, plus the typed ``metrics`` every suite emits
(``stats.metrics``). Presentation (report section, figures, scorecards) is the unsealed
``present`` package, imported by the hooks on first use.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.engines.base import Attachment, Request, capabilities
from sealedeval.errors import UserError
from sealedeval.keys import derive_seed, keyed_request
from sealedeval.plugins import (
    AnalyzeContext,
    GenerateContext,
    GradeContext,
    RegradeContext,
    RequestContext,
    ScorecardContext,
)
from sealedeval.seal.design import added_engines, to_exploratory
from sealedeval.stages.grade import graded_row
from sealedeval.stats.comparisons import adjust_families
from sealedeval.stats.metrics import Metric, sort_metrics
from sealedeval.suites.bloodpanel import battery, pdf, plan, prompts
from sealedeval.suites.bloodpanel.cases import Case, load_curated
from sealedeval.suites.bloodpanel.reference import reference_report
from sealedeval.suites.bloodpanel.rubric import (
    GRADER_VERSION,
    PROFILES,
    REGRADE_PROFILES,
    CaseScore,
    Profile,
    default_curated_path,
    grade_case,
    load_key,
    regrade_kantesti,
)
from sealedeval.suites.bloodpanel.sql import SqlSource, load_sql_cases
from sealedeval.suites.bloodpanel.synthetic import synthetic_cases

if TYPE_CHECKING:
    from sealedeval.render.figures import FigureSpec

CURATED: Final = Path("data/bloodpanel/curated.yaml")
CONDITION: Final = "report"
COHORTS: Final = ("curated", "synthetic", "sql")
SYNTHETIC_ID: Final = re.compile(r"S(\d+)-\d+-")
"""A synthetic case id (``synthetic.synthetic_cases``) names the cohort's generator seed."""

EXTRA_COLUMNS: Final = (
    "profile",
    "case_id",
    "case_uid",
    "label",
    "specialty",
    "cohort",
    "is_trap",
    "composite",
    "structural",
    "clinical",
    "latency",
    "latency_s",
    "sections_hit",
    "subsections_hit",
    "keywords_hit",
    "keywords_total",
    "scoring_hit",
    "scoring_total",
    "prob_sum",
    "prob_valid",
    "trap_flags_hit",
    "trap_penalty",
    "engine_path",
    "parsed",
    "error_kind",
)
"""Suite-specific columns of every graded row (after the shared GRADED_SCHEMA ones)."""


def grader(profile: str) -> str:
    return f"bloodpanel/{profile}"


def unstructured(text: str) -> dict[str, Any]:
    """A free-text answer in the V11 shape: one unnamed section holding the text as one item.

    Structure scores 0 (no required shortcode is present); keywords, scoring systems and trap
    flags are still read from the text, under either profile's own rule.
    """
    return {
        "sections": [
            {
                "title": "",
                "shortcode": "unstructured",
                "subsections": [{"subtitle": "", "shortcode": "unstructured", "items": [text]}],
            }
        ]
    }


def grade_row(
    case: Case, item: Mapping[str, Any], row: Mapping[str, Any], profile: Profile
) -> dict[str, Any]:
    """One graded row for one raw row under one profile (see the module docstring)."""
    status = str(row["status"])
    parsed = False
    if status != "ok":
        score: CaseScore = grade_case(
            case, {"error": str(row.get("error_kind") or "error")}, None, profile
        )
        category = "error"
    else:
        text = str(row.get("output_text") or "")
        obj = prompts.parse_report(text)
        parsed = obj is not None and not obj.get("error")
        response = obj if parsed and obj is not None else unstructured(text)
        score = grade_case(case, response, float(row["latency_s"]), profile)
        if not parsed:
            category = "unparsed"
        elif score.trap_flags_hit:
            category = "overdiagnosis"
        else:
            category = "graded"
    ok = status == "ok"
    return graded_row(
        row,
        status=status,
        grader=grader(profile),
        grader_version=GRADER_VERSION[profile],
        score=score.composite,
        passed=ok and not score.trap_flags_hit,
        category=category,
        details=compact(dict(score.details)),
        profile=profile,
        case_id=case.case_id,
        case_uid=case.case_uid,
        label=case.label,
        specialty=case.specialty,
        cohort=str(item.get("cohort", "")),
        is_trap=case.is_trap,
        composite=score.composite,
        structural=score.structural,
        clinical=score.clinical,
        latency=score.latency,
        latency_s=float(row["latency_s"] or 0.0),
        sections_hit=score.sections_hit,
        subsections_hit=score.subsections_hit,
        keywords_hit=score.keywords_hit,
        keywords_total=score.keywords_total,
        scoring_hit=score.scoring_hit,
        scoring_total=score.scoring_total,
        prob_sum=score.prob_sum,
        prob_valid=score.prob_valid,
        trap_flags_hit=";".join(score.trap_flags_hit),
        trap_penalty=score.trap_penalty,
        engine_path=str(row.get("engine_path") or "") if ok else "",
        parsed=parsed,
        error_kind="" if ok else str(row.get("error_kind") or "unknown"),
    )


def cohort_of(scfg: Mapping[str, Any], engine: str) -> str:
    """The cohort an engine answers: ``cohorts[engine]``, else ``all``."""
    return str((scfg.get("cohorts") or {}).get(engine, "all"))


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\x1f")
    return h.hexdigest()


class BloodpanelSuite:
    """Blood-test interpretation (spec: bloodpanel.md)."""

    name = "bloodpanel"

    def __init__(self) -> None:
        # One-entry caches: `publish` generates items twice (build + seal counts) and grades
        # twice (result.json + scorecards); at 100k cases each pass costs seconds.
        self._items_key: tuple[Any, ...] | None = None
        self._items: list[dict[str, Any]] = []
        self._source: dict[str, Any] = {}
        self._cases: dict[str, tuple[str, Case]] = {}
        self._graded_key: str | None = None
        self._graded: list[dict[str, Any]] = []

    def rubric_inputs(self) -> list[str]:
        mods = (
            "__init__",
            "suite",
            "rubric",
            "matching",
            "vocabulary",
            "layout",
            "analytes",
            "cases",
            "synthetic",
            "sql",
            "prompts",
            "calculators",
            "plan",
            "pdf",
            "cues",
            "battery",
            "locales",
        )
        # Not sealed: the reference interpreter (``reference/``) is an engine's answerer, the
        # ceiling, not the rubric (editing it must not re-seed every synthetic case), and
        # ``present/`` (report section, figures, scorecards) is presentation.
        return [
            "data/bloodpanel/curated.yaml",
            "data/bloodpanel/SEALED_RULE.md",
            # The detector's measurement (every analysis reports it) is of the sealed battery.
            "data/bloodpanel/assertion_battery.yaml",
            # ... and of the held-out battery written blind (reported beside it, never tuned on).
            "data/bloodpanel/assertion_holdout.yaml",
            "data/bloodpanel/assertion_rules.md",
            *(f"pkg:sealedeval/suites/bloodpanel/{m}.py" for m in mods),
            "pkg:sealedeval/graders/jsonparse.py",  # the shared JSON reader parse_report uses
        ]

    # -- items ---------------------------------------------------------------------------------
    def _load(self, cfg: Config, seed: int) -> tuple[list[tuple[str, Case]], dict[str, Any]]:
        scfg = cfg.suite(self.name)
        out: list[tuple[str, Case]] = []
        source: dict[str, Any] = {"kind": "builtin"}
        if scfg.get("curated", True):
            curated = load_curated(cfg.root / CURATED)
            limit = scfg.get("limit")
            out += [("curated", c) for c in curated[: int(limit) if limit else None]]
            source["curated"] = len(out)
        n = int(scfg.get("synthetic_n", 0))
        if n:
            syn_seed = derive_seed(seed, "synthetic") % (2**63)
            out += [("synthetic", c) for c in synthetic_cases(n, syn_seed)]
            source["synthetic_n"] = n
            source["synthetic_seed"] = syn_seed
        src = scfg.get("source") or {}
        if src.get("kind") == "sql":
            where = f"{cfg.where}: suites.{self.name}.source"
            cases, meta = load_sql_cases(SqlSource.from_config(src, where), where)
            out += [("sql", c) for c in cases]
            source |= {"kind": "sql", "sql": meta}
        return out, source

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        cfg, seed = ctx.cfg, ctx.seed
        key = (str(cfg.root), cfg.sha256(), seed)
        if key == self._items_key:
            return self._items
        loaded, source = self._load(cfg, seed)
        items: list[dict[str, Any]] = []
        cases: dict[str, tuple[str, Case]] = {}
        sql_meta = source.get("sql") or {}
        for cohort, case in loaded:
            if case.case_uid in cases:
                raise UserError(
                    f"bloodpanel: case_uid {case.case_uid} occurs twice "
                    f"({cases[case.case_uid][1].case_id}, {case.case_id})"
                )
            try:
                prompts.leak_check(case, prompts.messages(case))
            except ValueError as e:
                raise UserError(str(e)) from None
            rec = case.to_record() | {
                "id": case.case_uid,
                "cohort": cohort,
                "seed": derive_seed(seed, case.case_uid),
            }
            if cohort == "sql":
                rec["source_query"] = sql_meta["query"]
                rec["source_query_sha256"] = sql_meta["query_sha256"]
                rec["source_dialect"] = sql_meta["dialect"]
            cases[case.case_uid] = (rec["panel_json"], case)
            items.append(rec)
        if not items:
            raise UserError(f"{cfg.where}: suites.{self.name}: no cases (curated off, none else)")
        self._items_key, self._items, self._cases, self._source = key, items, cases, source
        return items

    def case(self, item: Mapping[str, Any]) -> Case:
        """The Case of an item record (cached from ``generate``, else rebuilt)."""
        hit = self._cases.get(str(item.get("id", "")))
        if hit is not None and hit[0] == item.get("panel_json"):
            return hit[1]
        return Case.from_record(item)

    def source(self) -> dict[str, Any]:
        """What the last ``generate`` loaded (recorded in the analysis; no credentials)."""
        return dict(self._source)

    # -- requests ------------------------------------------------------------------------------
    def requests(self, ctx: RequestContext) -> list[Request]:
        cfg, items, engine, model = ctx.cfg, ctx.items, ctx.engine, ctx.model
        scfg = cfg.suite(self.name)
        cohort = cohort_of(scfg, engine.name)
        repeats = int(scfg.get("repeats", 1))
        temperature = float(scfg.get("temperature", 0.0))
        max_tokens = int(scfg.get("max_tokens", 1024))
        caps = capabilities(engine)
        schema = caps.chat and caps.json_schema  # (constrained decoding honours the schema)
        fmt = prompts.response_format(bounded=caps.bounded_output)
        out: list[Request] = []
        for item in items:
            if cohort != "all" and item.get("cohort") != cohort:
                continue
            msgs = prompts.messages(self.case(item))
            # Rendered once per case (repeats share it), and only for engines that take it.
            files: tuple[Attachment, ...] = (pdf.attachment(item),) if caps.input_pdf else ()
            for rep in range(repeats):
                s = derive_seed(item["seed"], CONDITION, rep) % (2**31)
                params: dict[str, Any] = {
                    "temperature": temperature,
                    "max_tokens": max_tokens,
                    "seed": s,
                }
                if schema:
                    params["response_format"] = fmt
                req = keyed_request(
                    self.name,
                    str(item["id"]),
                    CONDITION,
                    rep,
                    s,
                    engine.name,
                    model,
                    params,
                    msgs,
                    item=item,
                )
                if files:  # not in the key (see the module docstring): only the object changes
                    req = replace(req, attachments=files)
                out.append(req)
        return out

    def reference_answer(self, request: Request) -> str:
        return json.dumps(reference_report(self.case(request.item)), ensure_ascii=False)

    # -- grading -------------------------------------------------------------------------------
    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        items, rows = ctx.items, ctx.rows
        items_key = (
            repr(self._items_key)
            if items is self._items
            else _digest(*(compact(dict(i)) for i in items))
        )
        key = _digest(
            items_key,
            *(f"{r['request_key']}\t{r['status']}\t{r['finished_at']}" for r in rows),
        )
        if key == self._graded_key:
            return [dict(g) for g in self._graded]
        by_id = {str(i["id"]): i for i in items}
        out: list[dict[str, Any]] = []
        for r in rows:
            item = by_id.get(str(r["item_id"]))
            if item is None:
                raise UserError(
                    f"results/raw/{self.name}/{r['engine']}: item {r['item_id']} is not among "
                    "the generated cases (did synthetic_n, limit or the source change?)"
                )
            case = self.case(item)
            for profile in PROFILES:
                out.append(grade_row(case, item, r, profile))
        self._graded_key, self._graded = key, out
        return [dict(g) for g in out]

    # -- analysis ------------------------------------------------------------------------------
    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        cfg, items, graded, rows = ctx.cfg, ctx.items, ctx.graded, ctx.rows
        scfg = cfg.suite(self.name)
        primary = str(scfg.get("profile") or plan.PRIMARY_PROFILE)
        n_boot = int(scfg.get("n_boot") or plan.N_BOOT)
        review_n = int(scfg.get("review_n", plan.REVIEW_N))
        review_seed = int(scfg.get("review_seed", plan.REVIEW_SEED))
        repeats = int(scfg.get("repeats", 1))
        model = {r["engine"]: r["model"] for r in rows}
        by_engine: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for g in graded:
            by_engine[str(g["engine"])][str(g["profile"])].append(g)
        ids = {str(i["id"]): str(i["case_id"]) for i in items}
        engines: dict[str, Any] = {}
        means: dict[str, dict[str, float]] = {}
        scores: dict[str, dict[str, list[float]]] = {}
        metrics: list[Metric] = []
        for eng in sorted(by_engine):
            prof_rows = by_engine[eng]
            prow = prof_rows[primary]
            n_runs = max((int(g["repeat"]) + 1 for g in prow), default=0)
            entry: dict[str, Any] = {
                "model": model.get(eng, ""),
                "cohort": cohort_of(scfg, eng),
                "profiles": {},
            }
            for prof in PROFILES:
                prows = prof_rows[prof]
                entry["profiles"][prof] = {
                    "grader": grader(prof),
                    "grader_version": GRADER_VERSION[prof],
                    "headline": plan.headline(
                        prows, n_boot=n_boot, seed=plan.boot_seed(eng, prof, "headline")
                    ),
                }
            pp = entry["profiles"][primary]
            pp["by_specialty"] = plan.by_group(
                prow, "specialty", n_boot=n_boot, seed=plan.boot_seed(eng, primary, "specialty")
            )
            pp["by_label"] = plan.by_group(
                prow, "label", n_boot=n_boot, seed=plan.boot_seed(eng, primary, "label")
            )
            pp["by_cohort"] = plan.by_group(
                prow, "cohort", n_boot=n_boot, seed=plan.boot_seed(eng, primary, "cohort")
            )
            for prof in PROFILES:
                metrics += plan.metrics(
                    eng,
                    prof,
                    prof_rows[prof],
                    entry["profiles"][prof]["headline"],
                    pp["by_specialty"] if prof == primary else None,
                )
            if n_runs > 1:
                entry["repeats"] = plan.repeats_table(prow, n_runs)
            population = {str(g["case_id"]): str(g["specialty"]) for g in prow}
            entry["review_sample"] = plan.review_sample(population, review_n, review_seed)
            engines[eng] = entry
            means[eng] = plan.case_means(prow)
            scores[eng] = plan.case_scores(prow)
        names = sorted(engines)
        pairs: list[tuple[str, str]]
        if scfg.get("compare"):
            a, b = scfg["compare"]
            pairs = [(str(a), str(b))] if a in engines and b in engines else []
        else:
            pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        comparisons = [plan.compare(a, b, means, ids, scores, n_boot=n_boot) for a, b in pairs]
        late = added_engines(cfg, self.name, names)
        to_exploratory(c["paired"] for c in comparisons if {c["a"], c["b"]} & late)
        adjust_families([c["paired"] for c in comparisons])
        # The over-diagnosis detector measured on the sealed development and held-out
        # batteries, beside the trap figure.
        detector = battery.detector_section(cfg.root)
        metrics += battery.metrics(detector)
        cohorts: dict[str, int] = defaultdict(int)
        for i in items:
            cohorts[str(i.get("cohort", ""))] += 1
        return {
            "suite": self.name,
            "n_items": len(items),
            "cohorts": dict(sorted(cohorts.items())),
            "source": self._source_for(cfg, items),
            "design": {
                "condition": CONDITION,
                "repeats": repeats,
                "temperature": float(scfg.get("temperature", 0.0)),
                "max_tokens": int(scfg.get("max_tokens", 1024)),
                "cohorts": {e: cohort_of(scfg, e) for e in scfg.get("engines", [])},
                "n_boot": n_boot,
            },
            "profile": primary,
            "profiles": list(PROFILES),
            "engines": engines,
            "comparisons": comparisons,
            "comparison_plan": plan.COMPARISON_PLAN.describe(),
            "review": {"n": review_n, "seed": review_seed},
            "hypotheses": list(plan.HYPOTHESES),
            "methods": plan.METHODS,
            "detector": detector,
            "metrics": sort_metrics(metrics),
        }

    def _source_for(self, cfg: Config, items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """What ``generate`` recorded as the items' source, derived from the config and the
        items alone: the stages read items back from the items file (a process that never
        generated them), and the audit re-derives the analysis from them, so the description
        must not depend on this process's cache. Equal to ``source()`` after ``generate`` (a
        test holds the two together); no credentials, no second query."""
        scfg = cfg.suite(self.name)
        by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for i in items:
            by[str(i.get("cohort", ""))].append(i)
        source: dict[str, Any] = {"kind": "builtin"}
        if scfg.get("curated", True):
            source["curated"] = len(by["curated"])
        n = int(scfg.get("synthetic_n", 0))
        if n:
            source["synthetic_n"] = n
            ids = [SYNTHETIC_ID.match(str(i["case_id"])) for i in by["synthetic"][:1]]
            if ids and ids[0] is not None:
                source["synthetic_seed"] = int(ids[0].group(1))
        src = scfg.get("source") or {}
        sql = by["sql"]
        if src.get("kind") == "sql" and sql:
            # The rows' digest is load_sql_cases's: the case records in case_uid order.
            fields = self.case(sql[0]).to_record().keys()
            records = [{k: i[k] for k in fields} for i in sql]
            first = sql[0]
            source |= {
                "kind": "sql",
                "sql": {
                    "kind": "sql",
                    "url_env": str(src.get("url_env") or ""),
                    "dialect": str(first.get("source_dialect", "")),
                    "query": str(first["source_query"]),
                    "query_sha256": str(first["source_query_sha256"]),
                    "rows": len(sql),
                    "rows_sha256": hashlib.sha256(compact(records).encode()).hexdigest(),
                },
            }
        return source

    # -- presentation (unsealed ``present``, imported on first use) ----------------------------
    def report_sections(self, section: Mapping[str, Any]) -> str:
        """This suite's part of report.md, from its result.json section."""
        from sealedeval.suites.bloodpanel.present import report

        return report.render(section)

    def figures(self, section: Mapping[str, Any]) -> list[FigureSpec]:
        """Named, captioned figure specs from the result.json section (nothing drawn here)."""
        from sealedeval.suites.bloodpanel.present import figures

        return figures.figure_specs(section)

    def summary(self, section: Mapping[str, Any]) -> dict[str, Any]:
        """The headline and pre-registered comparisons of the report's summary page."""
        from sealedeval.suites.bloodpanel.present import summary

        return summary.summary(section)

    def scorecards(self, ctx: ScorecardContext) -> dict[str, str]:
        """``{"bloodpanel-ENGINE.csv": text}``: one row per graded answer under the headline
        profile, for every engine graded, counted in the seal or configured."""
        from sealedeval.suites.bloodpanel.present import scorecard

        return scorecard.scorecards(ctx.graded, ctx.section)

    # -- regrade -------------------------------------------------------------------------------
    def regrade(self, ctx: RegradeContext) -> dict[str, Any]:
        """Grade responses produced elsewhere (no engine call); ``fmt`` names the file format.

        ``kantesti``: a published Kantesti run file, V11 or second update (100k): ``{engine,
        suite, version, cases: [{summary, response}]}``; latency from each
        ``summary.elapsed_sec``. ``ctx.key``: an answer key (``rubric.load_key``) for runs whose
        cases are not the curated 15; ``ctx.partial``: grade the known ids, list the unknown ones
        (without it, unknown ids are an error, all named at once). Profiles: ``sealed``,
        ``kantesti-v11`` and ``kantesti-su`` (the second update's own scorer).

        Raises:
            UserError: Unknown format or profile, unreadable or malformed file or key,
                duplicate or (without ``partial``) unknown case ids.
        """
        root, profile, fmt, path = ctx.root, ctx.profile, ctx.fmt, ctx.path
        key, partial = ctx.key, ctx.partial
        if fmt != "kantesti":
            raise UserError(f"regrade {self.name}: unknown format {fmt!r} (known: kantesti)")
        if profile not in REGRADE_PROFILES:
            raise UserError(
                f"regrade {self.name}: unknown profile {profile!r} "
                f"(known: {', '.join(REGRADE_PROFILES)})"
            )
        answer_key = load_key(key) if key is not None else None
        path_cases = root / CURATED if (root / CURATED).is_file() else default_curated_path()
        curated = load_curated(path_cases)
        try:
            return regrade_kantesti(path, profile, curated, key=answer_key, partial=partial)
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: cannot read ({type(e).__name__}: {e})") from None
        except (AttributeError, TypeError, ValueError) as e:
            raise UserError(f"{path}: not a kantesti run file ({type(e).__name__}: {e})") from None


suite = BloodpanelSuite()
