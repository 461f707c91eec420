"""The Snakemake workflow, shipped inside the package.

A project's ``Snakefile`` is three lines (this repository's is the same)::

    from sealedeval.workflow import snakefile
    configfile: "config/config.yaml"
    include: snakefile()

so a project made by ``sealedeval init`` runs the very rules this repository runs, at the
version of the installed package, without copying them. The rule files have one source, the
repository's top-level ``rules/`` (one ``.smk`` per stage); ``workflow/rules`` here is a link to
it, and a built wheel carries the files themselves. The central config schema lives here
too: it is the package's contract, not a project's file.
"""

from __future__ import annotations

from pathlib import Path

WORKFLOW_DIR = Path(__file__).resolve().parent
SCHEMA = WORKFLOW_DIR / "config.schema.yaml"


def snakefile() -> str:
    """The path of the workflow's main rules file, for ``include:``."""
    return str(WORKFLOW_DIR / "main.smk")
