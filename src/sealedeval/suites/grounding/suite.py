"""``GroundingSuite``: the grounding suite behind the harness's Suite protocol.

generate → the item records (the 40 track-A items, the B1 probes, B2 questions, B3 requesters,
B4 chains, each with its reference answer in grader-side fields that are never rendered) plus
one ``design`` record (profile, call-order seed, call counts); every prompt of the configured
design is leak-checked first. requests → the design's calls for one engine, in the seeded
whole-run order (see :mod:`.requests`). reference_answer → the deterministic answerer of the
``reference`` engine kind (``variant`` ``reference`` or ``naive``). grade → :mod:`.rubric`.
analyze → :mod:`.analysis`, per engine and model role, with every number also in the typed
metric schema (``metrics``). report_sections and figures → :mod:`.present` (not sealed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from sealedeval.config import Config
from sealedeval.engines.base import Request
from sealedeval.errors import UserError
from sealedeval.keys import derive_seed
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext, RequestContext
from sealedeval.suites.grounding import analysis, rubric
from sealedeval.suites.grounding.bundle import GroundingData, build_suite, leak_check_calls
from sealedeval.suites.grounding.design import PROFILES, Design, Profile, build_design
from sealedeval.suites.grounding.reference import answer_call, as_output_text
from sealedeval.suites.grounding.requests import VARIANTS, build_requests, call_specs
from sealedeval.suites.grounding.tracks import b3_disclosure, b4_chains

if TYPE_CHECKING:
    from sealedeval.render.figures import FigureSpec

__all__ = [
    "DESIGN_RECORD",
    "GroundingSuite",
    "design_for",
    "engine_designs",
    "item_records",
    "profile_for",
]

DESIGN_RECORD = "design"
"""Id of the item record that carries the design (profile, call-order seed, counts)."""


_ORDER_NOTES = {
    "embedded": "seeded shuffle within prompt-cache blocks (calls sharing a context block run "
    "together; blocks in a fixed order: no-tables prompts first, then B2, track A by condition "
    "A, B, E, C, F, D, B1, B4), so the embedded server's prompt cache reuses the data tables "
    "and each context block (design.py, _embedded_blocks)",
}
"""How a cache-ordered profile's calls are ordered (recorded in the analysis' design)."""


def profile_for(cfg: Config, engine: str | None = None) -> str:
    """The design profile of ``engine``: ``engine_profiles[engine]`` if set (the embedded
    model runs a documented subset where the whole default design would not fit the time
    budget), else the suite's ``profile``."""
    scfg = cfg.suite("grounding")
    per_engine = scfg.get("engine_profiles") or {}
    profile = str(per_engine.get(engine, scfg.get("profile", "default")))
    if profile not in PROFILES:
        where = f"engine_profiles.{engine}" if engine in per_engine else "profile"
        raise UserError(
            f"{cfg.where}: suites.grounding.{where}: unknown profile {profile!r} "
            f"(known: {', '.join(PROFILES)})"
        )
    return profile


def design_for(cfg: Config, seed: int, engine: str | None = None) -> Design:
    """The configured design of ``engine`` (default: the suite's profile); the call order comes
    from ``shuffle_seed`` or, if unset, from the suite seed (config seed + rubric hash), so it
    is fixed by the seal and recorded."""
    profile = profile_for(cfg, engine)
    shuffle = cfg.suite("grounding").get("shuffle_seed")
    order_seed = int(shuffle) if shuffle is not None else derive_seed(seed, "call-order") % 2**32
    return build_design(cast(Profile, profile), order_seed)


def engine_designs(cfg: Config, seed: int) -> dict[str, Design]:
    """The design of every engine whose profile differs from the suite's (by engine name)."""
    scfg = cfg.suite("grounding")
    per_engine = scfg.get("engine_profiles") or {}
    return {
        eng: design_for(cfg, seed, eng)
        for eng in sorted(per_engine)
        if eng in scfg.get("engines", []) and profile_for(cfg, eng) != profile_for(cfg)
    }


def _roles(cfg: Config, engine: str) -> list[str]:
    roles = cfg.suite("grounding").get("roles") or {}
    return list(roles.get(engine, ["primary"]))


