# sealedeval workflow: generate → run → grade → analyze → publish (→ audit, archive).
# The table of contents only; helpers live in rules/common.smk, every rule calls the CLI.
# Every rule runs `sealedeval --log {log} ...`: the command's whole output goes to the log, and
# when it fails its one line (`sealedeval: error: ...`) reaches the terminal too, named by rule
# and wildcards, with the log's path; the closing table repeats it (sealedeval/workflow/joblog.py).
# A project includes this file from its Snakefile (see sealedeval/workflow/__init__.py).
from pathlib import Path

from snakemake.utils import min_version

from sealedeval.workflow.preflight import (
    check_config,
    check_seal,
    config_files,
    enabled_suites,
    end_build,
)

min_version("9.0")


# Every rule runs in the image this repository's Dockerfile builds (`podman build -t
# localhost/sealedeval:0.1.0 .`; tests/archive/test_docker.py builds and runs it) when Snakemake
# is asked for containers (`--sdm apptainer`); push it to your registry and set `container:` in
# the config to use it there. Without --sdm the rules run in the current environment.
container: config.get("container") or "docker://localhost/sealedeval:0.1.0"


# Before any job is planned, what would stop every job anyway, said as the CLI says it (one
# line, exit 2; sealedeval/workflow/preflight.py): the config (the central schema, each engine's
# kind, each suite's own schema, defaults applied), then the seal of every enabled suite, so a
# sealed input edited after the seal stops the build even when every output is up to date.
CONFIG_FILES = config_files(workflow.overwrite_configfiles)
CFG = check_config(config, CONFIG_FILES, workflow.config_settings.config)
if workflow.is_main_process:  # not again in every cluster job: the job's command checks it
    check_seal(CFG, enabled_suites(config))


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
# the ledger (`sealedeval status`: ok, skipped, errors by kind, wall time), then each failed
# job's one-line reason and log; after a success, per suite the seal status and each engine's
# headline as result.json states them, and where report.html is. A failure to print it never
# changes the build's outcome.
from datetime import datetime, timezone

BUILD_STARTED = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


onsuccess:
    shell(f"sealedeval status --since {BUILD_STARTED} --summary {CONFIG_ARGS} || true")
    # a result NOT AS SEALED was published labelled (rules/publish.smk): the build says so and
    # exits 1
    end_build(Path("."))


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
