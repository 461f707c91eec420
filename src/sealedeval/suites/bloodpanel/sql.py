"""SQL case loader: the bloodpanel case schema from a database table, through a read-only role.

The published second update read its 100,000 cases from a private MySQL table with a read-only
role. This loader does the same for any SQLAlchemy URL (PostgreSQL, MySQL, SQLite, ...):

* The URL (which holds the credentials) is read from the environment variable named in the
  config (``source.url_env``) and is never written anywhere: not into items, raw rows or
  result.json. Error messages have the URL and its password scrubbed.
* The query is *frozen*: its exact text is part of the config, and its text and sha256 are
  recorded with every item it produced and in result.json, together with a sha256 of the rows
  it returned (so a later audit can tell whether the table still returns the same cases).
* Read-only twice over: the role should only hold SELECT (the database enforces that), and the
  loader accepts one SELECT/WITH statement only and runs it in a read-only transaction
  (PostgreSQL/MySQL ``SET TRANSACTION READ ONLY``, SQLite ``PRAGMA query_only``).

Columns are those of ``Case.to_record``: case_uid, case_id, label, specialty, age, sex,
panel_json, expected_keywords, expected_scoring_systems, trap_flags, is_trap, archetype (and the
optional title, notes, v11_category, source). List columns may be JSON text or native arrays;
``panel_json`` may be JSON text or a JSON column. Cases are returned sorted by ``case_uid`` so
the table's physical order never changes a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sealedeval.canonical import compact
from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.cases import Case

REQUIRED_COLUMNS: Final = (
    "case_uid",
    "case_id",
    "label",
    "specialty",
    "age",
    "sex",
    "panel_json",
    "expected_keywords",
    "expected_scoring_systems",
    "trap_flags",
    "is_trap",
    "archetype",
)
OPTIONAL_COLUMNS: Final = ("title", "notes", "v11_category", "source")
_LIST_COLUMNS: Final = ("expected_keywords", "expected_scoring_systems", "trap_flags")
_FIRST_WORD: Final = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)


@dataclass(frozen=True)
class SqlSource:
    """``source: {kind: sql, url_env: ..., query: ...}`` of the bloodpanel config."""

    url_env: str
    query: str

    @classmethod
    def from_config(cls, doc: Mapping[str, Any], where: str) -> SqlSource:
        url_env = str(doc.get("url_env") or "")
        query = str(doc.get("query") or "")
        if not url_env:
            raise UserError(f"{where}.url_env: name the environment variable holding the URL")
        return cls(url_env, check_query(query, f"{where}.query"))

    @property
    def query_sha256(self) -> str:
        return hashlib.sha256(self.query.encode()).hexdigest()


def check_query(query: str, where: str = "query") -> str:
    """The query without a trailing ``;``, if it is one SELECT (or WITH … SELECT) statement.

    Raises:
        UserError: Empty, more than one statement, or not a SELECT.
    """
    q = query.strip().rstrip(";").strip()
    if not q:
        raise UserError(f"{where}: empty query")
    if ";" in q:
        raise UserError(f"{where}: one statement only (found ';' inside the query)")
    if not _FIRST_WORD.match(q):
        raise UserError(f"{where}: only a SELECT (or WITH ... SELECT) query is accepted")
    return q


def _scrub(message: str, url: str) -> str:
    """The message with the URL and its password removed (DBAPI errors may quote either)."""
    out = message.replace(url, "<url>") if url else message
    try:
        from sqlalchemy.engine import make_url

        pw = make_url(url).password
    except Exception:  # an unparsable URL: nothing more to scrub than the URL itself
        pw = None
    if pw:
        out = out.replace(str(pw), "***")
    return out.strip().splitlines()[0] if out.strip() else out


def _as_list(value: Any, col: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return []
        try:
            value = json.loads(s)
        except json.JSONDecodeError:
            raise UserError(f"{where}: {col} is neither a JSON array nor an array") from None
    if not isinstance(value, (list, tuple)):
        raise UserError(f"{where}: {col} must be an array of strings")
    return [str(v) for v in value]


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "t", "true", "y", "yes")
    return bool(value)


def record_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One database row → a ``Case.to_record``-shaped mapping (types coerced, not guessed).

    Raises:
        UserError: A required column is missing or a list column is malformed.
    """
    where = f"case {row.get('case_id', row.get('case_uid', '?'))}"
    missing = [c for c in REQUIRED_COLUMNS if c not in row]
    if missing:
        raise UserError(f"{where}: query result lacks column(s) {', '.join(missing)}")
    rec: dict[str, Any] = {c: row[c] for c in REQUIRED_COLUMNS}
    for c in OPTIONAL_COLUMNS:
        rec[c] = row.get(c) or ""
    for c in _LIST_COLUMNS:
        rec[c] = _as_list(row[c], c, where)
    panel = row["panel_json"]
    rec["panel_json"] = panel if isinstance(panel, str) else json.dumps(panel)
    rec["is_trap"] = _as_bool(row["is_trap"])
    rec["source"] = str(rec["source"] or "sql")
    return rec


