rule analyze:
    input:
        "results/graded/{suite}.parquet",
    output:
        "results/analysis/{suite}.json",
    log:
        "logs/analyze/{suite}.log",
    conda:
        "../envs/sealedeval.yaml"
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval analyze {wildcards.suite} {params.config} > {log} 2>&1"
