"""The ``bloodpanel`` suite's pure core: cases, rubric, calculators, reference engine, prompts.

Blood-test interpretation (spec: ``bloodpanel.md``): does an engine read each panel on its own
terms — iron deficiency vs thalassaemia trait by the Mentzer index, Gilbert's syndrome not
called hepatitis, a normal screening panel not turned into pathology. Nothing here touches the
network, the CLI or the raw store; the suite adapter wires these functions in.

Modules: ``cases`` (schema, curated loader), ``synthetic`` (seeded 100k cohort), ``prompts``
(what an engine sees; leak check; answer parsing), ``rubric`` (the ``kantesti-v11`` and
``sealed`` profiles), ``matching`` + ``vocabulary`` (the sealed matching rule), ``calculators``
(Mentzer, FIB-4, HOMA-IR, De Ritis, CKD-EPI 2021/KDIGO, pooled cohort equations, EULAR/ACR and
SLICC), ``reference`` (the guideline-based reference engine, one module per organ system),
``compare`` (sealed vs V11 explanation), ``layout`` (the 7 sections and 16 subsections), ``sql``
(the SQL case loader), ``pdf`` (the laboratory-report PDF for engines that take one), ``plan``
(the pre-registered analysis plan) and ``suite`` (the Suite adapter; the registry loads
``suite`` from here). ``present`` (report section, figures, scorecards) is unsealed
presentation, loaded by the suite's hooks on first use.
"""

from sealedeval.suites.bloodpanel.calculators import (
    AscvdResult,
    SleClassification,
    SliccCount,
    ascvd_pce,
    de_ritis_ratio,
    egfr_ckd_epi_2021,
    fib4,
    fib4_band,
    homa_ir,
    kdigo_a_stage,
    kdigo_g_stage,
    mentzer_index,
    sle_eular_acr_2019,
    slicc_2012_lab,
)
from sealedeval.suites.bloodpanel.cases import (
    SPECIALTIES,
    Case,
    PanelRow,
    load_curated,
    make_row,
    parse_reference,
)
from sealedeval.suites.bloodpanel.compare import sealed_vs_v11_markdown, write_sealed_vs_v11
from sealedeval.suites.bloodpanel.layout import LAYOUT, SECTION_CODES, SUBSECTION_CODES
from sealedeval.suites.bloodpanel.matching import Document, Polarity, normalize, polarities
from sealedeval.suites.bloodpanel.prompts import (
    REPORT_JSON_SCHEMA,
    SYSTEM,
    leak_check,
    messages,
    parse_report,
    response_format,
)
from sealedeval.suites.bloodpanel.reference import findings, reference_report
from sealedeval.suites.bloodpanel.rubric import (
    GRADER_VERSION,
    PROFILES,
    CaseScore,
    Profile,
    aggregate,
    default_curated_path,
    grade_case,
    grader_name,
    normalize_response,
    regrade_kantesti,
    sealed_differential,
)
from sealedeval.suites.bloodpanel.synthetic import (
    ARCHETYPES,
    LABEL_COUNTS,
    SPECIALTY_COUNTS,
    allocate,
    largest_remainder,
    synthetic_cases,
)

__all__ = [
    "ARCHETYPES",
    "GRADER_VERSION",
    "LABEL_COUNTS",
    "LAYOUT",
    "PROFILES",
    "REPORT_JSON_SCHEMA",
    "SECTION_CODES",
    "SPECIALTIES",
    "SPECIALTY_COUNTS",
    "SUBSECTION_CODES",
    "SYSTEM",
    "AscvdResult",
    "BloodpanelSuite",
    "Case",
    "CaseScore",
    "Document",
    "PanelRow",
    "Polarity",
    "Profile",
    "SleClassification",
    "SliccCount",
    "aggregate",
    "allocate",
    "ascvd_pce",
    "de_ritis_ratio",
    "default_curated_path",
    "egfr_ckd_epi_2021",
    "fib4",
    "fib4_band",
    "findings",
    "grade_case",
    "grader_name",
    "homa_ir",
    "kdigo_a_stage",
    "kdigo_g_stage",
    "largest_remainder",
    "leak_check",
    "load_curated",
    "make_row",
    "mentzer_index",
    "messages",
    "normalize",
    "normalize_response",
    "parse_reference",
    "parse_report",
    "polarities",
    "reference_report",
    "regrade_kantesti",
    "response_format",
    "sealed_differential",
    "sealed_vs_v11_markdown",
    "sle_eular_acr_2019",
    "slicc_2012_lab",
    "suite",
    "synthetic_cases",
    "write_sealed_vs_v11",
]

# The Suite adapter (``plugins`` loads ``suite`` from here), last so the core above loads first.
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite, suite
