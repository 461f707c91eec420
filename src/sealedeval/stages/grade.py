"""The grade stage: latest raw row per key (+ items) → graded rows.

A pure function of the raw rows and the sealed rubric. Every graded row names the suite and its
version beside the grader and its version, so a graded file says what produced each verdict.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from sealedeval.config import Config
from sealedeval.plugins import GradeContext, Suite, hook, suite_info
from sealedeval.stages.artifacts import GradedRows, graded_column
from sealedeval.store.columns import Coded, HexKeys, code_array, codes_view
from sealedeval.store.raw import record_column

BASE_COLUMNS = (
    "request_key",
    "engine",
    "item_id",
    "condition",
    "repeat",
    "status",
    "grader",
    "grader_version",
    "score",
    "passed",
    "category",
    "details",
)
"""What every suite's graded row carries; suites add scalar columns of their own."""

PROVENANCE_COLUMNS = ("suite", "suite_version")
_BASE = frozenset(BASE_COLUMNS)


def graded_row(
    raw: Mapping[str, Any],
    *,
    grader: str,
    grader_version: str,
    score: float | None,
    passed: bool,
    category: str,
    details: str | Mapping[str, Any],
    condition: str | None = None,
    status: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One graded row: the raw row's identity (key, engine, item, condition, repeat, status),
    the verdict, then the suite's own scalar columns (``extra``), in ``BASE_COLUMNS`` order.

    Every suite builds its rows here, so a graded file's first columns are the same for all
    suites and a new base column is added in one place. ``condition`` and ``status`` override
    the raw row's (a call graded as several stages; a score missing from an ok row)."""
    return {
        "request_key": raw["request_key"],
        "engine": raw["engine"],
        "item_id": raw["item_id"],
        "condition": raw["condition"] if condition is None else condition,
        "repeat": int(raw["repeat"]),
        "status": raw["status"] if status is None else status,
        "grader": grader,
        "grader_version": grader_version,
        "score": score,
        "passed": passed,
        "category": category,
        "details": details,
        **extra,
    }


class Verdict(NamedTuple):
    """One grader's verdict on one raw row: the part of a graded row that is not the raw
    row's identity (``graded_row`` without ``raw``; ``details`` as canonical JSON text)."""

    grader: str
    grader_version: str
    score: float | None
    passed: bool
    category: str
    details: str


IDENTITY_COLUMNS = BASE_COLUMNS[:6]
"""The columns a graded row takes from its raw row (key, engine, item, condition, repeat,
status); the rest are the ``Verdict``."""


def _verdict_key(v: Verdict) -> tuple[Any, ...]:
    """Equal verdicts share one code: by value, but -0.0, NaN, 1 and 1.0 kept apart (a coded
    column must give each row back its own value, ``artifacts._CODABLE``)."""
    s = v.score
    score = (type(s), math.copysign(1.0, s) if isinstance(s, float) else 0, repr(s))
    return (v.grader, v.grader_version, score, type(v.passed), v.passed, v.category, v.details)


class GradedTable:
    """A graded table built column-wise, one raw row at a time: each graded row is stored as
    its raw row's index (the identity columns are the raw columns themselves) and a code into
    the distinct verdicts, 8 bytes a row. A suite whose graded rows keep their raw row's
    identity builds its table here (the ``grade_table`` hook) instead of yielding a dict per
    row: at a million answers golden's four million graded dicts were most of the grade
    stage's time and memory (``benchmarks/scale.py``).

    Rows must come in canonical order (``ORDER``: raw rows in ``latest_records``' (engine,
    key) order, each row's verdicts by grader name) for the stage's sort to find nothing to
    do; any order is correct."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self._rows = rows
        self._raw: array[int] = array("I")
        self._codes: array[int] = array("I")
        self._index: dict[tuple[Any, ...], int] = {}
        self._verdicts: list[Verdict] = []

    def code(self, verdict: Verdict) -> int:
        """The verdict's code (a suite may cache codes: ``add_codes``)."""
        key = _verdict_key(verdict)
        code = self._index.get(key)
        if code is None:
            code = self._index[key] = len(self._verdicts)
            self._verdicts.append(verdict)
        return code

    def add(self, i: int, verdicts: Sequence[Verdict]) -> None:
        """Graded rows for raw row ``i``, one per verdict, in this order."""
        self.add_codes(i, [self.code(v) for v in verdicts])

    def add_codes(self, i: int, codes: Sequence[int]) -> None:
        self._raw.extend([i] * len(codes))
        self._codes.extend(codes)

    def done(self) -> GradedRows:
        n = len(self._raw)
        if n == 0:
            return GradedRows([], [], 0)
        columns: list[Sequence[Any]] = []
        for name in IDENTITY_COLUMNS:
            values = record_column(self._rows, name)  # the raw column itself: no copy
            if name == "repeat" and _value_types(values) - {int}:
                values = [int(v) for v in values]
            columns.append(Coded(self._raw, values))
        # one code array for every verdict column, as narrow as the distinct verdicts allow
        codes = code_array(codes_view(self._codes), len(self._verdicts))
        for j in range(len(Verdict._fields)):
            columns.append(Coded(codes, [v[j] for v in self._verdicts]))
        return GradedRows(BASE_COLUMNS, columns, n)


def _value_types(values: Sequence[Any]) -> set[type]:
    """The types of a column's values (of a coded column's distinct values; a machine array
    holds ints or floats)."""
    while isinstance(values, Coded):
        values = values.values
    if isinstance(values, array):
        return {float} if values.typecode == "d" else {int}
    return set(map(type, values))


_CHUNK_ROWS = 1 << 20
"""Graded rows per step of ``by_raw_row`` (bounds its per-row numpy arrays)."""


class _Mapped:
    """``found[codes]``, sliced on demand: each graded row's raw row through its key's code
    (40 million graded rows: the product held whole was 320 MB)."""

    def __init__(self, codes: Any, found: Any) -> None:
        self.codes, self.found = codes, found

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at: slice) -> Any:
        return self.found[self.codes[at]]


