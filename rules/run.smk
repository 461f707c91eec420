# Engine calls. The full log (the tqdm bar, retries, the error summary) goes to the log file;
# `--status-fd 3 3>&2` also sends a throttled one-line status (done/total, errors by kind, ETA;
# sealedeval/run/progress.py) to Snakemake's own stderr, so the terminal shows each run's
# progress, not only "k of n steps done".
#
# The output is a marker inside the raw directory, never the directory itself:
# Snakemake deletes a job's outputs before running it, and raw runs must never be deleted.
# The items file is the input that matters: a config edit that regenerates a suite's items
# reruns its run jobs, which resume (only calls not stored yet are made). After a fresh clone
# and `dvc pull` the items are generated again and the run jobs rerun as no-ops: every planned
# key is already answered, so no engine is started. The lock is ancient(): its mtime after a
# clone is arbitrary, and `run` checks the seal itself.
rule run:
    input:
        lock=ancient("rubric.lock"),
        suite_items="results/items/{suite}.parquet",
        after=run_after_markers,
    output:
        "results/raw/{suite}/{engine}/_run.json",
    log:
        "logs/run/{suite}.{engine}.log",
    resources:
        llm_server=llm_server_slots,
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
    shell:
        "sealedeval --log {log} run {wildcards.suite} --engine {wildcards.engine} {params.config} "
        "--status-fd 3 3>&2"


# The same calls split into shards, one job each (suites with `shards: N`); on a cluster each
# shard is a SLURM job. Shards split by request key, so shard membership never changes.
rule run_shard:
    input:
        lock=ancient("rubric.lock"),
        suite_items="results/items/{suite}.parquet",
        after=run_after_markers,
    output:
        "results/raw/{suite}/{engine}/_run.{shard}.json",
    log:
        "logs/run/{suite}.{engine}.{shard}.log",
    wildcard_constraints:
        shard=r"\d+-of-\d+",
    resources:
        llm_server=llm_server_slots,
    params:
        config=CONFIG_ARGS,
        suite_config=suite_config,
        shard=shard_arg,
    shell:
        "sealedeval --log {log} run {wildcards.suite} --engine {wildcards.engine} {params.shard} "
        "{params.config} --status-fd 3 3>&2"
