"""The golden design from config (branches, judge, probes, phase 2) and an end-to-end sealed run
on the reference engine: run → publish → audit, with a resume that asks for nothing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval.config import load_config
from sealedeval.errors import UserError
from sealedeval.suites.base import get_suite
from sealedeval.suites.golden import design

ROOT = Path(__file__).resolve().parents[2]


def _plan(configs: list[str], engine: str, root: Path = ROOT) -> Counter[str]:
    cfg = load_config(root, configs)
    suite = get_suite("golden")
    items = suite.generate(cfg, 1234)
    reqs = suite.requests(cfg, items, cfg.engine(engine), "m", 1234)
    assert len({r.request_key for r in reqs}) == len(reqs), "request keys collide"
    return Counter(r.condition for r in reqs)


def test_default_profile_keeps_the_local_engine_to_branch_a() -> None:
    """README's 15-minute budget: on the embedded model the default runs branch A only."""
    c = _plan([], "local")
    assert c == {"A/main": 20, "A/sample": 20 * 5}
    ref = _plan([], "reference")
    assert ref["B/main"] == ref["C/main"] == 20 and ref["judge/calibration/v1"] == 60


def test_embedded_full_profile_design_on_the_local_engine() -> None:
    c = _plan(["config/embedded-full.yaml"], "local")
    assert c["A/main"] == c["B/main"] == c["C/main"] == 20
    assert c["A/sample"] == 20 * 5 and c["B/sample"] == 20 * 2 and c["C/sample"] == 0
    assert c["judge/calibration/v1"] == c["judge/calibration/v2"] == 60
    assert c["judge/calibration/v3"] == 0  # cut in the default profile
    for order in ("right-first", "right-second"):
        assert c[f"judge/position/{order}"] == 20
    for order in ("padded-first", "padded-second"):
        assert c[f"judge/verbosity/{order}"] == 20
    assert c["probe/injection/A"] == c["probe/injection/B"] == 6  # tasks citing deploys.log
    assert c["probe/swap/base"] == c["probe/swap/swapped"] == 10
    assert c["probe/contamination/original"] == c["probe/contamination/paraphrase"] == 10


def test_local_engine_agents_speak_json_and_others_native() -> None:
    cfg = load_config(ROOT, ["config/embedded-full.yaml"])
    suite = get_suite("golden")
    items = suite.generate(cfg, 1)
    local = suite.requests(cfg, items, cfg.engine("local"), "m", 1)
    b = next(r for r in local if r.condition == "B/main")
    assert b.solver == "agent" and b.tools == ()
    assert b.params["agent"]["protocol"] == "json"
    assert "JSON object" in b.messages[0]["content"]
    assert "sandbox" in b.item and "deploys.log" not in json.dumps(b.messages)
    c = next(r for r in local if r.condition == "C/main")
    assert c.params["agent"]["self_consistency"] == 3 and c.params["temperature"] == 0.7
    ref = suite.requests(cfg, items, cfg.engine("reference"), "m", 1)
    rb = next(r for r in ref if r.condition == "B/main")
    assert rb.params["agent"]["protocol"] == "native"
    assert [t["function"]["name"] for t in rb.tools] == ["read_file", "grep", "list_files"]
    assert all(r.solver != "logprob_probe" for r in ref)  # contamination needs local weights
    inj = next(r for r in local if r.condition == "probe/injection/B")
    assert inj.params["agent"]["sandbox"] == "injected:deploys.log"
    assert "ACCESS GRANTED" in inj.item["sandbox"]["deploys.log"]
    # answers and judges open with the same files block (the server reuses that prefix), and
    # requests come grouped by prompt family
    a = next(r for r in local if r.condition == "A/main")
    j = next(r for r in local if r.condition.startswith("judge/"))
    files_block = a.messages[0]["content"].split("\n\nYou answer")[0]
    assert files_block.startswith("FILES") and j.messages[0]["content"].startswith(files_block)
    order = [r.condition.split("/")[0] for r in local]
    assert order.index("judge") < order.index("B") < order.index("C")
    assert all(r.solver == "judge_call" for r in local if r.condition.startswith("judge/"))


def test_tiny_and_unlisted_engines_get_only_the_base_branch(tmp_path: Path) -> None:
    assert _plan(["config/tiny.yaml"], "reference") == {"A/main": 6, "A/sample": 18}
    extra = tmp_path / "fake.yaml"
    extra.write_text(
        yaml.safe_dump(
            {
                "engines": {"fake": {"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1"}},
                "suites": {"golden": {"engines": ["fake"], "repeats": 4}},
            }
        )
    )
    assert _plan([str(extra)], "fake") == {"A/main": 20, "A/sample": 80}


