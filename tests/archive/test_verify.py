"""An auditor verifies from the DOI alone: init → seal with a Zenodo pre-registration → run →
deposit, then ``sealedeval verify`` in another directory, against loopback fakes of Zenodo and
Figshare that speak their public record APIs.

The project is a ``sealedeval init`` project whose example suite runs on the deterministic
reference engine. verify runs as a subprocess of this interpreter from another working
directory (a second virtualenv would only repeat the install: the point is that nothing of the
author's checkout is reachable from there). Each tampered deposit is consistent (SHA256SUMS
recomputed), so it is the audit that must catch it, naming the check.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tests.archive.fake_repos import State, serve
from tests.archive.tsa import make_tsa, serve_tsa
from tests.conftest import git

pytestmark = pytest.mark.slow

TOKEN = "zen-token-for-the-fake-0123"
ROW = re.compile(r"^(?P<name>.+?)\s+(?P<status>PASS|FAIL|WARN)\s+(?P<detail>.*)$")


@dataclass
class Run:
    rc: int
    out: str
    err: str

    def checks(self) -> dict[str, tuple[str, str]]:
        rows = {}
        for line in self.out.splitlines():
            m = ROW.match(line)
            if m and not line.startswith(("verify:", "check ")):
                rows[m["name"].strip()] = (m["status"], m["detail"])
        return rows

    def failing(self) -> set[str]:
        return {n for n, (s, _) in self.checks().items() if s == "FAIL"}

    def __repr__(self) -> str:
        return f"rc={self.rc}\n{self.out}\n{self.err}"


def cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ | {"DVC_NO_ANALYTICS": "1"} | (env or {}),
        timeout=600,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def ok(run: Run) -> Run:
    assert run.rc == 0, run
    return run


@dataclass
class Loop:
    st: State
    root: Path
    env: dict[str, str]
    doi: str
    prereg_id: int
    first_call: str
    deposit_out: str


def _init_project(root: Path, env: dict[str, str], tsa: tuple[str, Path] | None = None) -> None:
    """init → seal (a Zenodo pre-registration; with ``tsa``, an RFC 3161 token too) → run →
    publish, each step committed as an author would; with ``tsa`` the ledger head is stamped."""
    stamp = ["--tsa", tsa[0], "--tsa-ca", str(tsa[1])] if tsa else []
    ok(cli(root.parent, "init", root.name))
    cfg = yaml.safe_load((root / "config/config.yaml").read_text())
    cfg["engines"] = {"reference": {"kind": "reference"}}
    cfg["suites"]["example"]["engines"] = ["reference"]
    (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    for k, v in (("user.name", "Author"), ("user.email", "author@example.invalid")):
        git(root, "config", k, v)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Project")
    ok(cli(root, "seal", "--zenodo", "--publish", *stamp, env=env))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Seal the rubric (pre-registered on Zenodo)")
    ok(cli(root, "generate", "example"))
    ok(cli(root, "run", "example", "--no-progress"))
    ok(cli(root, "publish", "--jobs", "1"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Runs: the ledger")
    if tsa:
        ok(cli(root, "seal", "--ledger-head", *stamp))
        git(root, "add", "-A")
        git(root, "commit", "-qm", "Time-stamp the ledger")


def _first_call(root: Path) -> str:
    starts = [
        r["started_at"]
        for p in sorted((root / "results/raw").rglob("part-*.parquet"))
        for r in pq.read_table(p).to_pylist()
    ]
    return min(starts)


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    tsa_dir = tmp_path_factory.mktemp("tsa")
    make_tsa(tsa_dir)
    with serve(TOKEN) as st, serve_tsa(tsa_dir) as tsa_url:
        env = {"ZENODO_API_TOKEN": TOKEN, "SEALEDEVAL_ZENODO_URL": st.base}
        root = tmp_path_factory.mktemp("author") / "myeval"
        _init_project(root, env, (tsa_url, tsa_dir / "ca.pem"))
        prereg = json.loads((root / "rubric.lock.zenodo.json").read_text())
        dep = ok(cli(root, "deposit", "--publish", env=env))
        rec = json.loads((root / "results/deposit.json").read_text())["zenodo"]
        yield Loop(st, root, env, rec["doi"], prereg["id"], _first_call(root), dep.out)


def _verify(where: Path, source: str, *args: str, env: dict[str, str] | None = None) -> Run:
    return cli(where, "verify", source, *args, env=env)


def test_verify_by_doi_passes_and_reads_the_preregistration_back(
    loop: Loop, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "auditor"
    elsewhere.mkdir()
    t0 = time.perf_counter()
    run = _verify(elsewhere, loop.doi, env={"SEALEDEVAL_ZENODO_URL": loop.st.base})
    wall = time.perf_counter() - t0
    assert run.rc == 0, run
    checks = run.checks()
    assert all(s != "FAIL" for s, _ in checks.values()), run
    for name in ("seal precedes runs", "result re-derives", "ledger chain", "ledgered parts"):
        assert checks[name][0] == "PASS", run
    status, detail = checks["external anchors"]
    published = loop.st.deps[loop.prereg_id]["_published_at"]
    assert status == "PASS", run
    assert f"pre-registration 10.5072/zenodo.{loop.prereg_id} published {published}" in detail
    assert "read back from zenodo" in detail and loop.first_call in detail
    assert "RFC 3161" in detail, run  # the rubric.lock token travelled and verifies
    assert "time-stamped" in checks["ledger chain"][1], run  # and the ledger head's
    assert run.out.strip().splitlines()[-1].startswith("verify: passed")
    # progress: a line per fetched file, on stderr
    assert re.search(r"fetch \[\d+/\d+\] raw\.tar\.gz", run.err), run
    assert not any(elsewhere.iterdir()), "verify left files in the working directory"
    size = re.search(r"deposit ([\d.]+ \w+)", loop.deposit_out)
    print(f"tiny init deposit: {size and size.group(1)}; verify by DOI: {wall:.1f} s")


def test_the_deposit_carries_what_the_audit_needs(loop: Loop) -> None:
    out = loop.root / "results/deposit/bundle"
    names = {p.name for p in out.iterdir()}
    assert {
        "DEPOSIT.json",
        "history.bundle",
        "inputs.tar.gz",
        "raw.tar.gz",
        "environment.txt",
        "VERIFY.md",
        "SHA256SUMS",
        "result.json",
        "report.md",
        "rubric.lock",
        "rubric.lock.zenodo.json",
        "rubric.lock.tsr",
        "rubric.lock.tsa.pem",
        "ledger.jsonl",
        "ledger.head.json",
        "ledger.head.json.tsr",
    } <= names
    # raw runs go in compressed; the only flat parquet files are the graded ones, for readers
    assert all(n.startswith("graded__") for n in names if n.endswith(".parquet")), names
    assert "graded__example.parquet" in names
    with tarfile.open(out / "inputs.tar.gz") as t:
        inputs = set(t.getnames())
    assert {"config/config.yaml", "data/example/items.jsonl"} <= inputs
    with tarfile.open(out / "raw.tar.gz") as t:
        raw = [n for n in t.getnames() if n.endswith(".parquet")]
    assert raw and all(n.startswith("results/raw/example/reference/") for n in raw)
    env_txt = (out / "environment.txt").read_text()
    assert re.search(r"^pyarrow==[\d.]+$", env_txt, re.M)
    manifest = json.loads((out / "DEPOSIT.json").read_text())
    assert manifest["commit"] == git(loop.root, "rev-parse", "HEAD")
    # the bundle is reproducible: the same project gives the same bytes
    ok(cli(loop.root, "bundle"))
    before = (out / "SHA256SUMS").read_text()
    ok(cli(loop.root, "bundle"))
    assert (out / "SHA256SUMS").read_text() == before
    assert re.search(
        r"raw runs: \d+ parts, .* → raw\.tar\.gz .*; deposit [\d.]+ \w+", loop.deposit_out
    )


# -- tampered deposits --------------------------------------------------------------------------
def _copy_bundle(loop: Loop, dest: Path) -> Path:
    shutil.copytree(loop.root / "results/deposit/bundle", dest)
    return dest


def _resum(folder: Path) -> None:
    lines = []
    for line in (folder / "SHA256SUMS").read_text().splitlines():
        name = line.split("  ", 1)[1]
        lines.append(f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}")
    (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def _rewrite_tar(path: Path, edit: dict[str, bytes]) -> None:
    with tarfile.open(path) as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]  # type: ignore[union-attr]
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as out,
    ):
        for m, data in members:
            data = edit.get(m.name, data)
            m.size = len(data)
            out.addfile(m, io.BytesIO(data))
    path.write_bytes(buf.getvalue())


def _first_part(folder: Path) -> tuple[str, bytes]:
    with tarfile.open(folder / "raw.tar.gz") as t:
        m = sorted(n for n in t.getnames() if n.endswith(".parquet"))[0]
        return m, t.extractfile(m).read()  # type: ignore[union-attr]


def test_an_edited_raw_part_fails(loop: Loop, tmp_path: Path) -> None:
    folder = _copy_bundle(loop, tmp_path / "b")
    name, data = _first_part(folder)
    table = pq.read_table(io.BytesIO(data))
    rows = table.to_pylist()
    rows[0]["output_text"] = "not what the engine said"
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), buf, compression="zstd")
    assert buf.getvalue() != data
    _rewrite_tar(folder / "raw.tar.gz", {name: buf.getvalue()})
    _resum(folder)
    run = _verify(tmp_path, str(folder), "--offline")
    assert run.rc == 1, run
    assert {"manifest checksums", "ledgered parts"} <= run.failing(), run
    assert "verify: FAILED" in run.out


def test_an_edited_result_fails(loop: Loop, tmp_path: Path) -> None:
    folder = _copy_bundle(loop, tmp_path / "b")
    text = (folder / "result.json").read_text()
    edited = re.sub(r'"estimate": 1\.0', '"estimate": 0.97', text, count=1)
    assert edited != text
    (folder / "result.json").write_text(edited)
    _resum(folder)
    run = _verify(tmp_path, str(folder), "--offline")
    assert run.rc == 1, run
    assert "result re-derives" in run.failing(), run


def test_a_removed_ledger_entry_fails(loop: Loop, tmp_path: Path) -> None:
    folder = _copy_bundle(loop, tmp_path / "b")
    lines = (folder / "ledger.jsonl").read_text().splitlines(keepends=True)
    (folder / "ledger.jsonl").write_text("".join(lines[:-1]))
    _resum(folder)
    run = _verify(tmp_path, str(folder), "--offline")
    assert run.rc == 1, run
    assert "ledger chain" in run.failing(), run


def test_history_with_the_seal_after_the_runs_fails(loop: Loop, tmp_path: Path) -> None:
    """The author rewrites history so that the runs come first and the seal after them."""
    root = tmp_path / "rewritten"
    shutil.copytree(loop.root, root)
    commits = git(root, "rev-list", "--reverse", "HEAD").split()
    project, _seal, runs, last = commits  # the last time-stamps the ledger head
    git(root, "checkout", "-q", "--orphan", "rewritten", project)
    git(root, "checkout", "-q", runs, "--", "ledger.jsonl")
    git(root, "commit", "-qm", "Runs: the ledger")
    git(root, "checkout", "-q", last, "--", ".")
    git(root, "commit", "-qm", "Seal the rubric")
    assert git(root, "diff", last, "HEAD") == ""  # the same files, another history
    git(root, "branch", "-D", "main")
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    ok(cli(root, "bundle"))
    run = _verify(tmp_path, str(root / "results/deposit/bundle"), "--offline")
    assert run.rc == 1, run
    assert "seal precedes runs" in run.failing(), run
    assert "not in this history" in run.checks()["seal precedes runs"][1]


def test_a_preregistration_published_after_the_first_call_fails(loop: Loop, tmp_path: Path) -> None:
    """The author runs first and pre-registers later (say, on a machine whose clock is set
    back): git dates agree with the story, but Zenodo says when it published the record."""
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
    root = tmp_path / "author" / "late"
    root.parent.mkdir()
    loop.st.clock = later  # what time it is at Zenodo when the pre-registration is published
    try:
        _init_project(root, loop.env)
    finally:
        loop.st.clock = None
    ok(cli(root, "deposit", "--publish", env=loop.env))
    doi = json.loads((root / "results/deposit.json").read_text())["zenodo"]["doi"]
    # the plain, offline audit cannot see it: it has only the author's own record
    assert cli(root, "audit").rc == 0
    run = _verify(tmp_path, doi, env={"SEALEDEVAL_ZENODO_URL": loop.st.base})
    assert run.rc == 1, run
    assert run.failing() == {"external anchors"}, run
    detail = run.checks()["external anchors"][1]
    assert f"published {later} (zenodo), after the first call" in detail, run
    assert run.out.strip().splitlines()[-1] == "verify: FAILED (external anchors)"


# -- local sources and bad input ----------------------------------------------------------------
def test_a_local_bundle_and_its_zip_verify_offline(loop: Loop, tmp_path: Path) -> None:
    closed = {"SEALEDEVAL_ZENODO_URL": "http://127.0.0.1:9"}  # nothing listens: as offline
    run = cli(loop.root, "verify", "results/deposit/bundle", env=closed)
    assert run.rc == 0, run
    status, detail = run.checks()["external anchors"]
    assert status == "WARN" and "not read back from zenodo" in detail, run
    assert "could not be read back" in run.out.strip().splitlines()[-1], run
    zpath = tmp_path / "deposit.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for p in sorted((loop.root / "results/deposit/bundle").iterdir()):
            z.write(p, f"bundle/{p.name}")
    run = _verify(tmp_path, str(zpath), "--offline")
    assert run.rc == 0, run
    assert run.checks()["external anchors"][0] == "PASS"  # the author's record, as the audit


def test_bad_input_is_one_line_exit_2(loop: Loop, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {"not a sealedeval deposit": str(empty)}
    folder = _copy_bundle(loop, tmp_path / "b1")
    (folder / "result.json").write_text("{}\n")
    cases["result.json: sha256 differs from SHA256SUMS"] = str(folder)
    folder = _copy_bundle(loop, tmp_path / "b2")
    (folder / "raw.tar.gz").unlink()
    cases["raw.tar.gz is listed in SHA256SUMS but missing"] = str(folder)
    cases["no such file or directory"] = str(tmp_path / "nothing-here")
    for want, source in cases.items():
        run = _verify(tmp_path, source, "--offline")
        assert run.rc == 2 and want in run.err, (want, run)
        assert len(run.err.strip().splitlines()) == 1 and not run.out.strip(), run
    run = _verify(tmp_path, "10.5072/zenodo.999999", env={"SEALEDEVAL_ZENODO_URL": loop.st.base})
    assert run.rc == 2 and "zenodo record 999999: not found" in run.err, run


def test_figshare_doi_verifies(loop: Loop, tmp_path: Path) -> None:
    root = tmp_path / "fs"
    shutil.copytree(loop.root, root)
    env = {"FIGSHARE_TOKEN": TOKEN, "SEALEDEVAL_FIGSHARE_URL": loop.st.base + "/v2"}
    ok(cli(root, "deposit", "--figshare", "--publish", env=env))
    doi = json.loads((root / "results/deposit.json").read_text())["figshare"]["doi"]
    assert doi.startswith("10.6084/m9.figshare.")
    run = _verify(tmp_path, doi, env=env | {"SEALEDEVAL_ZENODO_URL": loop.st.base})
    assert run.rc == 0, run
    assert run.checks()["external anchors"][0] == "PASS", run


def test_a_record_url_and_another_doi_verify(loop: Loop, tmp_path: Path) -> None:
    """A Zenodo record URL (its API is on the same host), and a DOI of another registrant that
    doi.org resolves to that URL."""
    rec = json.loads((loop.root / "results/deposit.json").read_text())["zenodo"]
    url = f"{loop.st.base}/records/{rec['id']}"
    loop.st.handles["10.1234/lab.eval.7"] = url
    env = {"SEALEDEVAL_ZENODO_URL": loop.st.base, "SEALEDEVAL_DOI_RESOLVER": loop.st.base}
    for source in (url, "doi:10.1234/lab.eval.7"):
        run = _verify(tmp_path, source, env=env)
        assert run.rc == 0, run
        assert f"zenodo record {rec['id']}" in run.err, run
    run = _verify(tmp_path, "10.1234/unknown", env=env)
    assert run.rc == 2 and "DOI 10.1234/unknown: not found" in run.err, run


def test_no_secret_is_bundled(loop: Loop, tmp_path: Path) -> None:
    root = tmp_path / "s"
    shutil.copytree(loop.root, root)
    fake_key = "sk-fake-0123456789abcdef"
    env = {"OPENAI_API_KEY": fake_key}
    (root / "config/.env").write_text(f"OPENAI_API_KEY=other-{fake_key}\n")
    ok(cli(root, "bundle", env=env))
    out = root / "results/deposit/bundle"
    with tarfile.open(out / "inputs.tar.gz") as t:
        assert "config/.env" not in t.getnames()
        blobs = [t.extractfile(m).read() for m in t.getmembers() if m.isfile()]  # type: ignore[union-attr]
    for data in [p.read_bytes() for p in out.iterdir()] + blobs:
        assert fake_key.encode() not in data
    # a key value in an input stops the bundle; the message names the variable, not the value
    (root / "config/notes.yaml").write_text(f"key: {fake_key}\n")
    run = cli(root, "bundle", env=env)
    assert run.rc == 2 and "config/notes.yaml" in run.err and "$OPENAI_API_KEY" in run.err, run
    assert fake_key not in run.err + run.out
    (root / "config/notes.yaml").unlink()
    # and a key committed once is found in the history
    (root / "data/example/leak.txt").write_text(fake_key)
    git(root, "add", "data/example/leak.txt")
    git(root, "commit", "-qm", "oops")
    git(root, "rm", "-q", "data/example/leak.txt")
    git(root, "commit", "-qm", "remove it")
    run = cli(root, "bundle", env=env)
    assert run.rc == 2 and "$OPENAI_API_KEY" in run.err and "git history" in run.err, run
    assert fake_key not in run.err + run.out
