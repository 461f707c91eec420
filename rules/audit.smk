# `snakemake audit`: the audit of everything the workflow built (never part of `all`, so a
# build stays a build; it reads what publish wrote and writes only its log). Its table goes to
# the terminal as well as the log (`--log` tees the audit: the table is what it is run for).
rule audit:
    input:
        "results/result.json",
        "results/report.md",
    log:
        "logs/audit.log",
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval --log {log} audit {params.config}"


# `snakemake archive`: the deposit bundle (result, report, raw runs, rubric.lock, ledger,
# CITATION.cff, checksums) under results/deposit/bundle, ready for `sealedeval deposit`.
rule archive:
    input:
        "results/result.json",
        "results/report.md",
        "results/report.pdf",
        "results/figures",
    output:
        directory("results/deposit/bundle"),
    log:
        "logs/archive.log",
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval --log {log} --job archive bundle {params.config}"
