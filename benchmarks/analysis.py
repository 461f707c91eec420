"""The analysis after the engine calls, this code against an earlier commit, in one run.

Not a test: it measures. Given a project whose raw runs exist (e.g. the default profile's, after
`snakemake --cores 8`), it copies the project twice and runs, in each copy, exactly the commands
the workflow's rules run once the calls are made, timing the sum of their wall times (and the
CPU seconds of those processes, since publish draws figures in ``--jobs`` processes):

* this code: ``analyze --grade`` (the one job that grades and analyses) per suite, then
  ``publish --jobs 2`` (what the rule passes on this machine: result.json, report.md,
  report.html, report.pdf, scorecards and every figure, each drawn once). Its ``generate`` is
  not timed: the run rule needs the items file, so generate runs before the calls. The items
  are written as that rule wrote them, under the rubric hash the raw rows were run under;
* the earlier commit (default fbf23e5, before the suite-boundary redesign), checked out in a
  temporary git worktree and put first on PYTHONPATH: ``grade``, ``analyze`` per suite, then
  ``publish``, ``figures``, ``pdf``. Its generate was no input of its run rule, but its grade
  generated every item again in memory, so its generate is left out in its favour. The earlier
  code reads only the old lock format and its own config schema, so its copy is sealed by it
  and gets its config/ (the profiles' suite sections are unchanged).

Bytecode is cached in both (``PYTHONDONTWRITEBYTECODE`` is dropped; a user's install writes
``__pycache__``), and one untimed warm-up pass compiles it, so start-up is what a user pays.

    python benchmarks/analysis.py PROJECT [--config config/x.yaml] [--base fbf23e5] [--reps 5]

Prints both totals (each command's fastest of ``--reps`` repetitions, the two codes alternating
in every pass, summed), per command, and the ratio earlier / now (target: at least 2), then the
dvc.yaml analysis stage timed as Snakemake runs it (fastest repetition). Measurements are in
docs/benchmarks.md (2026-12-02, main-job venv, 5 repetitions: at 5075304 commands 10.7 s →
4.9 s, 2.17x, the Snakemake stage 12.8 s → 7.8 s, 1.64x; at 30a5221, the machine slower that
hour, 11.6 s → 5.6 s, 2.07x, and 12.2 s → 8.2 s, 1.49x).
"""

from __future__ import annotations

import argparse
import os
import resource
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
    shutil.rmtree(dst / "results" / "items", ignore_errors=True)
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


def _time(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, cpu


ITEMS_AS_RUN = """
import sys
from pathlib import Path
from sealedeval.config import load_config
from sealedeval.stages.pipeline import latest, rows_rubric, write_items
cfg = load_config(Path("."), sys.argv[2:])
for name in sys.argv[1].split(","):
    write_items(cfg, name, rows_rubric(latest(cfg, name)))
"""
"""The items file each suite's generate rule wrote before the calls: under the rubric hash the
raw rows were run under (the copy is re-sealed by this code, whose hash may differ)."""


def measure(
    root: Path, cfg: list[str], env: dict[str, str], *, new: bool
) -> dict[str, tuple[float, float]]:
    cli = [sys.executable, "-m", "sealedeval.cli"]
    out: dict[str, tuple[float, float]] = {}
    for suite in _suites(root):
        # the rules' commands: this code grades and analyses a suite in one job
        steps = [["analyze", "--grade"]] if new else [["grade"], ["analyze"]]
        for step in steps:
            out[f"{' '.join(step)} {suite}"] = _time([*cli, *step, suite, *cfg], root, env)
    for step in (["publish", "--jobs", "2"],) if new else (["publish"], ["figures"], ["pdf"]):
        out[" ".join(step)] = _time([*cli, *step, *cfg], root, env)
    return out


def _clean(root: Path, *, new: bool, cfg: list[str], env: dict[str, str]) -> None:
    for sub in ("graded", "analysis", "figures", "scorecards"):
        shutil.rmtree(root / "results" / sub, ignore_errors=True)
    for f in ("result.json", "report.md", "report.html", "report.pdf"):
        (root / "results" / f).unlink(missing_ok=True)
    if new:
        cmd = [sys.executable, "-c", ITEMS_AS_RUN, ",".join(_suites(root)), *cfg[1::2]]
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)


