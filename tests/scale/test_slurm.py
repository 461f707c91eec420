"""The workflow on a real (single-node) SLURM cluster through Snakemake's SLURM executor.

Starts slurmctld + slurmd from Debian's slurm-wlm (``tests/scale/slurm_cluster.py``), runs the
tiny profile with the golden suite split into 3 shards on the reference engine via
``--workflow-profile`` (a copy of ``profiles/slurm`` pointed at the test partition), stops the
cluster, and compares result.json with a local run of the same profile in the same project.
The ``suites`` section (seal counts + analysis) must be byte-identical; the manifest is not
compared because raw part names carry a wall-clock stamp and run id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO, make_project
from tests.scale.slurm_cluster import SlurmCluster, unavailable

# Not yet proven end to end (issue #7 stays open): opt in with SEALEDEVAL_TEST_SLURM=1 on a
# machine with slurm-wlm and munge installed, as root.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(
        os.environ.get("SEALEDEVAL_TEST_SLURM") != "1",
        reason="SLURM cluster test is opt-in (SEALEDEVAL_TEST_SLURM=1)",
    ),
]

SHARDS = 3


def _snakemake(root: Path, *args: str, env: dict[str, str], timeout: float) -> None:
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/tiny.yaml", "shards.yaml",
           *args]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} → {proc.returncode}\n{proc.stderr[-4000:]}")


def _suites(root: Path) -> str:
    doc = json.loads((root / "results/result.json").read_text())
    return json.dumps(doc["suites"], sort_keys=True)


def test_sharded_run_on_slurm_matches_local(tmp_path: Path) -> None:
    why = unavailable()
    if why:
        pytest.skip(why)
    pytest.importorskip("snakemake_executor_plugin_slurm")
    root = make_project(tmp_path / "proj")
    tiny = yaml.safe_load((root / "config/tiny.yaml").read_text())
    suite = "bloodpanel" if "bloodpanel" in tiny.get("suites", {}) else "golden"
    over = {"suites": {s: {"enabled": s == suite} for s in tiny["suites"]}}
    over["suites"][suite]["shards"] = SHARDS
    (root / "shards.yaml").write_text(yaml.safe_dump(over))

    env = os.environ | {"PYTHONDONTWRITEBYTECODE": "1"}
    _snakemake(root, "--cores", "2", env=env, timeout=600)
    local = _suites(root)
    markers = sorted(p.name for p in (root / f"results/raw/{suite}").rglob("_run.*.json"))
    assert len(markers) == SHARDS, markers
    shutil.rmtree(root / "results")
    shutil.rmtree(root / ".snakemake", ignore_errors=True)

    prof = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    prof["default-resources"].pop("slurm_account", None)
    prof["default-resources"].update(slurm_partition="debug", mem_mb=500, cpus_per_task=1)
    prof.update({"latency-wait": 10, "jobs": 10, "slurm-no-account": True,
                 "slurm-status-command": "squeue",
                 "slurm-init-seconds-before-status-checks": 1})
    (root / "slurmtest").mkdir()
    (root / "slurmtest/config.yaml").write_text(yaml.safe_dump(prof))

    cluster = SlurmCluster(tmp_path / "slurm")
    try:
        cluster.start()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"SLURM cluster did not start: {e}")
    try:
        _snakemake(root, "--workflow-profile", "slurmtest", env=cluster.env | env, timeout=900)
        jobs = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%j"], env=cluster.env,
                              capture_output=True, text=True).stdout.split()
    finally:
        cluster.stop()
    assert any("run_shard" in j for j in jobs) or len(jobs) >= SHARDS, jobs
    assert (root / ".snakemake/slurm_logs").exists()
    slurm = _suites(root)
    assert slurm == local
