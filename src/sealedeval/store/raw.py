"""Append-only raw-run store under ``results/raw/SUITE/ENGINE/part-*.parquet``.

Rows are buffered and flushed as whole Parquet parts written to a temp file, fsynced and renamed:
a crash (even kill -9) loses at most the unflushed buffer, never corrupts a part, and resume
re-requests exactly what is missing. Parts are never rewritten; a retried key appends a new row,
and readers take the latest row per key, preferring ``ok`` (an ok answer is final).

Parts are written on one background thread, in order: a Parquet encode plus two fsyncs can take
tens of milliseconds on a busy disk, and done on the event loop they stalled every in-flight
call (the latency-bound benchmark lost ~2× to it). A failed write is reported on the next
``append``/``flush``/``close`` and no later part is written after it, so the committed parts are
always a prefix of the runs' rows in flush order.
"""

from __future__ import annotations

import copy
import errno
import os
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, overload

import pyarrow.parquet as pq

from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path
from sealedeval.store.arrow import pa
from sealedeval.store.columns import Coded, HexKeys, at_positions, code_array, hex_packed
from sealedeval.store.schema import RAW_SCHEMA

RAW_ROOT = Path("results/raw")
PILOT_ROOT = Path("results/pilot")
"""The pilot store (``sealedeval pilot``): same layout and row schema as ``RAW_ROOT``, rows
unsealed, never read by grade, analyze, publish or the audit's row checks."""
_COLUMNS = tuple(RAW_SCHEMA.names)


def raw_dir(root: Path, suite: str, engine: str | None = None, *, store: Path = RAW_ROOT) -> Path:
    d = root / store / suite
    return d / engine if engine else d


def raw_files(root: Path, suite: str | None = None, *, store: Path = RAW_ROOT) -> list[Path]:
    """All committed parts (temp files excluded), sorted for a stable manifest. ``store`` is
    the sealed raw store unless a caller names the pilot store."""
    base = root / store / suite if suite else root / store
    if not base.exists():
        return []
    return sorted(p for p in base.rglob("part-*.parquet") if not p.name.startswith("."))


def _part_stamp() -> str:
    """UTC time to the microsecond, as a part name begins (``20261201T234529123456``).

    Parts are read in name order, and among a key's ok rows the first read is final. At
    whole seconds two runs in the same second (a re-import of an edited log right after the
    first import) sorted by their random run ids, so the later run's row won half the time.
    A name of the older form (``20261201T234529-``) sorts before any of the same second."""
    sec, ns = divmod(time.time_ns(), 1_000_000_000)
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(sec))}{ns // 1000:06d}"


class RawWriter:
    """Buffer rows and flush them as atomic Parquet parts (on a background thread).

    A part is cut every ``flush_rows`` rows, or after ``flush_s`` seconds with anything
    buffered; together they bound what a hard kill loses. With ``max_rows`` set, the row
    threshold doubles after each part up to ``max_rows``: a short run still gets small parts
    early (resume after a kill loses little), while a long fast run ends up with parts of
    thousands of rows instead of thousands of 16-row parts, which cost a write and two fsyncs
    each and slow every later reader (``benchmarks/dispatch.py``, ``benchmarks/scale.py``).
    """

    def __init__(
        self,
        directory: Path,
        *,
        flush_rows: int = 64,
        flush_s: float = 2.0,
        max_rows: int | None = None,
        run_id: str = "",
    ) -> None:
        self.directory = directory
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.max_rows = max_rows
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._target = flush_rows
        self._buf: list[dict[str, Any]] = []
        self._last = time.monotonic()
        self._seq = 0
        # After a failed write (disk full) rows are dropped, not retried: resume re-asks them.
        self._failed = False
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()
        self.rows_written = 0
        self.parts: list[tuple[str, int]] = []
        """(file name, rows) of every part this writer committed, in order (for the ledger)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{directory}: cannot create raw-run directory ({e.strerror})") from e
        if not os.access(directory, os.W_OK):
            raise UserError(f"{directory}: raw-run directory is not writable")

    def append(self, row: dict[str, Any]) -> None:
        """Buffer one row given as a dict with exactly RAW_SCHEMA's columns."""
        if self._failed:  # the run is failing with one error already; resume re-asks these
            return
        if self._pending and self._pending[0].done():
            self._reap()
        self._buf.append(row)
        if len(self._buf) >= self._target or time.monotonic() - self._last >= self.flush_s:
            self._submit()

    def _reap(self) -> None:
        """Drop finished writes; re-raise the first failure (once) in the caller's thread."""
        while self._pending and self._pending[0].done():
            self._pending.pop(0).result()

    def _submit(self) -> None:
        self._last = time.monotonic()
        if self._failed:
            self._buf = []
        if not self._buf:
            return
        rows, self._buf = self._buf, []
        if self.max_rows is not None:
            self._target = min(self._target * 2, max(self.max_rows, self.flush_rows))
        name = f"part-{_part_stamp()}-{self.run_id}-{self._seq:05d}"
        self._seq += 1
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="raw-writer")
        self._pending.append(self._pool.submit(self._write, rows, name + ".parquet"))

    def _write(self, rows: list[dict[str, Any]], name: str) -> None:
        if self._failed:  # an earlier part failed: later ones must not land after the gap
            return
        table = pa.Table.from_pylist(rows, schema=RAW_SCHEMA)
        try:
            with atomic_path(self.directory / name) as tmp:
                pq.write_table(table, tmp, compression="zstd")
        except UserError:  # atomic_path's one-line error; the temp part is already removed
            self._failed = True
            raise
        except OSError as e:  # the temp part is gone (atomic_path); committed parts are intact
            self._failed = True
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                raise UserError(
                    f"{self.directory}: cannot write raw-run part ({os.strerror(e.errno)}); "
                    "rows already stored are intact, free space and rerun to resume"
                ) from e
            raise
        except BaseException:
            self._failed = True
            raise
        with self._lock:
            self.rows_written += len(rows)
            self.parts.append((name, len(rows)))

    def flush(self) -> None:
        """Write everything buffered and wait until it is on disk (or raise why not)."""
        self._submit()
        pending, self._pending = self._pending, []
        first: BaseException | None = None
        for f in pending:
            try:
                f.result()
            except BaseException as e:  # keep waiting: no write may outlive this call
                first = first or e
        if first is not None:
            raise first

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