def _stage_cmd(src: Path) -> list[str]:
    """The command of the dvc.yaml ``analysis`` stage of the code at ``src``: what DVC runs
    after the ``runs`` stage, i.e. everything after the engine calls, as Snakemake schedules it."""
    import yaml

    doc = yaml.safe_load((src / "dvc.yaml").read_text(encoding="utf-8"))
    return str(doc["stages"]["analysis"]["cmd"]).split()


def workflow_time(root: Path, cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of the analysis stage's Snakemake command on raw runs alone (items and
    everything after them removed first: that stage generates them too)."""
    for sub in ("items", "graded", "analysis", "figures", "scorecards"):
        shutil.rmtree(root / "results" / sub, ignore_errors=True)
    for f in ("result.json", "report.md", "report.html", "report.pdf"):
        (root / "results" / f).unlink(missing_ok=True)
    bindir = Path(sys.executable).parent
    full = [str(bindir / cmd[0]), *cmd[1:]]
    return _time(full, root, {**env, "PATH": f"{bindir}:{env.get('PATH', '')}"})[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--config", "-c", action="append", default=[])
    ap.add_argument("--base", default="fbf23e5")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    cfg = [x for c in a.config for x in ("-c", c)]
    tmp = Path(tempfile.mkdtemp(prefix="sealedeval-analysis-"))
    try:
        old_src = tmp / "base"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(old_src), a.base], cwd=REPO, check=True
        )
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env_new = {**base_env, "PYTHONPATH": str(REPO / "src")}
        env_old = {**base_env, "PYTHONPATH": str(old_src / "src")}
        new = _copy(a.project, tmp / "new")
        old = _copy(a.project, tmp / "old")
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
        # each command's fastest repetition (its time with the least of this shared machine's
        # noise in it, which only ever adds), summed; both codes alternate within every pass
        best: dict[bool, dict[str, tuple[float, float]]] = {True: {}, False: {}}
        for rep in range(a.reps + 1):  # pass 0 warms up: bytecode, the page cache
            for root, env, is_new in ((new, env_new, True), (old, env_old, False)):
                _clean(root, new=is_new, cfg=cfg, env=env)
                times = measure(root, cfg, env, new=is_new)
                for cmd, (w, c) in times.items():
                    if rep and (cmd not in best[is_new] or w < best[is_new][cmd][0]):
                        best[is_new][cmd] = (w, c)
        for label, times in ((f"earlier ({a.base})", best[False]), ("now", best[True])):
            wall = sum(w for w, _ in times.values())
            cpu = sum(c for _, c in times.values())
            print(
                f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU  "
                + ", ".join(f"{k} {w:.1f}" for k, (w, _) in times.items())
            )
        t_old = sum(w for w, _ in best[False].values())
        t_new = sum(w for w, _ in best[True].values())
        c_old = sum(c for _, c in best[False].values())
        c_new = sum(c for _, c in best[True].values())
        print(
            f"ratio earlier / now: {t_old / t_new:.2f}x wall (target >= 2), "
            f"{c_old / c_new:.2f}x CPU"
        )
        # the same, as Snakemake runs it (jobs in parallel on this machine's cores); the
        # earlier copy gets the earlier Snakefile and rules
        shutil.copy2(old_src / "Snakefile", old / "Snakefile")
        for sub in ("rules", "envs"):
            shutil.rmtree(old / sub, ignore_errors=True)
            shutil.copytree(old_src / sub, old / sub)
        flows: dict[bool, float] = {}
        for rep in range(a.reps + 1):
            for root, env, src, is_new in (
                (new, env_new, REPO, True),
                (old, env_old, old_src, False),
            ):
                dt = workflow_time(root, _stage_cmd(src), env)
                if rep:
                    flows[is_new] = min(flows.get(is_new, dt), dt)
        print(
            f"workflow (the dvc.yaml analysis stage, {' '.join(_stage_cmd(REPO)[:3])} ...): "
            f"earlier {flows[False]:.1f} s, now {flows[True]:.1f} s, "
            f"{flows[False] / flows[True]:.2f}x"
        )
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
