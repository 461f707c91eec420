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
from sealedeval.plugins import GenerateContext, RequestContext, get_suite
from sealedeval.suites.golden import design

ROOT = Path(__file__).resolve().parents[2]


def _plan(configs: list[str], engine: str, root: Path = ROOT) -> Counter[str]:
    cfg = load_config(root, configs)
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=1234))
    reqs = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine(engine), model="m", seed=1234)
    )
    assert len({r.request_key for r in reqs}) == len(reqs), "request keys collide"
    return Counter(r.condition for r in reqs)


B_SUBSET = ["g01", "g04", "g07", "g09", "g13", "g15", "g16", "g19"]


def test_default_profile_runs_every_part_on_the_local_engine_on_a_subset() -> None:
    """README's 15-minute budget: the default runs all of the golden design on the embedded
    model, cut to the documented subset (config/config.yaml): A 1 + 3 runs, B on 8 tasks, C on
    3, judge v1 calibration + position 20x2 + verbosity 10x2, injection, swap, contamination."""
    c = _plan([], "local")
    assert c == {
        "A/main": 20,
        "A/sample": 20 * 3,
        "B/main": 8,
        "C/main": 3,
        "judge/calibration/v1": 60,
        "judge/position/right-first": 20,
        "judge/position/right-second": 20,
        "judge/verbosity/padded-first": 10,
        "judge/verbosity/padded-second": 10,
        "probe/injection/A": 6,  # the tasks citing deploys.log
        "probe/injection/B": 2,  # ... of B's subset: g01, g04
        "probe/swap/base": 10,
        "probe/swap/swapped": 10,
        "probe/contamination/original": 10,
        "probe/contamination/paraphrase": 10,
    }
    cfg = load_config(ROOT)
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    reqs = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("local"), model="m", seed=1)
    )
    assert sorted({r.item_id for r in reqs if r.condition == "B/main"}) == B_SUBSET
    assert {r.item_id for r in reqs if r.condition == "C/main"} == {"g01", "g07", "g19"}
    assert {r.item_id for r in reqs if r.condition.startswith("judge/verbosity/")} == {
        f"p{i:02d}" for i in range(1, 11)
    }
    ref = _plan([], "reference")
    assert ref == {k: v for k, v in c.items() if not k.startswith("probe/contamination/")}


def test_embedded_full_profile_design_on_the_local_engine() -> None:
    c = _plan(["config/embedded-full.yaml"], "local")
    assert c["A/main"] == c["B/main"] == c["C/main"] == 20
    assert c["A/sample"] == 20 * 5 and c["B/sample"] == 20 * 2 and c["C/sample"] == 0
    assert c["judge/calibration/v1"] == c["judge/calibration/v2"] == 60
    assert c["judge/calibration/v3"] == 0  # cut in this profile
    for order in ("right-first", "right-second"):
        assert c[f"judge/position/{order}"] == 20
    for order in ("padded-first", "padded-second"):
        assert c[f"judge/verbosity/{order}"] == 20
    assert c["probe/injection/A"] == c["probe/injection/B"] == 6  # tasks citing deploys.log
    assert c["probe/swap/base"] == c["probe/swap/swapped"] == 10
    assert c["probe/contamination/original"] == c["probe/contamination/paraphrase"] == 10


def test_full_golden_profile_is_the_complete_design_with_ten_runs() -> None:
    """Merged over the default's subsets, the full profile still runs every branch on every
    task, 10 runs each, all four judge variants, and every probe on all tasks."""
    c = _plan(["config/full-golden.yaml"], "local")
    for b in ("A", "B", "C"):
        assert c[f"{b}/main"] == 20 and c[f"{b}/sample"] == 20 * 10, b
    for v in ("v1", "v2", "v3", "v4"):
        assert c[f"judge/calibration/{v}"] == 60
    for order in ("right-first", "right-second"):
        assert c[f"judge/position/{order}"] == 20
    for order in ("padded-first", "padded-second"):
        assert c[f"judge/verbosity/{order}"] == 20
    for b in ("A", "B", "C"):
        assert c[f"probe/injection/{b}"] == 20
    assert c["probe/swap/base"] == c["probe/swap/swapped"] == 10
    assert c["probe/contamination/original"] == c["probe/contamination/paraphrase"] == 10


