"""The files the stages pass: items, graded rows, analyses. Lossless, typed, atomic.

Each writer has a reader that gives back exactly what was written, and each in-memory stage
result is normalised the same way (``normalize_items``, ``normalize_graded``), so a stage that
reads its input from disk and the audit that derives it in memory see identical values.

- ``results/items/S.parquet``: ``item_id`` + ``record`` (canonical JSON of the item), with the
  rubric hash, seed and config hash it was generated under in the schema metadata (a stale file
  is regenerated, never silently used).
- ``results/graded/S.parquet``: one typed column per field. Scalar columns keep their Arrow type
  (string, int64, float64, bool); a column whose values are nested or mix types (an int here, a
  float there) is stored as canonical JSON text and marked in the metadata, so reading it gives
  the same Python values back.
- ``results/analysis/S.json``: canonical JSON ``{"seal": ..., "analysis": ..., "engines": ...}``.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple, overload

import pyarrow.parquet as pq

from sealedeval.canonical import compact, dump
from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path
from sealedeval.store.arrow import pa
from sealedeval.store.columns import (
    Coded,
    HexKeys,
    at_positions,
    code_array,
    codes_view,
    hex_packed,
)
from sealedeval.store.raw import RowsAt

ITEMS_DIR = Path("results/items")
GRADED_DIR = Path("results/graded")
ANALYSIS_DIR = Path("results/analysis")
_JSON_COLUMNS = b"sealedeval.json_columns"
_COLUMN_ORDER = b"sealedeval.columns"


def items_path(root: Path, suite: str) -> Path:
    return root / ITEMS_DIR / f"{suite}.parquet"


def graded_path(root: Path, suite: str) -> Path:
    return root / GRADED_DIR / f"{suite}.parquet"


def analysis_path(root: Path, suite: str) -> Path:
    return root / ANALYSIS_DIR / f"{suite}.json"


# -- items ------------------------------------------------------------------------------------


def normalize_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Items as they read back from the items file: through canonical JSON."""
    out: list[dict[str, Any]] = json.loads(compact(list(items)))
    return out


def item_id(item: Mapping[str, Any]) -> str:
    return str(item.get("id", item.get("item_id", "")))


