"""The Python API: run a sealed suite from Python, read what a build published as DataFrames.

- ``eval(suite, engines, root=..., config=...)``: what ``sealedeval run SUITE`` does (the same
  ``stages.run.run_suite``: seal check, resume, raw parts, ledger entry), engine by engine,
  returning an ``EvalResult`` instead of printing.
- ``samples_df(source)``: one row per graded row (``results/graded/*.parquet``).
- ``metrics_df(source)``: one row per ``stats.metrics.Metric`` of every suite in result.json.
- ``comparisons_df(source)``: one row per ``stats.comparisons.Comparison`` record in result.json.

``source`` is a project directory (``results/``) or a deposit bundle directory (what
``sealedeval bundle`` writes under ``results/deposit/bundle/``: flat names beside
SHA256SUMS). The readers compute nothing: every number is read from the files, so it is the
published one. Like the audit and the CLI this package sits on top of every stage.
"""

from sealedeval.api._results import comparisons_df, metrics_df, samples_df
from sealedeval.api._run import EngineRun, EvalResult, eval

__all__ = ["EngineRun", "EvalResult", "comparisons_df", "eval", "metrics_df", "samples_df"]
