"""The ``tasks`` suite kind: a suite defined entirely by a config section and a data file.

    suites:
      arith:
        kind: tasks
        items: data/arith/items.jsonl    # JSONL, CSV or Parquet: id, input, target, metadata
        prompt: "{input}"
        graders: [{name: exact}]
        engines: [local]

``plugins.suite_kinds`` names ``TasksSuite`` for ``kind: tasks``; the configured name is bound
to one instance per config section. See ``suite.py`` for what is sealed, ``plan.py`` for the
requests, ``grading.py`` and ``analysis.py`` for the rubric and the analysis plan, and
``docs/your-own-eval.md`` for a walk-through.
"""

from sealedeval.suites.tasks.suite import TasksSuite

__all__ = ["TasksSuite"]
