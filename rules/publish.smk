rule publish:
    input:
        analyses=expand("results/analysis/{suite}.json", suite=SUITES),
        runs=all_run_markers,
    output:
        result="results/result.json",
        report="results/report.md",
    log:
        "logs/publish.log",
    shell:
        "sealedeval publish {CONFIG_ARGS} > {log} 2>&1"
