"""The design sealed with the rubric (issue #12, part 2): engines, comparisons and sizes per
profile, and what the audit says when a result does not keep them.

Each test starts from the sealed template (tests/seal/conftest.py: the rubric and the tiny
profile's design sealed in one commit, golden run on ``reference`` and published), plants one
deviation, and audits through the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval.config import load_config
from sealedeval.seal import design

REPO = Path(__file__).resolve().parents[2]

TINY = "config/tiny.yaml"


def _edit_tiny(project, fn) -> None:
    path = project.root / TINY
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _two_engines(doc) -> None:
    doc["suites"]["golden"]["engines"] = ["reference", "naive"]
    doc["suites"]["golden"]["compare"] = ["naive", "reference"]


def _lock(project) -> dict:
    return json.loads((project.root / "rubric.lock").read_text(encoding="utf-8"))


def _rebuild(project, *run_args: str, not_as_sealed: str = "") -> None:
    assert project.run(*run_args) == 0
    project.publish(not_as_sealed=not_as_sealed)


def test_seal_writes_the_design_of_each_profile_and_keeps_the_others(sealed):
    designs = _lock(sealed)["designs"]
    assert sorted(designs) == ["config/config.yaml", "config/config.yaml + config/tiny.yaml"]
    tiny = designs["config/config.yaml + config/tiny.yaml"]
    golden = tiny["suites"]["golden"]
    assert golden["engines"] == {"reference": {"kind": "reference"}}
    # config.yaml's compare: [local, reference] names an engine tiny does not run: not sealed
    assert golden["comparisons"] == []
    assert golden["parameters"]["repeats"] == 3 and golden["parameters"]["limit"] == 6
    default = designs["config/config.yaml"]["suites"]
    assert default["golden"]["comparisons"] == [["local", "reference"]]
    assert default["golden"]["engines"]["local"] == {
        "kind": "local",
        "model": "smollm2-135m-instruct",
    }
    # the design rides outside the rubric's hashes: item seeds do not move when a profile is sealed
    before = _lock(sealed)["sha256"]
    sealed.seal()
    assert _lock(sealed)["sha256"] == before
    assert sorted(_lock(sealed)["designs"]) == sorted(designs)


def test_the_clean_build_keeps_its_design(sealed):
    a = sealed.audit()
    assert a.rc == 0, a
    # tiny's design names three suites; the template ran golden only: disclosed, not hidden
    assert a.status("design as sealed") == "WARN", a
    assert "sealed but never run: bloodpanel, grounding" in a.detail("design as sealed")
    result = json.loads(sealed.result_path.read_text(encoding="utf-8"))
    d = result["suites"]["golden"]["design"]
    assert d["status"] == "as sealed" and d["profile"] == "config/config.yaml + config/tiny.yaml"
    assert d["design_sha256"] == _lock(sealed)["designs"][d["profile"]]["sha256"]


@pytest.mark.slow
def test_a_sealed_engine_never_run_fails_with_its_comparison(sealed):
    _edit_tiny(sealed, _two_engines)
    sealed.seal(TINY)
    sealed.commit("Design: golden on reference and naive, compared", TINY, "rubric.lock")
    # only the engine that suits the author is run: no ledger entry knows of the other
    _rebuild(
        sealed, "--engine", "reference", not_as_sealed="golden/naive: sealed engine has no rows"
    )
    a = sealed.audit()
    assert a.rc == 1, a
    assert a.status("design as sealed") == "FAIL", a
    detail = a.detail("design as sealed")
    assert "golden/naive: sealed engine missing" in detail
    assert "golden: sealed comparison naive vs reference missing" in detail
    assert a.status("ledgered parts") == "PASS", a  # the ledger alone could not have seen it


@pytest.mark.slow
def test_the_full_sealed_design_passes_and_compares(sealed):
    _edit_tiny(sealed, _two_engines)
    sealed.seal(TINY)
    sealed.commit("Design: golden on reference and naive, compared", TINY, "rubric.lock")
    _rebuild(sealed)
    a = sealed.audit()
    assert a.status("design as sealed") in ("PASS", "WARN"), a
    assert "missing" not in a.detail("design as sealed"), a
    result = json.loads(sealed.result_path.read_text(encoding="utf-8"))
    assert result["suites"]["golden"]["design"]["missing_comparisons"] == []


@pytest.mark.slow
def test_an_engine_added_after_the_seal_is_allowed_and_labelled(sealed):
    built = json.loads(sealed.result_path.read_text(encoding="utf-8"))["suites"]["golden"]
    before = {r["family"]: r["family_size"] for _, r in _records(built["analysis"])}
    _edit_tiny(sealed, _two_engines)  # the config changes, the lock does not
    sealed.commit("Config: try naive too", TINY)
    rc, out, _ = sealed.cli("run", "golden", "-c", TINY, "--no-progress", "--engine", "naive")
    assert rc == 0
    assert "note: golden/naive: added after the seal" in out
    sealed.publish()
    a = sealed.audit()
    assert a.status("design as sealed") != "FAIL", a
    result = json.loads(sealed.result_path.read_text(encoding="utf-8"))
    assert result["suites"]["golden"]["design"]["added_after_seal"] == ["naive"]
    entry = [json.loads(x) for x in (sealed.root / "ledger.jsonl").read_text().splitlines()][-1]
    assert entry["engine"] == "naive" and entry["design"] == "added after the seal"
    # labelled where the report names it, and its comparisons out of the sealed families
    report = sealed.report_path.read_text(encoding="utf-8")
    assert "naive (added after the seal)" in report
    assert "Engines added after the seal: naive" in report
    after = _records(result["suites"]["golden"]["analysis"])
    late = {(r["family"], r["name"]) for path, r in after if "naive" in path}
    assert late and all(f.startswith("exploratory: ") for f, _ in late), late
    sealed_sizes = {r["family"]: r["family_size"] for _, r in after}
    assert before == {f: n for f, n in sealed_sizes.items() if not f.startswith("exploratory")}


def _records(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every comparison record (``stats.comparisons``) under ``node`` with the path to it."""
    if isinstance(node, dict):
        if {"family", "family_size", "p_adj", "a", "b"} <= set(node):
            return [(path + f"/{node['a']}/{node['b']}", node)]
        return [x for k, v in node.items() for x in _records(v, f"{path}/{k}")]
    if isinstance(node, list):
        return [x for i, v in enumerate(node) for x in _records(v, f"{path}/{i}")]
    return []