def _track_a_record(data: GroundingData, item_id: str) -> dict[str, Any]:
    it = data.item(item_id)
    return {
        "id": it.item_id,
        "track": "A",
        "family": it.family,
        "role": it.role,
        "boundary": it.boundary,
        "answerable": it.answerable,
        "concept": it.concept,
        "audience": it.audience,
        "counterparty": it.counterparty,
        "contract_id": it.contract_id,
        "question": it.question,
        "reference_value": it.reference_value,
        "competing_value": it.competing_value,
        "in_force": it.in_force.label() if it.in_force else None,
        "competing": it.competing.label() if it.competing else None,
        "abstain_reason": it.abstain_reason,
    }


def item_records(data: GroundingData) -> list[dict[str, Any]]:
    out = [_track_a_record(data, it.item_id) for it in data.items]
    for p in data.b1_probes:
        out.append(
            {
                "id": p.probe_id,
                "track": "B1",
                "kind": p.kind or "control",
                "question": p.question,
                "missing_field": p.missing_field,
                "owner_roles": list(p.owner_roles),
                "reference_value": p.reference_value,
            }
        )
    for q in data.b2_questions:
        out.append(
            {
                "id": q.question_id,
                "track": "B2",
                "question": q.question,
                "required": sorted(r.label() for r in q.required),
                "reference_value": q.reference_value,
            }
        )
    for requester in b3_disclosure.REQUESTERS:
        out.append(
            {
                "id": requester,
                "track": "B3",
                "requester": b3_disclosure.REQUESTERS[requester],
                "release": [
                    f.fact_id
                    for f in b3_disclosure.FACTS
                    if b3_disclosure.expected_release(f, requester)
                ],
                "critical_if_released": [
                    f.fact_id
                    for f in b3_disclosure.FACTS
                    if b3_disclosure.is_critical(f, requester)
                ],
            }
        )
    for c in data.chains:
        new = b4_chains.completed_definition(data.catalog, c)
        out.append(
            {
                "id": c.chain_id,
                "track": "B4",
                "scenario_id": c.scenario_id,
                "ownership": c.ownership,
                "question": c.question,
                "owner": c.owner,
                "decoy_owner": c.decoy_owner,
                "field": c.field,
                "new_value": c.new_value_text,
                "effective_from": c.effective_from.isoformat(),
                "new_record": new.ref.label(),
                "reference_value": c.reference_value,
            }
        )
    return out


