rule publish:
    input:
        analyses=expand("results/analysis/{suite}.json", suite=SUITES),
        runs=all_run_markers,
    output:
        result="results/result.json",
        report="results/report.md",
    log:
        "logs/publish.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval publish {params.config} > {log} 2>&1"
