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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from sealedeval.canonical import compact, dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path, write_text_atomic
from sealedeval.store.arrow import pa

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
    """'string' | 'int' | 'float' | 'bool' | 'json' for one column's values (None allowed)."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int):
            kinds.add("int" if -(2**63) <= v < 2**63 else "json")
        elif isinstance(v, float):
            kinds.add("float")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            kinds.add("json")
        if len(kinds) > 1:
            return "json"
    return kinds.pop() if kinds else "string"


_ARROW = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}


def graded_table(graded: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Graded rows as a typed table (columns in first-seen order; a row lacking a column has
    None there, and the column list is kept in the metadata so an empty file reads back)."""
    columns: dict[str, None] = {}
    for g in graded:
        for k in g:
            columns.setdefault(k, None)
    arrays = []
    json_cols = []
    for c in columns:
        values = [g.get(c) for g in graded]
        kind = _column_kind(values)
        if kind == "json":
            json_cols.append(c)
            arrays.append(
                pa.array([None if v is None else compact(v) for v in values], type=pa.string())
            )
        else:
            arrays.append(pa.array(values, type=_ARROW[kind]))
    table = pa.Table.from_arrays(arrays, names=list(columns)) if columns else pa.table({})
    return table.replace_schema_metadata(
        {_JSON_COLUMNS: compact(json_cols).encode(), _COLUMN_ORDER: compact(list(columns)).encode()}
    )


def rows_from_table(table: pa.Table) -> list[dict[str, Any]]:
    md = table.schema.metadata or {}
    json_cols = set(json.loads(md.get(_JSON_COLUMNS, b"[]")))
    cols = {name: table.column(name).to_pylist() for name in table.column_names}
    for c in json_cols & set(cols):
        cols[c] = [None if v is None else json.loads(v) for v in cols[c]]
    names = list(cols)
    return [dict(zip(names, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


def normalize_graded(graded: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Graded rows as they read back from the graded file.

    When every row has every column and no column needs JSON (the usual case: scalars of one
    type per column), the rows already are what reading the file gives back, so they are copied
    instead of going through Arrow and back (a third of the whole build at 100k rows).
    """
    columns: dict[str, None] = {}
    for g in graded:
        for k in g:
            columns.setdefault(k, None)
    n = len(columns)
    if all(len(g) == n for g in graded) and all(
        _column_kind([g[c] for g in graded]) != "json" for c in columns
    ):
        return [{c: g[c] for c in columns} for g in graded]
    return rows_from_table(graded_table(graded))


def write_graded(
    path: Path, graded: Sequence[Mapping[str, Any]], meta: Mapping[str, str] | None = None
) -> None:
    table = graded_table(graded)
    md = dict(table.schema.metadata or {})
    md.update({f"sealedeval.{k}".encode(): v.encode() for k, v in (meta or {}).items()})
    table = table.replace_schema_metadata(md)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


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


def read_graded(path: Path) -> list[dict[str, Any]]:
    try:
        table = pq.ParquetFile(path).read()
    except (OSError, pa.ArrowInvalid) as e:
        raise UserError(f"{path}: not a readable graded file ({e})") from None
    return rows_from_table(table)


# -- analysis ---------------------------------------------------------------------------------


def write_analysis(path: Path, doc: Mapping[str, Any]) -> None:
    write_text_atomic(path, dumps(doc))


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
