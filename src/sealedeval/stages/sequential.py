"""``sealedeval run --sequential SUITE``: a sealed sequential comparison, run look by look.

A suite's ``analysis.sequential`` block (``compare: [a, b]``, ``looks``, ``max_n``, ``alpha``)
pre-registers a stopping rule: the two engines answer the items in the sealed item order, in
slices up to each planned look; after each look the rows present are graded and analysed, the
anytime-valid confidence sequence of the paired difference a − b is read at that look
(``stats._sequential.sequential_rule``), and the run stops at the first look whose interval
excludes 0, or at ``max_n``. The block is part of the suite's config section, so the design
sealed in ``rubric.lock`` records it with the rest of the ``analysis`` parameters.

Why a driver over the existing run function rather than an interleaving dispatcher: each slice
is an ordinary ``run_suite`` call restricted to the first ``n`` items (``Target.items``), so
resume, retries, the circuit breaker, shards of the raw store and the ledger work as for any
run, and a killed sequential run resumes look by look with no state of its own. The decision at
a look is read from the suite's own analysis of the rows (its ``sequential`` section), the same
computation the audit replays, so the run and the audit cannot disagree on what the rule said.

Each look is recorded in the ledger entry of engine ``b``'s slice run (the run that completes
the look) under ``sequential``: the look's number, n, the estimate, the interval and the
decision. The audit replays every recorded look from the raw rows.
"""

from __future__ import annotations

import fcntl
import itertools
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from sealedeval.errors import UserError
from sealedeval.plugins import get_suite
from sealedeval.stages.analyze import analyze
from sealedeval.stages.pipeline import graded_rows, latest, load_items, rows_rubric
from sealedeval.stages.run import STUDY, plan, run_suite

if TYPE_CHECKING:  # the suite's spec imports parse_plan: keep its import light
    from sealedeval.config import Config
    from sealedeval.run.dispatcher import RunStats

CONTINUE: Final = "continue"
"""The decision at a look where the rule says go on (``stats._sequential.CONTINUE``)."""


@dataclass(frozen=True)
class SequentialPlan:
    """A suite's sealed ``analysis.sequential`` block, checked.

    Attributes:
        compare: The engines (a, b) whose paired difference a − b the rule watches.
        looks: Items per engine at each look, strictly increasing, the last one ``max_n``
            (a ``max_n`` beyond the last look given is a look of its own).
        max_n: The most items either engine answers.
        alpha: The confidence sequence's error rate over all looks together.
    """

    compare: tuple[str, str]
    looks: tuple[int, ...]
    max_n: int
    alpha: float


def parse_plan(key: str, raw: Any, engines: Collection[str]) -> SequentialPlan | None:
    """``raw`` (the ``analysis.sequential`` value at ``key``) checked against the suite's
    answering ``engines``; None when absent; a one-line ``UserError`` naming the key when the
    looks are not increasing or pass ``max_n``, an engine is not the suite's, or ``alpha`` is
    outside (0, 1)."""
    if not raw:
        return None
    if not isinstance(raw, Mapping):
        raise UserError(f"{key}: expected a mapping (compare, looks, max_n, alpha)")
    compare = [str(e) for e in raw.get("compare") or []]
    if len(compare) != 2 or compare[0] == compare[1]:
        raise UserError(f"{key}.compare: expected two different engines, got {compare!r}")
    for e in compare:
        if e not in engines:
            raise UserError(
                f"{key}.compare: {e!r} is not an answering engine of the suite "
                f"({', '.join(sorted(engines))})"
            )
    looks_raw = raw.get("looks") or []
    if not isinstance(looks_raw, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in looks_raw
    ):
        raise UserError(f"{key}.looks: expected a list of item counts, got {looks_raw!r}")
    looks = [int(n) for n in looks_raw]
    if not looks or looks[0] < 1 or any(b <= a for a, b in itertools.pairwise(looks)):
        raise UserError(f"{key}.looks: must be positive and strictly increasing, got {looks}")
    max_n = raw.get("max_n", looks[-1])
    if not isinstance(max_n, int) or isinstance(max_n, bool) or max_n < 1:
        raise UserError(f"{key}.max_n: expected a positive item count, got {max_n!r}")
    if looks[-1] > max_n:
        raise UserError(f"{key}.looks: {looks[-1]} is beyond max_n {max_n}")
    alpha = raw.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise UserError(f"{key}.alpha: must lie in (0, 1), got {alpha!r}")
    if looks[-1] < max_n:
        looks.append(max_n)
    return SequentialPlan((compare[0], compare[1]), tuple(looks), max_n, float(alpha))


def suite_plan(cfg: Config, name: str) -> SequentialPlan | None:
    """The suite's sequential plan from its config section (None when it has none). The suite
    validated the block when it was built; this reads the same values for the run stage."""
    section = cfg.suite(name)
    raw = (section.get("analysis") or {}).get("sequential")
    engines = [str(e) for e in section.get("engines") or []]
    return parse_plan(f"suites.{name}.analysis.sequential", raw, engines)


