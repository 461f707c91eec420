"""Reading an items (or labels) file: JSONL, CSV, TSV, Parquet, a JSON list or a YAML list.

Every row keeps where it came from (``file:line`` for text formats, ``file: row N`` for Parquet)
so that every complaint about an item names the place to fix it. Values are plain JSON values:
CSV cells are text, Parquet dates and times become ISO text, non-finite floats become null.
Unreadable files, rows that are not records and empty files are one-line ``UserError``s.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval import yamlio
from sealedeval.errors import UserError

FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}


@dataclass(frozen=True)
class Table:
    path: str
    rows: list[dict[str, Any]]
    where: list[str]
    """Per row: ``file:line`` or ``file: row N``."""
    columns: list[str]


def _plain(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return _plain(value.item(), where)
    raise UserError(f"{where}: a value of type {type(value).__name__} is not JSON data")


def _text(root: Path, rel: str, what: str) -> str:
    path = root / rel
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"{rel}: {what} file not found") from None
    except IsADirectoryError:
        raise UserError(f"{rel}: is a directory, not an {what} file") from None
    except UnicodeDecodeError as e:
        raise UserError(
            f"{rel}: cannot read the {what} file: not UTF-8 text ({e.reason})"
        ) from None
    except OSError as e:
        raise UserError(f"{rel}: cannot read the {what} file ({e.strerror or e})") from None


def _record(doc: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise UserError(
            f"{where}: expected one {what} record (a mapping), got {type(doc).__name__}"
        )
    return {str(k): _plain(v, where) for k, v in doc.items()}


def read_table(root: Path, rel: str, what: str = "items") -> Table:
    """The rows of a table file, with their locations (see the module docstring)."""
    fmt = FORMATS.get(Path(rel).suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise UserError(f"{rel}: unknown {what} file format (use one of {known})")
    rows: list[dict[str, Any]] = []
    where: list[str] = []
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = root / rel
        if not path.exists():
            raise UserError(f"{rel}: {what} file not found")
        try:
            records = pq.read_table(path).to_pylist()
        except (OSError, pa.ArrowException) as e:
            raise UserError(f"{rel}: cannot read the {what} file as Parquet ({e})") from None
        for i, rec in enumerate(records, 1):
            w = f"{rel}: row {i}"
            rows.append(_record(rec, w, what))
            where.append(w)
    else:
        text = _text(root, rel, what)
        if fmt == "jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                w = f"{rel}:{n}"
                try:
                    doc = json.loads(line)
                except ValueError as e:
                    raise UserError(f"{w}: not valid JSON ({e})") from None
                rows.append(_record(doc, w, what))
                where.append(w)
        elif fmt in ("csv", "tsv"):
            reader = csv.DictReader(io.StringIO(text), delimiter="," if fmt == "csv" else "\t")
            try:
                for rec in reader:
                    w = f"{rel}:{reader.line_num}"
                    if None in rec:
                        raise UserError(f"{w}: more cells than the header has columns")
                    rows.append({str(k): v for k, v in rec.items()})
                    where.append(w)
            except csv.Error as e:
                raise UserError(f"{rel}:{reader.line_num}: not valid CSV ({e})") from None
        else:
            try:
                doc = json.loads(text) if fmt == "json" else yamlio.safe_load(text)
            except Exception as e:  # ValueError, yaml.YAMLError
                raise UserError(f"{rel}: not valid {fmt.upper()} ({e})") from None
            if isinstance(doc, dict) and isinstance(doc.get(what), list):
                doc = doc[what]  # {items: [...]} (as golden's tasks.yaml holds {tasks: [...]})
            if doc is None:
                doc = []
            if not isinstance(doc, list):
                raise UserError(f"{rel}: expected a list of {what} records")
            for i, rec in enumerate(doc, 1):
                w = f"{rel}: record {i}"
                rows.append(_record(rec, w, what))
                where.append(w)
    if not rows:
        raise UserError(f"{rel}: no {what} (the file is empty)")
    columns: dict[str, None] = {}
    for r in rows:
        for k in r:
            columns.setdefault(k, None)
    return Table(rel, rows, where, list(columns))