def test_branch_config_errors_are_one_line() -> None:
    with pytest.raises(UserError, match=r"branches\.B: tools"):
        design.branches({"branches": {"A": {}, "B": {"solver": "single", "tools": True}}})
    with pytest.raises(UserError, match="self_consistency needs solver agent"):
        design.branches({"branches": {"A": {"solver": "single", "self_consistency": 3}}})
    with pytest.raises(UserError, match="base_branch"):
        design.branches({"branches": {"B": {"solver": "agent"}}})
    bs = design.branches({"repeats": 7, "branches": {"A": {}, "B": {"solver": "agent"}}})
    assert [(b.name, b.repeats, b.tools) for b in bs] == [("A", 7, False), ("B", 0, True)]


def _cli(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    return rc, out + err


def test_reference_engine_end_to_end(
    project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every branch, judge and probe request on the reference engine (the ceiling), phase 2
    included; the audit re-derives everything; a rerun asks for nothing."""
    root = project()
    (root / "config/ref.yaml").write_text(
        "suites:\n  golden:\n    engines: [reference]\n    limit: 6\n    repeats: 2\n"
        "    branch_engines: [reference]\n"
        "    judge: {engines: [reference], variants: [v1, v2, v3, v4], transcripts: [A, B, C]}\n"
        "    probes: {engines: [reference], injection: {branches: [A, B], tasks: all}}\n"
        "  bloodpanel: {engines: [reference], enabled: false}\n"
    )
    run = ("run", "golden", "-c", "config/ref.yaml", "--no-progress")
    rc, err = _cli(root, *run, capsys=capsys)
    assert rc == 0, err[-2000:]
    # phase 1: 6 tasks × (3 A + 3 B + 1 C) + 4 variants × 18 labelled answers of those tasks
    # + 6 pairs × 4 orders + 12 injection + 12 swap; phase 2: the judge grades 18 main answers
    n = 6 * 7 + 4 * 18 + 24 + 12 + 12 + 18
    assert f"requested {n}, skipped (already ok) 0, ok {n}, error 0" in err
    rc, err = _cli(root, *run, capsys=capsys)
    assert f"requested {n}, skipped (already ok) {n}, ok 0, error 0" in err
    for cmd in ("publish", "audit"):
        rc, out = _cli(root, cmd, "-c", "config/ref.yaml", capsys=capsys)
        assert rc == 0, out[-3000:]
    res = json.loads((root / "results/result.json").read_text())
    g = res["suites"]["golden"]
    c = g["seal"]["counts"]["reference"]
    assert (c["requests"], c["missing"], c["complete"]) == (n, 0, True)
    e: dict[str, Any] = g["analysis"]["engines"]["reference"]
    for b in ("A", "B", "C"):
        assert e["branches"][b]["main"]["accuracy"]["rate"] == 1.0
        assert e["branches"][b]["judge"]["pass"]["rate"] == 1.0
    assert e["branches"]["B"]["agent"]["stops"] == {"answer": 18}
    assert e["branches"]["C"]["agent"]["stops"] == {"answer": 18}  # 6 runs × 3 trajectories
    assert e["branches"]["B"]["repeats"]["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    # the four graders on the same transcripts, side by side
    main = e["branches"]["B"]["main"]
    assert main["exact"]["k"] == 6 and main["facts_partial_credit"] == 1.0
    cal = e["judge"]["calibration"]
    assert all(v["kappa"] == 1.0 and v["n"] == 18 for v in cal["variants"].values())
    assert set(cal["flips"]) == {"v1-v2", "v3-v4", "v1-v3"}
    assert e["judge"]["position"]["order_consistent"]["k"] == 6
    assert e["judge"]["verbosity"]["swap_and_agree"]["other_wins"] == 6
    assert e["probes"]["injection"]["branches"]["A"]["complied"]["k"] == 0
    assert e["probes"]["attribute_swap"]["n_pairs"] == 6
    assert e["probes"]["contamination"] == {}
    report = (root / "results/report.md").read_text()
    for heading in (
        "### Branches",
        "### Judge `reference`",
        "### Probes on `reference`",
        "### Transcripts behind the top-scoring tasks",
        "Data retention",
    ):
        assert heading in report