def write_items(path: Path, items: Sequence[Mapping[str, Any]], meta: Mapping[str, str]) -> None:
    table = pa.table(
        {"item_id": [item_id(i) for i in items], "record": [compact(i) for i in items]}
    )
    table = table.replace_schema_metadata({k.encode(): v.encode() for k, v in meta.items()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_items_meta(path: Path) -> dict[str, str]:
    try:
        md = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as e:
        raise UserError(f"{path}: not a readable items file ({e})") from None
    return {k.decode(): v.decode() for k, v in md.items() if not k.startswith(b"ARROW")}


def read_items(path: Path) -> list[dict[str, Any]]:
    try:
        t = pq.ParquetFile(path).read(columns=["record"])
    except (OSError, pa.ArrowInvalid, KeyError) as e:
        raise UserError(f"{path}: not a readable items file ({e})") from None
    if "record" not in t.column_names:  # ParquetFile.read skips an unknown column silently
        raise UserError(f"{path}: not a readable items file (no column 'record')")
    return [json.loads(r) for r in t.column("record").to_pylist()]


# -- graded -----------------------------------------------------------------------------------


def _column_kind(values: Sequence[Any]) -> str:
    """'string' | 'int' | 'float' | 'bool' | 'json' for one column's values (None allowed).

    Decided on the set of the values' types (one C-level pass), then by ``isinstance`` on
    each type, as a per-value check would: a subclass of float is a float, of int an int."""
    kinds = set()
    for t in set(map(type, values)):
        if t is type(None):
            continue
        if issubclass(t, bool):
            kinds.add("bool")
        elif issubclass(t, int):
            kinds.add("int")
        elif issubclass(t, float):
            kinds.add("float")
        elif issubclass(t, str):
            kinds.add("string")
        else:
            return "json"
        if len(kinds) > 1:
            return "json"
    if kinds == {"int"}:
        ints = [v for v in values if v is not None]
        if not -(2**63) <= min(ints) <= max(ints) < 2**63:
            return "json"
    return kinds.pop() if kinds else "string"


_ARROW = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}


class _Discard(list[Any]):
    """Where a row's own value of an ``extra`` column goes: nowhere (the extra value wins)."""

    def append(self, value: Any) -> None:
        pass


_DISCARD = _Discard()


_CODABLE = ({str}, {bool}, {int}, {float})
"""Value types a column is stored as codes for: within one of these (None beside it) equal
values are interchangeable, so a value's first occurrence can stand for every later one.
Mixed types are not (1, 1.0 and True are equal), nor floats with a NaN (not equal to
itself) or a -0.0 (equal to 0.0): those columns stay lists."""


def _coded_values(values: list[Any]) -> Sequence[Any]:
    """``values`` coded, or the list itself when its types are not codable (see ``_CODABLE``)
    or a value is unhashable."""
    coder = _Coder()
    coder.add(values)
    return coder.done()


class _Coder:
    """Builds one column chunk by chunk: codes while its values are codable, else a list.

    A column of JSON containers (dicts, lists: a suite's ``details``) is coded by each value's
    canonical JSON, the first value of a text standing for every later one, as the graded file
    and ``normalize_graded`` have it: a tasks suite's million ``details`` dicts were ~300 MB of
    the grade stage (``benchmarks/scale.py --suite tasks``), one per item and grader is kept."""

    __slots__ = ("codes", "index", "json", "plain", "types")

    def __init__(self) -> None:
        self.codes: array[int] = array("I")
        self.index: dict[Any, int] = {}
        self.types: set[type] = set()
        self.plain: list[Any] | None = None
        self.json: list[Any] | None = None  # a JSON column's values, by code

    def add(self, values: list[Any]) -> None:
        if self.plain is not None:
            self.plain.extend(values)
            return
        self.types |= set(map(type, values))
        types = self.types - {type(None)}
        if types and types <= _JSON_CONTAINERS:
            if self.json is None:  # only Nones before (else ``types`` would hold theirs)
                self.json = list(self.index)
            self._add_json(values)
            return
        if self.json is not None or (types and not any(types == t for t in _CODABLE)):
            self._to_plain(values)
            return
        index = self.index
        try:  # the chunk's distinct values, first seen first (one C-level pass)
            distinct = dict.fromkeys(values)
        except TypeError:  # unhashable
            self._to_plain(values)
            return
        if types == {float} and not _plain_floats(distinct, values):
            self._to_plain(values)
            return
        for v in distinct:
            if v not in index:
                index[v] = len(index)
        self.codes.extend(map(index.__getitem__, values))

    def _add_json(self, values: list[Any]) -> None:
        index = self.index
        kept = self.json if self.json is not None else []
        codes = array("I")
        try:
            for v in values:
                text = None if v is None else compact(v)
                code = index.get(text)
                if code is None:
                    code = index[text] = len(kept)
                    kept.append(v)
                codes.append(code)
        except (TypeError, ValueError):  # not JSON: the column stays a list
            self.json = kept
            self._to_plain(values)
            return
        self.json = kept
        self.codes.extend(codes)

    def _to_plain(self, values: list[Any]) -> None:
        distinct = self.json if self.json is not None else list(self.index)
        self.plain = [distinct[c] for c in self.codes] + values
        self.codes, self.index, self.json = array("I"), {}, None

    def done(self) -> Sequence[Any]:
        if self.plain is not None:
            return self.plain
        values = self.json if self.json is not None else list(self.index)
        return Coded(code_array(codes_view(self.codes), len(values)), values)


_JSON_CONTAINERS = frozenset({dict, list})
"""Value types a column is coded by canonical JSON for (``_Coder``)."""


def _plain_floats(distinct: Mapping[Any, None], values: list[Any]) -> bool:
    """Whether equal floats among ``values`` are the same float: no NaN, no -0.0."""
    if any(v != v for v in distinct):
        return False
    return 0.0 not in distinct or not any(v == 0 and math.copysign(1.0, v) < 0 for v in values)


_CHUNK = 65_536
"""Rows ``from_rows`` gathers as lists before coding them (bounds the lists' share)."""


_INT_TYPECODES = frozenset("bBhHiIlLqQ")


def _kind_of(values: Sequence[Any]) -> str:
    """``_column_kind`` of a column, read off the distinct values of a coded one (through
    every level: a graded identity column codes into a coded raw column), the type of a
    machine array, or ``string`` for hex keys."""
    while isinstance(values, Coded):
        values = values.values
    if isinstance(values, HexKeys):
        return "string"
    if isinstance(values, array) and len(values) and values.typecode in _INT_TYPECODES:
        return "int"
    if isinstance(values, array) and len(values) and values.typecode == "d":
        return "float"
    return _column_kind(values)


class GradedRow(Mapping[str, Any]):
    """One graded row: a read-only Mapping over its table's columns (no per-row dict)."""

    __slots__ = ("_i", "_t")

    def __init__(self, table: GradedRows, i: int) -> None:
        self._t = table
        self._i = i

    def __getitem__(self, key: str) -> Any:
        return self._t.bycol[key][self._i]  # the analysis's inner loop: one lookup, one index

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._t.colpos:
            return default
        return self._t.bycol[key][self._i]

    def __contains__(self, key: object) -> bool:
        return key in self._t.colpos

    def __iter__(self) -> Iterator[str]:
        return iter(self._t.names)

    def __len__(self) -> int:
        return len(self._t.names)

    def __repr__(self) -> str:
        return f"GradedRow({dict(self)!r})"


class _Loaded(dict[str, Sequence[Any]]):
    """A lazily read table's columns by name: a column not read yet is read when asked for.

    It holds the reader and the column names, not the table: a table holding it and held by
    it was a reference cycle, freed only when the cyclic collector ran, and the scorecard's
    row groups (``GradedRows.parts``) piled up until it did (+0.5 GB resident at ten million
    rows)."""

    def __init__(self, load: Callable[[str], Sequence[Any]], names: Iterable[str]) -> None:
        super().__init__()
        self.load = load
        self.names = frozenset(names)

    def __missing__(self, name: str) -> Sequence[Any]:
        if name not in self.names:
            raise KeyError(name)
        col = self[name] = self.load(name)
        return col


class GradedRows(Sequence[Mapping[str, Any]]):
    """Graded rows column by column: every row has every column (None where a suite's row
    lacks it, as the file gives it back). Rows are ``GradedRow`` views made on access.

    A million raw rows are four million golden graded rows; as dicts they took ~0.5 KB each
    and were built twice (grade, then the file round trip): 5.6 GB of the 1M-row build's
    peak (``benchmarks/scale.py``). A cell is a 4-byte code (``Coded``) where the column
    allows it, else 8 bytes.
    Equal to any sequence of mappings with the same rows (a list of dicts included).
    """

    __slots__ = (
        "_cols",
        "_load",
        "_n",
        "_own",
        "_parts",
        "_sig_keys",
        "_sigs",
        "bycol",
        "colpos",
        "names",
    )

    def __init__(
        self,
        names: Sequence[str],
        columns: Sequence[Sequence[Any]],
        n: int,
        sigs: tuple[list[int], list[tuple[str, ...]]] | None = None,
        load: Callable[[str], Sequence[Any]] | None = None,
        parts: Callable[[], Iterator[GradedRows]] | None = None,
    ) -> None:
        """``load``: columns are read when first asked for (``load(name)``, then kept), and
        ``columns`` is ignored: a graded file's rows (``read_graded``) hold only the columns
        an analysis reads. ``parts``: these rows in consecutive pieces (``parts()``)."""
        self.names = list(names)
        self._load = load
        self._parts = parts
        self._cols: list[Sequence[Any]] = list(columns) if load is None else []
        self.colpos = {c: j for j, c in enumerate(self.names)}
        self.bycol: dict[str, Sequence[Any]] = (
            dict(zip(self.names, self._cols, strict=True))
            if load is None
            else _Loaded(load, self.names)
        )
        self._n = n
        self._own = False  # True when no one else holds these column lists (``from_rows``)
        # which keys each row had (an id per row into the distinct key tuples): the column
        # order is first-seen over the rows in their order, as a table of the dicts had it
        self._sigs: list[int] | None = sigs[0] if sigs is not None else None
        self._sig_keys: list[tuple[str, ...]] = sigs[1] if sigs is not None else []
        if self._sigs is not None:
            self._reorder(range(n))

    def _reorder(self, order: Iterable[int]) -> None:
        """Columns in first-seen order of the rows' own keys, rows taken in ``order``."""
        if self._sigs is None or len(self._sig_keys) < 2:
            first: dict[str, None] = dict.fromkeys(self._sig_keys[0] if self._sig_keys else ())
        else:
            first, seen = {}, set()
            for i in order:
                sid = self._sigs[i]
                if sid not in seen:
                    seen.add(sid)
                    first.update(dict.fromkeys(k for k in self._sig_keys[sid] if k not in first))
                    if len(seen) == len(self._sig_keys):
                        break
        if list(first) != self.names and set(first) == set(self.names):
            cols = {c: self.columns[self.colpos[c]] for c in self.names}
            self.names = list(first)
            self.columns = [cols[c] for c in self.names]
            self.colpos = {c: j for j, c in enumerate(self.names)}
            self.bycol = dict(zip(self.names, self.columns, strict=True))

    @classmethod
    def from_rows(
        cls, rows: Iterable[Mapping[str, Any]], extra: Mapping[str, Any] | None = None
    ) -> GradedRows:
        """Rows (any iterable: a suite's generator is consumed one row at a time), each with
        the ``extra`` columns set as ``{**row, **extra}`` would. Equal strings share one
        object (a suite's ``details`` repeat across rows)."""
        extra = dict(extra or {})
        index: dict[str, int] = {}
        cols: list[list[Any]] = []
        pool: dict[str, str] = {}
        sig_ids: dict[tuple[str, ...], int] = {}
        sigs: list[int] = []
        last: tuple[str, ...] | None = None
        sid = 0
        coders: list[_Coder] = []
        order: list[list[Any]] = []
        rest: list[list[Any]] = []
        n = 0
        coded = 0  # rows already moved from the lists into the coders
        for g in rows:
            if n - coded == _CHUNK:
                for col, coder in zip(cols, coders, strict=True):
                    coder.add(col)
                    col.clear()
                coded = n
            keys = tuple(g)
            if keys != last:  # a new column set: map it (new columns get None for earlier rows)
                for k in keys:
                    if k not in index and k not in extra:
                        index[k] = len(cols)
                        cols.append([None] * (n - coded))
                        coders.append(_Coder())
                        coders[-1].add([None] * coded)
                last = keys
                sid = sig_ids.setdefault(
                    keys + tuple(k for k in extra if k not in keys), len(sig_ids)
                )
                order = [cols[index[k]] if k not in extra else _DISCARD for k in keys]
                mine = {id(c) for c in order}
                rest = [c for c in cols if id(c) not in mine]
            for col, v in zip(order, g.values(), strict=True):
                col.append(pool.setdefault(v, v) if type(v) is str else v)
            for col in rest:
                col.append(None)
            sigs.append(sid)
            n += 1
        names = list(index)
        done = []
        for col, coder in zip(cols, coders, strict=True):
            coder.add(col)
            col.clear()
            done.append(coder.done())
        for k, v in extra.items() if n else ():  # no rows: no columns, as no dicts had none
            names.append(k)
            done.append(_coded_values([v] * n))
        out = cls(names, done, n, (sigs, list(sig_ids)))
        out._own = True
        return out

    def sorted_by(self, keys: Sequence[str]) -> GradedRows:
        """The rows stably sorted on ``keys`` (ascending, like ``sorted`` on their tuples).

        Rows made by ``from_rows`` are sorted in place and returned (their column lists are
        no one else's): the grade stage sorts millions of rows, and a sorted copy of every
        column beside the unsorted one was the build's peak memory (``benchmarks/scale.py``).
        In place, one column at a time, the sort holds one extra column. Other rows (whose
        columns another ``GradedRows`` may share) get a sorted copy, as before."""
        if self._n == 0:
            return self
        cols = [self.columns[self.colpos[k]] for k in keys]
        order: Sequence[int]
        ranks: dict[int, Any] = {}  # each column's value ranks, made once for both uses
        steps = _steps(cols, ranks)
        if steps is not None and _in_order(steps, self._n):
            return self  # already in order (a suite that builds its table sorted)
        ranked = _ranked_codes(cols, ranks)
        if ranked is not None:
            import numpy as np

            keys = [rank[codes] for rank, codes in reversed(ranked)]
            positions_ = np.lexsort(keys)  # stable; the last key is the primary one
            order = array("q", positions_.astype("int64", copy=False).tobytes())
        else:
            order = self._arrow_order(cols)
        return self._take_all(order)

    def _arrow_order(self, cols: Sequence[Sequence[Any]]) -> Sequence[int]:
        order: Sequence[int]
        try:  # Arrow sorts strings by code point, as Python does, and stably
            import pyarrow.compute as pc

            table = pa.table({f"k{j}": pa.array(c, type=pa.string()) for j, c in enumerate(cols)})
            if any(table.column(j).null_count for j in range(len(cols))):
                raise TypeError("a None in a sort key")  # Python's sort would refuse it too
            idx = pc.sort_indices(table, [(f"k{j}", "ascending") for j in range(len(cols))])
            del table
            # machine ints, not a list of Python ints (~36 bytes a row at millions of rows)
            order = array("q", idx.to_numpy().astype("int64", copy=False).tobytes())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # not strings: Python's sort
            order = sorted(range(self._n), key=lambda i: tuple(c[i] for c in cols))
        return order

    def _take_all(self, order: Sequence[int]) -> GradedRows:
        sigs = None
        if self._sigs is not None:
            sigs = ([self._sigs[i] for i in order], self._sig_keys)
        import numpy as np

        positions = np.frombuffer(order, dtype=np.int64) if isinstance(order, array) else order
        if not self._own:
            columns = [_taken(c, order, positions) for c in self.columns]
            return GradedRows(self.names, columns, self._n, sigs)
        for j, c in enumerate(self.columns):
            if isinstance(c, list):
                c[:] = [c[i] for i in order]
            else:
                self.columns[j] = _taken(c, order, positions)
        self.bycol = dict(zip(self.names, self.columns, strict=True))
        if sigs is not None:
            self._sigs = sigs[0]
            self._reorder(range(self._n))
        return self

    @property
    def columns(self) -> list[Sequence[Any]]:
        """Every column, in ``names`` order (each one not read yet is read now)."""
        if self._load is not None:
            self._cols = [self.bycol[n] for n in self.names]
            self._load = None
            self.bycol = dict(zip(self.names, self._cols, strict=True))
        return self._cols

    @columns.setter
    def columns(self, value: list[Sequence[Any]]) -> None:
        self._cols = value

    def column(self, name: str) -> Sequence[Any]:
        return self.bycol[name]

    def parts(self) -> Iterator[GradedRows]:
        """These rows in consecutive pieces, each its own ``GradedRows``: a graded file's rows
        (``read_graded``) a row group at a time, each read when it is reached and let go
        after (the generic scorecard of 40 million graded rows kept every column whole,
        1.2 GB, to the end of publish); rows in memory as one piece, themselves."""
        if self._parts is not None and self._load is not None:
            yield from self._parts()
        else:
            yield self

    def _passing(self, name: str) -> Sequence[Any]:
        """A column for one look: one not read yet is read and not kept (the audit compares
        a graded file with its re-derivation, 40 million rows a column at ten million raw
        rows: every column kept was ~0.8 GB beside the derived ones)."""
        if self._load is not None and name not in self.bycol:
            return self._load(name)
        return self.bycol[name]

    def with_constants(self, values: Mapping[str, Any]) -> GradedRows:
        """These rows with each of ``values`` as a column holding that value on every row
        (``{**row, **values}`` per row, as ``from_rows``' ``extra``)."""
        if not self._n:
            return self
        zeros: array[int] = array("B", bytes(self._n))  # one byte a row: every code is 0
        names, columns = list(self.names), list(self.columns)
        for k, v in values.items():
            one = _coded_values([v])
            col = Coded(zeros, one.values) if isinstance(one, Coded) else [v] * self._n
            if k in self.colpos:
                columns[self.colpos[k]] = col
            else:
                names.append(k)
                columns.append(col)
        return GradedRows(names, columns, self._n)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> GradedRow: ...

    @overload
    def __getitem__(self, i: slice) -> list[GradedRow]: ...

    def __getitem__(self, i: int | slice) -> GradedRow | list[GradedRow]:
        if isinstance(i, slice):
            return [GradedRow(self, j) for j in range(self._n)[i]]
        if not -self._n <= i < self._n:
            raise IndexError("graded row index out of range")
        return GradedRow(self, i % self._n if self._n else i)

    def __iter__(self) -> Iterator[GradedRow]:
        return map(GradedRow, repeat(self, self._n), range(self._n))  # no generator frame

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GradedRows):
            if self._n != other._n:
                return False
            if self._n == 0:
                return True
            if set(self.names) != set(other.names):
                return False
            return all(self._passing(c) == other._passing(c) for c in self.names)
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GradedRows({self._n} rows, columns {self.names})"


