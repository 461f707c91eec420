"""The ``golden`` suite: our own hand-written tasks over five files, graded several ways.

Modules: :mod:`.items` (the tasks, files and probe sets), :mod:`.prompts`, :mod:`.design` (the
branches and their requests), :mod:`.judging` (the judge measurements), :mod:`.probing`
(injection, attribute swap, contamination), :mod:`.rubric` (graded rows), :mod:`.plan` (the
sealed analysis plan) and :mod:`.suite` (``GoldenSuite``; its instance ``suite`` is what the
registry names ``golden``); the report section and figures in :mod:`.present` (not sealed).
"""

from sealedeval.suites.golden.suite import GoldenSuite

__all__ = ["GoldenSuite"]
