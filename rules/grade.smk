rule grade:
    input:
        suite_items="results/items/{suite}.parquet",
        runs=run_markers,
    output:
        "results/graded/{suite}.parquet",
    log:
        "logs/grade/{suite}.log",
    shell:
        "sealedeval grade {wildcards.suite} {CONFIG_ARGS} > {log} 2>&1"
