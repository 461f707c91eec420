"""Design → harness requests: stable keys, the shuffled dispatch order, grouping, answerers."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval.config import Config, EngineConfig, load_config
from sealedeval.engines.base import Request
from sealedeval.errors import UserError
from sealedeval.plugins import GenerateContext, RequestContext, get_suite
from sealedeval.stages.run import suite_engine
from sealedeval.suites.grounding.bundle import GroundingData
from sealedeval.suites.grounding.design import EMBEDDED_TOTALS, build_design
from sealedeval.suites.grounding.requests import (
    build_requests,
    call_specs,
    condition_label,
    specs_for,
)
from sealedeval.suites.grounding.suite import (
    DESIGN_RECORD,
    GroundingSuite,
    design_for,
    profile_for,
)

REPO = Path(__file__).resolve().parents[2]
REF = EngineConfig(name="reference", kind="reference")
NAIVE = EngineConfig(name="naive", kind="reference", extra={"variant": "naive"})


def _requests(
    profile: str = "default", seed: int = 11, engine: EngineConfig = REF, **kw: Any
) -> list[Request]:
    return build_requests(
        build_design(profile, seed),  # type: ignore[arg-type]
        engine=engine,
        model="m",
        seed=99,
        temperature=0.7,
        max_tokens=192,
        **kw,
    )


@pytest.fixture(scope="module")
def full_reqs() -> list[Request]:
    """The full design's requests for an engine playing both model roles (built once)."""
    return _requests("full", roles=("primary", "secondary"))


def test_registered_as_grounding() -> None:
    assert isinstance(get_suite("grounding"), GroundingSuite)


def test_request_keys_are_stable_and_unique(full_reqs: list[Request]) -> None:
    a, b = full_reqs, _requests("full", roles=("primary", "secondary"))
    assert [r.request_key for r in a] == [r.request_key for r in b]
    assert len({r.request_key for r in a}) == len(a)
    # the key names the engine: reference and naive never share a raw row
    naive = _requests("default", engine=NAIVE)
    assert not {r.request_key for r in a} & {r.request_key for r in naive}
    # the order seed moves requests, never changes their keys
    moved = _requests("default", seed=12)
    assert [r.request_key for r in moved] != [r.request_key for r in _requests("default")]
    assert {r.request_key for r in moved} == {r.request_key for r in _requests("default")}


def test_grouping_into_requests(full_reqs: list[Request]) -> None:
    design = build_design("full", 11)
    reqs = full_reqs
    assert sum(len(call_specs(r)) for r in reqs) == len(design.specs) == 846
    by_solver: dict[str, int] = {}
    for r in reqs:
        by_solver[r.solver] = by_solver.get(r.solver, 0) + 1
    # 20 B2 select+own_pick pairs, 16 B4 chains of three calls
    assert by_solver == {"single": 846 - 40 - 48, "select_then_answer": 20, "multi_agent_chain": 16}
    primary = [r for r in reqs if not r.condition.endswith("@secondary")]
    assert len(primary) == len(reqs) - 160  # the secondary role only on request


def test_dispatch_order_is_the_designs_shuffled_order(full_reqs: list[Request]) -> None:
    design = build_design("full", 11)
    reqs = full_reqs
    first_calls = [r.item["specs"][0] for r in reqs]
    in_design = [s for s in design.specs if s.stage == 0 or s.group is None]
    assert [s["track"] + s["item_id"] + s["condition"] for s in first_calls] == [
        s.track + s.item_id + s.condition for s in in_design
    ]
    # every dependent call comes right after the call it needs (inside the same request)
    for r in reqs:
        specs = call_specs(r)
        for before, after in itertools.pairwise(specs):
            assert after.depends_on == before.request_id


def test_condition_labels_round_trip(suite: GroundingData, full_reqs: list[Request]) -> None:
    for r in full_reqs:
        assert specs_for(r.item_id, r.condition, r.repeat) == call_specs(r)
        assert condition_label(call_specs(r), suite) == r.condition
    with pytest.raises(ValueError, match="unknown condition label"):
        specs_for("COMP-01", "Z", 1)


def test_prompts_put_the_tables_first_and_carry_a_json_schema(full_reqs: list[Request]) -> None:
    for r in full_reqs:
        rf = r.params["response_format"]
        assert rf["type"] == "json_schema" and rf["json_schema"]["schema"]["type"] == "object"
        user = r.messages[-1]["content"]
        first = call_specs(r)[0]
        if first.track not in ("B3",) and first.condition != "select":
            assert user.startswith("## Data tables"), r.condition
        assert r.messages[0]["role"] == "system"
        assert set(r.params) == {"temperature", "max_tokens", "seed", "response_format"}


def test_reference_answers_every_first_call_of_the_full_design(
    full_reqs: list[Request],
) -> None:
    harness = GroundingSuite()
    for r in full_reqs:
        text = harness.reference_answer(r)
        assert json.loads(text), r.condition
    naive = _requests("default", engine=NAIVE)
    assert all(r.item["variant"] == "naive" for r in naive)


def _cfg(tmp_path: Path, **grounding: Any) -> Config:
    (tmp_path / "config" / "schemas").mkdir(parents=True)
    for name in ("config/config.yaml",):
        (tmp_path / name).write_text((REPO / name).read_text())
    over = {"suites": {"grounding": {"engines": ["reference"], **grounding}}}
    (tmp_path / "over.yaml").write_text(yaml.safe_dump(over))
    return load_config(tmp_path, ["over.yaml"])


