"""Built-in suites: each a folder with items, prompts, rubric, analysis plan and presentation.

The protocol and the registry live in ``sealedeval.plugins`` (not sealed).
"""
