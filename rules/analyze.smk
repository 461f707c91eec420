rule analyze:
    input:
        "results/graded/{suite}.parquet",
    output:
        "results/analysis/{suite}.json",
    log:
        "logs/analyze/{suite}.log",
    shell:
        "sealedeval analyze {wildcards.suite} {CONFIG_ARGS} > {log} 2>&1"
