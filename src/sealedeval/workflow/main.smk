# sealedeval workflow: generate → run → grade → analyze → publish (→ audit, archive).
# The table of contents only; helpers live in rules/common.smk, every rule calls the CLI.
# A project includes this file from its Snakefile (see sealedeval/workflow/__init__.py).
from snakemake.utils import min_version, validate

from sealedeval.config import validate_workflow_config
from sealedeval.workflow import SCHEMA

min_version("9.0")


# Every rule runs in the image this repository's Dockerfile builds (`podman build -t
# localhost/sealedeval:0.1.0 .`; tests/archive/test_docker.py builds and runs it) when Snakemake
# is asked for containers (`--sdm apptainer`); push it to your registry and set `container:` in
# the config to use it there. Without --sdm the rules run in the current environment.
container: config.get("container") or "docker://localhost/sealedeval:0.1.0"


validate(config, str(SCHEMA))
# Each suite's own schema (shipped with the suite) for its section, defaults applied.
validate_workflow_config(config)


# Cheap rules run on the submitting host, never as cluster jobs (profiles/slurm).
localrules:
    all,
    runs,
    generate,
    analyze,
    publish,
    audit,
    archive,


# The end of every build (not a dry run): one table of the engine runs this build made, from
# the ledger (`sealedeval status`: ok, skipped, errors by kind, wall time). A failure to print
# it never changes the build's outcome.
from datetime import datetime, timezone

BUILD_STARTED = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


onsuccess:
    shell(f"sealedeval status --since {BUILD_STARTED} {CONFIG_ARGS} || true")


onerror:
    shell(f"sealedeval status --since {BUILD_STARTED} {CONFIG_ARGS} || true")


include: "rules/common.smk"
include: "rules/generate.smk"
include: "rules/run.smk"
include: "rules/analyze.smk"
include: "rules/publish.smk"
include: "rules/audit.smk"


# What a build makes: the project's Snakefile names it in its `rule all` (the first rule of the
# main Snakefile is the default target; a rule in an included file cannot be).
TARGETS = [
    "results/result.json",
    "results/report.md",
    "results/report.html",
    "results/figures",
    "results/report.pdf",
]


rule runs:
    input:
        all_run_markers,
