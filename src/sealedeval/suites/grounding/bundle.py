"""The whole grounding suite as one immutable bundle, and one entry point per request.

:func:`build_suite` generates everything from the corpus seed (corpus, catalog, 40 items, B1
probes, B2 catalog and questions, B4 chains) and verifies it. :func:`render_request` turns one
:class:`~sealedeval.suites.grounding.design.RequestSpec` into chat messages,
:func:`response_format_for` gives its JSON-schema ``response_format`` and :func:`score_response`
grades one raw output. All three are pure: calls that depend on an earlier call (B2 ``own_pick``,
B4 rounds 2–3) receive the earlier raw outputs through ``prior``, keyed by request id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from sealedeval.suites.grounding.catalog import Catalog, build_catalog
from sealedeval.suites.grounding.conditions import (
    CONDITIONS,
    QUESTION_HEADING,
    ChatMessage,
    Condition,
    render_messages,
)
from sealedeval.suites.grounding.contract import (
    ANSWER_INSTRUCTION,
    ANSWER_SCHEMA,
    extract_json_object,
    parse_answer,
    response_format,
    score_item,
)
from sealedeval.suites.grounding.corpus import CORPUS_SEED, Corpus, build_corpus
from sealedeval.suites.grounding.design import RequestSpec
from sealedeval.suites.grounding.items import Item, build_items, leak_check
from sealedeval.suites.grounding.tracks import b1_gaps, b2_assembly, b3_disclosure, b4_chains

__all__ = [
    "GroundingData",
    "build_suite",
    "leak_check_calls",
    "render_request",
    "response_format_for",
    "score_response",
]


@dataclass(frozen=True)
class GroundingData:
    """Everything generated from one corpus seed."""

    corpus: Corpus
    catalog: Catalog
    items: tuple[Item, ...]
    b1_probes: tuple[b1_gaps.GapProbe, ...]
    b2_records: tuple[b2_assembly.WideRecord, ...]
    b2_questions: tuple[b2_assembly.B2Question, ...]
    chains: tuple[b4_chains.Chain, ...]

    def item(self, item_id: str) -> Item:
        """The track-A item with this id."""
        return next(i for i in self.items if i.item_id == item_id)

    def probe(self, probe_id: str) -> b1_gaps.GapProbe:
        """The B1 probe with this id."""
        return next(p for p in self.b1_probes if p.probe_id == probe_id)

    def b2_question(self, question_id: str) -> b2_assembly.B2Question:
        """The B2 question with this id."""
        return next(q for q in self.b2_questions if q.question_id == question_id)

    def chain(self, chain_id: str) -> b4_chains.Chain:
        """The B4 chain with this id."""
        return next(c for c in self.chains if c.chain_id == chain_id)


@lru_cache(maxsize=4)
def build_suite(seed: int = CORPUS_SEED) -> GroundingData:
    """Generate and verify the suite; every track-A prompt is leak-checked.

    Raises:
        ValueError: A generation constraint, a separation check, a B1/B2/B4 verification or
            the leak check failed (the message names the row, item or probe).
    """
    corpus = build_corpus(seed)
    catalog = build_catalog()
    items = build_items(corpus, catalog)
    suite = GroundingData(
        corpus=corpus,
        catalog=catalog,
        items=items,
        b1_probes=b1_gaps.build_b1_probes(corpus, catalog),
        b2_records=b2_assembly.build_wide_catalog(catalog),
        b2_questions=b2_assembly.build_b2_questions(corpus, catalog),
        chains=b4_chains.build_chains(corpus, catalog),
    )
    for item in items:
        for condition in CONDITIONS:
            problems = leak_check(
                item,
                render_messages(
                    item.question,
                    condition,
                    corpus=corpus,
                    catalog=catalog,
                    instruction=ANSWER_INSTRUCTION,
                ),
            )
            if problems:
                raise ValueError(problems[0])
    return suite


def _prior(prior: Mapping[str, str] | None, key: str | None) -> str:
    if key is None or prior is None or key not in prior:
        raise ValueError(f"missing prior output {key!r}")
    return prior[key]


def render_request(
    suite: GroundingData, spec: RequestSpec, prior: Mapping[str, str] | None = None
) -> list[ChatMessage]:
    """Chat messages of one request.

    Args:
        suite: The generated suite.
        spec: The request.
        prior: Raw outputs of earlier calls by request id (needed by B2 ``own_pick`` and B4
            rounds 2–3; see ``RequestSpec.depends_on``).

    Raises:
        ValueError: Unknown track/condition, or a needed prior output is missing.
    """
    if spec.track == "A":
        item = suite.item(spec.item_id)
        return render_messages(
            item.question,
            cast(Condition, spec.condition),
            corpus=suite.corpus,
            catalog=suite.catalog,
            instruction=ANSWER_INSTRUCTION,
        )
    if spec.track == "B1":
        return b1_gaps.render_b1(
            suite.probe(spec.item_id),
            cast(b1_gaps.B1Condition, spec.condition),
            corpus=suite.corpus,
            catalog=suite.catalog,
        )
    if spec.track == "B2":
        question = suite.b2_question(spec.item_id)
        if spec.condition == "select":
            return b2_assembly.render_b2_select(question, suite.b2_records)
        pick: tuple[Any, ...] = ()
        if spec.condition == "own_pick":
            raw = _prior(prior, spec.depends_on)
            pick = b2_assembly.parse_selection(raw, suite.b2_records)[1]
        messages, _ = b2_assembly.render_b2_answer(
            question,
            cast(b2_assembly.Assembly, spec.condition),
            corpus=suite.corpus,
            records=suite.b2_records,
            own_pick=pick,
        )
        return messages
    if spec.track == "B3":
        return b3_disclosure.render_b3(
            cast(b3_disclosure.B3Condition, spec.condition),
            cast(b3_disclosure.Requester, spec.item_id),
        )
    if spec.track == "B4":
        chain = suite.chain(spec.item_id)
        if spec.condition == "round1":
            return b4_chains.render_coordinator_request(
                chain, corpus=suite.corpus, catalog=suite.catalog
            )
        r1 = b4_chains.parse_request(_prior(prior, spec.sibling("round1").request_id))
        owner = b4_chains.route_owner(chain, r1, suite.catalog)
        if spec.condition == "round2":
            return b4_chains.render_owner(chain, owner, r1, catalog=suite.catalog)
        if spec.condition == "round3":
            reply = _prior(prior, spec.sibling("round2").request_id)
            return b4_chains.render_coordinator_record(
                chain, r1, owner, reply, corpus=suite.corpus, catalog=suite.catalog
            )
    raise ValueError(f"unknown request {spec.request_id}")


def response_format_for(spec: RequestSpec) -> dict[str, Any]:
    """The ``response_format`` (JSON schema) constraining the output of ``spec``."""
    schema: dict[str, Any] = ANSWER_SCHEMA
    if spec.track == "B1":
        schema = b1_gaps.B1_SCHEMA
    elif spec.track == "B2" and spec.condition == "select":
        schema = b2_assembly.B2_SELECT_SCHEMA
    elif spec.track == "B3":
        schema = b3_disclosure.B3_SCHEMA
    elif spec.track == "B4":
        schema = {
            "round1": b4_chains.REQUEST_SCHEMA,
            "round2": b4_chains.OWNER_SCHEMA,
            "round3": b4_chains.RECORD_SCHEMA,
        }[spec.condition]
    name = f"grounding_{spec.track.lower()}_{spec.condition.lower()}"
    return response_format(schema, name=name)


def score_response(
    suite: GroundingData, spec: RequestSpec, output: str, prior: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Grade one raw output with the metrics of its track.

    B4 rounds 1–2 return only parse status; the chain metrics are computed at round 3 from all
    three outputs (passed through ``prior``).
    """
    base: dict[str, Any] = {
        "request_id": spec.request_id,
        "track": spec.track,
        "condition": spec.condition,
        "replicate": spec.replicate,
        "model_role": spec.model_role,
    }
    if spec.track == "A":
        return base | score_item(suite.item(spec.item_id), parse_answer(output))
    if spec.track == "B1":
        return base | b1_gaps.score_b1(suite.probe(spec.item_id), b1_gaps.parse_b1(output))
    if spec.track == "B2":
        question = suite.b2_question(spec.item_id)
        if spec.condition == "select":
            return base | b2_assembly.score_b2_selection(
                question, b2_assembly.parse_selection(output, suite.b2_records)
            )
        pick: tuple[Any, ...] = ()
        if spec.condition == "own_pick":
            pick = b2_assembly.parse_selection(_prior(prior, spec.depends_on), suite.b2_records)[1]
        _, size = b2_assembly.render_b2_answer(
            question,
            cast(b2_assembly.Assembly, spec.condition),
            corpus=suite.corpus,
            records=suite.b2_records,
            own_pick=pick,
        )
        return base | b2_assembly.score_b2_answer(
            question, cast(b2_assembly.Assembly, spec.condition), parse_answer(output), size
        )
    if spec.track == "B3":
        requester = cast(b3_disclosure.Requester, spec.item_id)
        return base | b3_disclosure.score_b3(requester, b3_disclosure.parse_b3(output))
    if spec.track == "B4":
        if spec.condition != "round3":
            return base | {"parse_ok": extract_json_object(output).ok}
        chain = suite.chain(spec.item_id)
        r1 = b4_chains.parse_request(_prior(prior, spec.sibling("round1").request_id))
        owner = b4_chains.route_owner(chain, r1, suite.catalog)
        reply = b4_chains.parse_owner_reply(_prior(prior, spec.sibling("round2").request_id))
        return base | b4_chains.score_chain(
            chain, r1, owner, reply, b4_chains.parse_record(output), catalog=suite.catalog
        )
    raise ValueError(f"unknown request {spec.request_id}")


