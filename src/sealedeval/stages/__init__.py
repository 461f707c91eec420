"""The stages between the engine calls and publish, each a pure function plus an artifact.

generate → ``results/items/S.parquet`` → run → raw → grade → ``results/graded/S.parquet`` →
analyze → ``results/analysis/S.json`` → publish. Snakemake chains exactly these files; the audit
calls the same functions in memory and compares what they give with what is on disk. ``grade``
and ``analyze`` are sealed with every suite (``seal.lock.ANALYSIS_INPUTS``); the artifact I/O in
``artifacts`` is not (a file format is not a rubric).
"""
