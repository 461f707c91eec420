# One job per suite grades and analyses it: `sealedeval analyze --grade` writes the graded file,
# then the analysis from the same rows in the same process. Two jobs (grade, then analyze) read
# the raw runs twice and paid the CLI's start-up twice per suite (benchmarks/analysis.py).
rule analyze:
    input:
        suite_items="results/items/{suite}.parquet",
        runs=run_markers,
    output:
        graded="results/graded/{suite}.parquet",
        analysis="results/analysis/{suite}.json",
    log:
        "logs/analyze/{suite}.log",
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
    shell:
        "sealedeval --log {log} analyze {wildcards.suite} --grade {params.config}"