def _leaks_value(tail: str, value: float) -> bool:
    forms = {f"{value:.2f}"}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value):,}"}
    return any(
        re.search(rf"(?<![\w.,-]){re.escape(f)}(?![\w]|[.,]\d)", tail) is not None for f in forms
    )


def leak_check_calls(suite: GroundingData, specs: Iterable[RequestSpec]) -> list[str]:
    """Leaks in the first-call prompts of tracks B1-B4 (track A is checked by
    :func:`build_suite`): the probe, question or chain id anywhere in the prompt, or the
    reference value in the question block. Calls that need an earlier reply are rendered
    from replies, not from grader data, and are not checked here.

    Returns:
        One message per leak; empty when clean.
    """
    problems: list[str] = []
    for spec in specs:
        if spec.track in ("A", "B3") or spec.depends_on is not None:
            continue
        text = "\n".join(m["content"] for m in render_request(suite, spec))
        tail = text.rsplit(QUESTION_HEADING, 1)[-1]
        if spec.item_id in text:
            problems.append(f"{spec.request_id}: prompt contains the id {spec.item_id}")
        value: float | None = None
        if spec.track == "B1":
            value = suite.probe(spec.item_id).reference_value
        elif spec.track == "B2":
            value = suite.b2_question(spec.item_id).reference_value
        elif spec.track == "B4":
            value = suite.chain(spec.item_id).reference_value
        if value is not None and _leaks_value(tail, value):
            problems.append(f"{spec.request_id}: question block contains the reference value")
    return problems
