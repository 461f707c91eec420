"""golden's presentation: its report.md section (``report``) and its figures (``figures``).

Not sealed: the suite's ``rubric_inputs`` cover ``suites/golden/*.py`` only, so changing how a
number is shown never changes the rubric hash. The sealed modules never import this package;
``GoldenSuite.report_sections`` and ``GoldenSuite.figures`` import it on call.
"""