def _read_only(conn: Any) -> None:
    """Make the current transaction read-only where the dialect can say so."""
    name = conn.dialect.name
    if name in ("postgresql", "mysql", "mariadb"):
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
    elif name == "sqlite":
        conn.exec_driver_sql("PRAGMA query_only = ON")


def fetch_rows(url: str, query: str) -> tuple[str, list[dict[str, Any]]]:
    """``(dialect name, rows)`` of ``query`` run read-only at ``url``.

    Raises:
        UserError: Unreadable URL, connection or query failure (credentials scrubbed).
    """
    try:
        from sqlalchemy import create_engine, text
        from sqlalchemy.exc import ArgumentError, SQLAlchemyError
        from sqlalchemy.pool import NullPool
    except ImportError:  # pragma: no cover - a declared dependency
        raise UserError("SQL case loader: SQLAlchemy is not installed") from None
    try:
        engine = create_engine(url, poolclass=NullPool)
    except (ArgumentError, ValueError) as e:
        raise UserError(f"SQL URL is not a valid SQLAlchemy URL ({_scrub(str(e), url)})") from None
    except ImportError as e:
        raise UserError(f"SQL URL names a driver that is not installed ({e.name})") from None
    try:
        with engine.connect() as conn:
            _read_only(conn)
            result = conn.execute(text(query))
            rows = [dict(r._mapping) for r in result]
            conn.rollback()
    except SQLAlchemyError as e:
        detail = _scrub(str(getattr(e, "orig", None) or e), url)
        raise UserError(f"SQL case query failed ({type(e).__name__}: {detail})") from None
    finally:
        engine.dispose()
    return engine.dialect.name, rows


_CACHE: dict[tuple[str, str], tuple[list[Case], dict[str, Any]]] = {}


def load_sql_cases(source: SqlSource, where: str) -> tuple[list[Case], dict[str, Any]]:
    """Cases from the frozen query, sorted by ``case_uid``, and what to record about them.

    Returns:
        ``(cases, meta)`` with ``meta = {kind, url_env, dialect, query, query_sha256, rows,
        rows_sha256}`` — no URL, no credentials. One query per process per (URL, query): the
        publish stage generates items twice.

    Raises:
        UserError: Unset variable, failed query, malformed or duplicate rows, no rows.
    """
    url = os.environ.get(source.url_env, "")
    if not url:
        raise UserError(f"{where}: environment variable {source.url_env} is not set")
    key = (hashlib.sha256(url.encode()).hexdigest(), source.query)
    if key in _CACHE:
        return _CACHE[key]
    dialect, rows = fetch_rows(url, source.query)
    if not rows:
        raise UserError(f"{where}: the query returned no cases")
    cases: dict[str, Case] = {}
    for row in rows:
        case = Case.from_record(record_from_row(row))
        if case.case_uid in cases:
            raise UserError(f"{where}: duplicate case_uid {case.case_uid!r} in the query result")
        cases[case.case_uid] = case
    ordered = [cases[k] for k in sorted(cases)]
    digest = hashlib.sha256(compact([c.to_record() for c in ordered]).encode()).hexdigest()
    meta = {
        "kind": "sql",
        "url_env": source.url_env,
        "dialect": dialect,
        "query": source.query,
        "query_sha256": source.query_sha256,
        "rows": len(ordered),
        "rows_sha256": digest,
    }
    _CACHE[key] = (ordered, meta)
    return ordered, meta
