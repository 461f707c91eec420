# Engine calls. The output is a marker inside the raw directory, never the directory itself:
# Snakemake deletes a job's outputs before running it, and raw runs must never be deleted.
# Inputs are ancient(): after a fresh clone and `dvc pull` mtimes are arbitrary, and a present
# marker means the calls were made — resume (`sealedeval run`) is how missing calls are added.
rule run:
    input:
        lock=ancient("rubric.lock"),
        suite_items=ancient("results/items/{suite}.parquet"),
    output:
        "results/raw/{suite}/{engine}/_run.json",
    log:
        "logs/run/{suite}.{engine}.log",
    conda:
        "../envs/sealedeval.yaml"
    resources:
        llm_server=llm_server_slots,
    params:
        config=CONFIG_ARGS,
    shell:
        "sealedeval run {wildcards.suite} --engine {wildcards.engine} {params.config} "
        "> {log} 2>&1"


# The same calls split into shards, one job each (suites with `shards: N`); on a cluster each
# shard is a SLURM job. Shards split by request key, so shard membership never changes.
rule run_shard:
    input:
        lock=ancient("rubric.lock"),
        suite_items=ancient("results/items/{suite}.parquet"),
    output:
        "results/raw/{suite}/{engine}/_run.{shard}.json",
    log:
        "logs/run/{suite}.{engine}.{shard}.log",
    conda:
        "../envs/sealedeval.yaml"
    wildcard_constraints:
        shard=r"\d+-of-\d+",
    resources:
        llm_server=llm_server_slots,
    params:
        config=CONFIG_ARGS,
        shard=shard_arg,
    shell:
        "sealedeval run {wildcards.suite} --engine {wildcards.engine} {params.shard} "
        "{params.config} > {log} 2>&1"
