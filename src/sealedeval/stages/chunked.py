"""The grade and analyze stages a chunk of the latest rows at a time: memory flat in the rows.

Graded whole, a suite's latest rows and their graded table are in memory together: at ten
million rows the grade stage took 1.05 GB, ~65 bytes a row more than at two million
(``benchmarks/scale.py --stages``, docs/benchmarks.md). Here the attempts are split by key
prefix (``store.buckets``, the suite's ``grade_columns`` carried along), and each *cell* (one
engine's latest rows in one bucket) is graded alone. Cells in (engine, bucket) order are the
canonical order of the latest rows, and a graded table sorted within each cell is sorted
whole, so the cells' graded rows go to the file as they come (``artifacts.GradedChunks``):
the same file, byte for byte, as grading every row at once.

What grading a row reads of other rows (golden: a judge's reply on an answer, in the judge's
own row) is found first, in a pass over every cell (the suite's ``grade_scan``), and handed to
each cell's grading (``GradeContext.shared``).

The analysis reads the same cells (``row_chunks``: a ``plugins.RowChunks``), each with its
rows' categories off its stretch of the graded file, which is in the same order
(``graded_bounds``); ``whole_rows`` gives rows held whole the same face, one stretch per
engine, so a suite writes its analysis once. The seal summary counts by cell as well, an
engine's planned keys matched against its cells' keys bucket by bucket (``planned_missing``).
"""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from sealedeval.config import Config
from sealedeval.plugins import GradeContext, Row, RowChunk, RowChunks, Suite, hook
from sealedeval.stages.artifacts import GradedChunks, graded_column, normalize_graded, read_graded
from sealedeval.stages.grade import by_raw_row, grade, raw_positions
from sealedeval.store.arrow import give_back_memory, pa
from sealedeval.store.buckets import LatestBuckets, latest_buckets
from sealedeval.store.columns import Coded, HexKeys, hex_packed
from sealedeval.store.raw import RowsAt, part_rows, record_column, rows_at

CHUNK_ROWS = 1 << 18
"""Attempts per key-prefix bucket (about: a power of two of buckets) when grading or analysing
by chunk: a cell of 262,144 golden answers is graded in ~0.3 GB (``benchmarks/scale.py
--stages``; docs/benchmarks.md)."""

ItemsFor = Callable[[set[str]], Sequence[Mapping[str, Any]]]
"""The suite's items for the rubric hashes its latest rows carry."""


def chunk_columns(suite: Suite) -> tuple[str, ...] | None:
    """The raw columns a chunk carries for ``suite`` (its ``grade_columns`` and the rubric
    hash, which names its items), or None when the suite grades all rows at once only."""
    columns, scan = hook(suite, "grade_columns"), hook(suite, "grade_scan")
    if columns is None or scan is None:
        return None
    return tuple(dict.fromkeys(("rubric_sha256", *columns())))


def worth_chunking(suite: Suite, files: Sequence[Path]) -> bool:
    """Whether to grade ``suite`` by chunk: it can be, and there are more rows than a chunk."""
    return chunk_columns(suite) is not None and more_than_a_chunk(files)


def more_than_a_chunk(files: Sequence[Path]) -> bool:
    """Whether the parts hold more attempts than a chunk (below that, one chunk is all the
    rows: reading them whole is the same work without the spill)."""
    return sum(part_rows(f) for f in files) > CHUNK_ROWS


@contextmanager
def split(
    suite: Suite, files: Sequence[Path], *, analysis: bool = False, bucket_rows: int | None = None
) -> Iterator[LatestBuckets | None]:
    """The latest rows of ``files`` split by cell, carrying what grading ``suite`` reads and,
    with ``analysis``, what its analysis reads too: the workflow's job grades and then
    analyses from one split (a second one was ~15 s at ten million rows); None when the suite
    is not graded by chunk or the rows cannot be split (keys that are not hex)."""
    columns = chunk_columns(suite)
    if columns is None:
        yield None
        return
    more = hook(suite, "analyze_columns") if analysis else None
    if more is not None:
        columns = tuple(dict.fromkeys((*columns, *more())))
    rows_per = CHUNK_ROWS if bucket_rows is None else bucket_rows
    with latest_buckets(
        files, bucket_rows=rows_per, columns=columns, distinct=("rubric_sha256",)
    ) as lb:
        if lb is not None:
            give_back_memory()  # the split's Arrow buffers
        yield lb


