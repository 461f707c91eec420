"""`sealedeval init` from a built wheel, in a fresh venv, in an empty directory (issue 13).

The package is built into a wheel and installed (not editable) into a new virtual environment
whose other dependencies come from this test environment's site-packages (a ``.pth`` line: no
download, and no editable finder, so only the wheel's ``sealedeval`` is importable there). In an
empty temp directory: ``sealedeval init myeval``, point the example suite at two engines (the
reference ceiling and an OpenAI-compatible loopback server), seal, commit, ``snakemake --cores
2`` with the workflow shipped inside the wheel, then ``sealedeval audit`` — and result.json has
the accuracy with its Wilson interval and the paired comparison.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO, git
from tests.fakes.openai_server import FakeOpenAI

from sealedeval import stats

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing"),
]


def _fresh_venv(tmp: Path) -> Path:
    # Built from a copy of what the wheel is made of: pip builds in the source tree, and its
    # build/ and egg-info must not appear in the checkout under tests running beside this one
    # (`pytest -n`: the image build reads the checkout as its context).
    src = tmp / "src-tree"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    [wheel] = dist.glob("sealedeval-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin/python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        # a PYTHONPATH to a checkout's src/ (and its egg-info) makes pip skip the wheel as
        # already installed; the test runs the venv without it too
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "deps-from-test-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


def test_init_from_a_wheel_runs_and_audits(tmp_path: Path) -> None:
    venv = _fresh_venv(tmp_path)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    where = subprocess.run(
        [str(venv / "bin/python"), "-c", "import sealedeval; print(sealedeval.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in where, where  # the wheel's copy, not this checkout's

    def sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=900
        )

    empty = tmp_path / "work"
    empty.mkdir()
    t0 = time.perf_counter()
    init = sh("sealedeval", "init", "myeval", cwd=empty)
    assert init.returncode == 0, init.stderr
    root = empty / "myeval"
    assert sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".dvc" not in p.parts
    ) == [
        ".dvcignore",
        ".gitignore",
        "README.md",
        "Snakefile",
        "config/config.yaml",
        "data/example/items.jsonl",
        "dvc.yaml",
    ]
    with FakeOpenAI() as fake:
        cfg = yaml.safe_load((root / "config/config.yaml").read_text())
        cfg["engines"]["remote"] = {
            "kind": "openai_chat",
            "base_url": fake.base_url,
            "model": "fake-model",
            "concurrency": 4,
        }
        cfg["suites"]["example"]["engines"] = ["reference", "remote"]
        cfg["engines"]["reference"] = {"kind": "reference"}
        (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        seal = sh("sealedeval", "seal", cwd=root)
        assert seal.returncode == 0, seal.stderr
        git(root, "add", "-A")
        git(root, "commit", "-qm", "Seal the rubric")
        run = sh(str(venv / "bin/python"), "-m", "snakemake", "--cores", "2", cwd=root)
        assert run.returncode == 0, run.stderr[-3000:]
        assert fake.count() == 8 * 2  # 8 items x 2 repeats, once each
    audit = sh("sealedeval", "audit", cwd=root)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    wall = time.perf_counter() - t0
    print(f"init → audit from a wheel: {wall:.1f} s")

    result = json.loads((root / "results/result.json").read_text())
    section = result["suites"]["example"]
    accs = {
        m["groups"]["engine"]: m
        for m in section["analysis"]["metrics"]
        if m["metric"] == "accuracy"
    }
    ref = accs["reference"]
    lo, hi = stats.wilson(8, 8)
    assert ref["estimate"] == 1.0 and ref["method"] == "wilson"
    assert ref["lo"] == pytest.approx(lo, 1e-9) and ref["hi"] == pytest.approx(hi, 1e-9)
    [c] = section["analysis"]["comparisons"]
    assert {c["a"], c["b"]} == {"reference", "remote"} and 0 <= c["p"] <= 1
    assert (root / "results/report.pdf").read_bytes().startswith(b"%PDF")
