"""Scale benchmark: generate, interpret (reference engine), grade (sealed) and aggregate 100k cases.

Not a test: it measures. Run from the repository root::

    python benchmarks/bloodpanel_scale.py                 # 100,000 cases, 2 workers
    python benchmarks/bloodpanel_scale.py --n 20000 --workers 1

Each worker streams a contiguous, chunk-aligned slice of the cohort (``synthetic_cases`` with
``start``/``stop``: the same cases as one sequential stream), writes the reference report, grades
it under the ``sealed`` profile with 0 s latency, and returns only compact numpy arrays, so
memory stays flat however large n is. The parent aggregates with per-label and per-specialty
percentile bootstrap intervals (``sealedeval.stats.bootstrap_by_group``) and prints wall time per
phase, CPU seconds of every process (``os.times``: user+sys, parent and reaped workers), peak RSS
(``resource.getrusage``: this process and its largest worker) and a machine-speed calibration
(a fixed pure-Python loop), because CPU seconds on a shared machine grow with the load.
Targets (spec): under 60 s and under 2 GB on 2 cores.

Measured 2026-11-30 on the project's 2-core AMD EPYC VM (CPython 3.11.7), shared with four other
sessions (load average 8-9; calibration 48 ms), n = 100,000, 2 workers, 1,000 resamples:
wall 299.6 s, CPU 101.7 s in total (busiest worker 50.8 s, parent 0.3 s, aggregate and
bootstrap 0.5 s), peak RSS 59 MB parent / 97 MB worker; reference composite 1.0000, 0 of 8,991
trap cases fired a flag. Before the memoisation in ``matching``/``synthetic`` (same machine, load
8-11, calibration 44 ms): CPU 115.8 s, wall 335.4 s, worker 109 MB. On the same cases, interleaved
A/B batches: grading 1.29x faster, generation 1.17x. Wall time here is CPU x load / 2; on two idle
cores it is about the busiest worker's CPU (~51 s, below 60 s; less if an idle machine's CPU
seconds are lower, as the calibration suggests). The ~40 s CPU aim was not reached under load:
grading is ~55 % of the CPU (sentence analysis of the value-bearing lines, which cannot be
memoised), the reference report ~27 %, generation ~17 %.
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing as mp
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from sealedeval.stats import bootstrap_by_group, stratified_bootstrap
from sealedeval.suites.bloodpanel.prompts import leak_check, messages
from sealedeval.suites.bloodpanel.reference import reference_report
from sealedeval.suites.bloodpanel.rubric import grade_case
from sealedeval.suites.bloodpanel.synthetic import (
    ARCHETYPES,
    CHUNK,
    LABEL_COUNTS,
    SPECIALTY_COUNTS,
    synthetic_cases,
)

_LABEL_IX = {code: i for i, (code, _, _) in enumerate(LABEL_COUNTS)}
_SPEC_IX = {name: i for i, (name, _) in enumerate(SPECIALTY_COUNTS)}
_ARCH_IX = {a.key: i for i, a in enumerate(ARCHETYPES)}


def _work(args: tuple[int, int, int, int, bool]) -> dict[str, Any]:
    """Generate, interpret and grade cases ``start..stop-1``; return arrays and timings."""
    n, seed, start, stop, prompts = args
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "composite",
            "structural",
            "clinical",
            "label",
            "specialty",
            "archetype",
            "trap",
            "fired",
        )
    }
    composite, structural, clinical = cols["composite"], cols["structural"], cols["clinical"]
    label, specialty, archetype = cols["label"], cols["specialty"], cols["archetype"]
    trap, fired = cols["trap"], cols["fired"]
    t_gen = t_ref = t_grade = 0.0
    cpu0 = time.process_time()
    clock = time.perf_counter
    stream = synthetic_cases(n, seed, start=start, stop=stop)
    t0 = clock()
    for case in stream:
        if prompts:  # what the suite's generate adds: render the prompt and leak-check it
            leak_check(case, messages(case))
        t1 = clock()
        report = reference_report(case)
        t2 = clock()
        score = grade_case(case, report, 0.0, "sealed")
        t3 = clock()
        t_gen += t1 - t0
        t_ref += t2 - t1
        t_grade += t3 - t2
        composite.append(score.composite)
        structural.append(score.structural)
        clinical.append(score.clinical)
        label.append(_LABEL_IX[case.label])
        specialty.append(_SPEC_IX[case.specialty])
        archetype.append(_ARCH_IX[case.archetype])
        trap.append(case.is_trap)
        fired.append(len(score.trap_flags_hit))
        t0 = clock()
    dtypes = {
        "label": np.int16,
        "specialty": np.int8,
        "archetype": np.int8,
        "trap": bool,
        "fired": np.int8,
    }
    out: dict[str, Any] = {k: np.array(v, dtype=dtypes.get(k, np.float64)) for k, v in cols.items()}
    out["timing"] = np.array([t_gen, t_ref, t_grade, time.process_time() - cpu0])
    out["rss_kb"] = np.array([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss])
    return out


def _calibration() -> float:
    """Milliseconds for a fixed pure-Python loop (best of 5): how fast this machine is now.

    CPU seconds measured on a shared machine are inflated when other processes thrash the
    caches; dividing by this figure makes runs under different loads comparable.
    """
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        sum(range(1_000_000))
        best = min(best, time.perf_counter() - t)
    return 1e3 * best


def _slices(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous slices of 0..n, cut on generator chunk boundaries."""
    chunks = -(-n // CHUNK)
    per = -(-chunks // parts)
    bounds = [min(n, k * per * CHUNK) for k in range(parts + 1)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20260426)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--boot", type=int, default=1000, help="bootstrap resamples")
    ap.add_argument(
        "--prompts",
        action="store_true",
        help="also render and leak-check every prompt (as the suite's generate does)",
    )
    args = ap.parse_args(argv)

    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    jobs = [
        (args.n, args.seed, a, b, args.prompts) for a, b in _slices(args.n, max(1, args.workers))
    ]
    if len(jobs) == 1:
        parts = [_work(jobs[0])]
    else:
        with mp.get_context("fork").Pool(len(jobs)) as pool:
            parts = pool.map(_work, jobs)
            pool.close()
            pool.join()  # reaped, so RUSAGE_CHILDREN / os.times() count the workers' CPU
    t_work = time.perf_counter() - t_start
    res = {
        k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k not in ("timing", "rss_kb")
    }
    timing = np.sum([p["timing"] for p in parts], axis=0)
    worker_rss_kb = max(int(p["rss_kb"][0]) for p in parts)

    t0 = time.perf_counter()
    comp = res["composite"]
    labels = [LABEL_COUNTS[i][0] for i in res["label"]]
    specs = [SPECIALTY_COUNTS[i][0] for i in res["specialty"]]
    overall = stratified_bootstrap(comp.tolist(), labels, n_boot=args.boot, seed=args.seed)
    per_label = bootstrap_by_group(comp.tolist(), labels, n_boot=args.boot, seed=args.seed)
    per_spec = bootstrap_by_group(comp.tolist(), specs, n_boot=args.boot, seed=args.seed)
    t_boot = time.perf_counter() - t0
    wall = time.perf_counter() - t_start

    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    times = os.times()
    cpu_all = times.user + times.system + times.children_user + times.children_system
    calib = _calibration()
    n = len(comp)
    print(
        f"bloodpanel scale benchmark: n={n} seed={args.seed} workers={len(jobs)} "
        f"boot={args.boot} prompts={'rendered+leak-checked' if args.prompts else 'off'} "
        f"(cpus visible: {os.cpu_count()}, load {load0:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end)"
    )
    print(f"  wall total          {wall:8.1f} s   (target < 60 s)")
    print(
        f"  CPU total           {cpu_all:8.1f} s   user+sys of this process and its workers, "
        f"imports included (aim <= 40 s: under 60 s wall on 2 idle cores)"
    )
    print(
        f"  machine now         {calib:8.1f} ms  for sum(range(10**6)), best of 5 (a quiet "
        "machine is faster; CPU seconds scale with it)"
    )
    print(
        f"    generate+ref+grade {t_work:7.1f} s wall; summed over workers: generate "
        f"{timing[0]:.1f} s, reference {timing[1]:.1f} s, grade {timing[2]:.1f} s"
    )
    print(f"    aggregate+bootstrap {t_boot:6.1f} s")
    print(
        f"  worker CPU          {timing[3]:8.1f} s summed; busiest worker "
        f"{max(float(p['timing'][3]) for p in parts):.1f} s (the wall time on {len(jobs)} "
        "otherwise idle cores)"
    )
    print(f"  parent CPU          {time.process_time() - cpu_start:8.1f} s")
    print(
        f"  peak RSS            parent {rss_self / 1024:.0f} MB, largest worker "
        f"{max(worker_rss_kb, rss_children) / 1024:.0f} MB (target < 2048 MB)"
    )
    print(
        f"  per case            {1e6 * timing[:3].sum() / n:.0f} us wall in workers "
        f"(generate {1e6 * timing[0] / n:.0f}, reference {1e6 * timing[1] / n:.0f}, "
        f"grade {1e6 * timing[2] / n:.0f})"
    )
    est, lo, hi = overall
    print(
        f"\n  composite (sealed, reference engine, latency 0 s): {est:.4f} "
        f"[{lo:.4f}, {hi:.4f}] 95% stratified bootstrap; structural "
        f"{res['structural'].mean():.4f}, clinical {res['clinical'].mean():.4f}"
    )
    traps = int(res["trap"].sum())
    print(f"  trap cases {traps}, trap flags fired {int(res['fired'][res['trap']].sum())}")
    print("\n  specialty            n      composite  95% CI")
    for name, (m, a, b) in sorted(per_spec.items(), key=lambda kv: str(kv[0])):
        k = specs.count(str(name))
        print(f"  {name!s:<18} {k:6d}   {m:.4f}    [{a:.4f}, {b:.4f}]")
    print("\n  top 12 labels        n      composite  95% CI")
    counts = np.bincount(res["label"], minlength=len(LABEL_COUNTS))
    for i in np.argsort(-counts, kind="stable")[:12]:
        code = LABEL_COUNTS[i][0]
        m, a, b = per_label[code]
        print(f"  {code:<18} {int(counts[i]):6d}   {m:.4f}    [{a:.4f}, {b:.4f}]")
    widths = [b - a for _, a, b in per_label.values()]
    print(
        f"  ... {len(per_label)} labels; CI width median {float(np.median(widths)):.4f}, "
        f"max {max(widths):.4f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
