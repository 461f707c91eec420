"""Append-only raw-run store under ``results/raw/SUITE/ENGINE/part-*.parquet``.

Rows are buffered and flushed as whole Parquet parts written to a temp file, fsynced and renamed:
a crash (even kill -9) loses at most the unflushed buffer, never corrupts a part, and resume
re-requests exactly what is missing. Parts are never rewritten; a retried key appends a new row,
and readers take the latest row per key, preferring ``ok`` (an ok answer is final).
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path
from sealedeval.store.schema import RAW_SCHEMA, RawRow

RAW_ROOT = Path("results/raw")
_COLUMNS = tuple(RAW_SCHEMA.names)


def raw_dir(root: Path, suite: str, engine: str | None = None) -> Path:
    d = root / RAW_ROOT / suite
    return d / engine if engine else d


def raw_files(root: Path, suite: str | None = None) -> list[Path]:
    """All committed parts (temp files excluded), sorted for a stable manifest."""
    base = root / RAW_ROOT / suite if suite else root / RAW_ROOT
    if not base.exists():
        return []
    return sorted(p for p in base.rglob("part-*.parquet") if not p.name.startswith("."))


class RawWriter:
    """Buffer rows and flush them as atomic Parquet parts.

    ``flush_rows`` and ``flush_s`` bound the loss on a hard kill; small parts are fine because
    readers stream them, and ``sealedeval compact`` is not needed for correctness.
    """

    def __init__(
        self, directory: Path, *, flush_rows: int = 64, flush_s: float = 2.0, run_id: str = ""
    ) -> None:
        self.directory = directory
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._buf: list[dict[str, Any]] = []
        self._last = time.monotonic()
        self._seq = 0
        self._failed = False  # after a failed write (disk full) rows are dropped, not retried
        self.rows_written = 0
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{directory}: cannot create raw-run directory ({e.strerror})") from e
        if not os.access(directory, os.W_OK):
            raise UserError(f"{directory}: raw-run directory is not writable")

    def add(self, row: RawRow) -> None:
        if self._failed:  # the run is failing with one error already; resume re-asks these
            return
        # Every raw field is a scalar, so a shallow read equals ``row.to_dict()`` (which goes
        # through ``dataclasses.asdict``'s deep copy: ~40% of the per-row cost, measured).
        self._buf.append({c: getattr(row, c) for c in _COLUMNS})
        if len(self._buf) >= self.flush_rows or time.monotonic() - self._last >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        if self._failed:
            self._buf = []
        if not self._buf:
            self._last = time.monotonic()
            return
        table = pa.Table.from_pylist(self._buf, schema=RAW_SCHEMA)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        name = f"part-{stamp}-{self.run_id}-{self._seq:05d}.parquet"
        try:
            with atomic_path(self.directory / name) as tmp:
                pq.write_table(table, tmp, compression="zstd")
        except UserError:  # atomic_path's one-line error; the temp part is already removed
            self._failed, self._buf = True, []
            raise
        except OSError as e:  # the temp part is gone (atomic_path); committed parts are intact
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                self._failed, self._buf = True, []  # unwritten rows are re-requested on resume
                raise UserError(
                    f"{self.directory}: cannot write raw-run part ({os.strerror(e.errno)}); "
                    "rows already stored are intact, free space and rerun to resume"
                ) from e
            raise
        self._seq += 1
        self.rows_written += len(self._buf)
        self._buf = []
        self._last = time.monotonic()

    def close(self) -> None:
        self.flush()


def read_raw(paths: Sequence[Path]) -> pa.Table:
    """Concatenate parts; a part that is not valid Parquet is a one-line user error."""
    tables = []
    for p in paths:
        try:
            t = pq.read_table(p, schema=RAW_SCHEMA)
        except (pa.ArrowInvalid, OSError) as e:
            raise UserError(f"{p}: corrupt raw-run part ({str(e).splitlines()[0]})") from e
        tables.append(t)
    if not tables:
        return RAW_SCHEMA.empty_table()
    return pa.concat_tables(tables)


def _rank(row: dict[str, Any]) -> tuple[int, str, str]:
    return (1 if row["status"] == "ok" else 0, row["finished_at"], row["request_key"])


def latest_rows(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One row per request key: the ok one if any (first ok wins), else the latest attempt."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        k = r["request_key"]
        cur = best.get(k)
        if cur is None:
            best[k] = r
        elif cur["status"] == "ok":
            continue
        elif r["status"] == "ok" or _rank(r) > _rank(cur):
            best[k] = r
    return best


def ok_keys(root: Path, suite: str, engine: str) -> set[str]:
    files = raw_files(root, suite)
    files = [f for f in files if f.parent.name == engine]
    if not files:
        return set()
    t = read_raw(files).select(["request_key", "status"])
    keys = t.column("request_key").to_pylist()
    st = t.column("status").to_pylist()
    return {k for k, s in zip(keys, st, strict=True) if s == "ok"}