def _corrupt(path: Path, e: Exception | str) -> UserError:
    """The one-line error for a part that is not valid Parquet or lacks a raw column."""
    return UserError(f"{path}: corrupt raw-run part ({str(e).splitlines()[0]})")


def read_raw(paths: Sequence[Path]) -> pa.Table:
    """Concatenate parts; a part that is not valid Parquet is a one-line user error."""
    tables = []
    for p in paths:
        try:
            t = pq.read_table(p, schema=RAW_SCHEMA)
        except (pa.ArrowInvalid, OSError) as e:
            raise _corrupt(p, e) from e
        tables.append(t)
    if not tables:
        return RAW_SCHEMA.empty_table()
    return pa.concat_tables(tables)


_HELD: dict[tuple[str, int, int], pa.Table] = {}
"""The parts the last ``latest_records`` call read whole (a small project's: every column),
by path, mtime and size, for ``read_columns`` in the same process: the analysis summarises
every attempt row of the parts it has just read (``stages.pipeline.completeness``), and
opening 128 small parts again was a sixth of ``sealedeval analyze golden``. Parts are never
rewritten in place (a new part is a new file); the stat key guards the rest."""


def _held_key(p: Path) -> tuple[str, int, int]:
    try:
        st = p.stat()
    except OSError:
        return (str(p), -1, -1)
    return (str(p), st.st_mtime_ns, st.st_size)


def read_columns(paths: Sequence[Path], columns: Sequence[str]) -> pa.Table:
    """Some columns of every part, read file by file.

    ``sealedeval run`` scans the stored keys at every start; ``pq.read_table`` goes through
    ``pyarrow.dataset``, whose import (with pandas) was a third of the CLI's start-up.
    """
    schema = pa.schema([RAW_SCHEMA.field(c) for c in columns])
    tables = []
    for p in paths:
        held = _HELD.get(_held_key(p))
        try:
            t = held if held is not None else pq.ParquetFile(p).read(columns=list(columns))
        except (pa.ArrowInvalid, OSError) as e:
            raise _corrupt(p, e) from e
        missing = [c for c in columns if c not in t.column_names]
        if missing:  # ParquetFile.read skips unknown columns silently
            raise _corrupt(p, f"no column {missing[0]!r}")
        t = t.select(list(columns))
        tables.append(t.cast(schema) if t.schema != schema else t)
    return pa.concat_tables(tables) if tables else schema.empty_table()


_INDEX = {c: i for i, c in enumerate(_COLUMNS)}
# String columns read dictionary-encoded, so equal values become one shared Python object:
# prompts, params, models, conditions, statuses and most answers repeat across rows. Keys,
# response bodies (each has its own id) and timestamps are unique per row, and decoding them
# through a dictionary only costs time and a pool entry per row (~160 MB at a million rows).
_UNIQUE = ("request_key", "response", "started_at", "finished_at")
_SHARED = [f.name for f in RAW_SCHEMA if pa.types.is_string(f.type) and f.name not in _UNIQUE]


class RawRecord(Mapping[str, Any]):
    """One raw row, read-only: a Mapping over a tuple in RAW_SCHEMA order.

    Publishing a million rows as dicts took ~1.2 KB each before any grading; a slotted object
    over a tuple is ~0.35 KB, and the reader below shares every repeated string (model,
    condition, messages, identical answers) between rows instead of copying it per row.
    """

    __slots__ = ("_v",)

    def __init__(self, values: tuple[Any, ...]) -> None:
        self._v = values

    def __getitem__(self, key: str) -> Any:
        return self._v[_INDEX[key]]

    def get(self, key: str, default: Any = None) -> Any:
        i = _INDEX.get(key)
        return default if i is None else self._v[i]

    def __contains__(self, key: object) -> bool:
        return key in _INDEX

    def __iter__(self) -> Iterator[str]:
        return iter(_COLUMNS)

    def __len__(self) -> int:
        return len(_COLUMNS)

    def __repr__(self) -> str:
        return f"RawRecord({dict(zip(_COLUMNS, self._v, strict=True))!r})"


_POOL_INTS = 1024
"""From this many values in a batch, integer columns are read through a pool (``_pylist``)."""