@dataclass(frozen=True)
class LookRecord:
    """What the ledger records of one look (``sequential`` in the entry of b's slice run)."""

    look: int
    n: int
    compare: tuple[str, str]
    estimate: float
    lo: float
    hi: float
    decision: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "look": self.look,
            "n": self.n,
            "compare": list(self.compare),
            "estimate": self.estimate,
            "lo": self.lo,
            "hi": self.hi,
            "decision": self.decision,
        }


@dataclass(frozen=True)
class SequentialRun:
    """A driver's outcome: the looks made, the stop, and the run stats of every slice."""

    plan: SequentialPlan
    looks: tuple[LookRecord, ...]
    stats: tuple[tuple[str, RunStats], ...]

    @property
    def stopped_at(self) -> int:
        return self.looks[-1].n if self.looks else 0

    @property
    def decision(self) -> str:
        return self.looks[-1].decision if self.looks else CONTINUE


def analysis_section(cfg: Config, name: str) -> Mapping[str, Any]:
    """The suite's ``sequential`` analysis of the rows stored now (graded and analysed in memory,
    nothing written): the replay the audit makes, made at the look."""

    rows = latest(cfg, name)
    items = load_items(cfg, name, rows_rubric(rows))
    graded = graded_rows(cfg, name, items, rows)
    doc = analyze(cfg, get_suite(name, cfg), items, graded, rows)
    section = doc.get("sequential")
    if not isinstance(section, Mapping):
        raise UserError(f"suites.{name}: its analysis has no sequential section")
    return section


def look_record(section: Mapping[str, Any], k: int, n: int) -> LookRecord:
    """Look ``k`` (1-based) at ``n`` items from the suite's ``sequential`` analysis."""
    made = {int(lk["n"]): lk for lk in section.get("looks") or []}
    if n not in made:
        raise UserError(
            f"sequential look {k} at n = {n}: the rows present do not reach it "
            f"({section.get('n_paired', 0)} items answered by both engines)"
        )
    lk = made[n]
    a, b = section["compare"]
    return LookRecord(
        k, n, (str(a), str(b)), float(lk["mean"]), float(lk["lo"]), float(lk["hi"]), lk["decision"]
    )


@contextmanager
def _exclusive(cfg: Config, name: str) -> Iterator[None]:
    """One sequential driver per suite at a time: the workflow starts a run job per engine,
    and both compared engines' jobs run this driver; the second waits, then resumes as a
    no-op (every look's calls are stored, and the same looks are read again)."""
    d = cfg.root / "logs" / "sequential"
    d.mkdir(parents=True, exist_ok=True)
    fd = os.open(d / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def first_items(ids: Sequence[str], n: int) -> Callable[[Sequence[str]], Collection[str]]:
    """``Target.items`` for a slice: the first ``n`` items of the sealed item order."""
    chosen = frozenset(ids[:n])

    def pick(planned: Sequence[str]) -> Collection[str]:
        return [i for i in planned if i in chosen]

    return pick


def run_sequential(
    cfg: Config,
    name: str,
    *,
    run: Callable[..., RunStats] | None = None,
    **kwargs: Any,
) -> SequentialRun:
    """Run the suite's sealed sequential comparison look by look (module docstring); ``kwargs``
    go to every slice's ``run_suite`` (progress, status, allow_errors, unsealed; ``run``
    replaces it, for a test that tampers with a slice). Returns the
    looks made; the last one's decision is a stop or ``exhausted`` unless a slice failed."""

    run = run or run_suite
    sp = suite_plan(cfg, name)
    if sp is None:
        raise UserError(f"suites.{name}.analysis.sequential: not set; run it with `sealedeval run`")
    ids = [str(i["id"]) for i in plan(cfg, name, unsealed=bool(kwargs.get("unsealed"))).items]
    if sp.max_n > len(ids):
        raise UserError(
            f"suites.{name}.analysis.sequential.max_n: {sp.max_n} is more than the suite's "
            f"{len(ids)} items"
        )
    a, b = sp.compare
    looks: list[LookRecord] = []
    stats: list[tuple[str, RunStats]] = []
    with _exclusive(cfg, name):
        for k, n in enumerate(sp.looks, 1):
            target = replace(STUDY, items=first_items(ids, n))
            stats.append((a, run(cfg, name, a, target=target, **kwargs)))
            made: list[LookRecord] = []

            def read_look(k: int = k, n: int = n, made: list[LookRecord] = made) -> dict[str, Any]:
                made.append(look_record(analysis_section(cfg, name), k, n))
                return made[-1].as_dict()

            stats.append((b, run(cfg, name, b, target=replace(target, after=read_look), **kwargs)))
            if not made:  # the slice ended without a look (it failed; run_suite said why)
                break
            looks.append(made[0])
            if made[0].decision != CONTINUE:
                break
    return SequentialRun(sp, tuple(looks), tuple(stats))
