rule grade:
    input:
        suite_items="results/items/{suite}.parquet",
        runs=run_markers,
    output:
        "results/graded/{suite}.parquet",
    log:
        "logs/grade/{suite}.log",
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
    shell:
        "sealedeval grade {wildcards.suite} {params.config} > {log} 2>&1"
