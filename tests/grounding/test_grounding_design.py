"""Design: 846 calls in full, the documented default subset, a seeded whole-run shuffle."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sealedeval.suites.grounding.bundle import GroundingData, render_request
from sealedeval.suites.grounding.conditions import TABLES_HEADING
from sealedeval.suites.grounding.design import (
    DEFAULT_SHUFFLE_SEED,
    EMBEDDED_TOTALS,
    FULL_TOTALS,
    Design,
    Profile,
    RequestSpec,
    approx_tokens,
    build_design,
    estimate_seconds,
)


def test_full_design_is_the_seeds_846_calls() -> None:
    design = build_design("full")
    assert len(design.specs) == 846
    assert design.counts() == FULL_TOTALS
    a = [s for s in design.specs if s.track == "A" and s.model_role == "primary"]
    assert Counter((s.item_id, s.condition) for s in a) == {
        k: 2 for k in {(s.item_id, s.condition) for s in a}
    }
    assert len({s.item_id for s in a}) == 40 and {s.condition for s in a} == set("ABECFD")
    assert {s.replicate for s in design.specs if s.track != "B4"} == {1, 2}
    assert len({s.request_id for s in design.specs}) == 846


def test_default_and_tiny_designs_cover_every_track_and_condition() -> None:
    for profile, n in (("default", 52), ("tiny", 37)):
        design = build_design(profile)  # type: ignore[arg-type]
        assert len(design.specs) == n
        assert set(design.counts()) == {"A", "B1", "B2", "B3", "B4"}
        a = [s for s in design.specs if s.track == "A"]
        assert {s.replicate for s in a} == {1, 2}
        assert {s.condition for s in a} == set("ABECFD")
        assert {s.item_id for s in a} >= {"XORG-09", "ABST-01"}
        assert {s.condition for s in design.specs if s.track == "B1"} == {
            "schema",
            "prose_deficient",
            "records_deficient",
        }
        assert {s.condition for s in design.specs if s.track == "B2"} == {
            "select",
            "full",
            "own_pick",
            "keyword_top5",
        }


def test_shuffle_is_seeded_and_recorded() -> None:
    a, b = build_design("full"), build_design("full")
    assert a == b and a.shuffle_seed == DEFAULT_SHUFFLE_SEED
    c = build_design("full", shuffle_seed=7)
    assert c.shuffle_seed == 7 and c.specs != a.specs
    assert sorted(c.specs, key=lambda s: s.request_id) == sorted(
        a.specs, key=lambda s: s.request_id
    )
    # Whole-run shuffle: the first 100 calls mix tracks and conditions.
    head = a.specs[:100]
    assert len({s.track for s in head}) >= 4 and len({s.condition for s in head}) >= 8


def test_dependencies_come_first() -> None:
    profiles: tuple[Profile, ...] = ("tiny", "default", "embedded", "full")
    for profile in profiles:
        seen: set[str] = set()
        for spec in build_design(profile).specs:
            if spec.depends_on is not None:
                assert spec.depends_on in seen, spec.request_id
            seen.add(spec.request_id)


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="unknown profile"):
        build_design("huge")  # type: ignore[arg-type]


def _prompt(suite: GroundingData, spec: RequestSpec) -> str:
    prior: dict[str, str] = {}
    if spec.track == "B2" and spec.condition == "own_pick" and spec.depends_on:
        picks = [r.label() for r in suite.b2_question(spec.item_id).required]
        prior[spec.depends_on] = json.dumps({"records": picks})
    if spec.track == "B4" and spec.condition != "round1":
        chain = suite.chain(spec.item_id)
        prior[spec.sibling("round1").request_id] = json.dumps(
            {"to": chain.owner, "field": chain.field, "request": "value and start date?"}
        )
        prior[spec.sibling("round2").request_id] = json.dumps(
            {
                "refuse": False,
                "redirect_to": None,
                "value": chain.new_value_text,
                "effective_from": chain.effective_from.isoformat(),
            }
        )
    return "\n".join(m["content"] for m in render_request(suite, spec, prior))


def test_estimate_models_the_prompt_cache(suite: GroundingData) -> None:
    design = build_design("default")
    est = estimate_seconds(design, lambda s: _prompt(suite, s))
    assert est["calls"] == 52
    assert 2_000 <= est["output_tokens"] <= 3_000
    # prefill of long prompts dominates; the documented ~37 minutes on an idle machine
    assert est["prefill_s"] > est["generation_s"]
    assert 1_800 <= est["total_s"] <= 2_700
    cached = estimate_seconds(design, lambda s: _prompt(suite, s), cache_states=7)
    assert cached["prefill_tokens"] < est["prefill_tokens"]
    assert 800 <= cached["total_s"] <= 1_500  # ~18 minutes with a 2 GiB cache
    # a repeated prompt is served from the cache: only its last token is re-evaluated
    twice = Design("x", 0, (design.specs[0], design.specs[0]))
    one = Design("x", 0, (design.specs[0],))
    cost = estimate_seconds(twice, lambda s: _prompt(suite, s))
    assert (
        cost["prefill_tokens"]
        == estimate_seconds(one, lambda s: _prompt(suite, s))["prefill_tokens"] + 1
    )


@pytest.mark.slow  # loads the embedded model's vocabulary (llama.cpp)
def test_approx_tokens_tracks_the_smollm2_tokenizer(suite: GroundingData) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from sealedeval.engines.local import find_model

    try:
        model = llama_cpp.Llama(str(find_model()), vocab_only=True, verbose=False)
    except Exception as exc:  # pragma: no cover - no model in this environment
        pytest.skip(f"SmolLM2 vocabulary not available: {exc}")
    for condition in ("A", "D"):
        text = _prompt(suite, RequestSpec("A", "COMP-03", condition, 1))
        real = len(model.tokenize(text.encode(), add_bos=False))
        assert abs(len(approx_tokens(text)) - real) / real < 0.05


def test_embedded_subset_is_a_cache_ordered_part_of_default() -> None:
    design = build_design("embedded")
    assert design.counts() == EMBEDDED_TOTALS
    default_ids = {s.request_id for s in build_design("default").specs}
    assert {s.request_id for s in design.specs} <= default_ids  # paired with reference/naive
    a = [s for s in design.specs if s.track == "A"]
    assert {s.condition for s in a} == set("ABECFD")
    assert Counter(s.condition for s in a) == {c: len(a) // 6 for c in "ABECFD"}
    # each track-A condition is one contiguous block, in the order A B E C F D
    runs = [c for i, c in enumerate(s.condition for s in a) if i == 0 or a[i - 1].condition != c]
    assert runs == list("ABECFD")
    b2 = [s for s in design.specs if s.track == "B2"]
    assert [s.condition for s in b2] == ["select", "own_pick"]  # the answer needs the pick
    assert {s.condition for s in design.specs if s.track == "B1"} == {
        "schema",
        "records_deficient",
    }
    # seeded within blocks: another seed permutes calls but never moves one to another block
    other = build_design("embedded", shuffle_seed=3)
    assert other.specs != design.specs and other.shuffle_seed == 3
    assert [(s.track, s.condition) for s in other.specs if s.track in ("A", "B1")] == [
        (s.track, s.condition) for s in design.specs if s.track in ("A", "B1")
    ]
    assert [s.condition for s in other.specs if s.track == "A"] == [s.condition for s in a]
    assert sorted(other.specs, key=lambda s: s.request_id) == sorted(
        design.specs, key=lambda s: s.request_id
    )


def _prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def test_embedded_order_prefills_the_tables_once(suite: GroundingData) -> None:
    """Every data-bearing prompt but the first finds the tables (and the table definitions)
    in the previous prompt or, after a B4 owner round, in an earlier one (the server's RAM
    cache); and the embedded order prefills far less than the whole-run shuffle of the same
    calls."""
    design = build_design("embedded")
    prompts = [_prompt(suite, s) for s in design.specs]
    with_tables = [i for i, p in enumerate(prompts) if TABLES_HEADING in p]
    tables_end = prompts[with_tables[0]].index("## Context") + len("## Context")
    assert all(TABLES_HEADING not in p for p in prompts[: with_tables[0]])
    for i in with_tables[1:]:
        best = max(_prefix(prompts[i], prompts[j]) for j in range(i))
        assert best >= tables_end, design.specs[i].request_id
        if design.specs[i].track != "B4":
            assert _prefix(prompts[i], prompts[i - 1]) >= tables_end, design.specs[i].request_id
    shuffled = Design("x", 0, build_design("default").specs)
    subset = {s.request_id for s in design.specs}
    shuffled = Design("x", 0, tuple(s for s in shuffled.specs if s.request_id in subset))
    assert len(shuffled.specs) == len(design.specs)
    for states, ratio in ((1, 0.5), (2, 0.8)):  # KV cache only; plus one saved state
        ordered = estimate_seconds(design, lambda s: _prompt(suite, s), cache_states=states)
        whole_run = estimate_seconds(shuffled, lambda s: _prompt(suite, s), cache_states=states)
        assert ordered["prefill_tokens"] < ratio * whole_run["prefill_tokens"]
