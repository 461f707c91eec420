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
        "sealedeval --log {log} generate {wildcards.suite} {params.config}"