def grade_by_chunk(
    cfg: Config,
    suite: Suite,
    files: Sequence[Path],
    items_for: ItemsFor,
    path: Path,
    meta: Mapping[str, str],
    *,
    bucket_rows: int | None = None,
    lb: LatestBuckets | None = None,
) -> int | None:
    """Grade the latest rows of ``files`` cell by cell and write the graded file at ``path``
    (with ``meta``); the number of graded rows, or None, nothing written, when the rows cannot
    be taken by chunk (keys that are not hex, a suite without the hooks, cells whose graded
    columns disagree in type: ``GradedChunks``) and must be graded whole. ``lb``: the rows
    already split (``split``), else they are split here."""
    columns = chunk_columns(suite)
    scan = hook(suite, "grade_scan")
    if columns is None or scan is None:
        return None
    if lb is not None:
        return _grade_cells(cfg, suite, lb, columns, scan, items_for, path, meta)
    with split(suite, files, bucket_rows=bucket_rows) as own:
        if own is None:
            return None
        return _grade_cells(cfg, suite, own, columns, scan, items_for, path, meta)


def _grade_cells(
    cfg: Config,
    suite: Suite,
    lb: LatestBuckets,
    columns: Sequence[str],
    scan: Callable[[GradeContext], Mapping[str, Mapping[Any, Any]]],
    items_for: ItemsFor,
    path: Path,
    meta: Mapping[str, str],
) -> int | None:
    """Grade ``lb``'s cells (``grade_by_chunk``): what grading reads of other rows found in
    every cell first, then each cell graded and its table written as it comes."""
    cells = [(e, b) for e in range(len(lb.engines)) for b in range(lb.buckets) if lb.counts[e, b]]
    shared: dict[str, dict[Any, Any]] = {}
    for e, b in cells:
        rows = lb.cell(e, b, columns)
        # no items yet: they follow from the rubric hashes, known once every cell is read
        found = scan(GradeContext(cfg=cfg, items=(), rows=rows))
        for name, values in found.items():
            shared.setdefault(name, {}).update(values)
        del rows
        give_back_memory()
    items = items_for({str(h) for h in lb.distinct["rubric_sha256"]})
    with tempfile.TemporaryDirectory(prefix="sealedeval-graded-") as tmp:
        out = GradedChunks(Path(tmp))
        for e, b in cells:
            rows = lb.cell(e, b, columns)
            out.add(normalize_graded(grade(cfg, suite, items, rows, shared)))
            del rows
            give_back_memory()  # the cell's columns and graded table, freed
        if not out.write(path, meta):
            return None
        return out.rows


class _Whole:
    """``RowChunks`` over rows and graded rows held whole: each engine's rows are one stretch
    (what an analysis by chunk reads when the stage has every row at once)."""

    def __init__(self, rows: Sequence[Row], graded: Sequence[Row]) -> None:
        self._rows, self._graded = rows, graded
        self._at_raw = raw_positions(graded, rows)
        self._cats = by_raw_row(graded, rows, "category", "error", positions=self._at_raw)
        self._by: dict[str, array[int]] = {}
        for i, e in enumerate(record_column(rows, "engine")):
            at = self._by.get(e)
            if at is None:
                at = self._by[e] = array("I")
            at.append(i)
        self.engines: Sequence[str] = sorted(self._by)

    def chunks(self, engine: str) -> Iterator[RowChunk]:
        at = self._by[engine]

        def graded_where(local: Sequence[int]) -> list[int]:
            raw = [at[i] for i in local]
            return _graded_of(self._at_raw, raw, graded_column(self._graded, "engine"), engine)

        def graded_rows() -> Sequence[Row]:
            return RowsAt(self._graded, graded_where(range(len(at))))

        yield RowChunk(
            rows=RowsAt(self._rows, at),
            categories=Coded(at, self._cats),
            where=at,
            graded_where=graded_where,
            graded_rows=graded_rows,
        )

    def rows_at(self, where: Sequence[int]) -> Sequence[Row]:
        return RowsAt(self._rows, where)

    def graded_at(self, where: Sequence[int]) -> Sequence[Row]:
        return [self._graded[j] for j in where]


def whole_rows(rows: Sequence[Row], graded: Sequence[Row]) -> RowChunks:
    """The rows and graded rows held whole, as ``RowChunks`` (one stretch per engine)."""
    return _Whole(rows, graded)


def _graded_of(at_raw: Any, raw: Sequence[int], engines: Sequence[str], engine: str) -> list[int]:
    """The graded rows (positions, in graded order) of the raw rows ``raw`` that name
    ``engine``: a chunk of positions at a time (40 million graded rows at ten million raw
    rows)."""
    import numpy as np

    wanted = np.array(sorted(raw), dtype=np.int64)
    out: list[int] = []
    for start in range(0, len(at_raw), _GRADED_STEP):
        hit = np.isin(np.asarray(at_raw[start : start + _GRADED_STEP], dtype=np.int64), wanted)
        out += [j for j in (np.flatnonzero(hit) + start).tolist() if engines[j] == engine]
    return out


