"""A ``tasks`` suite's config section, checked: what can be known without reading any file.

``parse`` runs when the config loads (``plugins.bind``), so an unknown grader, grader
parameters that do not fit the kind's schema, a judge engine that is not run, or an analysis
block naming an unknown engine or grader stop every command at once with one line naming the
config key. Everything that needs the project's files (items, templates, labels) is checked by
``data.load``.

``sealed`` is the part of the section that is pre-registered: it is written to
``.sealedeval/tasks-<name>.json`` and sealed with the files it names; engines, repeats and the
generation parameters stay profile settings, as for every other suite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sealedeval.errors import UserError
from sealedeval.graders.kinds import GraderKind, get_kind
from sealedeval.stages.sequential import SequentialPlan, parse_plan

SPEC_FORMAT = "sealedeval.tasks-spec/1"
SEALED_KEYS = (
    "items",
    "id_column",
    "target_column",
    "prompt",
    "prompt_file",
    "system",
    "system_file",
    "files",
    "solver",
    "samples",
    "agent",
    "truncated",
    "abstention",
    "cluster_by",
    "analysis",
)
DEFAULT_PROMPT = "{input}"


@dataclass(frozen=True)
class GraderEntry:
    """One configured grader of the suite: its id (label, else the kind's name), its kind and
    its parameters (validated, defaults applied)."""

    id: str
    index: int
    kind: GraderKind
    params: dict[str, Any]

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def version(self) -> str:
        return self.kind.version

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "version": self.version, "params": self.params}


@dataclass(frozen=True)
class Hypothesis:
    id: str
    a: str
    b: str
    direction: str
    alpha: float


@dataclass(frozen=True)
class HumanAudit:
    """``analysis.human_audit``: ``n`` items drawn from the rubric hash (``plan.audit_items``)
    whose answers a person labels in the file ``labels`` (which may not exist at the seal: the
    path and the size are pre-registered, the labels arrive after the run); the judge grader
    ``grader`` is the one audited."""

    n: int
    labels: str
    grader: str


@dataclass(frozen=True)
class Spec:
    suite: str
    section: Mapping[str, Any]
    graders: tuple[GraderEntry, ...]
    primary: str
    comparisons: tuple[tuple[str, str], ...]
    hypotheses: tuple[Hypothesis, ...]
    human_audit: HumanAudit | None = None
    sequential: SequentialPlan | None = None

    def key(self, k: str) -> str:
        return f"suites.{self.suite}.{k}"

    def get(self, k: str, default: Any = None) -> Any:
        return self.section.get(k, default)

    @property
    def items(self) -> str:
        return str(self.section["items"])

    @property
    def id_column(self) -> str:
        return str(self.section.get("id_column", "id"))

    @property
    def target_column(self) -> str:
        return str(self.section.get("target_column", "target"))

    @property
    def solver(self) -> str:
        return str(self.section.get("solver", "single"))

    @property
    def samples(self) -> int:
        return int(self.section.get("samples", 1))

    @property
    def keep_truncated(self) -> bool:
        return str(self.section.get("truncated", "answer")) == "answer"

    @property
    def files(self) -> str | None:
        f = self.section.get("files")
        return str(f) if f else None

    @property
    def abstention(self) -> str | None:
        a = self.section.get("abstention")
        return str(a) if a else None

    @property
    def cluster_by(self) -> str | None:
        c = self.section.get("cluster_by")
        return str(c) if c else None

    @property
    def engines(self) -> list[str]:
        return [str(e) for e in self.section.get("engines") or []]

    @property
    def judge_only(self) -> list[str]:
        return [str(e) for e in self.section.get("judge_only") or []]

    @property
    def answering(self) -> list[str]:
        """The engines that answer the items (every listed engine but the judge-only ones)."""
        return [e for e in self.engines if e not in self.judge_only]

    @property
    def analysis(self) -> Mapping[str, Any]:
        return self.section.get("analysis") or {}

    @property
    def reduce(self) -> str:
        return str(self.analysis.get("reduce", "majority"))

    def grader(self, gid: str) -> GraderEntry:
        return next(g for g in self.graders if g.id == gid)

    def judges(self) -> list[GraderEntry]:
        return [g for g in self.graders if g.name == "judge"]

    def judge_engines(self) -> list[str]:
        return sorted({str(g.params["engine"]) for g in self.judges()})

    def sealed(self) -> dict[str, Any]:
        """The pre-registered part of the section (the document ``.sealedeval/tasks-<name>.json``
        holds): the sealed keys as configured, defaults applied, the graders with their kinds'
        versions and full parameters, the analysis plan resolved (primary grader, hypotheses
        with their ids and alpha)."""
        body = {k: self.section[k] for k in SEALED_KEYS if k in self.section}
        if self.solver != "agent":
            body.pop("agent", None)  # defaults of a solver not used
        body["graders"] = [g.describe() for g in self.graders]
        # ``comparisons: all`` stays as written: which engines run is a profile setting, so
        # adding an engine adds comparisons without re-sealing; hypotheses name their engines
        body["analysis"] = dict(self.analysis) | {
            "primary": self.primary,
            "hypotheses": [
                {"id": h.id, "a": h.a, "b": h.b, "direction": h.direction, "alpha": h.alpha}
                for h in self.hypotheses
            ],
        }
        return {"format": SPEC_FORMAT, "suite": self.suite, "kind": "tasks", "sealed": body}


def _graders(name: str, section: Mapping[str, Any]) -> tuple[GraderEntry, ...]:
    out: list[GraderEntry] = []
    for i, raw in enumerate(section.get("graders") or []):
        where = f"suites.{name}.graders[{i}]"
        try:
            kind = get_kind(str(raw["name"]))
        except UserError as e:
            raise UserError(f"{where}.name: {e}") from None
        params = kind.check({k: v for k, v in raw.items() if k not in ("name", "label")}, where)
        gid = str(raw.get("label") or kind.name)
        if any(g.id == gid for g in out):
            raise UserError(
                f"{where}: a second {gid!r} grader: give each a distinct label (label: strict)"
            )
        out.append(GraderEntry(gid, i, kind, params))
    return tuple(out)


def parse(name: str, section: Mapping[str, Any]) -> Spec:
    """The section checked (see the module docstring); one-line ``UserError`` otherwise."""
    key = f"suites.{name}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise UserError(f"{key}: a tasks suite name is letters, digits, '_', '.' and '-'")
    for a, b in (("prompt", "prompt_file"), ("system", "system_file")):
        if a in section and b in section:
            raise UserError(f"{key}: give {a} or {b}, not both")
    graders = _graders(name, section)
    engines = [str(e) for e in section.get("engines") or []]
    judge_only = [str(e) for e in section.get("judge_only") or []]
    judges = {str(g.params["engine"]) for g in graders if g.name == "judge"}
    for g in graders:
        if g.name == "judge" and g.params["engine"] not in engines:
            raise UserError(
                f"{key}.graders[{g.index}].engine: {g.params['engine']!r} is not in {key}.engines "
                "(the judge engine runs with the suite: list it there, and in judge_only if it "
                "should not answer)"
            )
    for e in judge_only:
        if e not in engines or e not in judges:
            raise UserError(f"{key}.judge_only: {e!r} is not a judge engine listed in engines")
    answering = [e for e in engines if e not in judge_only]
    if not answering:
        raise UserError(f"{key}.engines: no engine answers (every one is judge_only)")
    solver = str(section.get("solver", "single"))
    samples = int(section.get("samples", 1))
    if solver == "agent" and not section.get("files"):
        raise UserError(f"{key}.solver: agent needs files: (the directory its tools read)")
    if solver == "self_consistency" and samples < 2:
        raise UserError(f"{key}.samples: self_consistency needs samples >= 2")
    if solver == "single" and samples != 1:
        raise UserError(f"{key}.samples: needs solver self_consistency or agent")
    analysis = section.get("analysis") or {}
    ids = [g.id for g in graders]
    primary = str(analysis.get("primary") or ids[0])
    if primary not in ids:
        raise UserError(
            f"{key}.analysis.primary: {primary!r} is not one of the graders ({', '.join(ids)})"
        )
    comparisons = _comparisons(key, analysis.get("comparisons", "all"), answering)
    hypotheses = _hypotheses(key, analysis, answering)
    audit = _human_audit(key, analysis.get("human_audit"), graders)
    seq = parse_plan(f"{key}.analysis.sequential", analysis.get("sequential"), answering)
    return Spec(name, dict(section), graders, primary, comparisons, hypotheses, audit, seq)


def _human_audit(
    key: str, raw: Mapping[str, Any] | None, graders: tuple[GraderEntry, ...]
) -> HumanAudit | None:
    if not raw:
        return None
    judges = [g.id for g in graders if g.name == "judge"]
    if not judges:
        raise UserError(f"{key}.analysis.human_audit: needs a judge grader (the one it audits)")
    gid = str(raw.get("grader") or judges[0])
    if gid not in judges:
        raise UserError(
            f"{key}.analysis.human_audit.grader: {gid!r} is not a judge grader "
            f"({', '.join(judges)})"
        )
    return HumanAudit(int(raw["n"]), str(raw["labels"]), gid)


def _comparisons(key: str, raw: Any, answering: list[str]) -> tuple[tuple[str, str], ...]:
    if raw in (None, "all"):
        return tuple((a, b) for i, a in enumerate(answering) for b in answering[i + 1 :])
    if raw == "none":
        return ()
    out = []
    for i, pair in enumerate(raw):
        a, b = (str(x) for x in pair)
        for e in (a, b):
            if e not in answering:
                raise UserError(
                    f"{key}.analysis.comparisons[{i}]: {e!r} is not an answering engine "
                    f"({', '.join(answering)})"
                )
        if a == b:
            raise UserError(f"{key}.analysis.comparisons[{i}]: an engine compared with itself")
        out.append((a, b))
    return tuple(out)


def _hypotheses(
    key: str, analysis: Mapping[str, Any], answering: list[str]
) -> tuple[Hypothesis, ...]:
    alpha = float(analysis.get("alpha", 0.05))
    out: list[Hypothesis] = []
    for i, h in enumerate(analysis.get("hypotheses") or []):
        where = f"{key}.analysis.hypotheses[{i}]"
        a, b = str(h["a"]), str(h["b"])
        for e in (a, b):
            if e not in answering:
                raise UserError(
                    f"{where}: {e!r} is not an answering engine ({', '.join(answering)})"
                )
        if a == b:
            raise UserError(f"{where}: an engine compared with itself")
        hid = str(h.get("id") or f"H{i + 1}")
        if any(x.id == hid for x in out):
            raise UserError(f"{where}.id: duplicate hypothesis id {hid!r}")
        out.append(
            Hypothesis(hid, a, b, str(h.get("direction", "greater")), float(h.get("alpha", alpha)))
        )
    return tuple(out)