def raw_positions(graded: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> Any:
    """Each graded row's raw row: its position among ``rows`` by request key (numpy integers,
    read a slice at a time: ``positions[a:b]``; -1 where no raw row has the key).

    A ``GradedTable`` over these rows already holds them (its identity columns code into the
    raw columns): no key is read. Graded rows read back from their file are matched by key,
    as bytes when both sides hold hex keys (``HexKeys``); else through a dict of the keys."""
    import numpy as np

    gk = graded_column(graded, "request_key")
    rk = record_column(rows, "request_key")
    if isinstance(gk, Coded) and gk.values is rk:
        return gk.code_view()
    if isinstance(gk, Coded) and isinstance(gk.values, HexKeys) and isinstance(rk, HexKeys):
        theirs, mine = gk.values.packed, rk.packed
        if theirs.shape[1] == mine.shape[1]:
            void = np.dtype((np.void, mine.shape[1]))
            keys = mine.view(void).ravel()
            order = np.argsort(keys, kind="stable")
            ordered = keys[order]
            wanted = theirs.view(void).ravel()
            at = np.minimum(np.searchsorted(ordered, wanted), max(len(ordered) - 1, 0))
            hit = ordered[at] == wanted if len(ordered) else np.zeros(len(wanted), dtype=bool)
            found = np.where(hit, order[at] if len(order) else -1, -1)
            return _Mapped(gk.code_view(), found.astype(np.int64))
    index = {k: i for i, k in enumerate(rk)}
    return np.fromiter((index.get(k, -1) for k in gk), dtype=np.int64, count=len(gk))


def by_raw_row(
    graded: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    name: str,
    missing: str,
    *,
    positions: Any = None,
) -> Sequence[str]:
    """Graded column ``name`` (strings) by raw row: each raw row's value, ``missing`` where it
    has no graded row; one byte a raw row while there are at most 255 distinct values.

    A raw row's graded rows (one per grader) carry one category, so which of them is read
    does not matter; where they differ, the last in graded order is the row's (as a dict of
    the graded rows by key would have it). What an analysis reads for every answer row
    instead of a dict keyed by request key (~1 GB at ten million rows). ``positions``:
    ``raw_positions(graded, rows)`` when the caller has them."""
    import numpy as np

    col = graded_column(graded, name)
    pos = raw_positions(graded, rows) if positions is None else positions
    if isinstance(col, Coded) and isinstance(col.values, list):
        distinct = sorted({str(v) for v in col.values} | {missing})
        of_code = np.array([distinct.index(str(v)) for v in col.values], dtype=np.int64)
        codes_of = col.code_view()
    else:
        distinct = sorted({str(v) for v in col} | {missing})
        where = {v: i for i, v in enumerate(distinct)}
        of_code = np.arange(len(distinct), dtype=np.int64)
        codes_of = np.fromiter((where[str(v)] for v in col), dtype=np.int64, count=len(col))
    out = np.full(len(rows), distinct.index(missing), dtype=np.int64)
    for start in range(0, len(pos), _CHUNK_ROWS):
        p = np.asarray(pos[start : start + _CHUNK_ROWS], dtype=np.int64)
        c = of_code[codes_of[start : start + _CHUNK_ROWS]]
        keep = p >= 0
        p, c = p[keep], c[keep]
        out[p] = c
        if not np.array_equal(out[p], c):  # a raw row's graded rows disagree: the last wins
            for i, v in zip(p.tolist(), c.tolist(), strict=True):
                out[i] = v
    return Coded(code_array(out, len(distinct)), distinct)


ORDER = ("engine", "request_key", "grader")
"""The canonical order of graded rows (a stable sort: a suite's order within a key stays)."""


def grade(
    cfg: Config,
    suite: Suite,
    items: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    shared: Mapping[str, Mapping[Any, Any]] | None = None,
) -> GradedRows:
    """Graded rows in a canonical order (engine, request key, grader).

    The suite may return a list or yield its rows one at a time; they are taken into columns
    as they come (``GradedRows``), so a million raw rows never exist as millions of dicts.
    ``shared``: ``rows`` are a chunk of the latest rows, and this what the suite's
    ``grade_scan`` found in all of them (``GradeContext``)."""
    version = str(suite_info(suite.name, cfg)["version"])
    ctx = GradeContext(cfg=cfg, items=items, rows=rows, shared=shared)
    table = hook(suite, "grade_table")
    if table is not None:
        built = table(ctx)
        if not isinstance(built, GradedRows):
            raise ValueError(f"suite {suite.name}: grade_table returned no GradedTable result")
        provenance = {"suite": suite.name, "suite_version": version}
        return built.with_constants(provenance).sorted_by(ORDER)

    def checked() -> Iterator[Mapping[str, Any]]:
        for g in (hook(suite, "iter_grade") or suite.grade)(ctx):
            if not g.keys() >= _BASE:
                missing = [c for c in BASE_COLUMNS if c not in g]
                raise ValueError(f"suite {suite.name}: graded row lacks {missing[0]!r}")
            yield g

    out = GradedRows.from_rows(checked(), {"suite": suite.name, "suite_version": version})
    return out.sorted_by(ORDER)
