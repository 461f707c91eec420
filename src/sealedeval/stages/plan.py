"""``sealedeval plan SUITE``: the pilot turned into the sizes that belong in the seal.

For every comparison the suite's config pre-registers (``seal.design.suite_comparisons``: the
pairs the seal will hold), the pilot's rows are graded and analysed with the suite's own code
(``pipeline.graded_rows``, the analyze stage), so the per-item scores are exactly the ones the
sealed analysis will compare, and its paired record gives the variance components of the item
differences (``stats.variance_components``: for 0/1 scores the variance of ``d_i`` is the
discordance ``r − (p_A − p_B)²``; for continuous scores or repeats, the spread of the item-mean
differences split into ω² and the within-item σ²). From them, with ``stats/_mde.py`` and
``stats/_power.py`` (Miller 2024, "Adding Error Bars to Evals", Eq. 9 and its inverse):

- the MDE at the study's n (every item the suite will run), ``mde_paired``;
- the items needed for the suite's δ at its α and power, ``sample_size_items``.

δ, α and power are the suite's comparison plan as its analysis reports them (a ``tasks`` suite:
``analysis.delta``/``alpha``/``power`` in its config section, sealed with it). The plan is a
pure function of the pilot rows and the config; it writes ``results/pilot/plan.json`` (one
entry per suite planned), which nothing of the study reads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.plugins import get_suite
from sealedeval.seal import design, lock
from sealedeval.stages.analyze import analyze
from sealedeval.stages.artifacts import item_id
from sealedeval.stages.pipeline import graded_rows, load_items
from sealedeval.stats import mde_paired, sample_size_items
from sealedeval.store.raw import PILOT_ROOT, RawRecord, latest_records, raw_files

PLAN_NAME: Final = PILOT_ROOT / "plan.json"
PLAN_FORMAT: Final = "sealedeval.plan/1"


@dataclass(frozen=True)
class Sizing:
    """One pre-registered comparison sized from the pilot (None where not estimable; ``note``
    says why). Oriented as the config names the pair (``a`` minus ``b``)."""

    a: str
    b: str
    study_items: int
    pilot_items: int = 0
    differing: int | None = None
    diff: float | None = None
    var_diff: float | None = None
    omega2: float | None = None
    sigma2_a: float | None = None
    sigma2_b: float | None = None
    k_a: int | None = None
    k_b: int | None = None
    delta: float | None = None
    alpha: float | None = None
    power: float | None = None
    mde: float | None = None
    n_for_delta: int | None = None
    note: str = ""

    @property
    def enough(self) -> bool | None:
        """Whether the study's items detect δ at the planned power (None: not estimable)."""
        return None if self.n_for_delta is None else self.n_for_delta <= self.study_items


@dataclass(frozen=True)
class SuitePlan:
    suite: str
    study_items: int
    pilot_items: int
    pilot_rows: int
    engines: list[str]
    rubric_sha256: str
    pilot_rubric_sha256: str
    items_key: str
    delta_key: str
    comparisons: list[Sizing]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["comparisons"] = [asdict(c) | {"enough": c.enough} for c in self.comparisons]
        return out


def _pilot_rows(cfg: Config, name: str, rubric: str) -> tuple[list[RawRecord], str]:
    """The latest pilot row per key under one rubric hash, and that hash: the current one when
    the pilot ran under it, else the one of the most recent pilot row. Setting ``delta`` after
    a plan changes the rubric (the analysis block is sealed) but not one answer, so the pilot's
    answers still plan; one hash only, or an item would count once per pilot."""
    rows = latest_records(raw_files(cfg.root, name, store=PILOT_ROOT))
    if not rows:
        raise UserError(f"no pilot runs for {name}; run `sealedeval pilot {name}` first")
    hashes = {str(r["rubric_sha256"]) for r in rows}
    if rubric not in hashes:
        rubric = str(max(rows, key=lambda r: str(r["finished_at"]))["rubric_sha256"])
    return [r for r in rows if r["rubric_sha256"] == rubric], rubric