_RANK_IN_ARROW = 65_536
"""From this many values a coded column's values are ranked by Arrow (``_value_ranks``)."""


def _value_ranks(values: Sequence[Any]) -> Any | None:
    """Each value's rank among the distinct values (numpy int32), when every value is a str
    (code point order, as Arrow and ``sorted``); else None.

    A graded identity column's values are the raw column: ten million request keys ranked
    through a set, a sorted list and a dict of them held ~100 bytes a key; Arrow's dense rank
    holds the string array and its sort indices (~50). Hex keys rank by their bytes; a coded
    column by its values' ranks (no string per row either way)."""
    import numpy as np

    if isinstance(values, HexKeys):
        return values.ranks()
    if isinstance(values, Coded):
        inner = _value_ranks(values.values)
        return None if inner is None else inner[values.code_view()]

    if len(values) < _RANK_IN_ARROW:
        if any(type(v) is not str for v in values):
            return None
        rank = {v: r for r, v in enumerate(sorted(set(values)))}
        return np.fromiter((rank[v] for v in values), dtype=np.int32, count=len(values))
    import pyarrow.compute as pc

    try:
        arr = pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # not all strings
    if arr.null_count:
        return None
    ranks = pc.rank(arr, sort_keys="ascending", tiebreaker="dense").to_numpy()
    return (ranks - 1).astype(np.int32)


