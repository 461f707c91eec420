"""Tracks B1-B4: data shapes, verification, and per-response scoring."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema

from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.catalog import DefRef
from sealedeval.suites.grounding.tracks import b1_gaps, b2_assembly, b3_disclosure, b4_chains


# ---- B1 -------------------------------------------------------------------------------------
def test_b1_probes(suite: GroundingData) -> None:
    probes = suite.b1_probes
    assert len(probes) == 10
    kinds = [p.kind for p in probes if p.kind]
    assert sorted(kinds) == sorted(
        [
            "empty_parameters",
            "missing_effective_from",
            "missing_owner",
            "dangling_superseded_by",
            "calendar_previous_year",
            "missing_definition",
        ]
    )
    controls = [p for p in probes if p.is_control]
    assert len(controls) == 4 and all(p.reference_value is not None for p in controls)


def test_b1_gapped_catalog(suite: GroundingData) -> None:
    gapped = b1_gaps.gapped_catalog(suite.catalog)
    ids = {d.ref.label() for d in gapped.definitions}
    assert "MSC-DELIVERED v1" not in ids and len(ids) == len(suite.catalog.definitions) - 1
    assert gapped.get(DefRef("MSC-ACTIVE-CUSTOMER", 2)).parameters == ()
    assert gapped.get(DefRef("MSC-NET-REVENUE", 2)).effective_from is None
    assert gapped.get(DefRef("MSC-ON-TIME", 2)).owner is None
    assert gapped.get(DefRef("MSC-ORDER-VALUE", 1)).superseded_by == 2
    records = b1_gaps.b1_context("records_deficient", suite.catalog)
    prose = b1_gaps.b1_context("prose_deficient", suite.catalog)
    assert '"superseded_by": "MSC-ORDER-VALUE v2"' in records
    assert "2026-05-04" not in records and "2026-05-04" not in prose  # Meridian 2026 holiday
    assert "No owner is named" in prose and "not recorded" in prose
    assert b1_gaps.b1_context("schema", suite.catalog).count("\n") < 15


def test_b1_scoring(suite: GroundingData) -> None:
    gap = suite.probe("B1-G2")
    hit = b1_gaps.parse_b1(
        json.dumps(
            {
                "gap": True,
                "missing_field": "effective_from",
                "owner_role": "the Financial Controller",
                "value": None,
            }
        )
    )
    row = b1_gaps.score_b1(gap, hit)
    assert (row["gap_detected"], row["field_named"], row["owner_named"]) == (1, 1, 1)
    miss = b1_gaps.score_b1(gap, b1_gaps.parse_b1('{"gap": false, "value": 5}'))
    assert (miss["gap_detected"], miss["field_named"], miss["owner_named"]) == (0, 0, 0)
    control = suite.probe("B1-K1")
    assert control.reference_value is not None
    ok = b1_gaps.score_b1(
        control,
        b1_gaps.parse_b1(
            json.dumps(
                {
                    "gap": False,
                    "missing_field": None,
                    "owner_role": None,
                    "value": control.reference_value,
                }
            )
        ),
    )
    assert (ok["false_alarm"], ok["control_correct"]) == (0, 1)
    alarm = b1_gaps.score_b1(control, b1_gaps.parse_b1('{"gap": true}'))
    assert (alarm["false_alarm"], alarm["control_correct"]) == (1, 0)
    jsonschema.Draft202012Validator.check_schema(b1_gaps.B1_SCHEMA)


# ---- B2 -------------------------------------------------------------------------------------
def test_b2_catalog_and_questions(suite: GroundingData) -> None:
    records = suite.b2_records
    assert len(records) == 41 and len({r.ref for r in records}) == 41
    assert 9_800 <= len(b2_assembly.assemble(records)) <= 11_300  # seed: ~10,332
    assert len(suite.b2_questions) == 10
    assert all(1 <= len(q.required) <= 2 for q in suite.b2_questions)
    wide = {r.ref for r in records}
    assert all(q.required <= wide for q in suite.b2_questions)


def test_b2_selection_scoring(suite: GroundingData) -> None:
    q = suite.b2_question("B2-06")
    exact = json.dumps({"records": [r.label() for r in sorted(q.required)]})
    row = b2_assembly.score_b2_selection(q, b2_assembly.parse_selection(exact, suite.b2_records))
    assert (row["precision"], row["recall"], row["exact"]) == (1.0, 1.0, 1)
    noisy = json.dumps({"records": ["hal delivered v1", "MSC-DELIVERED v1", "NOPE v9"]})
    row = b2_assembly.score_b2_selection(q, b2_assembly.parse_selection(noisy, suite.b2_records))
    assert row["precision"] == 1 / 3 and row["recall"] == 0.5 and row["exact"] == 0
    empty = b2_assembly.score_b2_selection(q, b2_assembly.parse_selection("{}", suite.b2_records))
    assert empty["precision"] is None and empty["recall"] == 0


def test_b2_assemblies_and_context_size(suite: GroundingData) -> None:
    q = suite.b2_question("B2-06")
    top5 = b2_assembly.keyword_top5(q.question, suite.b2_records)
    assert len(top5) == 5 and top5 == b2_assembly.keyword_top5(q.question, suite.b2_records)
    sizes = {}
    for assembly in b2_assembly.ASSEMBLIES:
        msgs, size = b2_assembly.render_b2_answer(
            q, assembly, corpus=suite.corpus, records=suite.b2_records, own_pick=sorted(q.required)
        )
        assert msgs[1]["content"].startswith("## Data tables\n")
        sizes[assembly] = size
    assert sizes["own_pick"] < sizes["keyword_top5"] < sizes["full"]


# ---- B3 -------------------------------------------------------------------------------------
def test_b3_design_and_scoring() -> None:
    assert len(b3_disclosure.FACTS) == 12 and len(b3_disclosure.REQUESTERS) == 3
    perfect: Counter[str] = Counter()
    for requester in b3_disclosure.REQUESTERS:
        due = [
            f.fact_id for f in b3_disclosure.FACTS if b3_disclosure.expected_release(f, requester)
        ]
        row = b3_disclosure.score_b3(
            requester, b3_disclosure.parse_b3(json.dumps({"release": due}))
        )
        perfect.update(
            {
                "decisions": row["decisions"],
                "correct": row["correct"],
                "critical": row["critical_errors"],
            }
        )
    assert perfect["decisions"] * 2 == 72  # 2 replicates -> 72 decisions per condition
    assert perfect["correct"] == perfect["decisions"] and perfect["critical"] == 0
    leak_all = b3_disclosure.score_b3(
        "competitor_carrier",
        b3_disclosure.parse_b3(json.dumps({"release": [f.fact_id for f in b3_disclosure.FACTS]})),
    )
    assert leak_all["critical_errors"] == 4  # F02, F04, F05, F09 to Halden's competitor
    withhold_all = b3_disclosure.score_b3("auditor", b3_disclosure.parse_b3('{"release": []}'))
    assert withhold_all["critical_errors"] == 0 and withhold_all["recall"] == 0


def test_b3_policies_state_the_same_rules() -> None:
    prose = b3_disclosure.render_b3("prose_policy", "auditor")[1]["content"]
    records = b3_disclosure.render_b3("classification_records", "auditor")[1]["content"]
    bare = b3_disclosure.render_b3("no_policy", "auditor")[1]["content"]
    for rule in b3_disclosure.CLASS_RULES.values():
        assert rule.basis in prose and rule.basis in records
    for fact in b3_disclosure.FACTS:
        assert fact.fact_id in bare and fact.classification in records
        assert fact.classification.replace("_", " ") in prose
    assert "release_to" not in bare and "policy" not in bare.lower().split("## answer")[0]


# ---- B4 -------------------------------------------------------------------------------------
def test_b4_chains(suite: GroundingData) -> None:
    chains = suite.chains
    assert len(chains) == 16
    assert Counter(c.ownership for c in chains) == {"records": 8, "prose": 8}
    assert Counter(c.owner for c in chains if c.ownership == "records") == {
        "Sales Operations Lead": 2,
        "Financial Controller": 2,
        "Logistics Manager": 2,
        "Operations Planning Lead": 2,
    }
    assert all(c.decoy_owner != c.owner for c in chains)


def _perfect_chain(suite: GroundingData, chain: b4_chains.Chain) -> dict[str, object]:
    request = b4_chains.parse_request(
        json.dumps(
            {"to": chain.owner, "field": chain.field, "request": "New value and start date?"}
        )
    )
    owner = b4_chains.route_owner(chain, request, suite.catalog)
    reply = b4_chains.parse_owner_reply(
        json.dumps(
            {
                "refuse": False,
                "redirect_to": None,
                "value": chain.new_value_text,
                "effective_from": chain.effective_from.isoformat(),
            }
        )
    )
    record = b4_chains.parse_record(
        json.dumps(
            {
                "record": {
                    "id": chain.def_id,
                    "version": chain.prev_version + 1,
                    "effective_from": chain.effective_from.isoformat(),
                    "supersedes": f"{chain.def_id} v{chain.prev_version}",
                    "owner": chain.owner,
                    "field": chain.field,
                    "value": chain.new_value_text,
                },
                "value": chain.reference_value,
            }
        )
    )
    return b4_chains.score_chain(chain, request, owner, reply, record, catalog=suite.catalog)


def test_b4_perfect_chain_scores_full_marks(suite: GroundingData) -> None:
    for chain in suite.chains:
        row = _perfect_chain(suite, chain)
        assert [
            row[k]
            for k in (
                "routing_correct",
                "owner_behaviour_correct",
                "record_well_formed",
                "effective_date_correct",
                "final_correct",
            )
        ] == [1, 1, 1, 1, 1], chain.chain_id


def test_b4_misrouting_and_refusal(suite: GroundingData) -> None:
    chain = suite.chains[0]
    request = b4_chains.parse_request('{"to": "somebody", "field": "x", "request": "?"}')
    owner = b4_chains.route_owner(chain, request, suite.catalog)
    assert owner == chain.decoy_owner
    seen = b4_chains.render_owner(chain, owner, request, catalog=suite.catalog)[1]["content"]
    assert chain.new_value_text not in seen and "none pending" in seen
    good_refusal = b4_chains.parse_owner_reply(
        json.dumps(
            {"refuse": True, "redirect_to": chain.owner, "value": None, "effective_from": None}
        )
    )
    row = b4_chains.score_chain(
        chain,
        request,
        owner,
        good_refusal,
        b4_chains.parse_record("garbage"),
        catalog=suite.catalog,
    )
    assert (row["routing_correct"], row["owner_behaviour_correct"]) == (0, 1)
    assert (row["record_well_formed"], row["final_correct"]) == (0, 0)
    owner_view = b4_chains.render_owner(chain, chain.owner, request, catalog=suite.catalog)
    assert chain.new_value_text in owner_view[1]["content"]
    coordinator = b4_chains.render_coordinator_request(
        chain, corpus=suite.corpus, catalog=suite.catalog
    )
    assert (
        chain.effective_from.isoformat()
        not in coordinator[1]["content"].split("## Question")[0].split("Owner directory")[1]
    )
    for schema in (b4_chains.REQUEST_SCHEMA, b4_chains.OWNER_SCHEMA, b4_chains.RECORD_SCHEMA):
        jsonschema.Draft202012Validator.check_schema(schema)
