"""A deterministic, guideline-based interpreter: the suite's reference engine.

``reference_report(case)`` reads only the panel (values, units, reference ranges), age and sex —
never the answer key (``expected_keywords``, ``trap_flags``, ``archetype``, ``title``) — and writes
the full report in the keyed JSON shape of ``prompts.REPORT_JSON_SCHEMA``: 7 sections, the 16
V11 subsections, and a ``differential`` whose integer probabilities sum to 100.

Why it exists: it is the ceiling the rubric must allow (a correct report should score ~1.0 under
the sealed profile, or the rubric is miscalibrated), it exercises every calculator on every
case, and it is the engine for offline end-to-end runs. Every threshold a rule applies is a named
constant in its module, with its source (or a note that the code and the spec give none);
findings are derived from values, so changing the panel changes the conclusion (raise BT-001's
RBC to 6.0 and the Mentzer index falls below 13: thalassaemia trait enters the differential).

Wording rules that keep a correct report from being graded as wrong: a diagnosis the panel does
not support is never named in the affirmative (only as a differential under 10 %, or after a
negation cue); an expected finding is stated before any negation in its clause.

Modules, one per organ system, each a set of rules ``detect(panel) -> [Finding]``:
``haematology`` (microcytosis, macrocytosis, anaemia of inflammation), ``endocrine`` (thyroid,
PCOS), ``metabolic`` (glycaemia, metabolic syndrome), ``liver`` (hepatitis, alcohol-related and
fatty liver disease, Gilbert's), ``kidney`` (CKD by KDIGO), ``lipids`` (dyslipidaemia, ASCVD
risk), ``bone`` (vitamin D), ``rheumatology`` (urate, SLE, RA), ``muscle`` (exercise CK) and
``screening`` (a normal panel); ``panel`` holds what they share, and ``report`` runs them in
order (``DETECTORS``) and writes the report.
"""

from sealedeval.suites.bloodpanel.reference.panel import Finding
from sealedeval.suites.bloodpanel.reference.report import DETECTORS, findings, reference_report

REFERENCE_VERSION = "1"

__all__ = ["DETECTORS", "REFERENCE_VERSION", "Finding", "findings", "reference_report"]