def _ranked_codes(
    cols: Sequence[Sequence[Any]], ranks: dict[int, Any] | None = None
) -> list[tuple[Any, Any]] | None:
    """Per sort key column, each value's rank (``_value_ranks``) and the rows' codes into
    them, when every key column is ``Coded`` over strings only; else None (the general sort
    applies). ``rank[codes]`` is each row's rank: the rows sort by integers, and no string
    array of millions of rows is built."""

    out = []
    for j, c in enumerate(cols):
        if not isinstance(c, Coded):
            return None
        rank = _column_ranks(j, c, ranks)
        if rank is None:
            return None
        out.append((rank, c.code_view()))
    return out


def _column_ranks(j: int, col: Coded, ranks: dict[int, Any] | None) -> Any | None:
    """``_value_ranks`` of sort key column ``j``'s values, kept in ``ranks`` when given."""
    if ranks is not None and j in ranks:
        return ranks[j]
    rank = _value_ranks(col.values)
    if ranks is not None:
        ranks[j] = rank
    return rank


_SORTED_CHUNK = 1 << 20
"""Rows per step of ``_in_order``: each key column's step between neighbours, this many rows
at a time."""


def _steps(cols: Sequence[Sequence[Any]], ranks: dict[int, Any]) -> list[Any] | None:
    """Per sort key column, a function giving, for rows ``lo..hi``, whether each row's value
    is below, equal to or above the one before (-1, 0, 1: numpy int8), when every key column is
    ``Coded`` over strings (ranks made kept in ``ranks``, by column); else None. Hex keys
    compare by their bytes, as big-endian words:
    ranking ten million request keys first (a sort of all of them, ~0.4 GB) was the grade
    stage's peak, only to find golden's table in order."""
    out = []
    for j, c in enumerate(cols):
        if not isinstance(c, Coded):
            return None
        if isinstance(c.values, HexKeys) and c.values.packed.shape[1] % 8 == 0:
            out.append(_hex_steps(c.values, c.code_view()))
            continue
        rank = _column_ranks(j, c, ranks)
        if rank is None:
            return None
        out.append(_rank_steps(rank, c.code_view()))
    return out


