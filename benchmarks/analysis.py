"""The analysis after the engine calls, this code against an earlier commit, in one run.

Not a test: it measures. Given a project whose raw runs exist (e.g. the default profile's, after
`snakemake --cores 8`), it copies the project twice and runs, in each copy, exactly the commands
the workflow's rules run after the calls, timing the sum of their wall times:

* this code: `generate` and `analyze --grade` (the one job that grades and analyses) per suite,
  then `publish`, `figures`, `pdf`;
* the earlier commit (default fbf23e5, before the suite-boundary redesign), checked out in a
  temporary git worktree and put first on PYTHONPATH: `grade`, `analyze` per suite, then
  `publish`, `figures`, `pdf` (its generate did the same work as its grade, so it is left out in
  its favour). The earlier code reads only the old lock format and its own config schema, so its
  copy is sealed by it and gets its config/ (the profiles' suite sections are unchanged).

    python benchmarks/analysis.py PROJECT [--config config/x.yaml] [--base fbf23e5] [--reps 1]

Prints both totals, per command, and the ratio earlier / now (target: at least 2).

Measured on the default profile's raw runs (a fresh clone's, 2026-12-01, load ~2):

    before my changes (2b8ff32): now 22.3 s vs earlier 23.4 s, 1.05x (9 suite commands
        ~1.3 s each; figures 8.1 s)
    after (8798919, with the other work merged by then): now 28.3 s vs earlier 17.2 s, 0.61x:
        generate 5.2 s and analyze --grade 5.6 s for the three suites (was grade + analyze
        7.2 s), publish 7.9 s (report.html draws every figure's SVG again), figures 7.2 s,
        pdf 2.5 s

Per stage command the start-up fell by ~0.75 s (pyarrow's pandas probe, ``store/arrow.py``)
and one process per suite grades and analyses. What is left is mostly drawing: publish and
figures each render the figures (most of publish's 7.9 s is report.html's SVGs), and
``lock.check`` hashes every sealed input twice per generate (~0.4 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _copy(src: Path, dst: Path) -> Path:
    ignore = shutil.ignore_patterns(".snakemake", "logs", ".venv", "__pycache__")
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)
    for sub in ("items", "graded", "analysis", "figures", "scorecards"):
        shutil.rmtree(dst / "results" / sub, ignore_errors=True)
    for f in ("result.json", "report.md", "report.pdf"):
        (dst / "results" / f).unlink(missing_ok=True)
    return dst


def _commit_lock(root: Path) -> None:
    """Commit the copy's new lock in the copy's own repository (the seal check wants it
    committed); a copy that is not a git repository keeps it uncommitted."""
    if not (root / ".git").exists():
        return
    git = ["git", "-c", "user.name=benchmark", "-c", "user.email=benchmark@localhost"]
    subprocess.run([*git, "add", "rubric.lock"], cwd=root, check=True, capture_output=True)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "benchmark: seal", "--", "rubric.lock"],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _suites(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "results/raw").iterdir() if p.is_dir())


def _time(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr[-2000:]}")
    return dt


def measure(root: Path, cfg: list[str], env: dict[str, str], *, new: bool) -> dict[str, float]:
    cli = [sys.executable, "-m", "sealedeval.cli"]
    out: dict[str, float] = {}
    for suite in _suites(root):
        # the rules' commands: this code grades and analyses a suite in one job
        steps = [["generate"], ["analyze", "--grade"]] if new else [["grade"], ["analyze"]]
        for step in steps:
            out[f"{' '.join(step)} {suite}"] = _time([*cli, *step, suite, *cfg], root, env)
    for step in ("publish", "figures", "pdf"):
        out[step] = _time([*cli, step, *cfg], root, env)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--config", "-c", action="append", default=[])
    ap.add_argument("--base", default="fbf23e5")
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    cfg = [x for c in a.config for x in ("-c", c)]
    tmp = Path(tempfile.mkdtemp(prefix="sealedeval-analysis-"))
    try:
        old_src = tmp / "base"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(old_src), a.base], cwd=REPO, check=True
        )
        env_new = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        env_old = {**os.environ, "PYTHONPATH": str(old_src / "src")}
        best_new: dict[str, float] = {}
        best_old: dict[str, float] = {}
        for rep in range(a.reps):
            new = _copy(a.project, tmp / f"new{rep}")
            old = _copy(a.project, tmp / f"old{rep}")
            # the earlier code's own config files (its schema rejects keys added since, e.g.
            # engines.*.fail_on_error) and central schema; the suites' sections are the same
            shutil.rmtree(old / "config")
            shutil.copytree(old_src / "config", old / "config")
            # this code's data files (a rubric input added since the project's commit would
            # stop its seal); the raw runs stay the project's
            shutil.rmtree(new / "data")
            shutil.copytree(REPO / "data", new / "data")
            # each copy sealed by the code that runs it: the project's lock is from the code
            # that ran the calls, and a later (or earlier) code's analysis inputs differ from it
            for root, env in ((new, env_new), (old, env_old)):
                subprocess.run(
                    [sys.executable, "-m", "sealedeval.cli", "seal", *cfg],
                    cwd=root,
                    env=env,
                    check=True,
                    capture_output=True,
                )
                _commit_lock(root)
            for best, root, env, is_new in (
                (best_new, new, env_new, True),
                (best_old, old, env_old, False),
            ):
                times = measure(root, cfg, env, new=is_new)
                if not best or sum(times.values()) < sum(best.values()):
                    best.clear()
                    best.update(times)
        t_new, t_old = sum(best_new.values()), sum(best_old.values())
        print(
            f"earlier ({a.base}): {t_old:.1f} s  "
            + ", ".join(f"{k} {v:.1f}" for k, v in best_old.items())
        )
        print(
            f"now:              {t_new:.1f} s  "
            + ", ".join(f"{k} {v:.1f}" for k, v in best_new.items())
        )
        print(f"ratio earlier / now: {t_old / t_new:.2f}x (target >= 2)")
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tmp / "base")],
            cwd=REPO,
            check=False,
            capture_output=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
