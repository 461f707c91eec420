"""The latest row per request key, chosen one key-prefix bucket at a time: memory flat in rows.

``latest_records`` holds every attempt's key while it chooses (~35 B a row: 350 MB at ten
million rows, 3.5 GB at a hundred million). Here the attempts are read part by part and
written to disk by the first bits of their key (request keys are sha256 hex: the buckets are
even), each bucket is chosen alone by the same rule (``raw.choose_latest``), and what a reader
needs afterwards (each bucket's chosen raw positions, its keys sorted) is kept on disk too.
What stays in memory is a bucket's attempts (``BUCKET_ROWS``) and a count per engine and
bucket, whatever the number of rows. The files go to the system's temporary directory
(``TMPDIR``): ~40 bytes an attempt while they are split, ~24 bytes a latest row after.

The canonical order of the latest rows (engine, then key) is engine by engine, and within one
engine bucket after bucket: a bucket is a range of keys. So a position in that order names a
bucket and a row within it (``LatestBuckets.rows_at``) without the order ever being held.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sealedeval.store.arrow import pa
from sealedeval.store.raw import (
    Attempts,
    LatestRows,
    choice_columns,
    choose_latest,
    engine_ranks,
    hex_part,
    part_rows,
    read_columns,
    rows_at,
)
from sealedeval.store.schema import RAW_SCHEMA

BUCKET_ROWS = 1 << 20
"""Attempts per bucket, about (a power of two of buckets): ~40 B each while it is chosen."""

_MAX_BITS = 8
"""At most 256 buckets: each is an open file while the attempts are split, and a process may
have 1,024 (``ulimit -n``). Past ~270 million attempts a bucket holds more than
``BUCKET_ROWS``."""


class LatestBuckets:
    """The latest rows of ``paths``, chosen a bucket at a time, their choice kept in ``dir``.

    ``counts[e, b]``: latest rows of the engine of rank ``e`` (engine names in string order,
    ``engines``) in bucket ``b``; ``columns``: the raw columns carried with each bucket's rows
    (``cell``)."""

    def __init__(
        self,
        paths: Sequence[Path],
        sizes: Sequence[int],
        where: Path,
        engines: list[str],
        counts: Any,
        width: int,
        columns: Sequence[str] = (),
        distinct: dict[str, set[Any]] | None = None,
    ) -> None:
        self.paths, self.sizes, self.dir, self.engines = list(paths), list(sizes), where, engines
        self.counts, self._width, self.columns = counts, width, tuple(columns)
        self.distinct: dict[str, set[Any]] = distinct or {}
        """Each ``distinct`` column's values among the latest rows (``latest_buckets``)."""
        self._keys: tuple[int, Any] | None = None

    def __len__(self) -> int:
        return int(self.counts.sum())

    @property
    def buckets(self) -> int:
        return int(self.counts.shape[1])

    def chosen(self, b: int) -> Any:
        """Bucket ``b``'s latest rows: their positions among all rows of ``paths`` (int64), in
        (engine, key) order."""
        import numpy as np

        return np.load(self.dir / f"pos-{b}.npy")

    def cell_positions(self, e: int, b: int) -> Any:
        """The positions among all rows of ``paths`` of engine ``e``'s latest rows in bucket
        ``b`` (int64), in key order."""
        lo = int(self.counts[:e, b].sum())
        return self.chosen(b)[lo : lo + int(self.counts[e, b])]

    def bucket_of(self, packed: Any) -> Any:
        """Each key's bucket (keys as hex bytes, a row each: ``HexKeys.packed``)."""
        import numpy as np

        packed = np.ascontiguousarray(packed, dtype=np.uint8)
        head = packed[:, :8].copy().view(">u8").ravel().astype(np.uint64)
        return _bucket_of(head, self.buckets)

    def cell(self, e: int, b: int, columns: Sequence[str] | None = None) -> LatestRows:
        """The latest rows of engine ``e`` (its rank) in bucket ``b``, in key order: a stretch
        of the canonical order (engine by engine, bucket after bucket). The carried
        ``columns`` (those of them named, when ``columns`` is given: a split made for two
        readers) come from the bucket's spill file, read once here; any other column is read
        from the parts when asked for."""
        import numpy as np

        take = self.cell_positions(e, b)
        held = None
        wanted = self.columns if columns is None else tuple(c for c in self.columns if c in columns)
        if wanted:
            path = self.dir / f"rows-{b}-{e}.arrow"
            if path.exists():
                fields = [self.columns.index(c) for c in wanted]
                options = pa.ipc.IpcReadOptions(included_fields=fields)
                with pa.OSFile(str(path)) as src:
                    held = pa.ipc.open_file(src, options=options).read_all()
            else:  # the engine has no row in this bucket
                held = pa.table({c: pa.array([], RAW_SCHEMA.field(c).type) for c in wanted})
        return rows_at(self.paths, self.sizes, np.asarray(take, dtype=np.int64), held)

    def rows_at(self, at: Any) -> LatestRows:
        """The latest rows at positions ``at`` (ascending) of the canonical order, in that
        order, none of their columns read yet."""
        import numpy as np

        at = np.asarray(at, dtype=np.int64)
        flat = self.counts.ravel()  # engine-major: (engine, bucket) cells in canonical order
        ends = np.cumsum(flat)
        cell = np.searchsorted(ends, at, side="right")
        if len(at) and (at[-1] >= len(self) or at[0] < 0):
            raise IndexError("latest row position out of range")
        e, b = np.divmod(cell, self.buckets)
        # within a bucket: its rows of lower-ranked engines first
        before = np.cumsum(self.counts, axis=0) - self.counts
        local = at - (ends[cell] - flat[cell]) + before[e, b]
        take = np.empty(len(at), dtype=np.int64)
        for bucket in np.unique(b).tolist():
            mine = np.flatnonzero(b == bucket)
            take[mine] = self.chosen(bucket)[local[mine]]
        return rows_at(self.paths, self.sizes, take)

    def contains(self, packed: Any) -> Any:
        """Which keys (hex bytes, a row each: ``HexKeys.packed``) are latest rows' keys (bool).
        Each bucket's sorted keys are read from disk when a key falls in it; a caller that asks
        in key order (the graded file, engine by engine) reads each bucket once an engine."""
        import numpy as np

        packed = np.ascontiguousarray(packed, dtype=np.uint8)
        out = np.zeros(len(packed), dtype=bool)
        if not len(packed) or packed.shape[1] != self.width:
            return out
        bucket = self.bucket_of(packed)
        void = np.dtype((np.void, packed.shape[1]))
        wanted = packed.view(void).ravel()
        # runs of one bucket, in the order asked (a sorted caller: one run per bucket)
        cut = np.flatnonzero(np.diff(bucket)) + 1
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), len(bucket)], strict=True):
            keys = self._sorted_keys(int(bucket[lo]), void)
            if not len(keys):
                continue
            at = np.minimum(np.searchsorted(keys, wanted[lo:hi]), len(keys) - 1)
            out[lo:hi] = keys[at] == wanted[lo:hi]
        return out

    @property
    def width(self) -> int:
        """Bytes a key (16 for a 32-digit request key)."""
        return self._width

    def _sorted_keys(self, b: int, void: Any) -> Any:
        import numpy as np

        if self._keys is None or self._keys[0] != b:
            self._keys = (b, np.load(self.dir / f"keys-{b}.npy").view(void).ravel())
        return self._keys[1]


