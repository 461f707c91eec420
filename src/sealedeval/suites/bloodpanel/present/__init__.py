"""The bloodpanel suite's presentation: its report.md section, figures and CSV scorecards.

Not sealed (the suite's ``rubric_inputs`` leave this package out): everything here lays out the
numbers of the suite's result.json section (or, for the scorecards, its graded rows) and
computes none, so rewording a table or recolouring a figure changes no rubric hash. The suite's
hooks (``report_sections``, ``figures``, ``scorecards``) import it on first use only: a run or a
grade never loads it.
"""

from sealedeval.suites.bloodpanel.present.figures import figure_specs
from sealedeval.suites.bloodpanel.present.report import render
from sealedeval.suites.bloodpanel.present.scorecard import scorecards

__all__ = ["figure_specs", "render", "scorecards"]
