"""Import runs made by other harnesses (Inspect AI first) into the raw store.

An import reads a harness's log, hashes its bytes, and writes one raw row per (sample, epoch)
under ``results/raw/<suite>/<engine>/`` exactly like ``sealedeval run`` does, with a ledger entry
of ``kind: "import"`` naming the source file, its sha256 and the harness version. The suite kind
``imported`` (``sealedeval.imports.suite:ImportedSuite``) grades those rows from the harness's
own scores and recomputes the harness's headline next to ours.
"""
