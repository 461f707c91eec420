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
    from sealedeval.imports import ingest, inspect_log

    cfg = load_config(Path(args.root), args.config or [])
    # every log is read and checked first: a bad one stops the import with nothing written
    loaded = [inspect_log.load(cfg, Path(p), args.suite) for p in args.logs]
    ingest.check_unique(loaded)
    for out in ingest.write_all(cfg, loaded):
        where = f"results/raw/{out.suite}/{out.engine}"
        if out.noop:
            print(f"{out.path}: already imported into {where} (same sha256); nothing written")
        else:
            print(f"{out.path}: {out.rows} rows ({out.ok} ok, {out.error} error) → {where}")
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``import`` (with its ``inspect`` subcommand) on the CLI's subparsers."""
    s = sub.add_parser("import", help="import another harness's logs into the raw store")
    harness = s.add_subparsers(dest="harness", required=True)
    h = harness.add_parser("inspect", parents=[common], help="Inspect AI logs (.eval or .json)")
    h.add_argument("logs", nargs="+", metavar="LOG")
    h.add_argument("--suite", help="the suite to import into (default: the log's task name)")
    h.set_defaults(fn=cmd_import_inspect)


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
