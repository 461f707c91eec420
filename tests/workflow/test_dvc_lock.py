"""dvc.lock is committed and current: it records the last default run of this repository, and
every dependency it names (the seal, the config, the data, the Snakefile) still has the hash
that run saw. A re-seal or a config edit without a new default run makes this fail, so the
committed numbers never silently describe other inputs than the repository holds.

Refresh it after the default run (`snakemake --cores 8`): `dvc commit -f` and commit dvc.lock.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

pytestmark = [  # the real dvc
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("dvc") is None, reason="dvc missing (workflow extra)"),
]


def test_dvc_lock_is_committed_and_names_every_stage() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", "dvc.lock"], cwd=REPO, capture_output=True
    )
    assert tracked.returncode == 0, "dvc.lock is not committed"
    lock = yaml.safe_load((REPO / "dvc.lock").read_text(encoding="utf-8"))
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert set(lock["stages"]) == set(stages)
    for name, stage in stages.items():
        locked = lock["stages"][name]
        assert locked["cmd"] == stage["cmd"], f"{name}: dvc.lock was made by another command"
        assert {d["path"] for d in locked["deps"]} == set(stage["deps"])
        outs = {next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]}
        assert {o["path"] for o in locked["outs"]} == outs
        assert all(o.get("md5") or o.get("hash") for o in locked["outs"]), name


def test_every_locked_dependency_is_unchanged(tmp_path: Path) -> None:
    """`dvc status` on a clean copy of the tree: outputs may be absent (raw runs live in the
    DVC remote), but no dependency may differ from what the locked run saw."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    for rel in ("rubric.lock", "dvc.lock", "dvc.yaml", "Snakefile"):  # the tree as it is now
        shutil.copy2(REPO / rel, clone / rel)
    for rel in ("config", "data"):
        shutil.rmtree(clone / rel)
        shutil.copytree(REPO / rel, clone / rel, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        ["dvc", "status", "--json", "runs", "analysis"],  # the repo's stages, not the template's
        cwd=clone,
        capture_output=True,
        text=True,
        env=os.environ | {"DVC_NO_ANALYTICS": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout or "{}")
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    produced = {
        next(iter(o)) if isinstance(o, dict) else o for st in stages.values() for o in st["outs"]
    }
    changed: dict[str, object] = {}
    for stage, changes in status.items():
        for change in changes:
            if not isinstance(change, dict):
                continue
            if "changed command" in change:
                changed[stage] = change
            deps = {
                path: how
                for path, how in (change.get("changed deps") or {}).items()
                # another stage's output (the raw runs) is absent from a clone: not a change
                if not (path in produced and how == "deleted")
            }
            if deps:
                changed[stage] = deps
    assert not changed, f"dvc.lock is stale (run the default job, then `dvc commit -f`): {changed}"