def _record(analysis: Mapping[str, Any], a: str, b: str) -> tuple[Mapping[str, Any], bool] | None:
    """The suite's paired comparison record of ``a`` and ``b`` (``comparisons[*].paired``, the
    shape ``stats.comparisons`` gives every suite), and whether it is oriented ``b`` vs ``a``."""
    for c in analysis.get("comparisons") or []:
        rec = c.get("paired") if isinstance(c, Mapping) else None
        if not isinstance(rec, Mapping) or "variance" not in rec:
            continue
        if (rec.get("a"), rec.get("b")) == (a, b):
            return rec, False
        if (rec.get("a"), rec.get("b")) == (b, a):
            return rec, True
    return None


def _float(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def size(a: str, b: str, rec: Mapping[str, Any], swapped: bool, n_study: int) -> Sizing:
    """One comparison's MDE at ``n_study`` items and items needed for δ, from its pilot record
    (``swapped``: the record compares ``b`` with ``a``)."""
    v = rec["variance"]
    s2a, s2b = _float(v.get("sigma2_a")), _float(v.get("sigma2_b"))
    ka, kb = v.get("k_a"), v.get("k_b")
    a_better, b_better = int(rec.get("a_better") or 0), int(rec.get("b_better") or 0)
    diff = _float(rec.get("diff"))
    if swapped:
        s2a, s2b, ka, kb = s2b, s2a, kb, ka
        diff = None if diff is None else -diff
    omega2, var_d = _float(v.get("omega2")), _float(v.get("var_diff"))
    delta, alpha, power = (_float(rec.get(k)) for k in ("delta", "alpha", "power"))
    n = int(rec.get("n") or 0)
    mde = need = None
    note = ""
    inputs = (omega2, s2a, s2b, delta, alpha, power)
    if n < 2:
        note = f"{n} pilot items both engines answered: a spread needs 2 or more"
    elif any(x is None for x in inputs) or ka is None or kb is None:
        note = "variance not estimable from the pilot"
    else:
        assert omega2 is not None and s2a is not None and s2b is not None  # checked just above
        assert delta is not None and alpha is not None and power is not None
        if omega2 + s2a / int(ka) + s2b / int(kb) == 0:
            note = "every pilot item tied: no spread to plan from; pilot more items (--limit)"
        else:
            args = (omega2, s2a, s2b, int(ka), int(kb))
            mde = mde_paired(*args, n_study, alpha, power)
            need = sample_size_items(*args, delta, alpha, power)
    return Sizing(
        a,
        b,
        n_study,
        pilot_items=n,
        differing=a_better + b_better,
        diff=diff,
        var_diff=var_d,
        omega2=omega2,
        sigma2_a=s2a,
        sigma2_b=s2b,
        k_a=None if ka is None else int(ka),
        k_b=None if kb is None else int(kb),
        delta=delta,
        alpha=alpha,
        power=power,
        mde=mde,
        n_for_delta=need,
        note=note,
    )


def plan_suite(cfg: Config, name: str) -> SuitePlan:
    """Grade and analyse the pilot rows with the suite's code; size every pre-registered pair."""

    section = cfg.suite(name)
    suite = get_suite(name, cfg)
    rubric = lock.check(cfg.root, name, suite.rubric_inputs(), unsealed=True).rubric_sha256
    rows, pilot_rubric = _pilot_rows(cfg, name, rubric)
    study = load_items(cfg, name, rubric)
    items = study if pilot_rubric == rubric else load_items(cfg, name, pilot_rubric)
    known = {item_id(i) for i in items}
    rows = [r for r in rows if str(r["item_id"]) in known]  # an item deleted since the pilot
    if not rows:
        raise UserError(
            f"{PILOT_ROOT / name}: no pilot answer is to an item the suite still has; "
            f"run `sealedeval pilot {name}` again"
        )
    graded = graded_rows(cfg, name, items, rows)
    analysis = analyze(cfg, suite, items, graded, rows)
    piloted = sorted({str(r["engine"]) for r in rows})
    comparisons = []
    for a, b in design.suite_comparisons(name, section, cfg):
        found = _record(analysis, a, b)
        if found is not None:
            comparisons.append(size(a, b, *found, n_study=len(study)))
            continue
        missing = [e for e in (a, b) if e not in piloted]
        why = (
            f"not piloted: {', '.join(missing)} (`sealedeval pilot {name} --engine {missing[0]}`)"
            if missing
            else "the suite's analysis reports no paired record for this pair"
        )
        comparisons.append(Sizing(a, b, len(study), note=why))
    tasks = section.get("kind") == "tasks"  # a config-defined suite: its keys are known
    items_key = str(section["items"]) if tasks else f"the {name} suite's size settings"
    delta_key = f"suites.{name}.analysis.delta" if tasks else f"the {name} suite's analysis plan"
    return SuitePlan(
        suite=name,
        study_items=len(study),
        pilot_items=len({str(r["item_id"]) for r in rows}),
        pilot_rows=len(rows),
        engines=piloted,
        rubric_sha256=rubric,
        pilot_rubric_sha256=pilot_rubric,
        items_key=items_key,
        delta_key=delta_key,
        comparisons=comparisons,
    )


def write_plan(root: Path, plan: SuitePlan) -> Path:
    """``results/pilot/plan.json``: this suite's entry replaced, other suites' kept."""
    path = root / PLAN_NAME
    doc: dict[str, Any] = {"format": PLAN_FORMAT, "suites": {}}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
        if isinstance(old, dict) and old.get("format") == PLAN_FORMAT:
            doc["suites"] = dict(old.get("suites") or {})
    doc["suites"][plan.suite] = plan.to_json()
    write_text_atomic(path, dumps(doc))
    return path


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Fixed-width columns (a terminal, not Markdown)."""
    cells = [list(header), *map(list, rows)]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _verdict(c: Sizing) -> str:
    if c.n_for_delta is None:
        return c.note
    if c.n_for_delta <= c.study_items:
        return "enough"
    return f"needs {c.n_for_delta - c.study_items} more items"


def render(plan: SuitePlan) -> str:
    """The terminal text: one row per pre-registered comparison, then what to seal."""
    lines = [
        f"{plan.suite}: pilot of {plan.pilot_items} items ({plan.pilot_rows} rows; engines "
        f"{', '.join(plan.engines)}); the study runs {plan.study_items} items"
    ]
    if plan.pilot_rubric_sha256 != plan.rubric_sha256:
        lines.append(
            "note: the pilot ran before the last edit of the suite's sealed inputs; its answers "
            f"are graded as the suite is now (`sealedeval pilot {plan.suite}` again if the "
            "prompt or the items changed)"
        )
    if not plan.comparisons:
        lines.append(
            f"{plan.suite} pre-registers no comparison (config `compare: [a, b]` or "
            "`analysis.comparisons`): nothing to size"
        )
        return "\n".join(lines)
    header = (
        "comparison",
        "pilot n",
        "differ",
        "var(d)",
        "delta",
        f"MDE at n={plan.study_items}",
        "n for delta",
        "verdict",
    )
    rows: list[Sequence[str]] = []
    for c in plan.comparisons:
        rows.append(
            (
                f"{c.a} vs {c.b}",
                str(c.pilot_items),
                "n/a" if c.differing is None else f"{c.differing}/{c.pilot_items}",
                _num(c.var_diff, 4),
                _num(c.delta),
                _num(c.mde),
                "n/a" if c.n_for_delta is None else str(c.n_for_delta),
                _verdict(c),
            )
        )
    lines.append(_table(header, rows))
    sized = [c for c in plan.comparisons if c.n_for_delta is not None]
    if sized:
        worst = max(sized, key=lambda c: c.n_for_delta or 0)
        power = _num(worst.power, 2)
        if worst.enough:
            lines.append(
                f"{plan.study_items} items detect delta {_num(worst.delta)} at power {power} in "
                "every comparison sized"
            )
        else:
            mde = max(c.mde or 0.0 for c in sized)
            lines.append(
                f"to detect delta {_num(worst.delta)} at power {power}: {worst.n_for_delta} items "
                f"(the study has {plan.study_items}); or pre-register delta >= {mde:.3f}"
            )
    lines.append(
        f"before `sealedeval seal`: set the items ({plan.items_key}) and delta "
        f"({plan.delta_key}) from these numbers; the pilot stays out of the study"
    )
    return "\n".join(lines)
