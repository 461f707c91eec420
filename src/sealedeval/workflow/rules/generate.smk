rule generate:
    input:
        lock="rubric.lock",
    output:
        "results/items/{suite}.parquet",
    log:
        "logs/generate/{suite}.log",
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
    shell:
        "sealedeval generate {wildcards.suite} {params.config} > {log} 2>&1"
