"""``sealedeval import HARNESS LOG...``: the subcommand, registered by ``sealedeval.cli``::

from sealedeval.imports.cli import add_parser as add_import_parser
add_import_parser(sub, common)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError


def cmd_import_inspect(args: argparse.Namespace) -> int:
    from sealedeval.config import load_config
    from sealedeval.imports import inspect_log

    cfg = load_config(Path(args.root), args.config or [])
    # every log is read and checked first: a bad one stops the import with nothing written
    return _write(cfg, [inspect_log.load(cfg, Path(p), args.suite) for p in args.logs])


def cmd_import_lm_eval(args: argparse.Namespace) -> int:
    from sealedeval.config import load_config
    from sealedeval.imports import lm_eval_log

    cfg = load_config(Path(args.root), args.config or [])
    paths = [Path(p) for p in args.paths]
    return _write(cfg, lm_eval_log.load(cfg, paths, args.suite, args.task or []))


def cmd_import_promptfoo(args: argparse.Namespace) -> int:
    from sealedeval.config import load_config
    from sealedeval.imports import promptfoo_log

    cfg = load_config(Path(args.root), args.config or [])
    loaded = [ing for p in args.files for ing in promptfoo_log.load(cfg, Path(p), args.suite)]
    return _write(cfg, loaded)


def _write(cfg: Any, loaded: list[Any]) -> int:
    from sealedeval.imports import ingest

    ingest.check_unique(loaded)
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
    h = harness.add_parser("inspect", parents=[common], help="Inspect AI logs (.eval or .json)")
    h.add_argument("logs", nargs="+", metavar="LOG")
    h.add_argument("--suite", help="the suite to import into (default: the log's task name)")
    h.set_defaults(fn=cmd_import_inspect)
    h = harness.add_parser(
        "lm-eval",
        parents=[common],
        help="lm-evaluation-harness output (results_*.json + samples_*.jsonl, --log_samples)",
    )
    h.add_argument("paths", nargs="+", metavar="DIR", help="--output_path directories or files")
    h.add_argument("--suite", help="the suite to import into (default: the task name)")
    h.add_argument("--task", action="append", help="import only this task (repeatable)")
    h.set_defaults(fn=cmd_import_lm_eval)
    h = harness.add_parser(
        "promptfoo", parents=[common], help="promptfoo results (promptfoo eval -o results.json)"
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
