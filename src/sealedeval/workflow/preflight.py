"""What the Snakefile checks before Snakemake plans a single job, and how it says no.

A bad config, a missing seal or a sealed input edited after the seal would otherwise surface as
Snakemake's own report (a JSON-schema dump, a traceback, ``MissingInputException``) or not at
all (every output up to date: "Nothing to be done", exit 0, the old report left standing). Here
each is the CLI's one line (``sealedeval: error: ...``) on stderr and exit status 2, the same
words ``sealedeval run`` would use, and nothing else: ``SystemExit`` passes through Snakemake's
parser without a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from sealedeval.config import Config, validate_workflow_config
from sealedeval.errors import UserError

NO_LOCK = "rubric.lock: not found; run `sealedeval seal` and commit it"


def fail(e: UserError) -> NoReturn:
    """Print the CLI's one line and stop the workflow at parse time (exit 2)."""
    print(f"sealedeval: error: {e}", file=sys.stderr, flush=True)
    raise SystemExit(e.exit_code)


def config_files(overwrite: Sequence[object] | None) -> list[str]:
    """The config files in the order Snakemake merged them: the Snakefile's default first, then
    the ``--configfile`` ones. The CLI is given them in this order, so it sees exactly the
    config the workflow was validated against."""
    files = ["config/config.yaml"]
    here = Path.cwd().resolve()
    for f in overwrite or []:
        path = Path(str(f))
        # relative to the project, as the CLI records them (Snakemake makes them absolute)
        if path.is_absolute() and path.resolve().is_relative_to(here):
            path = path.resolve().relative_to(here)
        if str(path) not in files:
            files.append(str(path))
    return files


def enabled_suites(config: dict[str, Any]) -> list[str]:
    return sorted(s for s, c in config["suites"].items() if c.get("enabled", True))


def check_config(
    config: dict[str, Any], config_files: Sequence[str], overrides: Mapping[str, Any]
) -> Config:
    """Snakemake's config becomes ``load_config``'s of the same files (``--config`` overrides
    merged last, as Snakemake does); a bad one stops here with the CLI's line. The loaded
    config is returned: the rules look suites up through it (``get_suite(name, CFG)``)."""
    try:
        return validate_workflow_config(config, config_files, overrides)
    except UserError as e:
        fail(e)


def check_seal(cfg: Config, suites: Sequence[str]) -> None:
    """The seal every job of these suites will check, checked once now: ``rubric.lock`` exists,
    is committed, and every sealed input of every enabled suite still has its sealed hash
    (``seal.lock.check``, one hash per input). An edit to a sealed data file then stops the
    build here, even when Snakemake would find every output up to date."""
    from sealedeval.plugins import get_suite
    from sealedeval.seal import lock

    try:
        if not (cfg.root / lock.LOCK_NAME).exists():
            raise UserError(NO_LOCK)
        hashes: dict[str, str] = {}  # the inputs suites share (stats/, ...) hashed once
        for suite in suites:
            lock.check(cfg.root, suite, get_suite(suite, cfg).rubric_inputs(), cache=hashes)
    except UserError as e:
        fail(e)


RESULT = Path("results/result.json")


def not_as_sealed(root: Path) -> str:
    """The status of a result that is NOT AS SEALED (``seal.standing``), else ''. The publish
    rule writes such a result and its reports, labelled (``--allow-incomplete``: a failed job's
    outputs would be deleted, and the reader would have nothing that says why); the build then
    ends with this line and a non-zero status, so no one takes it for a clean build."""

    path = root / RESULT
    if not path.exists():
        return ""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return ""
    if (result.get("as_sealed") or {}).get("ok", True):
        return ""
    return str(result.get("status", "NOT AS SEALED"))


def end_build(root: Path) -> None:
    """The end of a successful build: exit 1 with one line when the result is NOT AS SEALED."""
    status = not_as_sealed(root)
    if status:
        print(
            f"sealedeval: error: {status}; the reports say so ({RESULT.parent}/report.html)",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)
