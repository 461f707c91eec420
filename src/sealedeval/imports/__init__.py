"""Readers of other harnesses' logs (Inspect AI, lm-eval, promptfoo): ``sealedeval import``.

A library above the stages, as ``run/`` is the dispatch library. An import reads a harness's
log, hashes its bytes, and writes one raw row per (sample, epoch) under
``results/raw/<suite>/<engine>/`` exactly like ``sealedeval run`` does, with a ledger entry of
``kind: "import"`` naming the source file, its sha256 and the harness version (written through
the ingest stage, ``stages.ingest``). The suite kind ``imported`` (``sealedeval.suites.imported``)
grades those rows from the harness's own scores and recomputes the harness's headline next to
ours.
"""