def _pylist(arr: pa.Array | pa.ChunkedArray, pool: dict[Any, Any]) -> list[Any]:
    """Column → Python values; dictionary-encoded strings come out as shared objects."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.DictionaryArray) and arr.null_count == 0:
        uniq = [pool.setdefault(v, v) for v in arr.dictionary.to_pylist()]
        return [uniq[i] for i in arr.indices.to_pylist()]
    if pa.types.is_integer(arr.type) and arr.null_count == 0 and len(arr) >= _POOL_INTS:
        # Repeat numbers and counts repeat across rows: one shared int per value, not one
        # 28-byte object per row (280 MB of `repeat` at 10,000,000 rows), where a part's
        # values are mostly repeats (else pooling only grows the pool).
        import numpy as np

        values_np, inverse = np.unique(arr.to_numpy(), return_inverse=True)
        if len(values_np) * 4 <= len(arr):
            uniq = [pool.setdefault(v, v) for v in values_np.tolist()]
            return [uniq[i] for i in inverse.tolist()]
    values: list[Any] = arr.to_pylist()
    return values


def _column_batches(paths: Sequence[Path], batch_rows: int) -> Iterator[list[list[Any]]]:
    """Each batch of the parts, in order, as Python columns in RAW_SCHEMA order.

    A part that is not valid Parquet, or lacks a raw column, is a one-line user error.
    """
    pools: list[dict[Any, Any]] = [{} for _ in _COLUMNS]
    for p in paths:
        pf = _open_part(p)
        try:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=list(_COLUMNS)):
                yield [_pylist(batch.column(c), pools[i]) for i, c in enumerate(_COLUMNS)]
        except (pa.ArrowInvalid, OSError) as e:
            raise _corrupt(p, e) from e


def iter_raw(paths: Sequence[Path], *, batch_rows: int = 65_536) -> Iterator[RawRecord]:
    """Rows of the parts in order (file by file, row by row), one batch in memory at a time."""
    for cols in _column_batches(paths, batch_rows):
        for values in zip(*cols, strict=True):
            yield RawRecord(values)


def all_true(col: pa.Array | pa.ChunkedArray) -> bool:
    """Like ``all(values)`` over a boolean column: null counts as false, empty is true.

    (No ``fill_null(col, False)``: turning a Python value into an Arrow scalar imports pandas,
    ~0.3 s of every ``sealedeval run``'s start-up; ``pyarrow.compute`` is imported here, not at
    module import: ~0.1 s that the stage commands reading no attempt summary do not pay.)"""
    import pyarrow.compute as pc

    return col.null_count == 0 and bool(pc.all(col, min_count=0).as_py())


def part_rows(path: Path) -> int:
    """Row count from the part's footer (no data read); unreadable → one-line user error."""
    try:
        return int(pq.read_metadata(path).num_rows)
    except (pa.ArrowInvalid, OSError) as e:
        raise _corrupt(path, e) from e


Row = TypeVar("Row", bound=Mapping[str, Any])


def _rank(row: Mapping[str, Any]) -> tuple[int, str, str]:
    return (1 if row["status"] == "ok" else 0, row["finished_at"], row["request_key"])


def latest_rows(rows: Iterable[Row]) -> dict[str, Row]:
    """One row per request key: the ok one if any (first ok wins), else the latest attempt."""
    best: dict[str, Row] = {}
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


_SELECT = ("request_key", "status", "finished_at", "engine")
"""What choosing the latest row per key reads of every attempt; other columns wait."""


