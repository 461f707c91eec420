"""The workflow on a real (single-node) SLURM cluster through Snakemake's SLURM executor.

Starts munged + slurmctld + slurmd from Debian's slurm-wlm/munge (``slurm_cluster.py``) and runs
the sharded bloodpanel profile (``config/full-bloodpanel.yaml`` cut to test size by
``slurm-bloodpanel.yaml``: 3 shards on the reference engine) with ``--executor slurm`` through
``--workflow-profile`` (``profiles/slurm`` pointed at the test partition), in a copy of the
sealed project made before any run; the same profile runs locally in the original. Then:

* exactly one SLURM job per shard ran, each COMPLETED, and no other rule was submitted (the
  cheap stages are ``localrules``);
* the raw runs hold the same requests, statuses and answers, one row per key;
* result.json is byte-identical except for what measures the wall clock: the raw-part
  manifest (part names carry a time stamp and a run id, part hashes the rows' timing fields),
  whose row counts must agree, the ``latency_s`` summaries (seconds per call) and the hashes of
  the ledger segments and their Merkle root (entries carry start and end times); the shard
  plan, each shard's planned key set, must agree;
* each SLURM job chained its own ledger segment; the audit of the cluster's project passes, and
  FAILs naming the shard once a segment is deleted, duplicated or swapped for another's;
* the cluster is stopped whatever happens and leaves no process behind; a test process killed
  with SIGKILL takes the daemons with it, and the next cluster clears what its jobs left.

Skips only where the cluster cannot exist (no slurm-wlm/munge, not root, a site slurm.conf);
a cluster that is installed but does not start fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from tests.conftest import REPO, git, make_project
from tests.scale.slurm_cluster import SITE_CONF, SlurmCluster, unavailable

from sealedeval.canonical import dumps
from sealedeval.store.raw import raw_files, read_raw

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SHARDS = 3  # the test cluster offers one CPU per shard: one wave of jobs, whatever the host
SUITE, ENGINE = "bloodpanel", "reference"
CONFIGS = ("config/full-bloodpanel.yaml", "config/slurm-bloodpanel.yaml")


def _env() -> dict[str, str]:
    """Jobs inherit the submitting environment (sbatch --export=ALL): put this interpreter's
    scripts (``sealedeval``, ``snakemake`` of the venv) first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return os.environ | {"PATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


def _snakemake(root: Path, *args: str, env: dict[str, str], timeout: float) -> None:
    cmd = [sys.executable, "-m", "snakemake", "--configfile", *CONFIGS, *args]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        found = [*(root / "logs").rglob("*.log"), *(root / ".snakemake/slurm_logs").rglob("*.log")]
        logs = "\n".join(
            f"--- {p.relative_to(root)}\n{p.read_text(errors='replace')[-1500:]}"
            for p in sorted(found)
        )
        raise AssertionError(f"{' '.join(cmd)} → {proc.returncode}\n{proc.stderr[-6000:]}\n{logs}")


def _slurm_profile(root: Path) -> None:
    """profiles/slurm as a site would adapt it: the test partition, no account (none exists
    without accounting; the executor then submits without one), squeue for status (no sacct),
    small jobs, a first status check after 1 s."""
    prof = yaml.safe_load((root / "profiles/slurm/config.yaml").read_text())
    assert prof["executor"] == "slurm"
    res = prof["default-resources"]
    assert {"slurm_account", "slurm_partition", "runtime", "mem_mb"} <= set(res)
    res.pop("slurm_account")
    res.update(slurm_partition="debug", mem_mb=500, cpus_per_task=1, runtime=10)
    prof["set-resources"] = {r: {"runtime": 10} for r in prof.get("set-resources", {})}
    prof.update(
        {
            "latency-wait": 5,
            "slurm-status-command": "squeue",
            "slurm-init-seconds-before-status-checks": 1,
        }
    )
    (root / "profiles/slurmtest").mkdir()
    (root / "profiles/slurmtest/config.yaml").write_text(yaml.safe_dump(prof))


def _wall_clock_free(node: Any) -> Any:
    """``node`` without ``latency_s`` summaries: measured seconds per call, never repeatable."""
    if isinstance(node, dict):
        return {k: _wall_clock_free(v) for k, v in node.items() if k != "latency_s"}
    if isinstance(node, list):
        return [_wall_clock_free(v) for v in node]
    return node


def _result(root: Path) -> tuple[str, dict[str, int], int]:
    """result.json as canonical text without its manifest and wall-clock figures; the
    manifest's rows per raw directory; how many latency summaries were set aside."""
    text = (root / "results/result.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    rows: Counter[str] = Counter()
    for m in doc.pop("manifest"):
        rows[m["path"].rsplit("/", 1)[0]] += m["rows"]
    # ledger segments hold start and end times: their hashes and Merkle root differ, the
    # planned key sets per shard must not
    for eng in doc["suites"][SUITE]["shards"]["engines"].values():
        assert len(eng.pop("merkle_root")) == 64
        for seg in eng["segments"]:
            assert len(seg.pop("sha256")) == 64
    return dumps(_wall_clock_free(doc)), dict(rows), text.count('"latency_s"')


def _audit(root: Path, env: dict[str, str]) -> tuple[int, str]:
    args = [a for c in CONFIGS for a in ("-c", c)]
    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", "audit", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _shard_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("shard merge"))


def _merge_faults_fail_naming_the_shard(root: Path, env: dict[str, str]) -> None:
    """The cluster's segments audit clean; deleted, duplicated or swapped, the audit FAILs
    naming the shard."""
    rc, out = _audit(root, env)
    assert rc == 0, out
    assert "PASS" in _shard_line(out) and "Merkle roots match" in _shard_line(out), out
    seg = root / "ledger" / SUITE / ENGINE
    kept = {p.name: p.read_bytes() for p in seg.iterdir()}
    assert sorted(kept) == [f"shard-{i}-of-{SHARDS}.jsonl" for i in range(SHARDS)]
    name = [f"shard-{i}-of-{SHARDS}.jsonl" for i in range(SHARDS)]

    def restore() -> None:
        for n, data in kept.items():
            (seg / n).write_bytes(data)

    (seg / name[1]).unlink()
    rc, out = _audit(root, env)
    assert rc == 1 and f"shard 1-of-{SHARDS}: no segment holds it (missing)" in out, out
    restore()
    (seg / name[2]).write_bytes(kept[name[0]])
    rc, out = _audit(root, env)
    assert rc == 1 and f"shard 0-of-{SHARDS}: present 2 times" in out, out
    restore()
    (seg / name[0]).write_bytes(kept[name[1]])
    (seg / name[1]).write_bytes(kept[name[0]])
    rc, out = _audit(root, env)
    assert rc == 1, out
    assert f"shard 0-of-{SHARDS}: ledger/{SUITE}/{ENGINE}/{name[0]} holds the entries of" in out
    restore()
    assert _audit(root, env)[0] == 0


def _raw(root: Path) -> list[tuple[str, str, str]]:
    rows = read_raw(raw_files(root, SUITE)).select(["request_key", "status", "output_text"])
    return sorted((r["request_key"], r["status"], r["output_text"] or "") for r in rows.to_pylist())


def test_sharded_bloodpanel_on_slurm_matches_local(tmp_path: Path) -> None:
    why = unavailable()
    if why:
        pytest.skip(why)
    pytest.importorskip("snakemake_executor_plugin_slurm")
    local = make_project(tmp_path / "local")
    shutil.copy(REPO / "tests/scale/slurm-bloodpanel.yaml", local / CONFIGS[1])
    git(local, "add", CONFIGS[1])
    git(local, "commit", "-qm", "test-size sharded bloodpanel profile")
    on_slurm = tmp_path / "on-slurm"  # copied before any run: same files, same seal commit
    shutil.copytree(local, on_slurm, symlinks=True)
    _slurm_profile(on_slurm)
    env = _env()

    _snakemake(local, "--cores", "2", "results/result.json", env=env, timeout=300)

    cluster = SlurmCluster(tmp_path / "slurm", cpus=SHARDS)
    try:
        cluster.start()
        try:
            _snakemake(
                on_slurm,
                "--workflow-profile",
                "profiles/slurmtest",
                env=cluster.env | env,
                timeout=300,
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{cluster.logs()}") from None
        jobs = cluster.jobs()
    finally:
        cluster.stop()
    assert cluster.leftovers() == []
    assert not Path("/etc/slurm/slurm.conf").is_symlink()

    tags = [f"{i}-of-{SHARDS}" for i in range(SHARDS)]
    assert all(j["comment"].startswith("rule_run_shard_") for j in jobs), jobs  # only shards
    assert sorted(j["comment"].rsplit("_", 1)[-1] for j in jobs) == tags, jobs
    assert {j["state"] for j in jobs} == {"COMPLETED"}, jobs
    markers = sorted(p.name for p in (on_slurm / f"results/raw/{SUITE}/{ENGINE}").glob("_run.*"))
    assert markers == sorted(f"_run.{t}.json" for t in tags)

    raw = _raw(on_slurm)
    assert raw == _raw(local)
    assert len({k for k, _, _ in raw}) == len(raw) > 300  # one row per key: 15 curated + 300
    assert {s for _, s, _ in raw} == {"ok"}
    result = _result(on_slurm)
    assert result[2] > 0  # the figures set aside exist (a rename would make this vacuous)
    assert result == _result(local)
    _merge_faults_fail_naming_the_shard(on_slurm, env)


_KILLED_HOST = """
import subprocess, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from tests.scale.slurm_cluster import SlurmCluster
c = SlurmCluster(Path(sys.argv[1]), cpus=1).start()
subprocess.run(["sbatch", "--output", str(Path(sys.argv[1]) / "sleep.out"), "--wrap",
                "srun -n1 sleep 600"], env=c.env, check=True, capture_output=True)
while not any(j["state"] == "RUNNING" for j in c.jobs()):
    time.sleep(0.2)
print(" ".join(str(p.pid) for p in c.procs), flush=True)
time.sleep(600)
"""


def test_killed_test_process_leaves_nothing_behind(tmp_path: Path) -> None:
    why = unavailable()
    if why:
        pytest.skip(why)
    host = subprocess.Popen(
        [sys.executable, "-c", _KILLED_HOST, str(tmp_path / "a"), str(REPO)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stdout is not None
        daemons = [psutil.Process(int(p)) for p in host.stdout.readline().split()]
        assert len(daemons) == 3  # munged, slurmctld, slurmd
        killed = SlurmCluster(tmp_path / "a")
        assert len(killed.leftovers()) > len(daemons)  # the running job's processes too
    finally:
        host.kill()
        host.wait()
    _, alive = psutil.wait_procs(daemons, timeout=20)
    assert alive == []  # the daemons died with their parent
    assert SITE_CONF.is_symlink()  # the killed process could not remove its link ...
    assert unavailable() is None  # ... which is recognised as stale, not as a site config
    cluster = SlurmCluster(tmp_path / "b", cpus=1)
    try:
        cluster.start()
        assert killed.leftovers() == []  # the killed run's job processes are gone
        assert SITE_CONF.resolve() == cluster.conf
    finally:
        cluster.stop()
    assert not SITE_CONF.is_symlink()
    assert cluster.leftovers() == []