@pytest.mark.slow
def test_a_sealed_engine_pointed_at_another_model_fails(sealed):
    cfg = sealed.root / "config/config.yaml"
    doc = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    doc["engines"]["reference"]["model"] = "another-model"
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    sealed.commit("Config: reference answers as another model", "config")
    _rebuild(sealed, not_as_sealed="golden/reference: sealed engine answered by another model")
    a = sealed.audit()
    assert a.status("design as sealed") == "FAIL", a
    assert "golden/reference: sealed engine answered by another model" in a.detail(
        "design as sealed"
    )


@pytest.mark.slow
def test_a_changed_size_is_disclosed_with_both_values(sealed):
    _edit_tiny(sealed, lambda d: d["suites"]["golden"].update(repeats=5))
    sealed.commit("Config: two more repeats", TINY)
    _rebuild(sealed)
    a = sealed.audit()
    assert a.status("design as sealed") == "WARN", a
    assert "golden.repeats: 3 → 5" in a.detail("design as sealed")
    result = json.loads(sealed.result_path.read_text(encoding="utf-8"))
    d = result["suites"]["golden"]["design"]
    assert d["status"] == "sealed, parameters changed" and d["parameter_changes"] == [
        "repeats: 3 → 5"
    ]


@pytest.mark.slow
def test_a_design_sealed_after_the_runs_fails(sealed):
    """Sealing the design of a profile only once its numbers are known is caught: the design was
    not in the lock at the commit the rows are bound to."""
    lock = _lock(sealed)
    del lock["designs"]["config/config.yaml + config/tiny.yaml"]
    (sealed.root / "rubric.lock").write_text(json.dumps(lock), encoding="utf-8")
    sealed.commit("Seal without the tiny design", "rubric.lock")
    sealed.cli("run", "golden", "-c", TINY, "--no-progress")  # rows bound to that commit
    # the runs of the template are bound to the first seal; start over from this one
    for p in sealed.parts():
        p.unlink()
    sealed.git("rm", "-q", "--cached", "ledger.jsonl")
    (sealed.root / "ledger.jsonl").unlink()
    sealed.commit("Drop the old runs")
    _rebuild(sealed)
    sealed.seal(TINY)  # ... and now the design, after the calls
    sealed.commit("Seal the tiny design", "rubric.lock")
    a = sealed.audit()
    assert a.status("design as sealed") == "FAIL", a
    assert "was not in rubric.lock at" in a.detail("design as sealed")


def test_a_profile_with_no_sealed_design_is_a_warning(sealed):
    lock = _lock(sealed)
    lock["designs"] = {}
    (sealed.root / "rubric.lock").write_text(json.dumps(lock), encoding="utf-8")
    a = sealed.audit()
    assert a.status("design as sealed") == "WARN", a
    assert "not pre-registered" in a.detail("design as sealed")


def test_comparisons_come_from_compare_comparisons_or_the_suite():
    cfg = load_config(REPO)
    assert design.suite_comparisons("golden", {"engines": ["a", "b"], "compare": ["b", "a"]}) == [
        ["b", "a"]
    ]
    assert design.suite_comparisons(
        "imported-x", {"comparisons": [["m1", "m2"], ["m1", "m3"]]}
    ) == [["m1", "m2"], ["m1", "m3"]]
    assert design.suite_comparisons("golden", {"engines": ["a"], "compare": ["a", "b"]}) == []
    assert design.profile_key(cfg.sources) == "config/config.yaml"
    changes = design.parameter_changes({"a": {"b": 1}, "c": 2}, {"a": {"b": 2}, "d": 3})
    assert changes == ["a.b: 1 → 2", "c: 2 → ∅", "d: ∅ → 3"]
    d = design.compare(
        {"engines": {"x": {"kind": "k"}}, "comparisons": [["x", "y"]], "parameters": {}},
        {"parameters": {}},
        engines_present={"x": {"kind": "k"}, "z": {"kind": "k"}},
        comparisons_present=[("y", "x")],
    )
    assert d["status"] == "as sealed" and d["added_after_seal"] == ["z"]