def _bucket_of(head: Any, buckets: int) -> Any:
    """Each key's bucket from its first word (uint64, big-endian: string order): its first
    bits (``buckets`` is a power of two)."""
    import numpy as np

    bits = buckets.bit_length() - 1
    if bits == 0:
        return np.zeros(len(head), dtype=np.int64)
    return (head >> np.uint64(64 - bits)).astype(np.int64)


def _bucket_count(total: int, bucket_rows: int) -> int:
    bits = 0
    while (bucket_rows << bits) < total and bits < _MAX_BITS:
        bits += 1
    return 1 << bits


@contextmanager
def latest_buckets(
    paths: Sequence[Path],
    *,
    bucket_rows: int | None = None,
    columns: Sequence[str] = (),
    distinct: Sequence[str] = (),
) -> Iterator[LatestBuckets | None]:
    """The latest rows of ``paths`` chosen by bucket (``LatestBuckets``), their files in a
    temporary directory removed on exit; None when a key is not hex of a whole number of
    words, or of two widths, or an engine is null (``latest_records`` chooses those).

    ``columns`` (raw column names) travel with every attempt through the split, so a bucket's
    rows arrive with them (``cell``) and the parts are read once whatever the number of
    buckets: a bucket's rows are spread over every part, and reading a part's row groups for
    each bucket would read every part once a bucket. They cost disk (zstd) while the buckets
    exist, not memory. ``distinct``: carried columns whose distinct values among the latest
    rows are gathered as the buckets are chosen (``LatestBuckets.distinct``: few values, such
    as the rubric hash the rows were run under)."""
    if not set(distinct) <= set(columns):
        raise ValueError("distinct columns must be carried columns")
    where = Path(tempfile.mkdtemp(prefix="sealedeval-latest-"))
    rows = BUCKET_ROWS if bucket_rows is None else bucket_rows
    try:
        yield _split_and_choose(paths, where, rows, tuple(columns), tuple(distinct))
    finally:
        shutil.rmtree(where, ignore_errors=True)


_SPILL = pa.ipc.IpcWriteOptions(compression="zstd")
"""Spill files are compressed: carried columns (answers) would be ~100 B an attempt."""


