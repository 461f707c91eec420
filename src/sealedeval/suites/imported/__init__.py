"""The ``imported`` suite kind: grades the rows imported from another harness's log.

Its rows come from ``sealedeval import`` (the readers in ``sealedeval.imports``, writing through
``stages.ingest``); this suite grades them from the harness's own scores, re-derives the
harness's headline beside ours (``scores``, ``aggregations``) and presents the comparison
(``present``). Like every suite it owns its config schema and its presentation.
"""
