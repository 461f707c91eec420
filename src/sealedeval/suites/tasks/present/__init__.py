"""Presentation of a ``tasks`` suite's result.json section (not sealed: the suite's
``rubric_inputs`` cover ``suites/tasks/*.py`` only, so a change of layout is not a seal event).
Figures and scorecards are publish's defaults (one figure per metric, one CSV row per graded
row)."""
