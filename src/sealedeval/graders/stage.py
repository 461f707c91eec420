"""The grade stage: raw rows (latest per key) → graded rows, a pure function of raw + rubric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealedeval.config import Config
from sealedeval.fsutil import atomic_path
from sealedeval.store.raw import latest_rows, raw_files, read_raw
from sealedeval.suites.base import Suite

GRADED_SCHEMA = pa.schema(
    [
        ("request_key", pa.string()),
        ("engine", pa.string()),
        ("item_id", pa.string()),
        ("condition", pa.string()),
        ("repeat", pa.int32()),
        ("status", pa.string()),
        ("grader", pa.string()),
        ("grader_version", pa.string()),
        ("score", pa.float64()),
        ("passed", pa.bool_()),
        ("category", pa.string()),
        ("details", pa.string()),
    ]
)


def latest_suite_rows(root: Path, suite: str) -> list[dict[str, Any]]:
    """One row per request key, in a canonical order (so everything downstream is stable)."""
    files = raw_files(root, suite)
    rows = read_raw(files).to_pylist()
    best = latest_rows(rows)
    return sorted(best.values(), key=lambda r: (r["engine"], r["request_key"]))


def grade(
    cfg: Config, suite: Suite, items: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    graded = suite.grade(cfg, items, rows)
    return sorted(graded, key=lambda g: (g["engine"], g["request_key"], g["grader"]))


def write_graded(path: Path, graded: list[dict[str, Any]]) -> None:
    extra = [c for c in graded[0] if c not in GRADED_SCHEMA.names] if graded else []
    table = pa.Table.from_pylist(
        [{k: g[k] for k in GRADED_SCHEMA.names} for g in graded], schema=GRADED_SCHEMA
    )
    for col in extra:  # suite-specific components (e.g. composite parts) ride along as strings
        table = table.append_column(col, pa.array([str(g.get(col, "")) for g in graded]))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
