rule generate:
    input:
        lock="rubric.lock",
    output:
        "results/items/{suite}.parquet",
    log:
        "logs/generate/{suite}.log",
    shell:
        "sealedeval generate {wildcards.suite} {CONFIG_ARGS} > {log} 2>&1"
