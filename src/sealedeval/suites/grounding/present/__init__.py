"""grounding presentation: its report.md section (:mod:`.report`) and figures (:mod:`.figures`).

Both read only the suite's result.json section. Not sealed (``GroundingSuite.rubric_inputs``
leaves this folder out) and imported only when a report is built, by the suite's
``report_sections`` and ``figures`` hooks.
"""
