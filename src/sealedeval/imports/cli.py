"""``sealedeval import HARNESS LOG...``: the subcommand, registered by ``sealedeval.cli``::

from sealedeval.imports.cli import add_parser as add_import_parser
add_import_parser(sub, common)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError


def cmd_import_inspect(args: argparse.Namespace) -> int:
    from sealedeval.imports import inspect_log

    # every log is read and checked first: a bad one stops the import with nothing written
    return _import(args, lambda: [inspect_log.load(None, Path(p), args.suite) for p in args.logs])


def cmd_import_lm_eval(args: argparse.Namespace) -> int:
    from sealedeval.imports import lm_eval_log

    paths = [Path(p) for p in args.paths]
    return _import(args, lambda: lm_eval_log.load(None, paths, args.suite, args.task or []))


def cmd_import_promptfoo(args: argparse.Namespace) -> int:
    from sealedeval.imports import promptfoo_log

    return _import(
        args,
        lambda: [ing for p in args.files for ing in promptfoo_log.load(None, Path(p), args.suite)],
    )


def _import(args: argparse.Namespace, read: Callable[[], list[Any]]) -> int:
    """Read every log (no config needed), write the suite and engine blocks the config lacks
    (and say so), then bind the rows to the suite's seal and write them."""
    from sealedeval.config import load_config
    from sealedeval.imports import autoconfig
    from sealedeval.stages import ingest

    root = Path(args.root)
    loaded = read()
    ingest.check_unique(loaded)
    doc = autoconfig.read_doc(root)
    add = autoconfig.plan(doc, loaded)
    if args.dry_run:
        for line in add.lines():
            print(f"would add to {autoconfig.CONFIG}: {line}")
        for ing in loaded:
            ok = sum(1 for r in ing.rows if r["status"] == "ok")
            print(
                f"{ing.path}: would import {len(ing.rows)} rows ({ok} ok, "
                f"{len(ing.rows) - ok} error) → results/raw/{ing.suite}/{ing.engine}"
            )
        print("dry run: nothing written")
        return 0
    if add:
        rewritten = autoconfig.apply(root, doc, add)
        for line in add.lines():
            print(f"added to {autoconfig.CONFIG}: {line}")
        if rewritten:
            print(
                f"  note: {autoconfig.CONFIG} was rewritten from its parsed value (comments lost)"
            )
        if add.suites:
            # rows imported into a suite with no seal stay unsealed for good (a re-import of
            # the same bytes is a no-op) and the audit fails on them: seal first
            print(
                f"nothing imported yet: seal the new suite(s) {', '.join(add.suites)} first "
                "(`sealedeval seal`, commit), then run this import again"
            )
            return 0
    cfg = load_config(root, args.config or [])
    ingest.bind(cfg, loaded)
    return _write(cfg, loaded)


def _write(cfg: Any, loaded: list[Any]) -> int:
    from sealedeval.stages import ingest

    for out in ingest.write_all(cfg, loaded):
        where = f"results/raw/{out.suite}/{out.engine}"
        if out.noop:
            print(f"{out.path}: already imported into {where} (same sha256); nothing written")
        else:
            print(f"{out.path}: {out.rows} rows ({out.ok} ok, {out.error} error) → {where}")
            if out.predating:
                print(
                    f"  note: {out.predating} of {out.rows} samples started before the seal: "
                    f"{out.suite} is not pre-registered (samples predate the seal)"
                )
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``import`` (with its ``inspect`` subcommand) on the CLI's subparsers."""
    s = sub.add_parser("import", help="import another harness's logs into the raw store")
    harness = s.add_subparsers(dest="harness", required=True)
    dry = argparse.ArgumentParser(add_help=False)
    dry.add_argument(
        "--dry-run",
        action="store_true",
        help="read and check the logs; show the config blocks and rows it would write",
    )
    h = harness.add_parser(
        "inspect", parents=[common, dry], help="Inspect AI logs (.eval or .json)"
    )
    h.add_argument("logs", nargs="+", metavar="LOG")
    h.add_argument("--suite", help="the suite to import into (default: the log's task name)")
    h.set_defaults(fn=cmd_import_inspect)
    h = harness.add_parser(
        "lm-eval",
        parents=[common, dry],
        help="lm-evaluation-harness output (results_*.json + samples_*.jsonl, --log_samples)",
    )
    h.add_argument("paths", nargs="+", metavar="DIR", help="--output_path directories or files")
    h.add_argument("--suite", help="the suite to import into (default: the task name)")
    h.add_argument("--task", action="append", help="import only this task (repeatable)")
    h.set_defaults(fn=cmd_import_lm_eval)
    h = harness.add_parser(
        "promptfoo",
        parents=[common, dry],
        help="promptfoo results (promptfoo eval -o results.json)",
    )
    h.add_argument("files", nargs="+", metavar="FILE")
    h.add_argument("--suite", help="the suite to import into (default: the config's description)")
    h.set_defaults(fn=cmd_import_promptfoo)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sealedeval.imports.cli inspect LOG...`` until ``sealedeval.cli`` registers
    the subcommand (same error contract: one line, exit 2)."""
    p = argparse.ArgumentParser(prog="sealedeval")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".")
    common.add_argument("--config", "-c", action="append", metavar="FILE")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub, common)
    args = p.parse_args(["import", *(argv if argv is not None else sys.argv[1:])])
    try:
        rc: int = args.fn(args)
    except UserError as e:
        print(f"sealedeval: error: {e}", file=sys.stderr)
        return 2
    return rc


if __name__ == "__main__":
    sys.exit(main())