class _LatestColumns:
    """The columns of the latest rows, each read from the parts on its first access.

    ``take`` holds, in output order, each chosen row's position among all rows of ``paths``
    (parts concatenated in order). A column nobody asks for is never turned into Python
    objects: at a million rows the response bodies, prompts and timestamps were ~0.8 KB a row
    that grading and analysis never read (``benchmarks/scale.py``). Parts are append-only and
    never rewritten, so a column read later holds what it held when the rows were chosen; a
    part removed meanwhile is the same one-line error as a corrupt one.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        sizes: Sequence[int],
        take: Any,
        tables: Sequence[pa.Table] | None = None,
    ) -> None:
        import numpy as np

        self._paths = list(paths)
        self._n = len(take)
        self.loaded: dict[str, Sequence[Any]] = {}
        self.by_column = False  # never every column at once (``rows_at``)
        self.eager = self._n <= _EAGER_ROWS
        self.held: pa.Table | None = None  # columns already read (``rows_at``)
        # per part: the output slots its chosen rows fill, their rows within the part and the
        # part's table when it was read whole (else it is read again, by column, on demand)
        self._parts: list[tuple[Path, Any, Any, pa.Table | None]] = []
        by_part = np.argsort(take, kind="stable")  # output slots in read order
        bounds = np.searchsorted(take[by_part], np.cumsum([0, *sizes]))
        for i, (p, start) in enumerate(zip(self._paths, np.cumsum([0, *sizes[:-1]]), strict=True)):
            where = by_part[bounds[i] : bounds[i + 1]]
            if len(where):
                held = tables[i] if tables is not None else None
                local = (take[where] - start).astype(np.int32 if sizes[i] < 2**31 else np.int64)
                self._parts.append((p, where, pa.array(local), held))

    def subset(self, at: Any) -> _LatestColumns:
        """The columns of the latest rows at output positions ``at`` (ascending numpy
        integers), in that order, none read yet: report.html's 100,000 samples of ten million
        latest rows read their prompts and answers from those rows only (every row's was
        ~1 GB at ten million rows)."""
        import numpy as np

        out = copy.copy(self)
        out._n = len(at)
        out.loaded = {}
        out._parts = []
        if self.held is not None:
            out.held = self.held.take(pa.array(np.asarray(at, dtype=np.int64)))
        else:
            out.eager = not self.by_column and out._n <= _EAGER_ROWS
        for p, where, local, held in self._parts:
            slot = np.searchsorted(at, where)
            hit = at[np.minimum(slot, max(len(at) - 1, 0))] == where if len(at) else slot < 0
            if hit.any():
                mine = pa.array(np.asarray(local)[hit])
                out._parts.append((p, slot[hit], mine, held))
        return out

    def column(self, i: int) -> Sequence[Any]:
        name = _COLUMNS[i]
        col = self.loaded.get(name)
        if col is None and self.held is not None and name in self.held.column_names:
            col = self.loaded[name] = gathered(name, self.held.column(name))
        if col is None:
            # a few rows in many parts (a small project's runs): every column in one read
            # per part, as a file open and a read per part and column cost more than the
            # values (1.7 s of 3 s of `sealedeval analyze golden` on 130 parts of 946 rows)
            self.loaded.update(self._load(list(_COLUMNS) if self.eager else [name]))
            col = self.loaded[name]
        return col

    def _load(self, names: list[str]) -> dict[str, Sequence[Any]]:
        """The columns ``names`` of the latest rows, each in its compact form (``_Gather``)."""
        gathers = {n: _Gather(n, self._n) for n in names}
        for p, where, local, held in self._parts:
            try:
                if held is not None:
                    t = held.select(names).take(local)
                else:
                    pf = pq.ParquetFile(p, read_dictionary=[n for n in names if n in _SHARED])
                    t = _read_rows(pf, names, local)
            except (pa.ArrowInvalid, OSError, KeyError) as e:
                raise _corrupt(p, e) from e
            for n in names:
                gathers[n].add(where, t.column(n))
        return {n: g.done() for n, g in gathers.items()}


def _read_rows(pf: pq.ParquetFile, names: list[str], local: pa.Array) -> pa.Table:
    """Columns ``names`` of a part's rows ``local``: from the row groups that hold them only,
    when that is not all of them (a few rows of a part, e.g. each engine's identity at its
    first row, read a whole column of 100,000 identities before)."""
    import numpy as np

    md = pf.metadata
    if md.num_row_groups > 1:
        sizes = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)])
        starts = np.concatenate([[0], np.cumsum(sizes)])
        rows = np.asarray(local, dtype=np.int64)
        group = np.searchsorted(starts, rows, side="right") - 1
        wanted = np.unique(group)
        if len(wanted) < md.num_row_groups:
            # each row's place among the wanted groups' rows, read one after another
            before = np.cumsum(sizes[wanted]) - sizes[wanted]
            at = rows - starts[group] + before[np.searchsorted(wanted, group)]
            return pf.read_row_groups(wanted.tolist(), columns=names).take(pa.array(at))
    return pf.read(columns=names).take(local)


class _Gather:
    """One latest-rows column filled part by part (``where``: the output slots of a part's
    chosen rows), then held in the least memory that gives each row's value back:

    - hex request keys as their bytes (``HexKeys``, 16 bytes a key against ~90 as a ``str``
      in a list: 1 GB at ten million rows);
    - repeated strings (conditions, items, models, answers), booleans and integers with few
      distinct values as 1-, 2- or 4-byte codes into the distinct values (``Coded``: a list
      was 8 bytes a row per column, ~80 MB a column read at ten million rows);
    - floats (cost, latency) as doubles while none is null (a 24-byte float object and a
      pointer a row as a list);
    - other integers as 8-byte machine ints; whatever else (unique strings, a null among
      floats or integers) as a list, one Python value a row, as before.
    """

    def __init__(self, name: str, n: int) -> None:
        import numpy as np

        self.name, self.n = name, n
        field = RAW_SCHEMA.field(name)
        self.kind = (
            "key"
            if name == "request_key"
            else "float"
            if pa.types.is_float64(field.type)
            else "int"
            if pa.types.is_integer(field.type)
            else "coded"
            if name not in _UNIQUE
            else "list"
        )
        self.packed: Any = None
        # numbers are written into the array the column will be (no copy at the end)
        self.store: array[Any] = array("d" if self.kind == "float" else "q", [0]) * (
            n if self.kind in ("float", "int") else 0
        )
        self.numbers: Any = np.frombuffer(
            self.store, dtype=np.float64 if self.kind == "float" else np.int64
        )
        self.codes: Any = np.zeros(n, dtype=np.uint32) if self.kind == "coded" else None
        self.index: dict[Any, int] = {}
        self.plain: list[Any] | None = [None] * n if self.kind == "list" else None

    def _to_plain(self) -> list[Any]:
        """From here on (a null among numbers, keys that are not hex): a list, the rows so far
        given back their values."""
        if self.plain is None:
            have = self._compact()
            self.plain = list(have) if have is not None else [None] * self.n
            self.packed = self.codes = None
        return self.plain

    def add(self, where: Any, col: pa.ChunkedArray) -> None:
        import numpy as np

        if self.plain is not None:
            for j, v in zip(where.tolist(), _pylist(col, {}), strict=True):
                self.plain[j] = v
            return
        if self.kind == "key":
            packed = hex_packed(col)
            width = None if self.packed is None else self.packed.shape[1]
            if packed is not None and width in (None, packed.shape[1]):
                if self.packed is None:
                    self.packed = np.zeros((self.n, packed.shape[1]), dtype=np.uint8)
                self.packed[where] = packed
                return
            self._to_plain()
            return self.add(where, col)
        if self.kind in ("float", "int"):
            if col.null_count:
                self._to_plain()
                return self.add(where, col)
            self.numbers[where] = col.to_numpy()
            return
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if isinstance(arr, pa.DictionaryArray):
            distinct = arr.dictionary.to_pylist()
            indices = arr.indices
            if arr.null_count:
                indices = indices.fill_null(len(distinct))
                distinct.append(None)
            index = self.index
            mine = np.array([index.setdefault(v, len(index)) for v in distinct], dtype=np.uint32)
            self.codes[where] = mine[indices.to_numpy()]
            return
        index = self.index
        self.codes[where] = np.fromiter(
            (index.setdefault(v, len(index)) for v in arr.to_pylist()), dtype=np.uint32
        )

    def _compact(self) -> Sequence[Any] | None:
        """The column as gathered so far in its compact form (None: nothing gathered)."""

        if self.kind == "key":
            return None if self.packed is None else HexKeys(self.packed)
        if self.kind == "coded":
            return Coded(code_array(self.codes, len(self.index)), list(self.index))
        if self.kind == "float" or not self.n:
            return self.store
        # integers within a span of _CODED_INTS (repeat numbers, token counts, attempts) as
        # their offsets from the least: codes into the span's values, no sort of the rows
        low, high = int(self.numbers.min()), int(self.numbers.max())
        if high - low < _CODED_INTS:
            import numpy as np

            span = high - low + 1
            # the offsets a slice at a time into their narrow type: ``numbers - low`` whole
            # was a second 8-byte column (80 MB at ten million rows, at the analysis's peak)
            narrow = np.empty(self.n, dtype=np.uint8 if span <= 1 << 8 else np.uint16)
            for s in range(0, self.n, _OFFSET_STEP):
                np.subtract(
                    self.numbers[s : s + _OFFSET_STEP],
                    low,
                    out=narrow[s : s + _OFFSET_STEP],
                    casting="unsafe",
                )
            return Coded(code_array(narrow, span), list(range(low, high + 1)))
        return self.store

    def done(self) -> Sequence[Any]:
        if self.plain is not None:
            return self.plain
        out = self._compact()
        return out if out is not None else []


_CODED_INTS = 1 << 16
"""Up to this many distinct values an integer column is held as codes (2 bytes a row at
most), beyond it as 8-byte ints."""

_OFFSET_STEP = 1 << 20
"""Rows of an integer column turned into codes per step (``_Gather._compact``)."""


_FLOATS = frozenset(f.name for f in RAW_SCHEMA if pa.types.is_float64(f.type))
"""Raw columns held as doubles (``_LatestColumns._load``)."""

_EAGER_ROWS = 50_000
"""Up to this many latest rows, the first column asked for brings every column (~60 MB)."""


class LatestRecord(RawRecord):
    """One latest raw row: a read-only Mapping over the shared, lazily read columns."""

    __slots__ = ("_c", "_i")

    def __init__(self, columns: _LatestColumns, i: int) -> None:
        self._c = columns
        self._i = i

    def __getitem__(self, key: str) -> Any:
        col = self._c.loaded.get(key)  # inlined: this runs a dozen times per row graded
        return (self._c.column(_INDEX[key]) if col is None else col)[self._i]

    def get(self, key: str, default: Any = None) -> Any:
        col = self._c.loaded.get(key)
        if col is None:
            if key not in _INDEX:
                return default
            col = self._c.column(_INDEX[key])
        return col[self._i]

    def __repr__(self) -> str:
        return f"RawRecord({dict(self)!r})"


def latest_records(paths: Sequence[Path], *, batch_rows: int = 65_536) -> Sequence[RawRecord]:
    """One row per request key, in a canonical order (so everything downstream is stable).

    The same rows as ``latest_rows(read_raw(paths).to_pylist())`` sorted by (engine, key): the
    ok one if any (the first ok read wins), else the latest attempt (ties: the first read).
    The choice is made column-wise on the four columns it needs (``_latest_hex``, else
    ``_latest_arrow``); the rows are ``LatestRecord``s over columns read only when first asked
    for, made on access (``LatestRows``). ``batch_rows`` is kept for callers; reading is per
    part.
    """
    sizes = []
    for p in paths:
        pf = _open_part(p)
        sizes.append(pf.metadata.num_rows)
    # A small project's runs (a few rows in many parts): every column in this one read per
    # part, kept for the columns asked for later; opening each part twice was a third of
    # reading them (`sealedeval analyze golden`: 125 parts of ~3 rows per engine). A large
    # one's parts are opened again when read: an open reader holds ~2 MB of buffers (200 MB
    # for the 100 parts of 10,000,000 rows).
    eager = sum(sizes) <= _EAGER_ROWS
    held: dict[int, pa.Table] = {}
    _HELD.clear()

    def part(i: int) -> pa.Table:
        t = held.get(i)
        if t is None:
            try:
                t = _open_part(paths[i]).read(columns=list(_COLUMNS if eager else _SELECT))
            except (pa.ArrowInvalid, OSError) as e:
                raise _corrupt(paths[i], e) from e
            if eager:
                held[i] = t
                _HELD[_held_key(paths[i])] = t
        return t.select(list(_SELECT))

    if eager:
        for i in range(len(paths)):
            part(i)
    if sum(sizes) == 0:
        return []
    chosen = _latest_hex(part, sizes)
    if chosen is None:
        chosen = _latest_arrow([part(i) for i in range(len(paths))])
    tables = [held[i] for i in range(len(paths))] if eager else None
    cols = _LatestColumns(paths, sizes, chosen, tables)
    return LatestRows(cols, len(chosen))


def choice_columns(p: Path) -> pa.Table:
    """What choosing the latest rows reads of one part (``_SELECT``); a part that is not valid
    Parquet, or lacks a raw column, is a one-line user error."""
    try:
        return _open_part(p).read(columns=list(_SELECT))
    except (pa.ArrowInvalid, OSError) as e:
        raise _corrupt(p, e) from e


def rows_at(
    paths: Sequence[Path],
    sizes: Sequence[int],
    take: Any,
    held: pa.Table | None = None,
    *,
    by_column: bool = False,
) -> LatestRows:
    """The rows at positions ``take`` (numpy integers) among all rows of ``paths`` (parts of
    ``sizes`` rows, concatenated in order), in that order, as latest rows: none of their
    columns read until asked for (``LatestRows``).

    ``held``: some of their columns already read (a row each, in ``take``'s order; a bucket's
    columns carried through its spill file, ``store.buckets``), each turned into its compact
    form when first asked for; the others are read from the parts one column at a time
    (never every column at once: the rows may be a few of many parts' rows). ``by_column``:
    the same for the rows' columns without ``held`` (a few rows spread over many parts,
    whose every column would be the parts' every column's row groups)."""
    cols = _LatestColumns(paths, sizes, take)
    if held is not None and held.num_rows != len(take):
        raise ValueError("held columns must have a row per position taken")
    if by_column or held is not None:
        cols.by_column, cols.eager, cols.held = True, False, held
    return LatestRows(cols, len(take))


def gathered(name: str, col: pa.ChunkedArray) -> Sequence[Any]:
    """Raw column ``name`` (a value per row) in the compact form latest rows hold it in
    (``_Gather``): the same values as reading it from the parts."""
    import numpy as np

    arr = col.combine_chunks()
    if name in _SHARED and pa.types.is_string(arr.type):
        arr = arr.dictionary_encode()  # one Python object per distinct value, as a part read
    g = _Gather(name, len(arr))
    g.add(np.arange(len(arr)), pa.chunked_array([arr], type=arr.type))
    return g.done()


def _open_part(p: Path) -> pq.ParquetFile:
    """A part's reader, its string columns but unique ones read dictionary-encoded; a part
    that is not valid Parquet, or lacks a raw column, is a one-line user error."""
    try:
        pf = pq.ParquetFile(p, read_dictionary=_SHARED)
    except (pa.ArrowInvalid, OSError) as e:
        raise _corrupt(p, e) from e
    missing = set(_COLUMNS) - set(pf.schema_arrow.names)
    if missing:
        raise _corrupt(p, f"no column {sorted(missing)[0]!r}")
    return pf


def _latest_arrow(tables: Sequence[pa.Table]) -> Any:
    """``latest_records``' choice for any keys: a sort in Arrow on key, ok first, then
    finished_at descending, then read order; the first row of each key wins. Holds the four
    columns of every row at once (~300 B a row with Arrow's sort): the general case."""
    import numpy as np
    import pyarrow.compute as pc

    schema = pa.schema([RAW_SCHEMA.field(c) for c in _SELECT])
    t = pa.concat_tables([tb.cast(schema) if tb.schema != schema else tb for tb in tables])
    n = t.num_rows
    ok = pc.fill_null(pc.equal(t["status"], "ok"), False)
    rank = pa.table(
        {
            "k": t["request_key"],
            "ok": ok,
            "fin": pc.if_else(ok, "", t["finished_at"]),  # among ok rows only read order counts
            "pos": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    order = pc.sort_indices(
        rank,
        sort_keys=[
            ("k", "ascending"),
            ("ok", "descending"),
            ("fin", "descending"),
            ("pos", "ascending"),
        ],
    )
    keys = pc.take(t["request_key"], order)
    first = np.ones(n, dtype=bool)
    if n > 1:
        same = pc.equal(keys.slice(1), keys.slice(0, n - 1))
        first[1:] = ~np.asarray(pc.fill_null(same, False).combine_chunks(), dtype=bool)
    chosen = np.asarray(order)[first]
    by = pa.table(
        {
            "e": pc.take(t["engine"], pa.array(chosen)),
            "k": pc.take(t["request_key"], pa.array(chosen)),
        }
    )
    return chosen[np.asarray(pc.sort_indices(by, [("e", "ascending"), ("k", "ascending")]))]


def _hex_words(col: pa.Array | pa.ChunkedArray) -> Any | None:
    """Keys as big-endian uint64 words, shape (rows, width // 16), when every key is ``width``
    lowercase hex digits (a positive multiple of 16, the same for all; no nulls): equal words
    are equal keys and word order is string order. Else None.

    Request keys are sha256 hex (32 digits, 64 for imported rows): as two words a key is 16
    bytes that numpy sorts, against ~40 B as an Arrow string plus Arrow's sort of them.
    """
    import numpy as np

    packed = hex_packed(col)
    if packed is None or packed.shape[1] % 8:
        return None
    return packed.view(">u8").astype(np.uint64)


class HexPart(NamedTuple):
    """What choosing the latest rows reads of one part whose keys are hex (``hex_part``)."""

    words: Any
    """Key words, shape (rows, width // 16): ``_hex_words``."""
    notok: Any
    """Per row: not an ok answer (bool)."""
    engine: Any
    """Per row: the engine's code (int32) in the caller's ``names``."""
    failed: Any
    """The rows that are not ok (ascending int64 positions within the part)."""
    finished: pa.Array
    """Their finished_at, in that order."""


def hex_part(t: pa.Table, names: dict[str, int]) -> HexPart | None:
    """One part's columns for the hex choice (``_latest_hex``, ``store.buckets``); None when a
    key is not hex of a width of whole words or an engine is null (Arrow's sort takes those).
    ``names`` gives each engine name its code, new names the next code."""
    import numpy as np
    import pyarrow.compute as pc

    w = _hex_words(t["request_key"])
    if w is None:
        return None
    status = t["status"].cast(pa.string())
    ok = pc.fill_null(pc.equal(status, "ok"), False).to_numpy()
    enc = pc.dictionary_encode(t["engine"].cast(pa.string()).combine_chunks())
    if enc.null_count:
        return None  # Arrow's sort places null engines; rare enough to leave to it
    code = np.array(
        [names.setdefault(v, len(names)) for v in enc.dictionary.to_pylist()], dtype=np.int32
    )
    bad = np.flatnonzero(~ok)
    fin = t["finished_at"].take(pa.array(bad)).combine_chunks() if len(bad) else pa.array([])
    return HexPart(w, ~ok, code[enc.indices.to_numpy()], bad, fin.cast(pa.string()))


def engine_ranks(names: Mapping[str, int]) -> Any:
    """Each engine code's rank among the engine names in string order (numpy int32)."""
    import numpy as np

    rank = np.empty(len(names), dtype=np.int32)
    for r, name in enumerate(sorted(names)):
        rank[names[name]] = r
    return rank


class Attempts:
    """Every attempt of a set of keys, column-wise, in read order: what ``choose_latest``
    chooses from. Its columns are let go as the choice no longer needs them."""

    __slots__ = ("engine", "failed", "finished", "notok", "words")

    def __init__(
        self, words: list[Any], notok: Any, engine: Any, failed: Any, finished: pa.ChunkedArray
    ) -> None:
        self.words, self.notok, self.engine = words, notok, engine
        self.failed, self.finished = failed, finished


def choose_latest(a: Attempts, rank: Any) -> Any:
    """The row rule of ``latest_rows`` on hex keys: each key's row (its position in ``a``),
    in (engine rank, key) order. A stable sort on (key, not ok) puts each key's first ok read
    first; a key with failed attempts only takes its latest (Arrow's sort on those rows alone:
    finished_at descending, nulls last, then read order)."""
    import numpy as np
    import pyarrow.compute as pc

    words, notok = a.words, a.notok
    total = len(notok)
    order = np.lexsort((notok, *reversed(words)))  # last key first; stable: read order
    new = np.zeros(total, dtype=bool)
    new[0] = True
    for col in words:
        s = col[order]
        new[1:] |= s[1:] != s[:-1]
        del s
    starts = np.flatnonzero(new)
    del new
    if len(starts) == total:  # every key read once (a run without retries): no choice to make
        first, redo = order, starts[:0]
    else:
        first = order[starts]
        sizes_g = np.diff(starts, append=total)
        redo = np.flatnonzero(notok[first] & (sizes_g > 1))
    a.notok = notok = None
    if len(redo):  # keys with failed attempts only: the latest finished, ties the first read
        size_r = sizes_g[redo]
        gid = np.repeat(np.arange(len(redo)), size_r)
        within = np.arange(int(size_r.sum())) - np.repeat(np.cumsum(size_r) - size_r, size_r)
        members = order[np.repeat(starts[redo], size_r) + within]
        fin = a.finished.take(pa.array(np.searchsorted(a.failed, members)))
        sub = pa.table({"g": gid, "fin": fin, "pos": members})
        so = np.asarray(
            pc.sort_indices(sub, [("g", "ascending"), ("fin", "descending"), ("pos", "ascending")])
        )
        g = gid[so]
        lead = np.ones(len(g), dtype=bool)
        lead[1:] = g[1:] != g[:-1]
        first[redo] = members[so[lead]]
    del order, starts
    by = [rank[a.engine[first]]]
    a.engine = None
    while words:  # each column's chosen rows, the column itself let go
        by.insert(0, words.pop(0)[first])
    return first[np.lexsort(by)]


def _latest_hex(part: Callable[[int], pa.Table], sizes: Sequence[int]) -> Any | None:
    """``latest_records``' choice when every key is hex of one width (``_hex_words``), else
    None: the same rows as ``_latest_arrow``, ~35 B a row instead of ~300.

    Parts are read one at a time into preallocated numpy columns (key words, ok, engine code);
    only failed attempts keep their finished_at (``hex_part``); then ``choose_latest``.
    """
    import numpy as np

    total = sum(sizes)
    words: list[Any] = []
    notok = np.empty(total, dtype=bool)
    engine = np.empty(total, dtype=np.int32)
    names: dict[str, int] = {}
    fail_pos: list[Any] = []
    fail_fin: list[pa.Array] = []
    start = 0
    for i, size in enumerate(sizes):
        if size == 0:
            continue
        h = hex_part(part(i), names)
        if h is None or len(h.notok) != size or (words and h.words.shape[1] != len(words)):
            return None
        n = size
        if not words:
            words = [np.empty(total, dtype=np.uint64) for _ in range(h.words.shape[1])]
        for j, col in enumerate(words):
            col[start : start + n] = h.words[:, j]
        notok[start : start + n] = h.notok
        engine[start : start + n] = h.engine
        if len(h.failed):
            fail_pos.append(h.failed + start)
            fail_fin.append(h.finished)
        start += n
    if start != total or not words:
        return None
    failed = np.concatenate(fail_pos) if fail_pos else np.zeros(0, dtype=np.int64)
    a = Attempts(words, notok, engine, failed, pa.chunked_array(fail_fin, type=pa.string()))
    del words, notok, engine, fail_pos, fail_fin
    return choose_latest(a, engine_ranks(names))


class LatestRows(Sequence[RawRecord]):
    """``latest_records``' rows: a read-only sequence of ``LatestRecord``s made on access,
    that also hands out a whole column (``record_column``).

    A record is two slots over the shared columns, but ten million of them held at once were
    ~1 GB (``benchmarks/scale.py --n 10000000``): nothing keeps a row object alive that nobody
    is looking at. A suite that reads one field of every row takes the column instead.
    """

    __slots__ = ("_n", "latest_columns")

    def __init__(self, columns: _LatestColumns, n: int) -> None:
        self.latest_columns = columns
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> RawRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[RawRecord]: ...
    def __getitem__(self, i: int | slice) -> RawRecord | list[RawRecord]:
        if isinstance(i, slice):
            return [LatestRecord(self.latest_columns, j) for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("latest row index out of range")
        return LatestRecord(self.latest_columns, i)

    def __iter__(self) -> Iterator[RawRecord]:
        c = self.latest_columns
        return (LatestRecord(c, j) for j in range(self._n))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same rows (as the list it used to be)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[RawRecord]) -> list[RawRecord]:
        """A list of both (as the list it used to be)."""
        return [*self, *other]

    def __radd__(self, other: Sequence[RawRecord]) -> list[RawRecord]:
        return [*other, *self]

    def subset(self, at: Sequence[int] | Any) -> LatestRows:
        """The rows at positions ``at`` (ascending ints, or a numpy array of them), as rows
        of their own whose columns are read from those rows only (``_LatestColumns.subset``)."""
        import numpy as np

        where = np.asarray(at, dtype=np.int64)
        if len(where) and (np.any(np.diff(where) <= 0) or where[0] < 0 or where[-1] >= self._n):
            raise IndexError("latest row positions must ascend within the rows")
        return LatestRows(self.latest_columns.subset(where), len(where))

    def __repr__(self) -> str:
        return f"LatestRows({self._n} rows)"


class RowsAt(Sequence[Row]):
    """Some rows of a sequence, by position (``array('I')``, 4 bytes a row), read on access.

    An analysis that splits a million latest rows into lists by engine and condition held one
    list slot per row per list and, over ``LatestRows``, one record per slot; a view holds the
    positions only and hands each row out when it is read."""

    __slots__ = ("_at", "_rows")

    def __init__(self, rows: Sequence[Row], at: Iterable[int] = ()) -> None:
        self._rows = rows
        self._at = at if isinstance(at, array) else array("I", at)

    @property
    def positions(self) -> array[int]:
        """The rows' positions in the underlying rows (do not change them)."""
        return self._at

    @property
    def base(self) -> Sequence[Row]:
        """The underlying rows (a column reader takes their columns at ``positions``)."""
        return self._rows

    def append(self, i: int) -> None:
        """Add the row at position ``i`` of the underlying rows (building the view)."""
        self._at.append(i)

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> RowsAt[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | RowsAt[Row]:
        if isinstance(i, slice):
            return RowsAt(self._rows, self._at[i])
        return self._rows[self._at[i]]

    def __iter__(self) -> Iterator[Row]:
        rows = self._rows
        return (rows[i] for i in self._at)

    def __add__(self, other: Sequence[Row]) -> Sequence[Row]:
        if isinstance(other, RowsAt) and other._rows is self._rows:
            return RowsAt(self._rows, self._at + other._at)
        return [*self, *other]

    def __radd__(self, other: Sequence[Row]) -> Sequence[Row]:
        return [*other, *self]


def record_column(rows: Sequence[Mapping[str, Any]], name: str) -> Sequence[Any]:
    """``[r[name] for r in rows]``: the shared column itself (no copy: do not change it) when
    ``rows`` are ``latest_records``' own, else the values gathered row by row."""
    if isinstance(rows, LatestRows) and name in _INDEX:
        return rows.latest_columns.column(_INDEX[name])
    if isinstance(rows, RowsAt) and isinstance(rows.base, LatestRows) and name in _INDEX:
        return at_positions(rows.base.latest_columns.column(_INDEX[name]), rows.positions)
    return [r[name] for r in rows]
