"""The audit travels: the same build audited under other patch versions of numpy and pyarrow.

A second environment (the previous patch release of each, installed from PyPI into a target
directory that shadows the test venv's copies) re-derives every number and table equal, and the
version difference is reported on its own line as a WARN — not a failure, and not hidden.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _previous_patch(package: str) -> str | None:
    """The newest release of ``package`` with the installed major.minor and a lower patch."""
    have = metadata.version(package)
    major_minor, _, patch = have.rpartition(".")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    m = re.search(r"Available versions: (.*)", proc.stdout)
    if not m or not patch.isdigit():
        return None
    older = [
        v.strip()
        for v in m.group(1).split(",")
        if v.strip().rpartition(".")[0] == major_minor
        and v.strip().rpartition(".")[2].isdigit()
        and int(v.strip().rpartition(".")[2]) < int(patch)
    ]
    return older[0] if older else None


def test_audit_under_other_library_patch_versions(sealed, tmp_path: Path) -> None:
    wanted = {p: _previous_patch(p) for p in ("numpy", "pyarrow")}
    missing = [p for p, v in wanted.items() if v is None]
    if missing:
        pytest.skip(f"no earlier patch release of {', '.join(missing)} on the index")
    alt = tmp_path / "alt-site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--target",
            str(alt),
            *(f"{p}=={v}" for p, v in wanted.items()),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(alt), os.environ.get("PYTHONPATH", "")]),
    }
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import numpy, pyarrow, json; "
            "print(json.dumps([numpy.__version__, pyarrow.__version__]))",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert json.loads(probe.stdout) == [wanted["numpy"], wanted["pyarrow"]]

    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", "audit"],
        cwd=sealed.root,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {
        line.split()[0] + " " + line.split()[1]: line
        for line in proc.stdout.splitlines()
        if line.strip() and not line.startswith(("check", "audit"))
    }
    env_line = next(line for line in proc.stdout.splitlines() if line.startswith("environment"))
    assert " WARN " in env_line
    for package, version in wanted.items():
        assert f"{package} {metadata.version(package)} → {version}" in env_line
    assert "every number and table re-derived equal" in env_line
    rederive = next(
        line for line in proc.stdout.splitlines() if line.startswith("result re-derives")
    )
    assert " PASS " in rederive, lines
