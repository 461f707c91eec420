"""Suite ``grounding``: Semantic Grounding Benchmark v2 (seed 001).

Does an agent answering a quantitative question about an organisation apply the definition the
organisation holds on that date, and does it gain more from structured, versioned definition
records than from prose with the same content? Everything here is pure and deterministic:
generation from a fixed seed, rendering of every call, and per-response scoring. Engines, the
dispatcher and the raw store live elsewhere.

Modules: :mod:`.corpus` (Meridian Supply Co data), :mod:`.catalog` (definitions and their
reference implementations), :mod:`.conditions` (A, B, E, C, F, D), :mod:`.items` (the 40
items), :mod:`.contract` (answer contract and track-A metrics), :mod:`.tracks` (B1–B4),
:mod:`.reference` (reference and naive engines), :mod:`.design` (the call design),
:mod:`.plan` (the sealed analysis plan), :mod:`.bundle` (bundle and per-call dispatch),
:mod:`.requests` (calls → harness requests), :mod:`.rubric` (graded rows), :mod:`.analysis`
(the plan, executed) and :mod:`.suite` (``GroundingSuite``, registered as ``grounding``).
The multi-call solvers live in :mod:`.solvers` and register on import below; the report
section and figures in :mod:`.present` (not sealed, imported only by the presentation hooks).
"""

from sealedeval.suites.grounding.bundle import (
    GroundingData,
    build_suite,
    render_request,
    response_format_for,
    score_response,
)
from sealedeval.suites.grounding.catalog import Catalog, Definition, DefRef, Query, build_catalog
from sealedeval.suites.grounding.conditions import (
    CONDITIONS,
    ChatMessage,
    Condition,
    context_block,
    render_messages,
)
from sealedeval.suites.grounding.contract import (
    ANSWER_SCHEMA,
    Answer,
    parse_answer,
    response_format,
    score_item,
)
from sealedeval.suites.grounding.corpus import CORPUS_SEED, Corpus, build_corpus, validate_corpus
from sealedeval.suites.grounding.design import Design, RequestSpec, build_design, estimate_seconds
from sealedeval.suites.grounding.items import Item, build_items, leak_check
from sealedeval.suites.grounding.plan import PLAN, plan_json
from sealedeval.suites.grounding.reference import naive_answer, oracle_answer, reference_answer
from sealedeval.suites.grounding.suite import GroundingSuite

__all__ = [
    "ANSWER_SCHEMA",
    "CONDITIONS",
    "CORPUS_SEED",
    "PLAN",
    "Answer",
    "Catalog",
    "ChatMessage",
    "Condition",
    "Corpus",
    "DefRef",
    "Definition",
    "Design",
    "GroundingData",
    "GroundingSuite",
    "Item",
    "Query",
    "RequestSpec",
    "build_catalog",
    "build_corpus",
    "build_design",
    "build_items",
    "build_suite",
    "context_block",
    "estimate_seconds",
    "leak_check",
    "naive_answer",
    "oracle_answer",
    "parse_answer",
    "plan_json",
    "reference_answer",
    "render_messages",
    "render_request",
    "response_format",
    "response_format_for",
    "score_item",
    "score_response",
    "validate_corpus",
]


# The B2 and B4 requests name the select-then-answer and multi-agent-chain solvers; importing
# the module registers them wherever the suite registry is loaded.
from sealedeval.suites.grounding import solvers as _solvers

del _solvers
