"""The report layout an engine must return: 7 sections, 16 subsections, V11 shortcodes.

One table shared by the rubric (what is counted), the prompt and JSON Schema (what is asked
for) and the reference interpreter (what it writes), so the three cannot drift apart. Titles are
the ones the published V11 engine printed.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

LAYOUT: Final[tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]] = (
    (
        "introduction",
        "Introduction",
        (
            ("introduction_summary", "General Summary of Blood Test"),
            ("introduction_purpose", "Purpose and Importance of the Analysis"),
        ),
    ),
    (
        "overall_health_assessment",
        "Overall Health Assessment",
        (
            (
                "overall_health_assessment_overview",
                "Comprehensive Overview of Patient's Health Status",
            ),
            ("overall_health_assessment_key_findings", "Key Findings and Their Implications"),
        ),
    ),
    (
        "detailed_health_analysis",
        "Detailed Health Analysis",
        (
            (
                "detailed_health_analysis_trends_parameters",
                "Analysis of Health Trends and Patterns",
            ),
            (
                "detailed_health_analysis_correlations",
                "Correlations Between Different Test Results",
            ),
        ),
    ),
    (
        "risk_factors",
        "Risk Factors",
        (
            ("risk_factors_identification", "Identification of Potential Health Risks"),
            ("risk_factors_severity_probabilities", "Analysis of Risk Severity and Probabilities"),
            ("risk_factors_probabilities_of_diseases", "Probabilities of Diseases"),
            ("risk_factors_explanations_percentiles", "Explanations of Percentiles"),
        ),
    ),
    (
        "recommendations",
        "Recommendations",
        (
            ("recommendations_medical", "Medical Recommendations Based on Test Results"),
            ("recommendations_lifestyle_dietary", "Lifestyle and Dietary Suggestions"),
        ),
    ),
    (
        "further_evaluation",
        "Further Evaluation",
        (
            ("further_evaluation_follow_up", "Suggested Follow-up Tests and Procedures"),
            ("further_evaluation_referral", "Referral to Specialists if Necessary"),
        ),
    ),
    (
        "conclusion",
        "Conclusion",
        (
            ("conclusion_summary", "Summary of Findings"),
            ("conclusion_final_recommendations", "Final Recommendations and Next Steps"),
        ),
    ),
)

SECTION_CODES: Final = tuple(code for code, _, _ in LAYOUT)
"""The 7 required section shortcodes, in report order."""

SUBSECTION_CODES: Final = tuple(sub for _, _, subs in LAYOUT for sub, _ in subs)
"""The 16 required subsection shortcodes (the V11 list), in report order."""

SECTION_TITLES: Final = MappingProxyType({code: title for code, title, _ in LAYOUT})
SUBSECTION_TITLES: Final = MappingProxyType({sub: t for _, _, subs in LAYOUT for sub, t in subs})
SUBSECTION_PARENT: Final = MappingProxyType(
    {sub: code for code, _, subs in LAYOUT for sub, _ in subs}
)

DIFFERENTIAL_SUBSECTION: Final = "risk_factors_probabilities_of_diseases"
"""Where V11 reads the differential's percentages from."""