class GroundingSuite:
    """Semantic Grounding Benchmark v2: track A (six conditions) and tracks B1-B4."""

    name = "grounding"

    def rubric_inputs(self) -> list[str]:
        """Everything that decides what is asked, what counts as right and how it is analysed:
        the spec and decisions, the generator (corpus, catalog, items, conditions, tracks), the
        answer contract, the reference answerers, the design, the rubric, the analysis plan
        and its implementation, and the multi-call solvers. Not the presentation
        (``present/``: the report section and figures)."""
        pkg = "pkg:sealedeval/suites/grounding"
        return [
            "data/grounding/spec.md",
            "data/grounding/README.md",
            "pkg:sealedeval/graders/jsonparse.py",  # the shared JSON reader of the contract
            f"{pkg}/__init__.py",
            f"{pkg}/analysis.py",
            f"{pkg}/bundle.py",
            f"{pkg}/catalog.py",
            f"{pkg}/conditions.py",
            f"{pkg}/contract.py",
            f"{pkg}/corpus.py",
            f"{pkg}/design.py",
            f"{pkg}/items.py",
            f"{pkg}/plan.py",
            f"{pkg}/reference.py",
            f"{pkg}/requests.py",
            f"{pkg}/rubric.py",
            f"{pkg}/suite.py",
            f"{pkg}/solvers.py",
            f"{pkg}/tracks/*.py",
        ]

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        """Item records (grader-side references included) and the design record.

        Raises:
            ValueError: Generation or a leak check failed (the message names the call).
        """
        cfg, seed = ctx.cfg, ctx.seed
        data = build_suite()  # verifies every item and leak-checks every track-A prompt
        design = design_for(cfg, seed)
        per_engine = engine_designs(cfg, seed)
        for d in (design, *per_engine.values()):
            problems = leak_check_calls(data, d.specs)
            if problems:
                raise ValueError(f"grounding: {problems[0]}")
        out = [r | {"seed": derive_seed(seed, r["id"])} for r in item_records(data)]
        out.append(
            {
                "id": DESIGN_RECORD,
                "track": "design",
                "profile": design.profile,
                "shuffle_seed": design.shuffle_seed,
                "suite_seed": seed,
                "calls": design.counts(),
                "n_calls": len(design.specs),
                "engine_profiles": {
                    eng: {
                        "profile": d.profile,
                        "shuffle_seed": d.shuffle_seed,
                        "calls": d.counts(),
                        "n_calls": len(d.specs),
                    }
                    for eng, d in per_engine.items()
                },
            }
        )
        return out

    def requests(self, ctx: RequestContext) -> list[Request]:
        cfg, engine, model, seed = ctx.cfg, ctx.engine, ctx.model, ctx.seed
        scfg = cfg.suite(self.name)
        variant = str(engine.extra.get("variant", "reference"))
        if variant not in VARIANTS:
            raise UserError(f"engine {engine.name!r}: unknown variant {variant!r}")
        return build_requests(
            design_for(cfg, seed, engine.name),
            engine=engine,
            model=model,
            seed=seed,
            temperature=float(scfg["temperature"]),
            max_tokens=int(scfg["max_tokens"]),
            roles=_roles(cfg, engine.name),
        )

    def reference_answer(self, request: Request) -> str:
        specs = call_specs(request)
        spec = specs[int(request.item.get("call", 0))]
        answer = answer_call(
            build_suite(),
            spec,
            request.item.get("prior") or {},
            str(request.item.get("variant", "reference")),
        )
        return as_output_text(answer)

    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        rows = ctx.rows
        return rubric.grade_rows(rows)

    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        cfg, items, graded, rows = ctx.cfg, ctx.items, ctx.graded, ctx.rows
        by_id = {str(i["id"]): i for i in items}
        design = dict(by_id.get(DESIGN_RECORD, {}))
        scfg = cfg.suite(self.name)
        engines: dict[str, Any] = {}
        for eng in sorted({str(r["engine"]) for r in rows}):
            erows = [r for r in rows if r["engine"] == eng]
            egraded = [g for g in graded if g["engine"] == eng]
            engines[eng] = analysis.analyze_engine(egraded, erows, by_id)
            engines[eng]["roles_run"] = _roles(cfg, eng)
        m1 = {
            eng: {
                role: {c: b["m1"]["item_mean"] for c, b in r.get("track_a", {}).items()}
                for role, r in e["roles"].items()
            }
            for eng, e in engines.items()
        }
        return {
            "suite": self.name,
            "design": {
                "profile": design.get("profile"),
                "shuffle_seed": design.get("shuffle_seed"),
                "calls_per_engine": design.get("calls"),
                "n_calls": design.get("n_calls"),
                "order": "one seeded shuffle of the whole run; a call that needs an earlier "
                "reply runs inside the request of the call it needs (B2 select-then-answer, "
                "B4 chains), at that call's position",
                "engine_profiles": {
                    eng: dict(p) | {"order": _ORDER_NOTES.get(str(p.get("profile")), "")}
                    for eng, p in (design.get("engine_profiles") or {}).items()
                },
                "temperature": scfg["temperature"],
                "max_tokens": scfg["max_tokens"],
                "roles": {eng: _roles(cfg, eng) for eng in engines},
            },
            "plan": analysis.plan_summary(),
            "engines": engines,
            "m1_item_mean": m1,
            "metrics": analysis.metrics(engines),
        }

    def report_sections(self, section: Mapping[str, Any]) -> str:
        """The grounding section of report.md, from its result.json section."""
        from sealedeval.suites.grounding.present import report

        return report.render(section)

    def figures(self, section: Mapping[str, Any]) -> list[FigureSpec]:
        """Track A (M1/M2/M7 per condition and engine) and track B summary figures."""
        from sealedeval.suites.grounding.present import figures

        return figures.figure_specs(section)

    def summary(self, section: Mapping[str, Any]) -> dict[str, Any]:
        """The headline and pre-registered comparisons of the report's summary page."""
        from sealedeval.suites.grounding.present import summary

        return summary.summary(section)


suite = GroundingSuite()