_GRADED_STEP = 1 << 20
"""Graded rows per step of ``_graded_of``."""


class _Cells:
    """``RowChunks`` over latest rows chosen by key-prefix bucket (``LatestBuckets``, the
    analysis's columns carried) and the graded file: an engine's stretches are its cells,
    each with the graded rows of its stretch of the file (``graded_bounds``)."""

    def __init__(
        self, lb: LatestBuckets, graded: Path, bounds: Any, columns: Sequence[str]
    ) -> None:
        self._lb, self._path, self._bounds, self._columns = lb, graded, bounds, columns
        self.engines: Sequence[str] = list(lb.engines)

    def chunks(self, engine: str) -> Iterator[RowChunk]:
        import numpy as np

        lb = self._lb
        e = lb.engines.index(engine)
        for b in range(lb.buckets):
            if not lb.counts[e, b]:
                continue
            rows = lb.cell(e, b, self._columns)
            lo, hi = (int(x) for x in self._bounds[e * lb.buckets + b : e * lb.buckets + b + 2])
            graded = read_graded(self._path, np.arange(lo, hi, dtype=np.int64))
            at_raw = raw_positions(graded, rows)
            cats = by_raw_row(graded, rows, "category", "error", positions=at_raw)

            def graded_where(local: Sequence[int], at_raw: Any = at_raw, lo: int = lo) -> list[int]:
                raw = np.asarray(at_raw[0 : len(at_raw)], dtype=np.int64)
                hit = np.isin(raw, np.asarray(sorted(local), dtype=np.int64))
                return (np.flatnonzero(hit) + lo).tolist()

            yield RowChunk(
                rows=rows,
                categories=cats,
                where=lb.cell_positions(e, b),
                graded_where=graded_where,
                graded_rows=_held(graded),
            )
            del rows, graded, at_raw, cats
            give_back_memory()

    def rows_only(self, engine: str) -> Iterator[tuple[Sequence[Row], Sequence[int]]]:
        """The engine's cells' rows and handles, without their graded rows."""
        lb = self._lb
        e = lb.engines.index(engine)
        for b in range(lb.buckets):
            if lb.counts[e, b]:
                yield lb.cell(e, b, self._columns), lb.cell_positions(e, b)

    def rows_at(self, where: Sequence[int]) -> Sequence[Row]:
        import numpy as np

        lb = self._lb
        return rows_at(lb.paths, lb.sizes, np.asarray(where, dtype=np.int64), by_column=True)

    def graded_at(self, where: Sequence[int]) -> Sequence[Row]:
        import numpy as np

        return read_graded(self._path, np.asarray(where, dtype=np.int64))


def _held(rows: Sequence[Row]) -> Callable[[], Sequence[Row]]:
    """A stretch's graded rows, already read, as ``RowChunk.graded_rows``."""
    return lambda: rows


def graded_bounds(lb: LatestBuckets, graded: Path) -> Any | None:
    """Where each cell's graded rows start in the graded file, cells in (engine, bucket)
    order (numpy, one more than the cells: the last is the file's rows), read a row group at
    a time; None when the file is not in that order (a graded row of an engine with no
    latest row, a key that is not hex of the latest rows' width, rows out of order): the
    analysis then reads the rows whole."""
    import numpy as np

    n_cells = len(lb.engines) * lb.buckets
    counts = np.zeros(n_cells, dtype=np.int64)
    rank = {name: i for i, name in enumerate(lb.engines)}
    last = 0
    try:
        pf = pq.ParquetFile(graded)
        for i in range(pf.num_row_groups):
            t = pf.read_row_group(i, columns=["engine", "request_key"])
            eng = t.column("engine").combine_chunks()
            if eng.null_count:
                return None
            coded = eng.dictionary_encode()
            ranks = np.array(
                [rank.get(v, -1) for v in coded.dictionary.to_pylist()], dtype=np.int64
            )
            er = ranks[np.asarray(coded.indices, dtype=np.int64)]
            packed = hex_packed(t.column("request_key"))
            if (er < 0).any() or packed is None or packed.shape[1] != lb.width:
                return None
            cell = er * lb.buckets + lb.bucket_of(packed)
            if len(cell) and (cell[0] < last or (np.diff(cell) < 0).any()):
                return None
            if len(cell):
                last = int(cell[-1])
            counts += np.bincount(cell, minlength=n_cells)
    except (OSError, pa.ArrowInvalid, KeyError):
        return None
    return np.concatenate([[0], np.cumsum(counts)])