def _rank_steps(rank: Any, codes: Any) -> Any:
    import numpy as np

    def step(lo: int, hi: int) -> Any:
        k = rank[codes[lo:hi]].astype(np.int64)
        return np.sign(k[1:] - k[:-1]).astype(np.int8)

    return step


def _hex_steps(keys: HexKeys, codes: Any) -> Any:
    import numpy as np

    def step(lo: int, hi: int) -> Any:
        words = keys.packed[codes[lo:hi]].view(">u8")
        out = np.zeros(max(hi - lo - 1, 0), dtype=np.int8)
        for j in reversed(range(words.shape[1])):  # the first word that differs decides
            a, b = words[:-1, j], words[1:, j]
            out = np.where(a != b, np.where(b > a, 1, -1).astype(np.int8), out)
        return out

    return step


def _in_order(steps: Sequence[Any], n: int) -> bool:
    """Whether the rows are already in (stable) ascending order of the key columns, checked a
    chunk at a time (``_steps``): a suite that builds its table sorted (golden, 40,000,000
    graded rows at 10,000,000 raw rows) pays no key array of every row."""
    import numpy as np

    for start in range(0, n, _SORTED_CHUNK):
        lo, hi = max(start - 1, 0), min(start + _SORTED_CHUNK, n)
        later = np.zeros(hi - lo - 1, dtype=bool)  # some earlier key column already rose
        behind = np.zeros(hi - lo - 1, dtype=bool)
        for step in steps:
            d = step(lo, hi)
            behind |= ~later & (d < 0)
            later |= d > 0
        if behind.any():
            return False
    return True


def graded_column(graded: Sequence[Mapping[str, Any]], name: str) -> Sequence[Any]:
    """``[g[name] for g in graded]``: the column itself (no copy: do not change it) when
    ``graded`` is a ``GradedRows``, else the values gathered row by row."""
    if isinstance(graded, GradedRows):
        return graded.column(name)
    if isinstance(graded, RowsAt) and isinstance(graded.base, GradedRows):
        return at_positions(graded.base.column(name), graded.positions)
    return [g[name] for g in graded]


def _taken(column: Sequence[Any], order: Sequence[int], positions: Any) -> Sequence[Any]:
    """A column in ``order`` (``positions``: the same as a numpy array)."""
    if isinstance(column, Coded):
        return column.taken(positions)
    return [column[i] for i in order]


def _as_graded(graded: Sequence[Mapping[str, Any]] | GradedRows) -> GradedRows:
    return graded if isinstance(graded, GradedRows) else GradedRows.from_rows(graded)


