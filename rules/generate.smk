rule generate:
    input:
        lock="rubric.lock",
    output:
        "results/items/{suite}.parquet",
    log:
        "logs/generate/{suite}.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval generate {wildcards.suite} {params.config} > {log} 2>&1"