def _split_and_choose(
    paths: Sequence[Path],
    where: Path,
    bucket_rows: int,
    columns: tuple[str, ...] = (),
    distinct: tuple[str, ...] = (),
) -> LatestBuckets | None:
    import numpy as np

    sizes = [part_rows(p) for p in paths]
    buckets = _bucket_count(sum(sizes), bucket_rows)
    names: dict[str, int] = {}
    writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
    width = 0
    start = 0
    try:
        for p, size in zip(paths, sizes, strict=True):
            if size == 0:
                continue
            h = hex_part(choice_columns(p), names)
            if h is None or len(h.notok) != size or (width and h.words.shape[1] != width):
                return None
            width = h.words.shape[1]
            fin = pa.nulls(size, pa.string())  # failed rows' finished_at, null for ok rows
            if len(h.failed):
                at = np.full(size, -1, dtype=np.int64)
                at[h.failed] = np.arange(len(h.failed))
                fin = h.finished.take(pa.array(at, mask=at < 0))
            bucket = _bucket_of(h.words[:, 0], buckets)
            order = np.argsort(bucket, kind="stable")  # read order kept within a bucket
            cut = np.searchsorted(bucket[order], np.arange(buckets + 1))
            carried = read_columns([p], columns) if columns else None
            batch = pa.table(
                {
                    **{f"w{j}": h.words[:, j] for j in range(width)},
                    "notok": h.notok,
                    "engine": h.engine,
                    "pos": np.arange(start, start + size, dtype=np.int64),
                    "fin": fin,
                    **({f"c:{c}": carried.column(c) for c in columns} if carried else {}),
                }
            )
            del carried
            for b in np.flatnonzero(np.diff(cut)).tolist():
                rows = batch.take(pa.array(order[cut[b] : cut[b + 1]]))
                w = writers.get(b)
                if w is None:
                    to = str(where / f"spill-{b}.arrow")
                    w = writers[b] = pa.ipc.new_stream(to, rows.schema, options=_SPILL)
                w.write_table(rows)
            start += size
    finally:
        for w in writers.values():
            w.close()
    if not width:
        return None
    import pyarrow.compute as pc

    rank = engine_ranks(names)
    engines = sorted(names)
    found: dict[str, set[Any]] = {}
    counts = np.zeros((len(names), buckets), dtype=np.int64)
    packed_width = width * 8
    for b in range(buckets):
        spill = where / f"spill-{b}.arrow"
        if not spill.exists():
            np.save(where / f"pos-{b}.npy", np.zeros(0, dtype=np.int64))
            np.save(where / f"keys-{b}.npy", np.zeros((0, packed_width), dtype=np.uint8))
            continue
        with pa.OSFile(str(spill)) as src:
            t = pa.ipc.open_stream(src).read_all().combine_chunks()
        spill.unlink()
        notok = t["notok"].to_numpy()
        failed = np.flatnonzero(notok)
        a = Attempts(
            [t[f"w{j}"].to_numpy() for j in range(width)],
            notok,
            t["engine"].to_numpy(),
            failed,
            t["fin"].take(pa.array(failed)),
        )
        first = choose_latest(a, rank)
        pos = t["pos"].to_numpy()[first]
        ranks = rank[t["engine"].to_numpy()[first]]
        counts[:, b] = np.bincount(ranks, minlength=len(names))
        words = np.stack([t[f"w{j}"].to_numpy()[first] for j in range(width)], axis=1)
        keys = words.astype(">u8").view(np.uint8).reshape(len(first), packed_width)
        void = np.dtype((np.void, packed_width))
        keys = keys[np.argsort(keys.view(void).ravel(), kind="stable")]
        if columns:
            _write_cells(where, b, t, first, counts[:, b], columns)
        for c in distinct:
            found.setdefault(c, set()).update(
                pc.unique(t.column(f"c:{c}").take(pa.array(first))).to_pylist()
            )
        del t, a, words
        np.save(where / f"pos-{b}.npy", pos)
        np.save(where / f"keys-{b}.npy", keys)
    return LatestBuckets(paths, sizes, where, engines, counts, packed_width, columns, found)


def _write_cells(
    where: Path, b: int, t: pa.Table, first: Any, counts: Any, columns: tuple[str, ...]
) -> None:
    """Bucket ``b``'s chosen rows' carried columns, a file per engine (``rows-B-E.arrow``):
    ``first`` is in canonical order, so an engine's rows are a stretch of it."""
    import numpy as np

    chosen = t.select([f"c:{c}" for c in columns]).rename_columns(list(columns))
    ends = np.cumsum(counts)
    for e, n in enumerate(counts.tolist()):
        if not n:
            continue
        rows = chosen.take(pa.array(first[ends[e] - n : ends[e]]))
        with pa.ipc.new_file(str(where / f"rows-{b}-{e}.arrow"), rows.schema, options=_SPILL) as w:
            w.write_table(rows)
