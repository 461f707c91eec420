"""The one ``sealedeval`` command; every Snakemake rule calls a subcommand of it.

User errors print one line (``sealedeval: error: ...``) and exit 2; nothing is half-written
because every file is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sealedeval import __version__
from sealedeval.config import Config, load_config
from sealedeval.errors import UserError


def _cfg(args: argparse.Namespace) -> Config:
    return load_config(Path(args.root), args.config or [])


def cmd_seal(args: argparse.Namespace) -> int:
    from sealedeval.seal import lock
    from sealedeval.suites.base import all_suites

    root = Path(args.root).resolve()
    doc = lock.write(root, {s.name: s.rubric_inputs() for s in all_suites()})
    for name, entry in doc["suites"].items():
        print(f"{name}: {len(entry['files'])} inputs, sha256 {entry['sha256']}")
    print(f"wrote {lock.LOCK_NAME} (combined {doc['sha256']}); commit it before the first run:")
    print(f"  git add {lock.LOCK_NAME} && git commit -m 'Seal rubric'")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from sealedeval.run.items import write_items

    cfg = _cfg(args)
    path, n = write_items(cfg, args.suite, unsealed=args.unsealed)
    print(f"{args.suite}: {n} items → {path.relative_to(cfg.root)}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from sealedeval.run.runner import parse_shard, print_stats, run_suite

    cfg = _cfg(args)
    shard = parse_shard(args.shard) if args.shard else None
    engines = [args.engine] if args.engine else list(cfg.suite(args.suite)["engines"])
    for eng in engines:
        stats = run_suite(
            cfg, args.suite, eng, unsealed=args.unsealed, progress=not args.no_progress,
            shard=shard,
        )
        print_stats(stats, args.suite, eng)
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from sealedeval.graders.stage import write_graded
    from sealedeval.publish.build import build_suite

    cfg = _cfg(args)
    sb = build_suite(cfg, args.suite)
    out = cfg.root / "results" / "graded" / f"{args.suite}.parquet"
    write_graded(out, sb.graded)
    print(f"{args.suite}: {len(sb.graded)} graded rows → {out.relative_to(cfg.root)}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from sealedeval.canonical import dumps
    from sealedeval.fsutil import write_text_atomic
    from sealedeval.publish.build import build_suite

    cfg = _cfg(args)
    sb = build_suite(cfg, args.suite)
    out = cfg.root / "results" / "analysis" / f"{args.suite}.json"
    write_text_atomic(out, dumps(sb.analysis))
    print(f"{args.suite}: analysis → {out.relative_to(cfg.root)}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from sealedeval.fsutil import write_text_atomic
    from sealedeval.publish.build import REPORT_MD, RESULT, build

    cfg = _cfg(args)
    text, report = build(cfg)
    write_text_atomic(cfg.root / RESULT, text)
    write_text_atomic(cfg.root / REPORT_MD, report)
    print(f"wrote {RESULT} and {REPORT_MD}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from sealedeval.seal.audit import Auditor, failed, render

    cfg = _cfg(args)
    checks = Auditor(cfg, allow_unsealed=args.allow_unsealed).run()
    print(render(checks))
    bad = failed(checks)
    print("audit: FAILED" if bad else "audit: passed")
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sealedeval", description=__doc__)
    p.add_argument("--version", action="version", version=f"sealedeval {__version__}")
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

    s = sub.add_parser("seal", parents=[common], help="hash the rubric inputs into rubric.lock")
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
        help="run without a committed seal; rows and result say 'not pre-registered'",
    )
    s.add_argument("--no-progress", action="store_true")
    s.add_argument("--shard", metavar="I/N", help="run only shard I of N (split by request key)")
    s.set_defaults(fn=cmd_run)

    for name, fn, text in (
        ("grade", cmd_grade, "raw → results/graded/SUITE.parquet"),
        ("analyze", cmd_analyze, "graded → results/analysis/SUITE.json"),
    ):
        s = sub.add_parser(name, parents=[common], help=text)
        s.add_argument("suite")
        s.set_defaults(fn=fn)

    s = sub.add_parser("publish", parents=[common], help="write result.json and report.md")
    s.set_defaults(fn=cmd_publish)

    s = sub.add_parser("audit", parents=[common], help="verify seal, raw runs and result.json")
    s.add_argument(
        "--allow-unsealed",
        action="store_true",
        help="accept rows run with --unsealed (the result says not pre-registered)",
    )
    s.set_defaults(fn=cmd_audit)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
