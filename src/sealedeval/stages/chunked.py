"""The grade stage a chunk of the latest rows at a time: its memory does not grow with the rows.

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
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sealedeval.config import Config
from sealedeval.plugins import GradeContext, Suite, hook
from sealedeval.stages.artifacts import GradedChunks, normalize_graded
from sealedeval.stages.grade import grade
from sealedeval.store.arrow import give_back_memory
from sealedeval.store.buckets import latest_buckets
from sealedeval.store.raw import part_rows, record_column

CHUNK_ROWS = 1 << 18
"""Attempts per key-prefix bucket (about: a power of two of buckets) when grading by chunk: a
cell of 262,144 golden answers is graded in ~0.3 GB (``benchmarks/scale.py --stages``)."""

ItemsFor = Callable[[set[str]], Sequence[Mapping[str, Any]]]
"""The suite's items for the rubric hashes its latest rows carry."""


def chunk_columns(suite: Suite) -> tuple[str, ...] | None:
    """The raw columns a chunk carries for ``suite`` (its ``grade_columns`` and the rubric
    hash, which names its items), or None when the suite grades all rows at once only."""
    columns, scan = hook(suite, "grade_columns"), hook(suite, "grade_scan")
    if columns is None or scan is None:
        return None
    return tuple(dict.fromkeys(("rubric_sha256", *columns())))


def worth_chunking(suite: Suite, files: Sequence[Path], bucket_rows: int | None = None) -> bool:
    """Whether to grade ``suite`` by chunk: it can be, and its parts hold more attempts than
    one bucket (below that, one chunk is all the rows: grading them whole is the same work
    without the spill)."""
    limit = CHUNK_ROWS if bucket_rows is None else bucket_rows
    return chunk_columns(suite) is not None and sum(part_rows(f) for f in files) > limit


def grade_by_chunk(
    cfg: Config,
    suite: Suite,
    files: Sequence[Path],
    items_for: ItemsFor,
    path: Path,
    meta: Mapping[str, str],
    *,
    bucket_rows: int | None = None,
) -> int | None:
    """Grade the latest rows of ``files`` cell by cell and write the graded file at ``path``
    (with ``meta``); the number of graded rows, or None, nothing written, when the rows cannot
    be taken by chunk (keys that are not hex, a suite without the hooks, cells whose graded
    columns disagree in type: ``GradedChunks``) and must be graded whole."""
    columns = chunk_columns(suite)
    scan = hook(suite, "grade_scan")
    if columns is None or scan is None:
        return None
    rows_per = CHUNK_ROWS if bucket_rows is None else bucket_rows
    with latest_buckets(files, bucket_rows=rows_per, columns=columns) as lb:
        if lb is None:
            return None
        give_back_memory()  # the split's Arrow buffers
        cells = [
            (e, b) for e in range(len(lb.engines)) for b in range(lb.buckets) if lb.counts[e, b]
        ]
        shared: dict[str, dict[Any, Any]] = {}
        hashes: set[str] = set()
        for e, b in cells:
            rows = lb.cell(e, b)
            hashes.update(str(h) for h in set(record_column(rows, "rubric_sha256")))
            # the items follow from the rubric hashes, known once every cell is read
            found = scan(GradeContext(cfg=cfg, items=(), rows=rows))
            for name, values in found.items():
                shared.setdefault(name, {}).update(values)
            del rows
            give_back_memory()
        items = items_for(hashes)
        with tempfile.TemporaryDirectory(prefix="sealedeval-graded-") as tmp:
            out = GradedChunks(Path(tmp))
            for e, b in cells:
                rows = lb.cell(e, b)
                out.add(normalize_graded(grade(cfg, suite, items, rows, shared)))
                del rows
                give_back_memory()  # the cell's columns and graded table, freed
            if not out.write(path, meta):
                return None
            return out.rows