def test_local_engine_agents_speak_json_and_others_native() -> None:
    cfg = load_config(ROOT, ["config/embedded-full.yaml"])
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    local = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("local"), model="m", seed=1)
    )
    b = next(r for r in local if r.condition == "B/main")
    assert b.solver == "agent" and b.tools == ()
    assert b.params["agent"]["protocol"] == "json"
    assert "JSON object" in b.messages[0]["content"]
    assert "sandbox" in b.item and "deploys.log" not in json.dumps(b.messages)
    c = next(r for r in local if r.condition == "C/main")
    assert c.params["agent"]["self_consistency"] == 3 and c.params["temperature"] == 0.7
    ref = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("reference"), model="m", seed=1)
    )
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


def _extra(tmp_path: Path, golden: dict[str, Any]) -> str:
    p = tmp_path / "extra.yaml"
    p.write_text(yaml.safe_dump({"suites": {"golden": golden}}))
    return str(p)


def test_a_branch_task_subset_limits_its_main_and_repeats(tmp_path: Path) -> None:
    sub = ["g02", "g07", "g19"]
    c = _plan(
        [
            _extra(
                tmp_path,
                {
                    "branch_engines": ["reference"],
                    "branches": {
                        "B": {"tasks": sub, "repeats": 2},
                        "C": {"tasks": ["g02"]},
                    },
                    "judge": {"engines": []},
                    "probes": {"engines": []},
                },
            )
        ],
        "reference",
    )
    assert c == {"A/main": 20, "A/sample": 60, "B/main": 3, "B/sample": 6, "C/main": 1}
    cfg = load_config(ROOT, [_extra(tmp_path, {"branches": {"B": {"tasks": sub}}})])
    items = get_suite("golden").generate(GenerateContext(cfg=cfg, seed=1))
    reqs = get_suite("golden").requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("reference"), model="m", seed=1)
    )
    assert sorted({r.item_id for r in reqs if r.condition.startswith("B/")}) == sub


def test_branch_task_subset_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"branches\.B\.tasks: unknown task id 'g99'"):
        _plan([_extra(tmp_path, {"branches": {"B": {"tasks": ["g01", "g99"]}}})], "reference")
    with pytest.raises(UserError, match=r"branches\.A\.tasks: the base branch runs every task"):
        _plan([_extra(tmp_path, {"branches": {"A": {"tasks": ["g01"]}}})], "reference")
    with pytest.raises(UserError, match=r"suites\.golden(\.|: )branches\.B\.tasks"):
        load_config(ROOT, [_extra(tmp_path, {"branches": {"B": {"tasks": []}}})])


