# Helpers shared by the rule files. Config files are passed to the CLI in the order Snakemake
# merged them (the Snakefile's default first, then --configfile ones), so the CLI sees exactly
# the config this workflow was validated against.
import shlex
from pathlib import Path

from sealedeval.config import Config
from sealedeval.stages.pipeline import suite_config_sha256

CONFIG_ARGS = " ".join(f"-c {shlex.quote(f)}" for f in CONFIG_FILES)
SUITES = enabled_suites(config)


def suite_engines(suite):
    return list(config["suites"][suite]["engines"])


def shard_tags(suite):
    """One run job per shard: `shards: N` in a suite's config splits its requests by key."""
    n = int(config["suites"][suite].get("shards", 1))
    return ["all"] if n <= 1 else [f"{i}-of-{n}" for i in range(n)]


def _markers(suite):
    return [
        f"results/raw/{suite}/{e}/_run.json" if tag == "all" else
        f"results/raw/{suite}/{e}/_run.{tag}.json"
        for e in suite_engines(suite) for tag in shard_tags(suite)
    ]


def run_markers(wildcards):
    return _markers(wildcards.suite)


def all_run_markers(wildcards):
    return [m for s in SUITES for m in _markers(s)]


def llm_server_slots(wildcards):
    """The embedded model serves one request at a time: one local run job at a time."""
    return 1 if config["engines"][wildcards.engine]["kind"] == "local" else 0


def shard_arg(wildcards):
    i, n = wildcards.shard.split("-of-")
    return f"--shard {i}/{n}"


def suite_config(wildcards):
    """The hash of what a suite's jobs depend on in the merged config (its own section, the
    project seed, the engines it names): a param of every rule of that suite, so a config edit
    reruns exactly the suite's jobs it affects (Snakemake's params rerun trigger)."""
    return suite_config_sha256(Config(Path("."), config, ()), wildcards.suite)


def all_suite_configs(wildcards=None):
    return ",".join(f"{s}={suite_config_sha256(Config(Path('.'), config, ()), s)}" for s in SUITES)


def run_after_markers(wildcards):
    """Markers of the engines this engine's run must follow (a judge grades their answers:
    the suite's optional ``run_after`` hook names them)."""
    from sealedeval.plugins import get_suite, hook

    fn = hook(get_suite(wildcards.suite, CFG), "run_after")
    after = fn(wildcards.engine) if fn else []
    return [m for m in _markers(wildcards.suite) if Path(m).parent.name in after]
