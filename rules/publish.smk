rule publish:
    input:
        analyses=expand("results/analysis/{suite}.json", suite=SUITES),
        runs=all_run_markers,
    output:
        result="results/result.json",
        report="results/report.md",
        # One CSV per bloodpanel engine (known statically from the config).
        scorecards=expand(
            "results/scorecards/bloodpanel-{engine}.csv",
            engine=suite_engines("bloodpanel") if "bloodpanel" in SUITES else [],
        ),
    log:
        "logs/publish.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval publish {params.config} > {log} 2>&1"


# Every figure has exactly one producing rule: this one, from result.json alone.
rule figures:
    input:
        "results/result.json",
    output:
        directory("results/figures"),
    log:
        "logs/figures.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval figures {params.config} > {log} 2>&1"


rule pdf:
    input:
        result="results/result.json",
        report="results/report.md",
        figures="results/figures",
    output:
        "results/report.pdf",
    log:
        "logs/pdf.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval pdf {params.config} > {log} 2>&1"
