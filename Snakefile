# sealedeval workflow: generate → run → grade → analyze → publish.
# The table of contents only; helpers live in rules/common.smk, every rule calls the CLI.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "config/schemas/config.schema.yaml")
# Each suite's own schema (shipped with the suite) for its section, defaults applied.
from sealedeval.config import validate_workflow_config

validate_workflow_config(config)


# Cheap rules run on the submitting host, never as cluster jobs (profiles/slurm).
localrules:
    all,
    runs,
    generate,
    grade,
    analyze,
    publish,
    figures,
    pdf,


include: "rules/common.smk"
include: "rules/generate.smk"
include: "rules/run.smk"
include: "rules/grade.smk"
include: "rules/analyze.smk"
include: "rules/publish.smk"


rule all:
    input:
        "results/result.json",
        "results/report.md",
        "results/figures",
        "results/report.pdf",


rule runs:
    input:
        all_run_markers,
