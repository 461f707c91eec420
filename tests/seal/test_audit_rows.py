"""The audit's row checks read every attempt a few columns at a time (``audit.row_facts``,
``audit.latest_counts``): the same facts a pass over every row as a dict gives."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sealedeval.audit import latest_counts, row_facts
from sealedeval.store.raw import RawWriter, latest_rows, raw_dir, raw_files, read_raw
from sealedeval.store.schema import REQUIRED_COLUMNS, ROW_DEFAULTS


def _store(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    for suite in ("s", "t"):
        for engine in ("e1", "e2"):
            writer = RawWriter(raw_dir(root, suite, engine), flush_rows=9)
            for i in range(60):
                row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
                sealed = rng.random() < 0.7
                row |= {
                    # a few rows name another suite than their directory's
                    "suite": suite if rng.random() < 0.95 else "other",
                    "engine": engine,
                    "request_key": f"{suite}{engine}{rng.randrange(25):03d}",
                    "status": rng.choice(["ok", "error", "refused"]),
                    "sealed": sealed,
                    "seal_commit": rng.choice(["", "c1", "c2"]),
                    "rubric_sha256": rng.choice(["r1", "r2"]),
                    "started_at": f"2026-01-0{rng.randrange(1, 4)}T00:00:{rng.randrange(60):02d}Z",
                    "finished_at": f"2026-01-04T00:00:{rng.randrange(4):02d}Z",
                    "repeat": i,
                    "seed": i,
                }
                writer.append(row)
            writer.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_row_facts_are_what_a_pass_over_every_row_gives(tmp_path: Path, seed: int) -> None:
    _store(tmp_path, seed)
    files = raw_files(tmp_path)
    rows = read_raw(files).to_pylist()
    facts = row_facts(files)
    assert facts.n == len(rows) == 240
    want: dict[tuple[str, bool, str, str], list[str]] = {}
    for r in rows:
        key = (r["suite"], bool(r["sealed"]), r["seal_commit"] or "", r["rubric_sha256"])
        want.setdefault(key, []).append(r["started_at"])
    assert set(facts.groups) == set(want)
    for key, starts in want.items():
        g = facts.groups[key]
        assert (g.rows, g.first) == (len(starts), min(starts))
        imported = not key[1] and key[2]
        assert sorted(g.starts or []) == (sorted(starts) if imported else [])
    assert facts.suites == sorted({r["suite"] for r in rows})
    assert facts.commits() == {r["seal_commit"] for r in rows if r["seal_commit"]}
    assert facts.first_sealed_start() == min(r["started_at"] for r in rows if r["sealed"])


@pytest.mark.parametrize("seed", [4, 5])
def test_latest_counts_are_the_row_rules_by_engine_and_status(tmp_path: Path, seed: int) -> None:
    """One suite's raw files (as the build reads them), the latest row per key by the row
    rule, only the rows that name the suite: their statuses by engine."""
    _store(tmp_path, seed)
    for suite in ("s", "t"):
        files = raw_files(tmp_path, suite)
        latest = latest_rows(read_raw(files).to_pylist())
        want: dict[str, Counter[str]] = {}
        for r in latest.values():
            if r["suite"] == suite:
                want.setdefault(r["engine"], Counter())[r["status"]] += 1
        got = latest_counts(files, suite)
        assert got == want and sum(c.total() for c in got.values()) > 20
