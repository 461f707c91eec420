"""Throwaway PostgreSQL clusters for tests: ``initdb`` + ``pg_ctl`` under a temp dir.

Uses the server binaries of Debian's ``postgresql`` package (``apt-get install -y postgresql``);
installs nothing itself. ``unavailable()`` says why a cluster cannot be started (the tests skip
with that reason). As root (CI runs as root) the server runs as the ``postgres`` user via
``runuser`` (or ``su``), because PostgreSQL refuses to run as root. The cluster listens on
127.0.0.1 on a free port with password (SCRAM) authentication, its socket in the temp dir; it is
stopped (``-m immediate``) and deleted on exit.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPERUSER = "postgres"


def find_bin(name: str) -> Path | None:
    """``name`` on PATH, else the newest ``/usr/lib/postgresql/*/bin/name``."""
    hit = shutil.which(name)
    if hit:
        return Path(hit)
    found = sorted(
        Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    return found[-1] if found else None


def unavailable() -> str | None:
    """Why no cluster can be started here, or None."""
    for name in ("initdb", "pg_ctl"):
        if find_bin(name) is None:
            return (
                f"PostgreSQL server binaries not found ({name}); install them with "
                "`apt-get install -y postgresql` (the tests install nothing)"
            )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SUPERUSER)
        except KeyError:
            return "running as root but there is no 'postgres' user to run the server as"
        if not (shutil.which("runuser") or shutil.which("su")):
            return "running as root but neither runuser nor su is available"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed (pip install psycopg2-binary)"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    dir: Path
    port: int
    password: str

    def url(self, user: str = SUPERUSER, password: str | None = None, db: str = "postgres") -> str:
        pw = self.password if password is None else password
        return f"postgresql+psycopg2://{user}:{pw}@127.0.0.1:{self.port}/{db}"

    def connect(
        self, db: str = "postgres", user: str = SUPERUSER, password: str | None = None
    ) -> Any:
        import psycopg2

        return psycopg2.connect(
            host="127.0.0.1",
            port=self.port,
            dbname=db,
            user=user,
            password=self.password if password is None else password,
        )


def _as_server_user(cmd: Sequence[str]) -> list[str]:
    if os.geteuid() != 0:
        return list(cmd)
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", SUPERUSER, "--", *cmd]
    return ["su", SUPERUSER, "-s", "/bin/sh", "-c", shlex.join(cmd)]


def _run(cmd: Sequence[str], timeout: float = 120) -> None:
    proc = subprocess.run(
        _as_server_user(cmd),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """Start a throwaway cluster; stop and delete it afterwards (whatever happens)."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
    assert initdb is not None and pg_ctl is not None
    top = Path(tempfile.mkdtemp(prefix="sealedeval-pg-"))
    data = top / "data"
    password = secrets.token_hex(12)
    pwfile = top / "pw"
    pwfile.write_text(password + "\n", encoding="utf-8")
    if os.geteuid() == 0:
        pw = pwd.getpwnam(SUPERUSER)
        for p in (top, pwfile):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    port = free_port()
    started = False
    try:
        _run(
            [
                str(initdb),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        opts = f"-p {port} -k {top} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run(
            [
                str(pg_ctl),
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                str(top / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        started = True
        yield Cluster(top, port, password)
    finally:
        if started:
            with contextlib.suppress(Exception):
                _run([str(pg_ctl), "-D", str(data), "-m", "immediate", "-w", "stop"], 60)
        shutil.rmtree(top, ignore_errors=True)


CREATE_TABLE = """
CREATE TABLE bloodpanel_cases (
    case_uid text PRIMARY KEY,
    case_id text NOT NULL,
    label text NOT NULL,
    specialty text NOT NULL,
    age integer NOT NULL,
    sex text NOT NULL,
    panel_json jsonb NOT NULL,
    expected_keywords text[] NOT NULL,
    expected_scoring_systems text[] NOT NULL,
    trap_flags text[] NOT NULL,
    is_trap boolean NOT NULL,
    archetype text NOT NULL,
    title text,
    notes text,
    v11_category text,
    source text
)
"""


def load_cases(
    cl: Cluster,
    records: Sequence[dict[str, Any]],
    *,
    db: str = "bench",
    reader: str = "bench_reader",
    reader_password: str = "reader-pw-2fd1",
) -> str:
    """Create ``db`` with table ``bloodpanel_cases`` holding ``records`` (``Case.to_record``
    rows; lists as text[] arrays, the panel as jsonb) and a login role ``reader`` that may only
    SELECT it. Returns the reader's SQLAlchemy URL."""
    import json

    conn = cl.connect()
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE ROLE {reader} LOGIN PASSWORD %s", (reader_password,))
    conn.close()
    conn = cl.connect(db)
    with conn, conn.cursor() as cur:
        cur.execute(CREATE_TABLE)
        for r in records:
            cur.execute(
                "INSERT INTO bloodpanel_cases VALUES "
                "(%s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    r["case_uid"],
                    r["case_id"],
                    r["label"],
                    r["specialty"],
                    r["age"],
                    r["sex"],
                    json.dumps(json.loads(r["panel_json"])),
                    list(r["expected_keywords"]),
                    list(r["expected_scoring_systems"]),
                    list(r["trap_flags"]),
                    r["is_trap"],
                    r["archetype"],
                    r["title"],
                    r["notes"],
                    r["v11_category"],
                    r["source"],
                ),
            )
        cur.execute(f"REVOKE ALL ON DATABASE {db} FROM PUBLIC")
        cur.execute(f"GRANT CONNECT ON DATABASE {db} TO {reader}")
        cur.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        cur.execute(f"GRANT USAGE ON SCHEMA public TO {reader}")
        cur.execute(f"GRANT SELECT ON bloodpanel_cases TO {reader}")
    conn.close()
    return cl.url(reader, reader_password, db)