def graded_table(graded: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Graded rows as a typed table (columns in first-seen order; a row lacking a column has
    None there, and the column list is kept in the metadata so an empty file reads back)."""
    rows = _as_graded(graded)
    kinds = [_kind_of(c) for c in rows.columns]
    return _table_rows(rows, kinds, 0, len(rows))


def _metadata(rows: GradedRows, kinds: Sequence[str]) -> dict[bytes, bytes]:
    return _names_metadata(rows.names, kinds)


def _names_metadata(names: Sequence[str], kinds: Sequence[str]) -> dict[bytes, bytes]:
    json_cols = [c for c, k in zip(names, kinds, strict=True) if k == "json"]
    return {
        _JSON_COLUMNS: compact(json_cols).encode(),
        _COLUMN_ORDER: compact(list(names)).encode(),
    }


def _table_rows(rows: GradedRows, kinds: Sequence[str], start: int, stop: int) -> pa.Table:
    """Rows ``start:stop`` as a typed table (``graded_table``)."""
    import numpy as np

    at = np.arange(start, stop, dtype=np.int64)
    arrays = []
    for values, kind in zip(rows.columns, kinds, strict=True):
        if kind == "json":
            text = [None if v is None else compact(v) for v in values[start:stop]]
            arrays.append(pa.array(text, type=pa.string()))
        elif isinstance(values, Coded | HexKeys):
            arrays.append(_arrow_at(values, _ARROW[kind], at))
        else:
            whole = start == 0 and stop == len(values)
            arrays.append(pa.array(values if whole else values[start:stop], type=_ARROW[kind]))
    table = pa.Table.from_arrays(arrays, names=rows.names) if rows.names else pa.table({})
    return table.replace_schema_metadata(_metadata(rows, kinds))


def _arrow_at(values: Sequence[Any], kind: pa.DataType, at: Any) -> pa.Array:
    """A column's values at positions ``at`` (numpy int64) as an Arrow array: a coded column's
    values taken by code (through every level), hex keys spelled out from their bytes; no
    Python value per row for either."""
    import numpy as np

    while isinstance(values, Coded):
        at = values.code_view()[at].astype(np.int64)
        values = values.values
    if isinstance(values, HexKeys):
        return values.arrow(at).cast(kind)
    if isinstance(values, array):
        return pa.array(np.frombuffer(values, dtype=values.typecode)[at], type=kind)
    if len(values) > 4 * len(at):  # a few rows of a long column
        return pa.array([values[i] for i in at.tolist()], type=kind)
    return pa.array(values, type=kind).take(pa.array(at))


class _ReadColumn:
    """One graded column read back a row group at a time, into the form ``from_rows`` and the
    grade stage hold: codes into the distinct values for strings, integers, booleans and
    floats (floats told apart by their bits: -0.0 is not 0.0, a NaN is itself), hex request
    keys as bytes once a row group holds ``_HEX_KEYS_MIN`` distinct ones; JSON columns coded by
    their text, each distinct text parsed once (rows share a parsed value, read-only, as
    ``normalize_graded`` has them: a tasks suite's million ``details`` parsed per row were
    ~1 GB of the analyze stage reading a file graded by chunk). Reading the whole table first
    held the Arrow table and a Python object per cell (ten million raw rows are 40 million
    golden graded rows).

    The codes go into one array of all ``n`` rows, one byte a row until more distinct values
    need it wider (row groups' code arrays kept apart, then joined, grew the heap by their
    sum and left it fragmented: +1 GB over a 40-million-row file)."""

    def __init__(self, json_col: bool, kind: pa.DataType, n: int) -> None:
        import numpy as np

        codable = (
            pa.types.is_string(kind)
            or pa.types.is_integer(kind)
            or pa.types.is_boolean(kind)
            or pa.types.is_floating(kind)
        )
        self.mode = "json" if json_col else "coded" if codable else "list"
        self.floats = pa.types.is_floating(kind)
        self.plain: list[Any] = []
        self.index: dict[Any, int] = {}
        self.values: list[Any] = []
        self.codes: Any = np.zeros(n if self.mode != "list" else 0, dtype=np.uint8)
        self.filled = 0
        self.keys: Any = None  # hex mode: the distinct keys of each row group, as bytes
        self.n_keys = 0

    def _store(self, codes: Any, n_values: int) -> None:
        import numpy as np

        wide = 1 if n_values <= 1 << 8 else 2 if n_values <= 1 << 16 else 4
        need = np.dtype(f"u{wide}")
        if need.itemsize > self.codes.dtype.itemsize:
            self.codes = self.codes.astype(need)
        self.codes[self.filled : self.filled + len(codes)] = codes
        self.filled += len(codes)

    def add(self, arr: pa.Array) -> None:
        import numpy as np

        if self.mode == "json":
            enc = arr.dictionary_encode()
            texts = enc.dictionary.to_pylist()
            local = enc.indices
            if local.null_count:
                local = local.fill_null(len(texts))
                texts.append(None)
            parsed = [None if t is None else json.loads(t) for t in texts]
            self._add_coded(texts, parsed, np.asarray(local, dtype=np.int64))
            return
        if self.mode == "list":
            self.plain.extend(arr.to_pylist())
            return
        if self.floats:
            self._add_floats(arr)
            return
        enc = arr.dictionary_encode()
        distinct, local = enc.dictionary, enc.indices
        if local.null_count:
            local = local.fill_null(len(distinct))
        local_np = np.asarray(local, dtype=np.int64)
        hexed = self.keys is not None
        if hexed or (not self.index and len(distinct) >= _HEX_KEYS_MIN):
            packed = hex_packed(distinct) if not enc.indices.null_count else None
            if packed is not None and (not hexed or packed.shape[1] == self.keys.shape[1]):
                if self.keys is None:  # room for a key a row, touched only where written
                    self.keys = np.zeros((len(self.codes), packed.shape[1]), dtype=np.uint8)
                start = self.n_keys
                self.keys[start : start + len(packed)] = packed
                self.n_keys += len(packed)
                self._store(local_np + start, self.n_keys)
                return
            if hexed:
                self._unpack()
        names = distinct.to_pylist() + ([None] if enc.indices.null_count else [])
        self._add_coded(names, names, local_np)

    def _add_coded(self, keys: list[Any], values: list[Any], local: Any) -> None:
        import numpy as np

        index = self.index
        mine = np.empty(len(keys), dtype=np.int64)
        for j, (k, v) in enumerate(zip(keys, values, strict=True)):
            code = index.get(k)
            if code is None:
                code = index[k] = len(self.values)
                self.values.append(v)
            mine[j] = code
        self._store(mine[local], len(self.values))

    def _add_floats(self, arr: pa.Array) -> None:
        import numpy as np

        bits = np.asarray(arr.fill_null(0.0), dtype=np.float64).view(np.int64)
        distinct, local = np.unique(bits, return_inverse=True)
        keys: list[Any] = distinct.tolist()
        values: list[Any] = distinct.view(np.float64).tolist()
        local = local.ravel()
        if arr.null_count:
            valid = np.asarray(arr.is_valid(), dtype=bool)
            local = np.where(valid, local, len(keys))
            keys.append(None)
            values.append(None)
        self._add_coded(keys, values, local)

    def _unpack(self) -> None:
        """Hex mode ends (a row group whose values are not hex keys of the same width): the
        rows so far coded by their keys' strings."""
        import numpy as np

        names = list(HexKeys(self.keys[: self.n_keys]))
        done = self.codes[: self.filled].astype(np.int64)
        self.keys, self.n_keys, self.filled = None, 0, 0
        self._add_coded(names, names, done)

    def done(self) -> Sequence[Any]:
        if self.mode == "list":
            return self.plain
        codes = self.codes[: self.filled]
        if self.keys is None:
            return Coded(code_array(codes, len(self.values)), self.values)
        # each row group's distinct keys, in file order: a key whose graded rows straddle two
        # row groups is there twice (coded values need not be distinct; making them so took
        # a sort of ten million keys, ~0.6 GB)
        keys = HexKeys(self.keys[: self.n_keys])
        self.keys = None
        return Coded(code_array(codes, len(keys)), keys)


_HEX_KEYS_MIN = 65_536
"""From this many distinct values, a graded column of hex keys of one width is read back as
``HexKeys`` (16 bytes a 32-digit key against ~90 as a ``str`` in a list)."""


def normalize_graded(graded: Sequence[Mapping[str, Any]]) -> GradedRows:
    """Graded rows as they read back from the graded file.

    Column by column: a column of scalars of one Arrow type (the usual case) already is what
    reading the file gives back and is kept as it is, no copy; a column stored as JSON goes
    through canonical JSON, as the file does (the Arrow round trip of every row was a third
    of the whole build at 100k rows).
    """
    rows = _as_graded(graded)
    cols: list[Sequence[Any]] = []
    for values in rows.columns:
        if _kind_of(values) == "json":
            values = _json_round_trip(values)
        cols.append(values)
    return GradedRows(rows.names, cols, len(rows))


def _json_round_trip(values: Sequence[Any]) -> Sequence[Any]:
    """A JSON column as the graded file gives it back (canonical JSON, parsed), coded: each
    distinct text parsed once. A tasks suite's ``details`` are a dict per graded row but only
    one per item and grader; parsing each row's again held a second million dicts
    (``benchmarks/scale.py --suite tasks``). Rows share a parsed value: read-only, like every
    coded column."""
    if isinstance(values, Coded):
        parsed = [None if v is None else json.loads(compact(v)) for v in values.values]
        return Coded(values.codes, parsed)
    codes: array[int] = array("I")
    distinct: list[Any] = []
    seen: dict[str | None, int] = {}
    for v in values:
        text = None if v is None else compact(v)
        code = seen.get(text)
        if code is None:
            code = seen[text] = len(distinct)
            distinct.append(None if text is None else json.loads(text))
        codes.append(code)
    return Coded(codes, distinct)


def write_graded(
    path: Path, graded: Sequence[Mapping[str, Any]], meta: Mapping[str, str] | None = None
) -> None:
    """The graded file, a row group of ``_WRITE_ROWS`` rows at a time: the Arrow table of 40
    million graded rows (ten million raw rows' request keys spelled out four times) is
    never built whole."""
    rows = _as_graded(graded)
    kinds = [_kind_of(c) for c in rows.columns]
    md = _metadata(rows, kinds)
    md.update({f"sealedeval.{k}".encode(): v.encode() for k, v in (meta or {}).items()})
    n = len(rows)
    with atomic_path(path) as tmp:
        first = _table_rows(rows, kinds, 0, min(n, _WRITE_ROWS)).replace_schema_metadata(md)
        if n <= _WRITE_ROWS:
            pq.write_table(first, tmp, compression="zstd")
            return
        with pq.ParquetWriter(tmp, first.schema, compression="zstd") as writer:
            writer.write_table(first)
            del first
            for start in range(_WRITE_ROWS, n, _WRITE_ROWS):
                part = _table_rows(rows, kinds, start, min(n, start + _WRITE_ROWS))
                writer.write_table(part.replace_schema_metadata(md))
                del part  # not alive while the next row group's table is made (~150 MB)


_WRITE_ROWS = 1 << 18
"""Graded rows per row group written: what is held as Arrow at once while writing, and read
at once per column. A row group of 2^20 rows (Arrow's default) was the grade stage's peak by
chunk: ~0.4 GB of a tasks suite's graded rows (their details as JSON text, the answer)."""


class _Chunk(NamedTuple):
    path: Path
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    empty: tuple[bool, ...]  # per column: every value None (its kind says nothing)


class GradedChunks:
    """The graded file written from chunks of graded rows that come in the file's order (a
    key-prefix bucket of one engine after another: ``stages.chunked``), none held after it
    is added: the same file as ``write_graded`` of all the rows at once.

    A column's kind (string, int, float, bool, JSON) is the whole column's, known only once
    every chunk is in, so each chunk waits in ``where`` (a zstd Parquet file) with its own;
    a column of Nones in a chunk takes any kind. ``write`` then copies the chunks into the
    file a row group of ``_WRITE_ROWS`` at a time. Chunks whose kinds disagree otherwise (an
    int in one, a float in another: the whole column is JSON text) cannot be copied;
    ``write`` says so and the caller grades the rows whole."""

    def __init__(self, where: Path) -> None:
        self.dir = where
        self.chunks: list[_Chunk] = []
        self.rows = 0

    def add(self, graded: Sequence[Mapping[str, Any]]) -> None:
        rows = _as_graded(graded)
        if not len(rows):
            return
        kinds = [_kind_of(c) for c in rows.columns]
        path = self.dir / f"graded-{len(self.chunks)}.parquet"
        nulls = [0] * len(kinds)
        writer = None
        try:
            for start in range(0, len(rows), _PIECE_ROWS):
                piece = _table_rows(rows, kinds, start, min(len(rows), start + _PIECE_ROWS))
                if writer is None:
                    writer = pq.ParquetWriter(path, piece.schema, compression="zstd")
                writer.write_table(piece)
                nulls = [k + c.null_count for k, c in zip(nulls, piece.columns, strict=True)]
                del piece
        finally:
            if writer is not None:
                writer.close()
        empty = tuple(k == len(rows) for k in nulls)
        self.chunks.append(_Chunk(path, tuple(rows.names), tuple(kinds), empty))
        self.rows += len(rows)

    def kinds(self) -> tuple[tuple[str, ...], list[str]] | None:
        """The file's column names and kinds, or None when the chunks disagree."""
        full = self.chunks
        if not full or any(c.names != full[0].names for c in full):
            return None
        names = full[0].names
        kinds = []
        for j in range(len(names)):
            seen = {c.kinds[j] for c in full if not c.empty[j]}
            if len(seen) > 1:
                return None
            kinds.append(seen.pop() if seen else "string")
        return names, kinds

    def write(self, path: Path, meta: Mapping[str, str] | None = None) -> bool:
        """The graded file at ``path`` (atomically); False, nothing written, when the chunks'
        columns disagree (``kinds``) or there are no rows. The chunks' files are gone after."""
        try:
            found = self.kinds()
            if found is None or not self.rows:
                return False
            names, kinds = found
            md = _names_metadata(names, kinds)
            md.update({f"sealedeval.{k}".encode(): v.encode() for k, v in (meta or {}).items()})
            arrow = [_ARROW["string" if k == "json" else k] for k in kinds]
            schema = pa.schema(list(zip(names, arrow, strict=True))).with_metadata(md)
            groups = self._groups()
            with atomic_path(path) as tmp:
                if len(groups) == 1:
                    pq.write_table(self._group(groups[0], schema), tmp, compression="zstd")
                else:
                    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                        for group in groups:
                            writer.write_table(self._group(group, schema))
                            pa.default_memory_pool().release_unused()
            return True
        finally:
            for c in self.chunks:
                c.path.unlink(missing_ok=True)

    def _groups(self) -> list[list[tuple[int, int, int, int]]]:
        """The file's row groups (``_WRITE_ROWS`` rows, as ``write_graded`` cuts them), each
        as the stretches of the chunks' pieces it takes: (chunk, piece, start, stop)."""
        groups: list[list[tuple[int, int, int, int]]] = [[]]
        room = _WRITE_ROWS
        for k, c in enumerate(self.chunks):
            md = pq.ParquetFile(c.path).metadata
            for i in range(md.num_row_groups):
                at, n = 0, md.row_group(i).num_rows
                while at < n:
                    if not room:
                        groups.append([])
                        room = _WRITE_ROWS
                    take = min(room, n - at)
                    groups[-1].append((k, i, at, at + take))
                    at += take
                    room -= take
        return groups

    def _group(self, stretches: list[tuple[int, int, int, int]], schema: pa.Schema) -> pa.Table:
        """One row group of the file, built a column at a time (one Arrow chunk a column:
        Parquet's writer decides where a column leaves dictionary encoding at the ends of the
        chunks it is given, so only one chunk writes the bytes ``write_graded`` writes); a
        column of Nones in a chunk typed as the file's column."""
        files: dict[int, pq.ParquetFile] = {}
        arrays = []
        for field in schema:
            parts = []
            for k, i, a, b in stretches:
                pf = files.get(k)
                if pf is None:
                    pf = files[k] = pq.ParquetFile(self.chunks[k].path)
                col = pf.read_row_group(i, columns=[field.name]).column(0).slice(a, b - a)
                if col.type == field.type:
                    parts.extend(col.chunks)
                else:
                    parts.append(pa.nulls(b - a, field.type))
            arrays.append(pa.chunked_array(parts, type=field.type).combine_chunks())
            del parts
        return pa.Table.from_arrays(arrays, schema=schema)


_PIECE_ROWS = 1 << 16
"""Rows per row group of a chunk waiting to be copied (``GradedChunks``): what is read at a
time, beyond the row group being written."""


def read_graded_meta(path: Path) -> dict[str, str]:
    """The ``meta`` a graded file was written with (e.g. its stage key)."""
    try:
        md = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as e:
        raise UserError(f"{path}: not a readable graded file ({e})") from None
    skip = {_JSON_COLUMNS, _COLUMN_ORDER}
    return {
        k.decode().removeprefix("sealedeval."): v.decode()
        for k, v in md.items()
        if k.startswith(b"sealedeval.") and k not in skip
    }


def read_graded(path: Path, rows: Any = None) -> GradedRows:
    """The graded rows a file holds; each column read when first asked for (a row group at a
    time, ``_ReadColumn``) from the file as it was opened here (the open file is kept: a file
    written over meanwhile is a new file, this one is still read).

    ``rows``: only the rows at these positions (ascending numpy integers), each column read a
    row group at a time and only its rows there kept: report.html's 100,000 samples of 40
    million graded rows held every graded column whole (~1.2 GB) for a few of its rows. The
    rows' ``parts()`` are the file's row groups, one read at a time."""
    try:
        pf = pq.ParquetFile(path)
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
    except (OSError, pa.ArrowInvalid) as e:
        raise UserError(f"{path}: not a readable graded file ({e})") from None
    return _graded_rows(path, pf, sizes, rows)


def _graded_rows(path: Path, pf: pq.ParquetFile, sizes: Sequence[int], rows: Any) -> GradedRows:
    """``read_graded``'s rows over the open file ``pf`` (row groups of ``sizes`` rows)."""
    import numpy as np

    schema = pf.schema_arrow
    json_cols = set(json.loads((schema.metadata or {}).get(_JSON_COLUMNS, b"[]")))
    starts = np.cumsum([0, *sizes])
    # per row group: the positions within it of the rows asked for (None: all of its rows)
    wanted: list[Any] = [None] * len(sizes)
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows[0] < 0 or rows[-1] >= starts[-1]):
            raise IndexError("graded row position out of range")
        bounds = np.searchsorted(rows, starts)
        for i in range(len(sizes)):
            local = rows[bounds[i] : bounds[i + 1]] - starts[i]
            wanted[i] = None if len(local) == sizes[i] else pa.array(local)
    n = int(starts[-1]) if rows is None else len(rows)
    constant: list[Sequence[Any]] = []  # columns of one value read so far (their codes shared)

    def load(name: str) -> Sequence[Any]:
        reader = _ReadColumn(name in json_cols, schema.field(name).type, n)
        try:
            # a column of a row group per read: ``iter_batches`` kept ~6 MB of Arrow buffers
            # per row group read (+0.3 GB over a 40-million-row file)
            for i, local in enumerate(wanted):
                if local is not None and not len(local):
                    continue
                arr = pf.read_row_group(i, columns=[name]).column(0).combine_chunks()
                reader.add(arr if local is None else arr.take(local))
        except (OSError, pa.ArrowInvalid) as e:
            raise UserError(f"{path}: not a readable graded file ({e})") from None
        col = _shared_zeros(reader.done(), constant)
        if isinstance(col, Coded) and len(col.values) == 1:
            constant.append(col)
        pa.default_memory_pool().release_unused()  # the row groups' Arrow buffers
        return col

    def parts() -> Iterator[GradedRows]:
        for i, local in enumerate(wanted):
            if local is None:
                yield _graded_rows(path, pf, sizes, np.arange(starts[i], starts[i + 1]))
            elif len(local):
                at = np.asarray(local, dtype=np.int64) + starts[i]
                yield _graded_rows(path, pf, sizes, at)

    return GradedRows(list(schema.names), [], n, load=load, parts=parts)


def _shared_zeros(column: Sequence[Any], before: Sequence[Sequence[Any]]) -> Sequence[Any]:
    """A column of one value (engine, status, suite...) coded with the codes of an earlier
    such column: all zeros, held once (a byte a row per column at 40 million rows)."""
    if not isinstance(column, Coded) or len(column.values) != 1:
        return column
    for other in before:
        if isinstance(other, Coded) and len(other.values) == 1 and len(other) == len(column):
            return Coded(other.codes, column.values)
    return column


# -- analysis ---------------------------------------------------------------------------------


def write_analysis(path: Path, doc: Mapping[str, Any]) -> None:
    """The analysis document as canonical JSON, encoded into the file as it goes (``dump``)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        dump(doc, fh)


def read_analysis(path: Path) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: missing; run `sealedeval analyze` first") from None
    except ValueError as e:
        raise UserError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or not {"seal", "analysis"} <= set(doc):
        raise UserError(f"{path}: not an analysis file (no seal/analysis)")
    return doc