@pytest.mark.slow
def test_an_empty_branch_engines_list_means_no_engine_runs_b_or_c(
    tmp_path: Path, project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: with `branch_engines: []` nothing but branch A is planned, run or counted as
    missing, even where the judge grades B transcripts and the injection probe names branch
    B (a branch this engine does not run is skipped, not an error; an unknown one is)."""
    golden = {
        "engines": ["reference"],
        "limit": 3,
        "repeats": 1,
        "branch_engines": [],
        "judge": {"engines": ["reference"], "variants": ["v1"], "transcripts": ["A", "B"]},
        "probes": {"engines": ["reference"], "injection": {"branches": ["A", "B"]}},
    }
    c = _plan([_extra(tmp_path, golden)], "reference")
    assert not any(k.startswith(("B/", "C/", "probe/injection/B")) for k in c)
    assert c["probe/injection/A"] == 3  # g01-g03 cite deploys.log
    bad = golden | {"probes": {"engines": ["reference"], "injection": {"branches": ["Z"]}}}
    with pytest.raises(UserError, match="branch 'Z' is not an enabled branch"):
        _plan([_extra(tmp_path, bad)], "reference")
    root = project()
    (root / "config/a-only.yaml").write_text(
        yaml.safe_dump(
            {
                "suites": {
                    "golden": golden,
                    "bloodpanel": {"engines": ["reference"], "enabled": False},
                    "grounding": {"engines": ["reference"], "enabled": False},
                }
            }
        )
    )
    rc, err = _cli(
        root, "run", "golden", "-c", "config/a-only.yaml", "--no-progress", capsys=capsys
    )
    assert rc == 0, err[-2000:]
    for cmd in ("grade", "analyze"):
        rc, out = _cli(root, cmd, "golden", "-c", "config/a-only.yaml", capsys=capsys)
        assert rc == 0, out[-2000:]
    rc, out = _cli(root, "publish", "-c", "config/a-only.yaml", capsys=capsys)
    assert rc == 0, out[-2000:]
    res = json.loads((root / "results/result.json").read_text())
    g = res["suites"]["golden"]
    counts = g["seal"]["counts"]["reference"]
    n = sum(c.values()) + 3  # phase 2: the judge grades the three A/main answers
    assert (counts["requests"], counts["missing"], counts["complete"]) == (n, 0, True)
    e = g["analysis"]["engines"]["reference"]
    assert set(e["branches"]) == {"A"} and e["branch_comparisons"] == []
    assert set(e["probes"]["injection"]["branches"]) == {"A"}
    assert g["analysis"]["design"]["branch_engines"] == []
    assert "all branches on no engine" in (root / "results/report.md").read_text()


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


def _check_metrics(a: dict[str, Any]) -> None:
    """The typed metric list mirrors the analysis tables (the same numbers, with denominators)."""
    from sealedeval.stats.metrics import sort_metrics, validate_metrics

    ms = validate_metrics(a["metrics"], "golden")
    assert ms == sort_metrics(ms)
    by = {(m["metric"], tuple(sorted(m["groups"].items()))): m for m in ms}
    e = a["engines"]["reference"]
    for b, entry in e["branches"].items():
        g = (("branch", b), ("engine", "reference"))
        acc = by[("greedy_accuracy", g)]
        main = entry["main"]
        assert (acc["estimate"], acc["lo"], acc["hi"], acc["method"], acc["unit"]) == (
            main["accuracy"]["rate"],
            main["accuracy"]["lo"],
            main["accuracy"]["hi"],
            "wilson",
            "task",
        )
        assert (acc["n_total"], acc["n_ok"], acc["n_error"]) == (6, 6, 0)
        assert by[("greedy_accuracy_errors_as_failures", g)]["estimate"] == 1.0
        assert by[("judge_pass", g)]["estimate"] == 1.0
        # a perfect judge: the PPI-corrected rate is the judge's own
        ppi = by[("judge_pass_ppi", g)]
        assert (ppi["estimate"], ppi["method"]) == (1.0, "PPI normal")
        assert by[("judge_regex_agreement", g)]["estimate"] == 1.0
        assert by[("judge_regex_kappa", g)]["estimate"] is None  # one label: κ undefined
        rep = entry["repeats"]
        if rep["n_runs"]:
            k = str(rep["n_runs"])
            gk = tuple(sorted((*g, ("k", k))))
            for name in ("pass_at_k", "pass_hat_k"):
                m = by[(name, gk)]
                assert m["estimate"] == rep[name][k] and m["method"] == "unbiased estimator"
                assert (m["lo"], m["hi"]) == (None, None)
                assert (m["n_total"], m["n_ok"], m["n_error"]) == (
                    rep["n_total"],
                    rep["n_total"],
                    0,
                )
        else:
            assert not [
                m
                for m in ms
                if m["metric"].startswith("pass") and ("branch", b) in m["groups"].items()
            ]
    for v in e["judge"]["calibration"]["variants"]:
        g = (("engine", "reference"), ("variant", v))
        assert by[("judge_human_agreement", g)]["estimate"] == 1.0
        assert by[("judge_human_kappa", g)]["estimate"] == 1.0
        assert by[("judge_human_kappa", g)]["n_ok"] == 18
    for t in ("position", "verbosity"):
        m = by[("judge_order_consistent", (("engine", "reference"), ("test", t)))]
        assert (m["estimate"], m["n_ok"], m["n_error"]) == (1.0, 6, 0)


@pytest.mark.slow
def test_reference_engine_end_to_end(
    project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every branch, judge and probe request on the reference engine (the ceiling), phase 2
    included; the audit re-derives everything; a rerun asks for nothing."""
    root = project()
    (root / "config/ref.yaml").write_text(
        "suites:\n  golden:\n    engines: [reference]\n    limit: 6\n    repeats: 2\n"
        "    branch_engines: [reference]\n"
        "    branches: {B: {tasks: all, repeats: 2}, C: {tasks: all}}\n"
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
    for stage in ("grade", "analyze"):  # the stages publish reads (results/analysis/golden.json)
        rc, out = _cli(root, stage, "golden", "-c", "config/ref.yaml", capsys=capsys)
        assert rc == 0, out[-3000:]
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
        p = e["branches"][b]["judge"]["ppi"]
        assert (p["n_labelled"], p["n_unlabelled"]) == (18, 6)
        assert p["ppi"]["estimate"] == 1.0 and p["ppi"]["se"] == 0.0
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
    _check_metrics(g["analysis"])
    report = (root / "results/report.md").read_text()
    for heading in (
        "### Branches",
        "### Judge `reference`",
        "corrected for its errors on the human labels by prediction-powered inference",
        "### Probes on `reference`",
        "### Transcripts behind the top-scoring tasks",
        "Data retention",
    ):
        assert heading in report
