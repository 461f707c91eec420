"""The one ``sealedeval`` command; every Snakemake rule calls a subcommand of it.

User errors print one line (``sealedeval: error: ...``) and exit 2; nothing is half-written
because every file is written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sealedeval._version import __version__
from sealedeval.config import Config, load_config
from sealedeval.errors import UserError


def _cfg(args: argparse.Namespace) -> Config:
    return load_config(Path(args.root), args.config or [])


def cmd_init(args: argparse.Namespace) -> int:
    from sealedeval.workflow.init import init_project

    res = init_project(Path(args.dir), force=args.force)
    for rel in res.written:
        print(f"wrote {rel}")
    for rel in res.kept:
        print(f"kept your {rel} (differs from the template; not overwritten)")
    if res.git_init:
        print(f"git init {res.root}")
    if res.dvc:
        print(res.dvc)
    print("next:")
    print(f"  cd {args.dir}")
    print('  sealedeval seal && git add -A && git commit -m "Seal the rubric"')
    print("  snakemake --cores 2")
    print("  sealedeval audit")
    return 0


def _stamp_ledger_head(args: argparse.Namespace, root: Path) -> int:
    """``seal --tsa URL --ledger-head``: at publish, time-stamp the run ledger as it stands
    (the rubric is not re-sealed: that happened before the first call)."""
    from sealedeval.seal import timestamp

    if not args.tsa:
        raise UserError("seal --ledger-head: needs --tsa URL (the time-stamping authority)")
    info, head = timestamp.stamp_ledger_head(
        root, args.tsa, Path(args.tsa_ca) if args.tsa_ca else None
    )
    print(
        f"RFC 3161 token from {info.tsa} at {info.time:%Y-%m-%dT%H:%M:%SZ} over the ledger "
        f"head ({head['entries']} entries, {head['head'][:12]}) → {timestamp.HEAD_TSR}"
    )
    files = [timestamp.HEAD_NAME, timestamp.HEAD_TSR] + (
        [timestamp.HEAD_CHAIN] if args.tsa_ca else []
    )
    print(f"  git add ledger.jsonl {' '.join(files)} && git commit -m 'Time-stamp the ledger'")
    return 0


def cmd_seal(args: argparse.Namespace) -> int:
    from sealedeval.plugins import get_suite
    from sealedeval.seal import design, lock

    cfg = _cfg(args)
    root = cfg.root
    if args.ledger_head:
        return _stamp_ledger_head(args, root)
    names = sorted(cfg.data.get("suites", {}))
    designs = design.kept_designs(root)
    designs[design.profile_key(cfg.sources)] = design.profile_design(cfg, cfg.enabled_suites())
    doc = lock.write(root, {n: get_suite(n, cfg).rubric_inputs() for n in names}, designs)
    for name, entry in doc["suites"].items():
        print(f"{name}: {len(entry['files'])} inputs, sha256 {entry['sha256']}")
    for key in doc["designs"]:
        print(f"design of {key}: " + design.describe(doc["designs"][key]))
    print(f"wrote {lock.LOCK_NAME} (combined {doc['sha256']}); commit it before the first run:")
    extra = ""
    if args.tsa:
        from sealedeval.seal import timestamp

        info = timestamp.stamp(root, args.tsa, Path(args.tsa_ca) if args.tsa_ca else None)
        print(
            f"RFC 3161 token from {info.tsa} at {info.time:%Y-%m-%dT%H:%M:%SZ} "
            f"→ {timestamp.TSR_NAME}"
        )
        extra += f" {timestamp.TSR_NAME}" + (f" {timestamp.CHAIN_NAME}" if args.tsa_ca else "")
    if args.zenodo:
        from sealedeval.archive.deposit import preregister
        from sealedeval.seal.lock import PREREG_NAME

        rec = preregister(
            _cfg(args),
            publish=args.publish,
            sandbox=args.sandbox,
            embargo=args.embargo,
            zenodo_url=args.zenodo_url,
        )
        state = "published" if rec["published"] else "draft (publish it to anchor the seal)"
        print(f"zenodo pre-registration {rec['id']} {state}, DOI {rec['doi']} → {PREREG_NAME}")
        extra += f" {PREREG_NAME}"
    if (root / ".sealedeval").is_dir():  # config-defined suites' sealed specs (kind: tasks)
        extra += " .sealedeval"
    print(f"  git add {lock.LOCK_NAME}{extra} && git commit -m 'Seal rubric'")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from sealedeval.plugins import get_suite
    from sealedeval.seal import lock
    from sealedeval.stages.pipeline import write_items

    cfg = _cfg(args)
    cfg.suite(args.suite)
    state = lock.check(
        cfg.root, args.suite, get_suite(args.suite, cfg).rubric_inputs(), unsealed=args.unsealed
    )
    path, n = write_items(cfg, args.suite, state.rubric_sha256)
    print(f"{args.suite}: {n} items → {path.relative_to(cfg.root)}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from sealedeval.stages.run import parse_shard, print_stats, run_suite

    cfg = _cfg(args)
    shard = parse_shard(args.shard) if args.shard else None
    engines = [args.engine] if args.engine else list(cfg.suite(args.suite)["engines"])
    status = _status_stream(args.status_fd)
    engines = _run_sequential(cfg, args, engines, shard, status)
    for eng in engines:
        stats = run_suite(
            cfg,
            args.suite,
            eng,
            unsealed=args.unsealed,
            progress=not args.no_progress,
            shard=shard,
            allow_errors=args.allow_errors,
            status=status,
        )
        print_stats(stats, args.suite, eng)
    return 0


def _run_sequential(
    cfg: Config,
    args: argparse.Namespace,
    engines: list[str],
    shard: tuple[int, int] | None,
    status: IO[str] | None,
) -> list[str]:
    """A suite with a sealed ``analysis.sequential`` runs its two compared engines look by look
    (``stages/sequential.py``), whether asked with ``--sequential``, for one of them with
    ``--engine`` (the workflow's run jobs) or for every engine; returns the engines left to run
    as usual. Asking for the compared engines any other way would break the sealed rule."""
    from sealedeval.stages.run import print_stats
    from sealedeval.stages.sequential import run_sequential, suite_plan

    sp = suite_plan(cfg, args.suite)
    if sp is None:
        if args.sequential:
            raise UserError(f"suites.{args.suite}.analysis.sequential: not set (--sequential)")
        return engines
    if not args.sequential and not set(sp.compare) & set(engines):
        return engines
    if shard is not None:
        raise UserError(f"--shard: suite {args.suite} runs sequentially (analysis.sequential)")
    res = run_sequential(
        cfg,
        args.suite,
        unsealed=args.unsealed,
        progress=not args.no_progress,
        allow_errors=args.allow_errors,
        status=status,
    )
    for eng, stats in res.stats:
        print_stats(stats, args.suite, eng)
    for lk in res.looks:
        print(
            f"{args.suite}: look {lk.look} at n = {lk.n}: {sp.compare[0]} − {sp.compare[1]} "
            f"{lk.estimate:+.3f} [{lk.lo:+.3f}, {lk.hi:+.3f}] → {lk.decision}"
        )
    saved = sp.max_n - res.stopped_at
    print(f"{args.suite}: stopped at n = {res.stopped_at} of {sp.max_n} ({saved} items saved)")
    return [e for e in engines if e not in sp.compare] if not args.sequential else []


def cmd_pilot(args: argparse.Namespace) -> int:
    from sealedeval.stages.pilot import DEFAULT_ITEMS, run_pilot
    from sealedeval.stages.run import print_stats

    cfg = _cfg(args)
    runs = run_pilot(
        cfg,
        args.suite,
        [args.engine] if args.engine else None,
        limit=DEFAULT_ITEMS if args.limit is None else args.limit,
        progress=not args.no_progress,
        allow_errors=args.allow_errors,
    )
    for r in runs:
        print_stats(r.stats, args.suite, r.engine)
    print(
        f"pilot rows in results/pilot/{args.suite}/ (unsealed, outside the study; "
        f"the ledger discloses them as a pilot); next: sealedeval plan {args.suite}"
    )
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from sealedeval.stages.plan import PLAN_NAME, plan_suite, render, write_plan

    cfg = _cfg(args)
    plan = plan_suite(cfg, args.suite)
    write_plan(cfg.root, plan)
    print(render(plan))
    print(f"wrote {PLAN_NAME.as_posix()}")
    return 0


def _status_stream(fd: int | None) -> IO[str] | None:
    """The stream ``--status-fd`` names (the run rule opens it on Snakemake's stderr)."""
    if fd is None:
        return None
    try:
        return os.fdopen(fd, "w", buffering=1, closefd=False)
    except OSError as e:
        raise UserError(f"--status-fd {fd}: file descriptor not open ({e.strerror})") from None


def cmd_status(args: argparse.Namespace) -> int:
    from sealedeval.run.progress import STATUS_HEADER, status_rows, status_table
    from sealedeval.store import ledger, segments
    from sealedeval.workflow import joblog

    cfg = _cfg(args)
    entries = segments.all_entries(cfg.root)
    rows = status_rows(entries, since=args.since)
    failed = joblog.failures(cfg.root, args.since) if args.since else []
    # a run whose job failed (too many errors, a refused seal) did not end "done"
    failed_runs = {(f.suite, f.engine) for f in failed if f.engine}
    outcome = STATUS_HEADER.index("outcome")
    for row in rows:
        if (row[0], row[1]) in failed_runs and row[outcome] == "done":
            row[outcome] = "failed"
    if not rows:
        what = f"since {args.since}" if args.since else "in the ledger"
        why = "" if failed else " (nothing to call, or every call already stored)"
        print(f"engine runs {what}: none{why}")
    else:
        title = f"engine runs since {args.since}" if args.since else "latest engine run of each"
        print(f"{title} ({ledger.LEDGER_NAME}):")
        print(status_table(rows))
    if failed:
        print(f"failed jobs ({len(failed)}):")
        for f in failed:
            print(f"  {f.line()}")
    if args.summary:
        _print_summary(cfg.root, args.since, engine_runs=bool(rows))
    return 0


def _print_summary(root: Path, since: str | None, *, engine_runs: bool) -> None:
    """Per suite, the seal status and each engine's headline with its interval, as result.json
    states them (``publish.summary``: nothing is recomputed), and where report.html is."""

    from sealedeval.publish.build import RESULT
    from sealedeval.publish.html import REPORT_HTML
    from sealedeval.publish.summary import headline_text, suite_summaries

    path = root / RESULT
    if not path.exists():
        print(f"{RESULT}: not built yet (`snakemake` builds it)")
        return
    if since and engine_runs:
        written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        if written.strftime("%Y-%m-%dT%H:%M:%S.%fZ") < since:
            print(f"{RESULT}: older than this build's engine runs (`snakemake` rebuilds it)")
            return
    result = json.loads(path.read_text(encoding="utf-8"))
    print(f"results ({RESULT}):")
    for s in suite_summaries(result):
        standing = "" if s.as_sealed else f"; NOT AS SEALED: {'; '.join(s.deviations)}"
        print(f"  {s.suite}: seal {s.seal_status}{standing}")
        for h in s.headline:
            print(f"    {s.label}: {headline_text(h)}")
        if not s.headline:
            print("    no headline reported by this suite's analysis")
    report = root / REPORT_HTML
    if report.exists():
        print(f"report: {report.resolve()}")


def cmd_grade(args: argparse.Namespace) -> int:
    from sealedeval.stages.pipeline import grade_suite

    cfg = _cfg(args)
    graded, out = grade_suite(cfg, args.suite)
    print(f"{args.suite}: {len(graded)} graded rows → {out.relative_to(cfg.root)}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from sealedeval.stages import artifacts
    from sealedeval.stages.pipeline import build_analysis, fresh_graded, stage_key

    cfg = _cfg(args)
    key = stage_key(cfg, args.suite)
    graded = None if args.grade else fresh_graded(cfg, args.suite, key)
    src = artifacts.graded_path(cfg.root, args.suite).relative_to(cfg.root)
    if graded is None and not args.grade:
        raise UserError(f"{src}: missing or older than the raw runs; run `sealedeval grade` first")
    # --grade: the grade stage first, in this process (one job per suite)
    graded, made, doc = build_analysis(cfg, args.suite, key, graded)
    if made:
        print(f"{args.suite}: {len(graded)} graded rows → {src}")
    out = artifacts.analysis_path(cfg.root, args.suite)
    artifacts.write_analysis(out, doc)
    print(f"{args.suite}: analysis → {out.relative_to(cfg.root)}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    """Everything a reader opens, in one job: result.json and report.md, the scorecards, every
    figure (drawn once, by ``--jobs`` forked processes while this one reads the samples),
    report.html and report.pdf. One process instead of publish, figures and pdf jobs: each
    paid the start-up and read result.json again, and report.html drew every figure twice."""

    from sealedeval.fsutil import write_bytes_atomic, write_text_atomic
    from sealedeval.plugins import presenting
    from sealedeval.publish import figures, html
    from sealedeval.publish.build import REPORT_MD, RESULT, build
    from sealedeval.publish.pdf import REPORT_PDF, build_pdf
    from sealedeval.publish.scorecards import write_scorecards
    from sealedeval.store.arrow import give_back_memory

    cfg = _cfg(args)
    # the figure workers start now: they import the drawing stack while result.json is built;
    # forked inside ``presenting``, they find this config's kind suites' figure hooks too
    with presenting(cfg), figures.FigureJob(jobs=args.jobs, raster=True) as job:
        text, report = build(cfg)
        write_text_atomic(cfg.root / RESULT, text)
        write_text_atomic(cfg.root / REPORT_MD, report)
        print(f"wrote {RESULT} and {REPORT_MD}")
        result = json.loads(text)
        job.submit(text)
        for path in write_scorecards(cfg.root, result):
            print(f"wrote {path}")
        give_back_memory()  # each step's peak its own (``store.arrow.give_back_memory``)
        samples = html.read_samples(cfg.root, result, cfg)
        give_back_memory()
        # report.html but its figures, then report.pdf, laid out while the workers draw: each
        # figure is waited for when the layout gets to it
        parts = html.page_parts(result, samples, job.slots())
        pdf = build_pdf(result, report, job.images(), _pdf_anchors(cfg.root))
        drawn = job.result()
    figures.write_figure_files(cfg.root, drawn)
    print(f"wrote {len(drawn)} figure files under {figures.FIGURES_DIR}/")
    page = html.assemble(parts, {stem: drawn[f"{stem}.svg"] for _, stem, _ in job.slots()})
    write_text_atomic(cfg.root / html.REPORT_HTML, page)
    print(f"wrote {html.REPORT_HTML}")
    write_bytes_atomic(cfg.root / REPORT_PDF, pdf)
    print(f"wrote {REPORT_PDF}")
    for name, sec in result["suites"].items():
        ok = (sec.get("as_sealed") or {}).get("ok", True)
        print(f"{name}: seal {sec['seal']['status']}" + ("" if ok else "; NOT AS SEALED"))
    if not result["as_sealed"]["ok"]:
        # one line, last: under Snakemake it is the line the terminal and the closing table show
        if not args.allow_incomplete:
            print(
                f"sealedeval: error: {result['status']}; the reports say so "
                "(`sealedeval publish --allow-incomplete` writes them with exit 0)",
                file=sys.stderr,
            )
            return 1
        print(f"sealedeval: {result['status']}", file=sys.stderr)
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from sealedeval.publish.view import serve

    return serve(Path(args.results), port=args.port, open_browser=not args.no_browser)


def cmd_suites(args: argparse.Namespace) -> int:
    from sealedeval.plugins import suite_info, suites

    for name in suites.names():
        info = suite_info(name)
        print(f"{name:<16} {info['source']} {info['version']}")
    return 0


def cmd_figures(args: argparse.Namespace) -> int:

    from sealedeval.publish.build import RESULT
    from sealedeval.publish.figures import write_figures

    cfg = _cfg(args)
    path = cfg.root / RESULT
    if not path.exists():
        raise UserError(f"{RESULT}: missing; run `sealedeval publish` first")
    paths = write_figures(cfg.root, json.loads(path.read_text(encoding="utf-8")), args.jobs)
    print(f"wrote {len(paths)} figure files under results/figures/")
    return 0


def _pdf_anchors(root: Path) -> list[str]:
    """The external anchors report.pdf's seal section names (an RFC 3161 token, a Zenodo
    pre-registration), from the files beside rubric.lock."""

    from sealedeval.seal import timestamp
    from sealedeval.seal.lock import PREREG_NAME

    anchors = []
    if (root / timestamp.TSR_NAME).exists():
        info = timestamp.token_info(root / timestamp.TSR_NAME)
        anchors.append(
            f"RFC 3161 token ({timestamp.TSR_NAME}) from {info.tsa} at "
            f"{info.time:%Y-%m-%dT%H:%M:%SZ}"
        )
    if (root / PREREG_NAME).exists():
        rec = json.loads((root / PREREG_NAME).read_text(encoding="utf-8"))
        anchors.append(f"Zenodo pre-registration {rec.get('doi')} ({PREREG_NAME})")
    return anchors


def _write_pdf(root: Path, result: dict[str, Any], report_md: str) -> Path:
    from sealedeval.fsutil import write_bytes_atomic
    from sealedeval.publish.pdf import REPORT_PDF, build_pdf, figure_pngs

    data = build_pdf(result, report_md, figure_pngs(root), _pdf_anchors(root))
    write_bytes_atomic(root / REPORT_PDF, data)
    return REPORT_PDF


def cmd_pdf(args: argparse.Namespace) -> int:

    from sealedeval.publish.build import REPORT_MD, RESULT

    cfg = _cfg(args)
    for rel in (RESULT, REPORT_MD):
        if not (cfg.root / rel).exists():
            raise UserError(f"{rel}: missing; run `sealedeval publish` first")
    result = json.loads((cfg.root / RESULT).read_text(encoding="utf-8"))
    out = _write_pdf(cfg.root, result, (cfg.root / REPORT_MD).read_text(encoding="utf-8"))
    print(f"wrote {out}")
    return 0


def cmd_cite(args: argparse.Namespace) -> int:
    from sealedeval.archive import citation
    from sealedeval.fsutil import write_text_atomic

    cfg = _cfg(args)
    write_text_atomic(
        cfg.root / citation.CITATION, citation.render(cfg, citation.deposit_record(cfg.root))
    )
    print(f"wrote {citation.CITATION}")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from sealedeval.archive.bundle import BUNDLE_DIR, build_bundle

    cfg = _cfg(args)
    info = build_bundle(cfg.root)
    _print_bundle(info.summary())
    print(f"wrote {len(info.files)} files under {BUNDLE_DIR}/ (SHA256SUMS beside them)")
    return 0


def _print_bundle(info: Any) -> None:
    from sealedeval.archive.bundle import RAW, human

    print(
        f"raw runs: {info['raw_parts']} parts, {human(info['raw_bytes'])} → {RAW} "
        f"{human(info['raw_archive_bytes'])}; deposit {human(info['bytes'])} "
        f"(commit {info['commit'][:12]})"
    )


def cmd_deposit(args: argparse.Namespace) -> int:
    from sealedeval.archive.deposit import run_deposit

    if not (args.zenodo or args.figshare):
        args.zenodo = True
    cfg = _cfg(args)
    rec = run_deposit(
        cfg,
        to_zenodo=args.zenodo,
        to_figshare=args.figshare,
        publish=args.publish,
        sandbox=args.sandbox,
        zenodo_url=args.zenodo_url,
        figshare_url=args.figshare_url,
    )
    _print_bundle(rec["bundle"])
    for service in ("zenodo", "figshare"):
        if args.__dict__[service]:
            r = rec[service]
            state = "published" if r["published"] else "draft (rerun with --publish)"
            print(f"{service}: {r['id']} {state}, DOI {r['doi']}")
    print("wrote results/deposit.json and CITATION.cff")
    return 0


def _regrade_from(args: argparse.Namespace) -> int:
    """``regrade SUITE --from PATH``: the recorded raw run replayed as a new run under the
    current seal (``stages/regrade.py``), and the next commands."""
    from sealedeval.canonical import dumps
    from sealedeval.stages.regrade import regrade, report_lines

    file_opts = {
        "--format": args.format,
        "--profile": args.profile,
        "--key": args.key,
        "--partial": args.partial,
    }
    given = [f for f, v in file_opts.items() if v]
    if given:
        raise UserError(f"regrade --from: {given[0]} is for response files (FILE), not --from")
    files = [c for c in args.config or [] if Path(c).as_posix() != "config/config.yaml"]
    out = regrade(
        Path(args.root).resolve(),
        files,
        args.suite,
        Path(args.file),
        args.as_name,
        label=args.file,
        progress=sys.stderr.isatty(),
    )
    if args.json:
        print(dumps(out.as_dict()), end="")
        return 0
    print("\n".join(report_lines(out, files, args.root)))
    return 0


def cmd_regrade(args: argparse.Namespace) -> int:
    from sealedeval.canonical import dumps
    from sealedeval.plugins import RegradeContext, get_suite, hook

    if args.from_raw:
        return _regrade_from(args)
    if args.as_name:
        raise UserError("regrade: --as names the replay engine of --from PATH")
    if not (args.profile and args.format):
        raise UserError(
            "regrade: a response FILE needs --format and --profile "
            "(or give --from PATH: a recorded raw run)"
        )
    suite = get_suite(args.suite)
    regrade = hook(suite, "regrade")
    if regrade is None:
        raise UserError(f"suite {args.suite!r} cannot regrade external responses")
    ctx = RegradeContext(
        root=Path(args.root).resolve(),
        profile=args.profile,
        fmt=args.format,
        path=Path(args.file),
        key=Path(args.key) if args.key else None,
        partial=bool(args.partial),
    )
    res = regrade(ctx)
    if args.json:
        print(dumps(res), end="")
        return 0
    agg = res["aggregate"]
    print(f"{res['source']}: {res['grader']} on {agg['n']} cases ({agg['n_error']} errors)")
    if res.get("unknown_ids"):
        unknown = res["unknown_ids"]
        print(f"PARTIAL: {len(unknown)} case ids not graded (unknown): {', '.join(unknown)}")
    if res.get("sampled"):
        print(f"the file holds a sample of {agg['n']} of {res.get('cases_total')} cases")
    for c in res["cases"]:
        print(
            f"  {c['case_id']:<16} {c['status']:<5} composite {c['composite']:.4f}  "
            f"structural {c['structural']:.4f}  clinical {c['clinical']:.4f}  "
            f"latency {c['latency']:.2f}  flags {','.join(c['trap_flags_hit']) or '-'}"
        )
    print(
        f"aggregate: composite {agg['composite']:.4f} (errors = 0: "
        f"{agg['composite_errors_as_zero']:.4f}), structural {agg['structural']:.4f}, "
        f"clinical {agg['clinical']:.4f}, trap flags fired {agg['trap_flags_fired']}"
    )
    pub = res.get("published")
    if pub:
        print(
            f"published: composite {pub['composite']:.4f} on the same {pub['n']} cases; "
            f"{pub['n_differ']} case scores differ from the regrade"
        )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from sealedeval.publish import export

    root = Path(args.root)
    out = Path(args.output) if args.output else None
    if args.what == "eee":
        dest, exp = export.write_eee(
            root,
            out,
            schema_version=args.schema,
            relationship=args.relationship,
            organization=args.organization,
        )
        print(
            f"wrote {len(exp.files)} Every Eval Ever {exp.schema_version} records under {dest}/ "
            f"({export.EEE_INDEX} lists them)"
        )
        reasons: dict[str, int] = {}
        for n in exp.not_exported:
            reasons[n.reason] = reasons.get(n.reason, 0) + 1
        for reason, count in reasons.items():
            print(f"not exported ({export.EEE_INDEX} names each): {count} metrics: {reason}")
        return 0
    if args.what == "samples":
        path, rows = export.write_samples(root, args.format, out)
        print(f"wrote {rows} graded rows to {path}")
        return 0
    raise UserError(f"export {args.what}: unknown export (eee or samples)")


def cmd_audit(args: argparse.Namespace) -> int:

    from sealedeval.audit import Auditor, failed, render
    from sealedeval.publish.build import RESULT

    root = Path(args.root).resolve()
    result = root / RESULT
    if not args.config and result.exists():
        # The result says which config files built it: audit exactly that, with no flags.
        try:
            sources = json.loads(result.read_text(encoding="utf-8"))["config"]["sources"]
        except (ValueError, KeyError, TypeError):
            sources = []
        args.config = [s for s in sources if s != "config/config.yaml"]
        if args.config:
            print(f"audit: config as recorded in {RESULT}: {', '.join(sources)}")
    cfg = _cfg(args)
    checks = Auditor(cfg, allow_unsealed=args.allow_unsealed).run()
    print(render(checks))
    bad = failed(checks)
    print("audit: FAILED" if bad else "audit: passed")
    return 1 if bad else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from sealedeval.archive.verify import verify

    outcome = verify(
        args.source,
        zenodo_url=args.zenodo_url,
        figshare_url=args.figshare_url,
        offline=args.offline,
        keep=Path(args.keep) if args.keep else None,
    )
    return 0 if outcome.ok else 1


def _deposit_opts(s: argparse.ArgumentParser) -> None:
    s.add_argument("--publish", action="store_true", help="publish (default: leave a draft)")
    s.add_argument("--sandbox", action="store_true", help="use sandbox.zenodo.org")
    s.add_argument("--zenodo-url", metavar="URL", help="Zenodo base URL (for tests/mirrors)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sealedeval", description=__doc__)
    p.add_argument("--version", action="version", version=f"sealedeval {__version__}")
    p.add_argument(
        "--log",
        metavar="FILE",
        help="write all output to FILE; on failure print its one-line reason to stderr, with "
        "the job and FILE (every workflow rule runs this way)",
    )
    p.add_argument("--job", metavar="NAME", help="with --log: the job's name (the rule)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".", help="project root (default: current directory)")
    common.add_argument(
        "--config",
        "-c",
        action="append",
        metavar="FILE",
        help="config file(s), merged in order (default: config/config.yaml)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("init", help="create a new evaluation project in DIR")
    s.add_argument("dir", metavar="DIR")
    s.add_argument(
        "--force",
        action="store_true",
        help="add missing files to a non-empty DIR (never overwrites a file)",
    )
    s.set_defaults(fn=cmd_init)

    s = sub.add_parser("seal", parents=[common], help="hash the rubric inputs into rubric.lock")
    s.add_argument("--tsa", metavar="URL", help="store an RFC 3161 token for rubric.lock")
    s.add_argument("--tsa-ca", metavar="PEM", help="CA chain that verifies the TSA (stored)")
    s.add_argument(
        "--ledger-head",
        action="store_true",
        help="with --tsa: time-stamp the run ledger's head (at publish) instead of the rubric",
    )
    s.add_argument("--zenodo", action="store_true", help="deposit rubric.lock as pre-registration")
    s.add_argument("--embargo", metavar="YYYY-MM-DD", help="embargo the pre-registration until")
    _deposit_opts(s)
    s.set_defaults(fn=cmd_seal)

    s = sub.add_parser("generate", parents=[common], help="write results/items/SUITE.parquet")
    s.add_argument("suite")
    s.add_argument("--unsealed", action="store_true")
    s.set_defaults(fn=cmd_generate)

    s = sub.add_parser("run", parents=[common], help="call an engine for every request (resumes)")
    s.add_argument("suite")
    s.add_argument("--engine", "-e", help="engine name (default: every engine of the suite)")
    s.add_argument(
        "--unsealed",
        action="store_true",
        help="run without a committed seal; rows and result say 'not pre-registered' "
        "(to try items before the seal, outside the study: `sealedeval pilot`)",
    )
    s.add_argument("--no-progress", action="store_true")
    s.add_argument(
        "--status-fd",
        type=int,
        metavar="FD",
        help="also write throttled one-line progress reports to this file descriptor",
    )
    s.add_argument("--shard", metavar="I/N", help="run only shard I of N (split by request key)")
    s.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 even when more calls errored than the engine's fail_on_error allows "
        "or its circuit opened (the engine did not answer; its ledger entry still says failed)",
    )
    s.add_argument(
        "--sequential",
        action="store_true",
        help="run the suite's sealed analysis.sequential comparison look by look (the default "
        "for its two engines whenever the suite has one)",
    )
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser(
        "pilot",
        parents=[common],
        help="try a few items unsealed into results/pilot/ (outside the study; no seal needed)",
    )
    s.add_argument("suite")
    s.add_argument("--engine", "-e", help="engine name (default: every engine of the suite)")
    s.add_argument(
        "--limit",
        "-n",
        type=int,
        default=None,
        metavar="N",
        help="items to ask, the first N of a seeded order (default 10)",
    )
    s.add_argument("--no-progress", action="store_true")
    s.add_argument(
        "--allow-errors",
        action="store_true",
        help="exit 0 even when more calls errored than the engine's fail_on_error allows",
    )
    s.set_defaults(fn=cmd_pilot)

    s = sub.add_parser(
        "plan",
        parents=[common],
        help="from the pilot: MDE and items needed per pre-registered comparison (before seal)",
    )
    s.add_argument("suite")
    s.set_defaults(fn=cmd_plan)

    s = sub.add_parser("status", parents=[common], help="one table of engine runs from the ledger")
    s.add_argument(
        "--since",
        metavar="ISO_TIME",
        help="runs that ended at or after this UTC time (default: the latest of each)",
    )
    s.add_argument(
        "--summary",
        action="store_true",
        help="then, per suite of results/result.json, the seal status and each engine's "
        "headline, and where report.html is (the end of a successful build)",
    )
    s.set_defaults(fn=cmd_status)

    for name, fn, text in (
        ("grade", cmd_grade, "raw → results/graded/SUITE.parquet"),
        ("analyze", cmd_analyze, "graded → results/analysis/SUITE.json"),
    ):
        s = sub.add_parser(name, parents=[common], help=text)
        s.add_argument("suite")
        s.set_defaults(fn=fn)
        if name == "analyze":
            s.add_argument(
                "--grade",
                action="store_true",
                help="grade first (write the graded file) in this process: the workflow's job",
            )

    jobs_help = "processes that draw figures (default 0: the CPUs available)"
    s = sub.add_parser(
        "publish",
        parents=[common],
        help="write result.json, report.md, report.html, scorecards and figures",
    )
    s.add_argument("--jobs", "-j", type=int, default=0, help=jobs_help)
    s.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 when the result is NOT AS SEALED (a sealed engine, comparison or ledgered "
        "part missing); the report states it either way",
    )
    s.set_defaults(fn=cmd_publish)

    s = sub.add_parser("view", help="serve results/ on a loopback port and open report.html")
    s.add_argument("--results", default="results", help="results folder (default: results)")
    s.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    s.add_argument("--no-browser", action="store_true", help="print the URL only")
    s.set_defaults(fn=cmd_view)

    s = sub.add_parser("suites", parents=[common], help="list registered suites (and sources)")
    s.set_defaults(fn=cmd_suites)

    s = sub.add_parser(
        "figures", parents=[common], help="result.json → results/figures/ (publish draws them too)"
    )
    s.add_argument("--jobs", "-j", type=int, default=0, help=jobs_help)
    s.set_defaults(fn=cmd_figures)
    s = sub.add_parser("pdf", parents=[common], help="results/report.pdf")
    s.set_defaults(fn=cmd_pdf)
    s = sub.add_parser("cite", parents=[common], help="write CITATION.cff from config")
    s.set_defaults(fn=cmd_cite)
    s = sub.add_parser("bundle", parents=[common], help="results/deposit/bundle + SHA256SUMS")
    s.set_defaults(fn=cmd_bundle)
    s = sub.add_parser("deposit", parents=[common], help="bundle → Zenodo (default) / Figshare")
    s.add_argument("--zenodo", action="store_true", help="deposit to Zenodo (the default)")
    s.add_argument("--figshare", action="store_true", help="deposit to Figshare")
    s.add_argument("--figshare-url", metavar="URL", help="Figshare API base (for tests/mirrors)")
    _deposit_opts(s)
    s.set_defaults(fn=cmd_deposit)

    s = sub.add_parser(
        "regrade",
        parents=[common],
        help="grade recorded responses again (no engine call): a raw run (--from) or a file",
    )
    s.add_argument("suite")
    s.add_argument(
        "--from",
        dest="from_raw",
        action="store_true",
        help="PATH is a recorded raw-store directory (results/raw/SUITE/ENGINE, an import, or "
        "a copy), replayed as a new run under the current seal through a replay engine "
        "(`--from PATH`; a flag, so FILE stays the one positional of the response-file form)",
    )
    s.add_argument(
        "--as",
        dest="as_name",
        metavar="ENGINE_NAME",
        help="with --from: the replay engine's name (default: <source engine>-replay)",
    )
    s.add_argument("--profile", help="with FILE: scoring profile (e.g. sealed, kantesti-v11)")
    s.add_argument("--format", help="with FILE: response file format (e.g. kantesti)")
    s.add_argument(
        "file", metavar="FILE|PATH", help="a response file (the suite's regrade hook), or PATH"
    )
    s.add_argument("--json", action="store_true", help="print canonical JSON")
    s.add_argument(
        "--key",
        metavar="FILE",
        help="answer key (expected keywords, scoring systems, trap flags "
        "per case id) for runs whose cases are not the suite's",
    )
    s.add_argument(
        "--partial", action="store_true", help="grade the known case ids, list the unknown ones"
    )
    s.set_defaults(fn=cmd_regrade)

    s = sub.add_parser(
        "export", help="result.json as Every Eval Ever records (eee); graded rows as a table"
    )
    s.add_argument("what", metavar="eee|samples", help="eee: EEE schema; samples: tidy rows")
    s.add_argument("--root", default=".", help="project root (default: current directory)")
    s.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="eee: a directory; samples: a file (default: "
        "results/export/eee/, results/export/samples.FORMAT)",
    )
    s.add_argument("--format", default="parquet", help="samples: parquet (default) or csv")
    s.add_argument("--schema", default="0.2.2", help="eee: schema version, 0.2.2 or 0.3.0")
    s.add_argument(
        "--relationship",
        default="third_party",
        help="eee: evaluator_relationship (first_party if the model's developer runs it)",
    )
    s.add_argument(
        "--organization", metavar="NAME", help="eee: source organisation (default: project)"
    )
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("audit", parents=[common], help="verify seal, raw runs and result.json")
    s.add_argument(
        "--allow-unsealed",
        action="store_true",
        help="accept rows run with --unsealed (the result says not pre-registered)",
    )
    s.set_defaults(fn=cmd_audit)

    s = sub.add_parser(
        "verify",
        help="fetch a deposit (DOI, record URL, zip or folder), rebuild the project, audit it",
    )
    s.add_argument("source", metavar="SOURCE", help="DOI, record URL, zip or bundle folder")
    s.add_argument("--zenodo-url", metavar="URL", help="Zenodo base URL (for tests/mirrors)")
    s.add_argument("--figshare-url", metavar="URL", help="Figshare API base (for tests/mirrors)")
    s.add_argument(
        "--offline",
        action="store_true",
        help="a local folder or zip only; do not read a pre-registration back from Zenodo",
    )
    s.add_argument("--keep", metavar="DIR", help="rebuild the project in DIR and keep it there")
    s.set_defaults(fn=cmd_verify)

    from sealedeval.imports.cli import add_parser as add_import_parser

    add_import_parser(sub, common)
    return p


def _logged(args: argparse.Namespace) -> int:
    """``--log FILE``: the command's output to FILE, its one-line failure to the terminal,
    named by ``--job`` (the rule) and what the command was given (workflow/joblog.py)."""
    from sealedeval.workflow.joblog import run_logged

    suite = str(getattr(args, "suite", None) or "")
    engine = str(getattr(args, "engine", None) or "")
    subject = "/".join(x for x in (suite, engine) if x)
    if getattr(args, "shard", None):
        subject += f" shard {args.shard}"
    job = " ".join(x for x in (args.job or args.command, subject) if x)
    return run_logged(
        Path(getattr(args, "root", ".")),
        Path(args.log),
        job,
        lambda: int(args.fn(args)),
        # the audit's table is what `snakemake audit` is run for: it stays on the terminal
        tee=args.command == "audit",
        suite=suite,
        engine=engine,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.log:
        return _logged(args)
    try:
        rc: int = args.fn(args)
    except UserError as e:
        print(f"sealedeval: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "sealedeval: interrupted; completed rows are stored, rerun to resume", file=sys.stderr
        )
        return 130
    return rc


if __name__ == "__main__":
    sys.exit(main())
