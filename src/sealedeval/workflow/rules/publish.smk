# Publish reads only the analysis and graded files (and the raw manifest): it knows no suite.
rule publish:
    input:
        analyses=expand("results/analysis/{suite}.json", suite=SUITES),
        graded=expand("results/graded/{suite}.parquet", suite=SUITES),
        runs=all_run_markers,
    output:
        result="results/result.json",
        report="results/report.md",
        # One self-contained page: summary, sections, inline SVG figures, every sample.
        html="results/report.html",
        # Each suite decides its scorecard files (publish.scorecards): a directory output.
        scorecards=directory("results/scorecards"),
    log:
        "logs/publish.log",
    params:
        config=CONFIG_ARGS,
        suite_configs=all_suite_configs,
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
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval pdf {params.config} > {log} 2>&1"
