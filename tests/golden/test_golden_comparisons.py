"""Issue 15 in golden: every comparison (branches on each engine, engines on the base branch)
carries its paired difference and interval, exact and Holm-adjusted p, MDE and n needed for the
plan's δ, and the report's tables and figure show them — from a tiny in-memory run of the real
suite (generate → requests → solvers → grade → analyze → report) on two reference-kind engines:
the reference answerer (the ceiling) and one that answers a fixed few tasks wrongly."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval import stats
from sealedeval.canonical import dumps
from sealedeval.config import Config, load_config
from sealedeval.engines.base import Completion, Request
from sealedeval.plugins import (
    AnalyzeContext,
    GenerateContext,
    GradeContext,
    RequestContext,
    get_suite,
)
from sealedeval.render.comparisons import HEADER
from sealedeval.render.figures import render_bytes
from sealedeval.run.solvers import SolveResult, get_solver
from sealedeval.stats.comparisons import Comparison
from sealedeval.suites.golden import plan

ROOT = Path(__file__).resolve().parents[2]
WRONG = {("other", "A"): {"g01", "g03"}, ("other", "B"): {"g02"}, ("other", "C"): {"g01", "g03"}}
"""Tasks the second engine gets wrong per branch: its branches disagree on three tasks, the
engines (base branch A) on two — differences far below what six tasks could detect."""


def _config(tmp_path: Path) -> Config:
    extra = tmp_path / "cmp.yaml"
    extra.write_text(
        yaml.safe_dump(
            {
                "engines": {"other": {"kind": "reference", "concurrency": 2}},
                "suites": {
                    "golden": {
                        "engines": ["reference", "other"],
                        "limit": 6,
                        "repeats": 1,
                        "compare": ["reference", "other"],
                        "branches": {
                            "A": {"solver": "single", "tools": False},
                            "B": {"solver": "agent", "tools": True, "tasks": "all"},
                            "C": {
                                "solver": "agent",
                                "tools": True,
                                "self_consistency": 3,
                                "tasks": "all",
                            },
                        },
                        "branch_engines": ["reference", "other"],
                        "judge": {"engines": []},
                        "probes": {
                            "engines": ["reference", "other"],
                            "injection": {"branches": ["A"], "tasks": "all"},
                            "attribute_swap": {"branch": "A"},
                        },
                    }
                },
            }
        )
    )
    return load_config(ROOT, ["config/tiny.yaml", str(extra)])


def _rows(cfg: Config) -> list[dict[str, Any]]:
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    rows = []
    for eng in ("reference", "other"):
        for r in suite.requests(
            RequestContext(cfg=cfg, items=items, engine=cfg.engine(eng), model=eng, seed=7)
        ):
            wrong = WRONG.get((eng, r.condition.split("/")[0]), set())

            async def call(
                req: Request, _item: str = r.item_id, _w: set[str] = wrong
            ) -> Completion:
                text = suite.reference_answer(req)
                if _item in _w:
                    agent = "action" in text
                    text = json.dumps({"action": "answer", "argument": "zzz"}) if agent else "zzz"
                return Completion(text, {})

            res: SolveResult = asyncio.run(get_solver(r.solver)(None, r, call))  # type: ignore[arg-type]
            rows.append(
                {
                    "request_key": r.request_key,
                    "engine": eng,
                    "model": eng,
                    "item_id": r.item_id,
                    "condition": r.condition,
                    "repeat": r.repeat,
                    "status": "ok",
                    "error_kind": "",
                    "output_text": res.completion.output_text,
                    "trajectory": json.dumps(res.trajectory),
                    "tokens_in": 1,
                    "tokens_out": 1,
                    "cost_usd": 0.0,
                    "latency_s": 0.0,
                }
            )
    return rows


@pytest.fixture(scope="module")
def section(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cfg = _config(tmp_path_factory.mktemp("golden-cmp"))
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    rows = _rows(cfg)
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    analysis = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    return {"analysis": json.loads(dumps(analysis))}  # as result.json holds it


def _records(a: dict[str, Any]) -> list[Comparison]:
    out = [c["paired"] for e in a["engines"].values() for c in e["branch_comparisons"]]
    return out + [c["paired"] for c in a["comparisons"]]


def test_every_comparison_carries_its_record_from_the_stats(section: dict[str, Any]) -> None:
    a = section["analysis"]
    assert a["comparison_plan"] == plan.COMPARISON_PLAN.describe()
    assert a["comparison_plan"]["delta"] == 0.05 and a["comparison_plan"]["power"] == 0.8
    main = a["engines"]["other"]["branches"]["A"]["main"]
    assert main["accuracy_beta"] == pytest.approx(list(stats.beta_interval(4, 6)))
    recs = _records(a)
    assert len(recs) == 2 * 3 + 1  # three branch pairs on each engine, one engine pair
    branch = [r for r in recs if r["family"] == "branches"]
    assert len(branch) == 6 and all(r["family_size"] == 6 for r in branch)
    # Holm across the whole family (both engines), not per engine
    assert [r["p_adj"] for r in branch] == pytest.approx(stats.holm([r["p"] for r in branch]))
    for e in a["engines"].values():
        for c in e["branch_comparisons"]:
            assert c["paired"]["p"] == c["p"]  # the sign test the suite always reported
    [eng] = a["comparisons"]
    r = eng["paired"]
    assert (r["a"], r["b"], r["family"], r["family_size"]) == ("reference", "other", "engines", 1)
    assert (r["a_better"], r["b_better"], r["n"]) == (2, 0, 6)
    assert r["diff"] == pytest.approx(2 / 6)
    x = [1.0] * 6
    y = [0.0 if t in WRONG["other", "A"] else 1.0 for t in sorted(a["engines"]["other"]["items"])]
    _, lo, hi = stats.paired_difference(x, y)
    assert (r["lo"], r["hi"]) == pytest.approx((lo, hi))
    z = stats.z_total(0.05, 0.8)
    assert r["mde"] == pytest.approx(z * stats.paired_se(x, y))
    assert r["n_needed_for_delta"] == stats.sample_size_items(
        stats.paired_se(x, y) ** 2 * 6, 0, 0, 1, 1, 0.05
    )
    assert r["detectable"] is False  # MDE ≈ 0.59 > 0.33: six tasks could not have found it
    assert r["bayes"] is not None and r["bayes"]["p_a_better"] == stats.prob_a_better(2, 0)
    # the reference engine ties with itself on every branch: no variance, no MDE, said so
    tied = [r for r in branch if r["name"].startswith("reference:")]
    assert len(tied) == 3 and all(r["mde"] is None and "tied" in r["mde_note"] for r in tied)
    # the probes: one family over every engine; the same sign test the probe tables report
    probes = [r for r in recs if r["family"] == "probes"]
    assert probes == []  # _records lists branch and engine comparisons only
    tables = []
    for e in a["engines"].values():
        tables += list(e["probes"]["injection"]["branches"].values())
        tables.append(e["probes"]["attribute_swap"])
    assert all(t["paired"]["p"] == t["p"] and t["paired"]["family_size"] == 4 for t in tables)
    inj = a["engines"]["other"]["probes"]["injection"]["branches"]["A"]["paired"]
    assert (inj["a"], inj["b"], inj["a_better"], inj["b_better"]) == ("clean", "injected", 0, 2)
    assert inj["detectable"] is False
    [ab] = [r for r in branch if r["name"] == "other: A vs B"]
    assert (ab["n"], ab["a_better"], ab["b_better"]) == (6, 1, 2)
    assert ab["diff"] == pytest.approx(-1 / 6)
    assert ab["mde"] is not None and ab["mde"] > 1 / 6 and ab["detectable"] is False


def test_report_tables_have_the_columns_and_say_could_not_have_detected(
    section: dict[str, Any],
) -> None:
    md = get_suite("golden").report_sections(section)  # type: ignore[attr-defined]
    header = "| " + " | ".join(HEADER) + " |"
    # the branch table, each engine's probe table and the engine table, all with every column
    assert md.count(header) == 4
    for col in ("role", "test", "p adjusted", "MDE (power)", "n for δ"):
        assert col in header
    row = next(line for line in md.splitlines() if line.startswith("| reference vs other (A)"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    col = HEADER.index
    assert (
        cells[col("family")] == "engines"
        and cells[col("n")] == "6"
        and cells[col("A better / B better / ties")] == "2 / 0 / 4"
    )
    assert re.fullmatch(r"0\.333 \[-?0\.\d{3}, 0\.\d{3}\]", cells[col("A − B [95% CI]")])
    assert cells[col("p adjusted")].startswith("0.5000 (Holm, of 1)")
    assert cells[col("MDE (power)")].endswith("(80%)") and cells[HEADER.index("n for δ")].endswith(
        "(δ = 0.05)"
    )
    assert "could not have detected" in cells[col("could it detect the difference?")]
    assert "every item tied" in md  # the reference engine's branch pairs
    assert "Second view, Bayesian" in md and "P(A > B)" in md
    assert "| other | A | 4/6 = 66.7% [30.0, 90.3] | [30.0, 90.3]" not in md  # Beta ≠ Wilson
    lo, hi = stats.beta_interval(4, 6)
    assert f"| other | A | 4/6 = 66.7% [30.0, 90.3] | [{100 * lo:.1f}, {100 * hi:.1f}] |" in md
    assert md.count("could not have detected") >= 1


def test_comparisons_figure_draws_each_difference_over_its_mde_band(
    section: dict[str, Any],
) -> None:
    specs = {s.name: s for s in get_suite("golden").figures(section)}  # type: ignore[attr-defined]
    fig = specs["comparisons"]
    assert "MDE" in fig.caption
    png = render_bytes(fig.draw(), "png")
    assert png.startswith(b"\x89PNG") and render_bytes(fig.draw(), "png") == png


@pytest.mark.slow
def test_published_report_carries_the_columns_in_every_comparison_table(
    project: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the real CLI (seal → run → analyze → publish) on the tiny profile with golden's
    branches and grounding's naive baseline: result.json holds every record and report.md
    prints the comparison header wherever a comparison is listed."""
    from sealedeval.cli import main

    root = project()
    (root / "config/cmp.yaml").write_text(
        "suites:\n  golden:\n    engines: [reference]\n    limit: 6\n    repeats: 1\n"
        "    branch_engines: [reference]\n"
        "    branches: {A: {solver: single, tools: false}, B: {solver: agent, tools: true, "
        "tasks: all, repeats: 0}}\n"
        "  bloodpanel: {engines: [reference], enabled: false}\n"
        "  grounding: {engines: [reference, naive]}\n"
    )
    for suite in ("golden", "grounding"):
        for cmd in ("run", "grade", "analyze"):
            extra = ["--no-progress"] if cmd == "run" else []
            rc = main([cmd, "--root", str(root), suite, "-c", "config/cmp.yaml", *extra])
            assert rc == 0, capsys.readouterr().err[-2000:]
    assert main(["publish", "--root", str(root), "-c", "config/cmp.yaml"]) == 0
    result = json.loads((root / "results/result.json").read_text())
    g = result["suites"]["golden"]["analysis"]
    cs = g["engines"]["reference"]["branch_comparisons"]
    assert cs and all(c["paired"]["family"] == "branches" for c in cs)
    assert [c["paired"]["p_adj"] for c in cs] == pytest.approx(stats.holm([c["p"] for c in cs]))
    gr = result["suites"]["grounding"]["analysis"]["engines"]
    assert all(
        "paired" in x for e in gr.values() for r in e["roles"].values() for x in r["comparisons"]
    )
    md = (root / "results/report.md").read_text()
    header = "| " + " | ".join(HEADER) + " |"
    # golden's branch table and probe table (config.yaml's probes run on the reference engine),
    # one grounding table per engine and model role that compared
    probes = g["engines"]["reference"]["probes"]
    assert probes["injection"] and probes["attribute_swap"]["paired"]["family"] == "probes"
    roles = [r for e in gr.values() for r in e["roles"].values() if r.get("comparisons")]
    assert md.count(header) == 2 + len(roles)
    # the adjusted p's column names its method per row (Holm for a sealed family, BH otherwise)
    assert "p adjusted" in md and "Holm, of" in md and "MDE (power)" in md