@contextmanager
def row_chunks(
    suite: Suite,
    files: Sequence[Path],
    graded: Path,
    *,
    bucket_rows: int | None = None,
    lb: LatestBuckets | None = None,
) -> Iterator[tuple[RowChunks, set[str]] | None]:
    """The latest rows of ``files`` and the graded file as ``RowChunks`` by cell, with the
    rubric hashes the rows carry; None when the suite's analysis reads rows whole only, or
    the rows or the file cannot be taken by cell (``graded_bounds``). ``lb``: the rows
    already split, carrying the analysis's columns (``split``), else they are split here."""
    columns = hook(suite, "analyze_columns")
    if columns is None:
        yield None
        return
    carried = tuple(dict.fromkeys(("rubric_sha256", *columns())))
    if lb is not None:
        bounds = graded_bounds(lb, graded)
        yield None if bounds is None else _found(lb, graded, bounds, carried)
        return
    rows_per = CHUNK_ROWS if bucket_rows is None else bucket_rows
    with latest_buckets(
        files, bucket_rows=rows_per, columns=carried, distinct=("rubric_sha256",)
    ) as own:
        bounds = None if own is None else graded_bounds(own, graded)
        if own is None or bounds is None:
            yield None
            return
        give_back_memory()
        yield _found(own, graded, bounds, carried)


def _found(
    lb: LatestBuckets, graded: Path, bounds: Any, columns: Sequence[str]
) -> tuple[RowChunks, set[str]]:
    return _Cells(lb, graded, bounds, columns), {str(h) for h in lb.distinct["rubric_sha256"]}


def engine_rows(
    src: RowChunks,
) -> Iterator[tuple[str, Iterator[tuple[Sequence[Row], Sequence[int]]]]]:
    """Each engine's rows and their handles, stretch after stretch, without their graded rows
    (what the completeness summary counts)."""
    for engine in src.engines:
        yield engine, stretches(src, engine)


def stretches(src: RowChunks, engine: str) -> Iterator[tuple[Sequence[Row], Sequence[int]]]:
    """One engine's rows and handles, stretch after stretch (by cell: no graded rows read)."""
    if isinstance(src, _Cells):
        return src.rows_only(engine)
    return ((c.rows, c.where) for c in src.chunks(engine))


class EngineRows(Sequence[Row]):
    """All of one engine's latest rows, read only if asked for (a suite's second phase plans
    from them: golden's judge on its own transcripts); then every handle is gathered and the
    rows read by column (``RowChunks.rows_at``)."""

    def __init__(self, src: RowChunks, engine: str) -> None:
        self._src, self._engine = src, engine
        self._rows: Sequence[Row] | None = None

    def _all(self) -> Sequence[Row]:
        if self._rows is None:
            where: list[int] = []
            for _rows, at in stretches(self._src, self._engine):
                where += [int(w) for w in at]
            self._rows = self._src.rows_at(where)
        return self._rows

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._all())


def planned_missing(keys: Iterator[str], src: RowChunks, engine: str) -> int | None:
    """How many distinct ``keys`` (an engine's planned request keys) no latest row of
    ``engine`` has, the keys split by bucket on disk as they come (a set of ten million
    planned keys is ~1 GB); None when ``src`` is not by cell or a key is not hex of the rows'
    width (the caller counts them in a set)."""
    import numpy as np

    if not isinstance(src, _Cells):
        return None
    lb = src._lb
    e = lb.engines.index(engine)
    void = np.dtype((np.void, lb.width))
    with tempfile.TemporaryDirectory(prefix="sealedeval-planned-") as tmp:
        spilled: dict[int, int] = {}
        batch: list[str] = []

        def spill() -> bool:
            packed = hex_packed(pa.array(batch, type=pa.string()))
            batch.clear()
            if packed is None or packed.shape[1] != lb.width:
                return False
            bucket = lb.bucket_of(packed)
            for b in np.unique(bucket).tolist():
                k = spilled.get(b, 0)
                np.save(Path(tmp) / f"p-{b}-{k}.npy", packed[bucket == b])
                spilled[b] = k + 1
            return True

        for key in keys:
            batch.append(key)
            if len(batch) >= _PLANNED_BATCH and not spill():
                return None
        if batch and not spill():
            return None
        missing = 0
        for b, k in sorted(spilled.items()):
            planned = np.unique(
                np.concatenate([np.load(Path(tmp) / f"p-{b}-{j}.npy") for j in range(k)])
                .view(void)
                .ravel()
            )
            missing += len(planned)
            if lb.counts[e, b]:
                have = record_column(lb.cell(e, b), "request_key")
                if not isinstance(have, HexKeys):
                    return None
                missing -= int(np.isin(planned, have.packed.view(void).ravel()).sum())
        return missing


_PLANNED_BATCH = 1 << 20
"""Planned keys packed and split per step of ``planned_missing``."""
