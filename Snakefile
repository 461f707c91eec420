# The workflow ships inside the package (src/sealedeval/workflow): a project made by
# `sealedeval init` has this same Snakefile.
from sealedeval.workflow import snakefile


configfile: "config/config.yaml"


include: snakefile()


rule all:
    input:
        TARGETS,
