"""SQL case loader: query checks, SQLite, and a real PostgreSQL cluster with a read-only role."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from tests.bloodpanel import pg
from tests.conftest import make_project

from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel import sql
from sealedeval.suites.bloodpanel.cases import Case, load_curated
from sealedeval.suites.bloodpanel.sql import SqlSource, check_query, load_sql_cases
from sealedeval.suites.bloodpanel.synthetic import synthetic_cases

ROOT = Path(__file__).resolve().parents[2]
QUERY = (
    "SELECT case_uid, case_id, label, specialty, age, sex, panel_json, expected_keywords, "
    "expected_scoring_systems, trap_flags, is_trap, archetype, title, notes, v11_category, "
    "source FROM bloodpanel_cases WHERE specialty <> 'haematology'"
)


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    curated = load_curated(ROOT / "data/bloodpanel/curated.yaml")
    return [*curated[:3], curated[13], *synthetic_cases(30, 5)][:10]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    sql._CACHE.clear()
    yield
    sql._CACHE.clear()


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "  ;  ",
        "DELETE FROM bloodpanel_cases",
        "SELECT 1; DROP TABLE bloodpanel_cases",
        "update bloodpanel_cases set age = 1",
        "INSERT INTO t VALUES (1)",
    ],
)
def test_only_one_select_is_accepted(bad: str) -> None:
    with pytest.raises(UserError):
        check_query(bad)


def test_trailing_semicolon_and_with_are_fine() -> None:
    assert check_query(" select * from t ;\n") == "select * from t"
    assert check_query("WITH x AS (SELECT 1) SELECT * FROM x").startswith("WITH")


def _sqlite(path: Path, records: list[dict[str, object]]) -> None:
    con = sqlite3.connect(path)
    cols = list(records[0])
    con.execute(f"CREATE TABLE bloodpanel_cases ({', '.join(cols)})")
    for r in records:
        vals = [json.dumps(v) if isinstance(v, list) else v for v in r.values()]
        con.execute(f"INSERT INTO bloodpanel_cases VALUES ({', '.join('?' * len(cols))})", vals)
    con.commit()
    con.close()


def test_sqlite_round_trip_sorted_and_recorded(
    tmp_path: Path, cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "cases.db"
    _sqlite(db, [c.to_record() for c in reversed(cases)])
    monkeypatch.setenv("BP_DB", f"sqlite:///{db}")
    got, meta = load_sql_cases(SqlSource("BP_DB", check_query(QUERY)), "test")
    want = sorted((c for c in cases if c.specialty != "haematology"), key=lambda c: c.case_uid)
    assert got == want
    assert [c.panel for c in got] == [c.panel for c in want]
    assert meta["query"] == check_query(QUERY) and meta["rows"] == len(want)
    assert meta["dialect"] == "sqlite" and str(db) not in json.dumps(meta)


def test_unset_variable_bad_url_and_failed_query_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BP_DB", raising=False)
    with pytest.raises(UserError, match="BP_DB is not set"):
        load_sql_cases(SqlSource("BP_DB", "SELECT 1"), "test")
    monkeypatch.setenv("BP_DB", "not a url with s3cretpw")
    with pytest.raises(UserError) as e:
        load_sql_cases(SqlSource("BP_DB", "SELECT 1"), "test")
    assert "s3cretpw" not in str(e.value)
    monkeypatch.setenv("BP_DB", "sqlite:///:memory:")
    with pytest.raises(UserError, match="query failed"):
        load_sql_cases(SqlSource("BP_DB", "SELECT * FROM no_such_table"), "test")


# -- PostgreSQL --------------------------------------------------------------------------------

_PG_REASON = pg.unavailable()
needs_pg = pytest.mark.skipif(_PG_REASON is not None, reason=_PG_REASON or "")
slow = pytest.mark.slow  # a real PostgreSQL cluster (initdb, pg_ctl)


@pytest.fixture(scope="module")
def cluster() -> Iterator[pg.Cluster]:
    if _PG_REASON:
        pytest.skip(_PG_REASON)
    with pg.cluster() as cl:
        yield cl


@pytest.fixture(scope="module")
def reader_url(cluster: pg.Cluster, cases: list[Case]) -> str:
    return pg.load_cases(cluster, [c.to_record() for c in cases])


@slow
@needs_pg
def test_postgres_read_only_role_loads_the_same_cases(
    reader_url: str, cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BP_DB", reader_url)
    got, meta = load_sql_cases(SqlSource("BP_DB", check_query(QUERY)), "test")
    want = sorted((c for c in cases if c.specialty != "haematology"), key=lambda c: c.case_uid)
    assert got == want and meta["dialect"] == "postgresql"
    assert "reader-pw" not in json.dumps(meta)


@slow
@needs_pg
def test_postgres_role_and_transaction_refuse_writes(
    cluster: pg.Cluster, reader_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg2

    # The role: the database itself refuses a write.
    conn = cluster.connect("bench", "bench_reader", "reader-pw-2fd1")
    with pytest.raises(psycopg2.errors.InsufficientPrivilege), conn.cursor() as cur:
        cur.execute("DELETE FROM bloodpanel_cases")
    conn.close()
    # The loader: even with the superuser's URL a data-modifying CTE (which passes the SELECT
    # check) fails, because the transaction is read-only.
    monkeypatch.setenv("BP_SUPER", cluster.url(db="bench"))
    cte = "WITH gone AS (DELETE FROM bloodpanel_cases RETURNING *) SELECT * FROM gone"
    with pytest.raises(UserError, match="read-only transaction"):
        load_sql_cases(SqlSource("BP_SUPER", check_query(cte)), "test")
    assert cluster.password not in "".join(str(x) for x in sql._CACHE.values())
    conn = cluster.connect("bench")
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM bloodpanel_cases")
        assert cur.fetchone()[0] == 10
    conn.close()


@slow
@needs_pg
def test_postgres_source_through_the_cli_records_the_frozen_query(
    tmp_path: Path, reader_url: str, cases: list[Case]
) -> None:
    n = sum(1 for c in cases if c.specialty != "haematology")
    assert 0 < n < len(cases)
    root = make_project(tmp_path / "proj")
    cfg = {
        "suites": {
            "golden": {"enabled": False},
            "bloodpanel": {
                "engines": ["reference"],
                "cohorts": {"reference": "sql"},
                "curated": False,
                "synthetic_n": 0,
                "n_boot": 50,
                "source": {"kind": "sql", "url_env": "BP_CASES_URL", "query": QUERY + ";"},
            },
        }
    }
    (root / "config/sql.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    env = {"BP_CASES_URL": reader_url}
    for args in (["generate", "bloodpanel"], ["run", "bloodpanel", "--no-progress"], ["publish"]):
        proc = subprocess.run(
            [sys.executable, "-m", "sealedeval.cli", *args, "-c", "config/sql.yaml"],
            cwd=root,
            env=os.environ | env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    items = [
        json.loads(r)
        for r in pq.read_table(root / "results/items/bloodpanel.parquet")
        .column("record")
        .to_pylist()
    ]
    assert len(items) == n and {i["cohort"] for i in items} == {"sql"}
    assert {i["source_query"] for i in items} == {QUERY}
    result = (root / "results/result.json").read_text()
    src = json.loads(result)["suites"]["bloodpanel"]["analysis"]["source"]
    assert src["kind"] == "sql" and src["sql"]["query"] == QUERY and src["sql"]["rows"] == n
    assert src["sql"]["url_env"] == "BP_CASES_URL"
    assert "reader-pw" not in result and "127.0.0.1" not in result
    h = json.loads(result)["suites"]["bloodpanel"]["analysis"]["engines"]["reference"]
    assert h["profiles"]["sealed"]["headline"]["n_ok"] == n
    assert "frozen query" in (root / "results/report.md").read_text()