def test_order_seed_is_recorded_and_reproducible(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    harness = GroundingSuite()
    items = harness.generate(GenerateContext(cfg=cfg, seed=1234))
    design = next(i for i in items if i["id"] == DESIGN_RECORD)
    assert design["suite_seed"] == 1234 and design["profile"] == "default"
    again = build_design("default", design["shuffle_seed"])
    assert again == design_for(cfg, 1234)
    reqs = harness.requests(
        RequestContext(
            cfg=cfg, items=items, engine=cfg.engine("reference"), model="reference", seed=1234
        )
    )
    assert [r.item["request_id"] for r in reqs] == [
        s.request_id for s in again.specs if s.stage == 0 or s.group is None
    ]
    fixed = _cfg(tmp_path / "b", shuffle_seed=5)
    assert design_for(fixed, 1234).shuffle_seed == 5


def test_generate_records_carry_references_and_run_the_leak_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _cfg(tmp_path)
    items = {i["id"]: i for i in GroundingSuite().generate(GenerateContext(cfg=cfg, seed=7))}
    assert items["COMP-01"]["reference_value"] == 14.0 and items["COMP-01"]["track"] == "A"
    assert items["ABST-01"]["answerable"] is False
    assert items["B4-R1"]["owner"] == "Sales Operations Lead"
    assert items["competitor_carrier"]["critical_if_released"]
    import sealedeval.suites.grounding.suite as suite_mod

    monkeypatch.setattr(suite_mod, "leak_check_calls", lambda data, specs: ["planted leak"])
    with pytest.raises(ValueError, match="planted leak"):
        GroundingSuite().generate(GenerateContext(cfg=cfg, seed=7))


def test_roles_and_profiles_from_config(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, profile="full", roles={"reference": ["primary", "secondary"]})
    harness = GroundingSuite()
    items = harness.generate(GenerateContext(cfg=cfg, seed=3))
    reqs = harness.requests(
        RequestContext(
            cfg=cfg, items=items, engine=cfg.engine("reference"), model="reference", seed=3
        )
    )
    assert sum(len(call_specs(r)) for r in reqs) == 846
    assert sum(1 for r in reqs if r.condition.endswith("@secondary")) == 160
    naive = harness.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("naive"), model="naive", seed=3)
    )
    assert sum(len(call_specs(r)) for r in naive) == 686


def test_engine_profiles_give_an_engine_its_own_design(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, engines=["reference", "local"], engine_profiles={"local": "embedded"})
    harness = GroundingSuite()
    items = harness.generate(GenerateContext(cfg=cfg, seed=5))
    design = next(i for i in items if i["id"] == DESIGN_RECORD)
    assert design["profile"] == "default" and design["n_calls"] == 52
    local = design["engine_profiles"]["local"]
    assert local["profile"] == "embedded" and local["calls"] == EMBEDDED_TOTALS
    assert local["shuffle_seed"] == design["shuffle_seed"]
    ref = harness.requests(
        RequestContext(
            cfg=cfg, items=items, engine=cfg.engine("reference"), model="reference", seed=5
        )
    )
    loc = harness.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("local"), model="smollm2", seed=5)
    )
    assert sum(len(call_specs(r)) for r in ref) == 52
    assert sum(len(call_specs(r)) for r in loc) == sum(EMBEDDED_TOTALS.values())
    assert [r.item["request_id"] for r in loc] == [
        s.request_id for s in design_for(cfg, 5, "local").specs if s.group is None or s.stage == 0
    ]
    with pytest.raises(UserError, match=r"engine_profiles\.local: 'huge'"):
        _cfg(tmp_path / "bad", engine_profiles={"local": "huge"})


def test_default_config_runs_the_documented_embedded_subset_on_local() -> None:
    """config/embedded-grounding.yaml: the embedded model runs the ``embedded`` subset (the counts
    README and design.py document), reference and naive the whole default design; the default
    profile leaves ``local`` out of grounding (its time budget) but keeps the same settings."""
    assert "local" not in load_config(REPO).suite("grounding")["engines"]
    cfg = load_config(REPO, ["config/embedded-grounding.yaml"])
    scfg = cfg.suite("grounding")
    assert {"local", "reference", "naive"} <= set(scfg["engines"])
    assert profile_for(cfg, "local") == "embedded"
    assert design_for(cfg, 1, "local").counts() == EMBEDDED_TOTALS
    for eng in ("reference", "naive"):
        assert profile_for(cfg, eng) == "default"
        assert len(design_for(cfg, 1, eng).specs) == 52
    n = sum(EMBEDDED_TOTALS.values())
    readme = (REPO / "docs/benchmarks.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| grounding | `local`"))
    assert f"{n} calls" in row and f"{EMBEDDED_TOTALS['A']} track-A" in row
    # the grounding prompts (B2 `full` 13.5k tokens) get a 16k context, the other suites not
    assert int(suite_engine(cfg, "grounding", "local").extra["n_ctx"]) >= 14_000
    assert int(suite_engine(cfg, "golden", "local").extra["n_ctx"]) == int(
        cfg.engine("local").extra["n_ctx"]
    )
