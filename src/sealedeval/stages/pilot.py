"""``sealedeval pilot SUITE``: try a few items on the engines before the seal, outside the study.

A pilot asks the suite's own planned requests (every condition and repeat of the chosen items)
through the same runner as ``sealedeval run`` (``stages.run.run_suite`` with a ``Target``),
unsealed, into the pilot store ``results/pilot/SUITE/ENGINE/part-*.parquet`` (the raw-row
schema, ``sealed`` false). Nothing that builds or checks the study reads that store
(``store.raw.raw_files`` lists ``results/raw`` only), so a pilot never blocks a later sealed
run, never enters result.json's manifest and is not an attempt: the ledger records it with
``kind: pilot``, and the audit discloses the pilots without counting them.

Which items: the first ``limit`` of the *pilot order*, the suite's item ids sorted by
``sha256("<project seed>/<suite>/<item id>")``. A seeded shuffle, so a pilot is not the first
rows of a data file sorted by topic or difficulty; it depends on nothing but the seed and the
ids, so it does not move when the data file is reordered, items are added, or the prompt is
edited, and a larger ``--limit`` keeps the items a smaller one asked (their answers are reused).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Final

from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.run.dispatcher import RunStats
from sealedeval.stages.run import Target, run_suite
from sealedeval.store.ledger import PILOT_KIND
from sealedeval.store.raw import PILOT_ROOT

DEFAULT_ITEMS: Final = 10
"""Items a pilot asks unless ``--limit`` says otherwise: enough to see the prompt and graders
work and to get a first spread of scores, cheap enough to cost nothing that matters."""


def pilot_order(seed: int, suite: str, item_ids: Sequence[str]) -> list[str]:
    """The item ids in pilot order (see the module docstring); duplicates dropped."""

    def key(item_id: str) -> tuple[str, str]:
        return hashlib.sha256(f"{seed}/{suite}/{item_id}".encode()).hexdigest(), item_id

    return sorted(dict.fromkeys(item_ids), key=key)


def pilot_items(seed: int, suite: str, limit: int) -> Callable[[Sequence[str]], list[str]]:
    """The runner's item chooser: the first ``limit`` ids of the pilot order."""

    def choose(item_ids: Sequence[str]) -> list[str]:
        return pilot_order(seed, suite, item_ids)[:limit]

    return choose


@dataclass(frozen=True)
class PilotRun:
    engine: str
    stats: RunStats


def run_pilot(
    cfg: Config,
    suite: str,
    engines: Sequence[str] | None = None,
    *,
    limit: int = DEFAULT_ITEMS,
    progress: bool = False,
    allow_errors: bool = False,
    status: IO[str] | None = None,
) -> list[PilotRun]:
    """Pilot ``suite`` on ``engines`` (default: the suite's engines) for the first ``limit``
    items of the pilot order. Works with or without a seal (the rows are unsealed either way).

    Raises:
        UserError: an unknown suite or engine, or ``limit < 1`` (before any call).
    """
    section = cfg.suite(suite)
    if limit < 1:
        raise UserError(f"--limit {limit}: a pilot asks at least 1 item")
    names = list(engines) if engines else [str(e) for e in section.get("engines") or []]
    if not names:
        raise UserError(f"suite {suite!r} names no engines in {cfg.where}; pass --engine E")
    for name in names:
        cfg.engine(name)  # every name checked before the first call
    target = Target(store=PILOT_ROOT, kind=PILOT_KIND, items=pilot_items(cfg.seed, suite, limit))
    out = []
    for name in names:
        stats = run_suite(
            cfg,
            suite,
            name,
            unsealed=True,
            progress=progress,
            allow_errors=allow_errors,
            status=status,
            target=target,
        )
        out.append(PilotRun(name, stats))
    return out
