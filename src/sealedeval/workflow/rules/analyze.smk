rule analyze:
    input:
        graded="results/graded/{suite}.parquet",
        suite_items="results/items/{suite}.parquet",
        runs=run_markers,
    output:
        "results/analysis/{suite}.json",
    log:
        "logs/analyze/{suite}.log",
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
    shell:
        "sealedeval analyze {wildcards.suite} {params.config} > {log} 2>&1"
