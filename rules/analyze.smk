rule analyze:
    input:
        graded="results/graded/{suite}.parquet",
        suite_items="results/items/{suite}.parquet",
        runs=run_markers,
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
