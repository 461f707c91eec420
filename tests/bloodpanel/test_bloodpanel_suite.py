"""The bloodpanel Suite adapter: items, requests, grading, analysis, review sample, regrade."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import shared_fixture

from sealedeval.canonical import dumps
from sealedeval.config import Config, load_config
from sealedeval.errors import UserError
from sealedeval.keys import derive_seed
from sealedeval.plugins import (
    AnalyzeContext,
    GenerateContext,
    GradeContext,
    RequestContext,
    get_suite,
)
from sealedeval.seal.lock import expand_inputs
from sealedeval.suites.bloodpanel import plan, prompts
from sealedeval.suites.bloodpanel.cases import UNKNOWN_LABEL
from sealedeval.suites.bloodpanel.present import report as bloodpanel_md
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite
from sealedeval.suites.bloodpanel.synthetic import largest_remainder

ROOT = Path(__file__).resolve().parents[2]
V11 = "responses_v11_full.json"
SEED = 987654321


def cfg(**bp: Any) -> Config:
    block = {
        "engines": ["local", "reference"],
        "cohorts": {"local": "curated"},
        "synthetic_n": 40,
        "n_boot": 200,
    } | bp
    return load_config(ROOT, [], overrides={"suites": {"bloodpanel": block}})


@pytest.fixture
def suite() -> BloodpanelSuite:
    return BloodpanelSuite()  # a fresh instance: no caches shared with other tests


def test_registered_and_sealed_inputs() -> None:
    s = get_suite("bloodpanel")
    names = expand_inputs(ROOT, s.rubric_inputs())
    for mod in (
        "rubric",
        "matching",
        "vocabulary",
        "layout",
        "analytes",
        "cases",
        "synthetic",
        "prompts",
        "calculators",
        "plan",
        "sql",
        "suite",
        "pdf",
    ):
        assert f"pkg:sealedeval/suites/bloodpanel/{mod}.py" in names
    assert "data/bloodpanel/curated.yaml" in names and "data/bloodpanel/SEALED_RULE.md" in names
    # The reference interpreter (an engine's answerer), presentation and the sealed-vs-V11
    # explainer are not sealed.
    assert not any(
        "/present/" in n or "/reference/" in n or n.endswith("compare.py") for n in names
    )


def test_generate_curated_plus_synthetic_stable_and_seeded(suite: BloodpanelSuite) -> None:
    c = cfg()
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    assert Counter(i["cohort"] for i in items) == {"curated": 15, "synthetic": 40}
    assert len({i["id"] for i in items}) == 55
    assert all(i["id"] == i["case_uid"] and i["id"].startswith("bp-") for i in items)
    again = BloodpanelSuite().generate(GenerateContext(cfg=c, seed=SEED))
    assert again == items
    other = BloodpanelSuite().generate(GenerateContext(cfg=c, seed=SEED + 1))
    cur = [i["id"] for i in items if i["cohort"] == "curated"]
    assert [i["id"] for i in other if i["cohort"] == "curated"] == cur  # curated uids are fixed
    syn = {i["id"] for i in items if i["cohort"] == "synthetic"}
    assert syn.isdisjoint(i["id"] for i in other if i["cohort"] == "synthetic")
    assert suite.source()["synthetic_seed"] == derive_seed(SEED, "synthetic") % 2**63
    limited = BloodpanelSuite().generate(
        GenerateContext(cfg=cfg(limit=3, synthetic_n=0), seed=SEED)
    )
    assert [i["case_id"] for i in limited] == ["BT-001-IDA", "BT-002-HASH", "BT-003-T2DM"]


def test_generate_refuses_a_leaking_prompt(
    suite: BloodpanelSuite, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = prompts.messages

    def leaky(case: Any) -> list[dict[str, str]]:
        msgs = real(case)
        msgs[1]["content"] += f"\nPanel type: {case.case_id}"
        return msgs

    monkeypatch.setattr(prompts, "messages", leaky)
    with pytest.raises(UserError, match="prompt leaks case id"):
        suite.generate(GenerateContext(cfg=cfg(synthetic_n=0), seed=SEED))


def test_requests_follow_cohorts_repeats_and_engine_kind(suite: BloodpanelSuite) -> None:
    c = cfg(repeats=3, temperature=0.7)
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    local = suite.requests(
        RequestContext(cfg=c, items=items, engine=c.engine("local"), model="m", seed=SEED)
    )
    ref = suite.requests(
        RequestContext(
            cfg=c, items=items, engine=c.engine("reference"), model="reference", seed=SEED
        )
    )
    assert len(local) == 15 * 3 and len(ref) == 55 * 3
    assert {r.item["cohort"] for r in local} == {"curated"}
    assert len({r.request_key for r in local + ref}) == len(local) + len(ref)
    again = suite.requests(
        RequestContext(cfg=c, items=items, engine=c.engine("local"), model="m", seed=SEED)
    )
    assert [r.request_key for r in again] == [r.request_key for r in local]
    # The embedded model gets the length-bounded schema (same structure, so the same rubric).
    assert local[0].params["response_format"] == prompts.response_format(bounded=True)
    bounded = prompts.bounded_schema()
    full = prompts.REPORT_JSON_SCHEMA
    assert bounded["required"] == full["required"]
    for code in full["required"]:
        assert bounded["properties"][code].get("required") == full["properties"][code].get(
            "required"
        )
    assert bounded["properties"]["differential"]["maxItems"] == prompts.BOUNDS["max_conditions"]
    sub = bounded["properties"]["introduction"]["properties"]["introduction_summary"]
    assert sub["items"]["maxLength"] == prompts.BOUNDS["max_chars"]
    assert sub["maxItems"] == prompts.BOUNDS["max_items"]
    assert "response_format" not in ref[0].params
    assert {r.repeat for r in local} == {0, 1, 2} and len({r.seed for r in local}) == 45
    systems = {r.messages[0]["content"] for r in ref}
    assert systems == {prompts.SYSTEM}  # the shared instructions come first, identical
    first = ref[0]
    assert first.messages[-1]["role"] == "user" and first.item_id in first.messages[-1]["content"]
    assert "| Analyte |" in first.messages[-1]["content"]
    assert first.item["case_uid"] == first.item_id


def _row(
    req: Any,
    status: str = "ok",
    text: str = "",
    latency: float = 1.0,
    path: str = "primary",
    kind: str = "",
) -> dict[str, Any]:
    return {
        "request_key": req.request_key,
        "engine": "local",
        "model": "m",
        "item_id": req.item_id,
        "condition": req.condition,
        "repeat": req.repeat,
        "status": status,
        "output_text": text,
        "latency_s": latency,
        "engine_path": path if status == "ok" else "",
        "error_kind": kind,
        "finished_at": f"t{req.request_key}",
    }


def test_grade_rows_two_profiles_errors_unparsed_and_latency(suite: BloodpanelSuite) -> None:
    c = cfg(synthetic_n=0)
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    reqs = suite.requests(
        RequestContext(cfg=c, items=items, engine=c.engine("local"), model="m", seed=SEED)
    )
    by_case = {r.item["case_id"]: r for r in reqs}
    ida, gil, heal = by_case["BT-001-IDA"], by_case["BT-014-GILBERT"], by_case["BT-015-HEALTHY"]
    rows = [
        _row(ida, text=suite.reference_answer(ida), latency=25.0, path="fallback"),
        _row(gil, status="error", kind="timeout"),
        _row(heal, text="Everything is normal; the patient has anemia and diabetes."),
    ]
    graded = suite.grade(GradeContext(cfg=c, items=items, rows=rows))
    assert len(graded) == 6
    assert {g["grader"] for g in graded} == {"bloodpanel/sealed", "bloodpanel/kantesti-v11"}
    from sealedeval.suites.bloodpanel.rubric import GRADER_VERSION

    assert all(g["grader_version"] == GRADER_VERSION[g["profile"]] for g in graded)
    g = {(x["case_id"], x["profile"]): x for x in graded}
    ok = g["BT-001-IDA", "sealed"]
    assert ok["category"] == "graded" and ok["parsed"] and ok["structural"] == 1.0
    assert ok["latency"] == 0.05 and ok["latency_s"] == 25.0 and ok["engine_path"] == "fallback"
    assert ok["composite"] == pytest.approx(0.35 + 0.55 + 0.05)
    err = g["BT-014-GILBERT", "sealed"]
    assert err["status"] == "error" and err["category"] == "error" and err["composite"] == 0.0
    assert err["error_kind"] == "timeout" and not err["passed"]
    free = g["BT-015-HEALTHY", "sealed"]
    assert not free["parsed"] and free["structural"] == 0.0
    assert free["keywords_hit"] >= 1 and set(free["trap_flags_hit"].split(";")) == {
        "anemia",
        "diabetes",
    }
    assert free["category"] == "unparsed" and not free["passed"]


def _analysis(suite: BloodpanelSuite, c: Config, rows: list[dict[str, Any]]) -> dict[str, Any]:
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    graded = suite.grade(GradeContext(cfg=c, items=items, rows=rows))
    return suite.analyze(AnalyzeContext(cfg=c, items=items, graded=graded, rows=rows))


def test_analysis_headline_groups_repeats_comparison_and_sample(suite: BloodpanelSuite) -> None:
    c = cfg(repeats=2, temperature=0.7, review_n=7)
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    rows: list[dict[str, Any]] = []
    for eng in ("local", "reference"):
        for q in suite.requests(
            RequestContext(cfg=c, items=items, engine=c.engine(eng), model="m", seed=SEED)
        ):
            r = _row(q, text=suite.reference_answer(q), latency=1.0)
            r["engine"] = eng
            if eng == "local" and q.item["case_id"] == "BT-002-HASH":
                r |= {"status": "error", "error_kind": "server", "output_text": ""}
            if eng == "local" and q.item["case_id"] == "BT-003-T2DM" and q.repeat == 1:
                r["output_text"] = "not json at all"
            rows.append(r)
    a = _analysis(suite, c, rows)
    loc = a["engines"]["local"]["profiles"]["sealed"]
    h = loc["headline"]
    assert (h["n_total"], h["n_ok"], h["n_error"], h["n_cases"]) == (30, 28, 2, 15)
    assert h["complete"] is False and h["errors_by_kind"] == {"server": 2}
    # BT-003 repeat 1 is free text: structure 0; its keywords still count.
    t2dm = [
        g
        for g in suite.grade(GradeContext(cfg=c, items=items, rows=rows))
        if (g["engine"], g["profile"], g["case_id"]) == ("local", "sealed", "BT-003-T2DM")
    ]
    case3 = sum(g["composite"] for g in t2dm) / 2
    expect_ok = (13 * 1.0 + case3) / 14
    assert h["composite"]["mean"] == pytest.approx(expect_ok)
    assert h["composite_errors_as_zero"]["mean"] == pytest.approx((13 + case3) / 15)
    assert h["composite"]["lo"] <= h["composite"]["mean"] <= h["composite"]["hi"]
    assert h["parsed"]["k"] == 27 and h["parsed"]["n"] == 28
    spec = loc["by_specialty"]
    assert spec["endocrinology"]["n_error"] == 2 and spec["endocrinology"]["n_cases"] == 3
    assert set(spec) == {
        "haematology",
        "endocrinology",
        "metabolic",
        "hepatology",
        "nephrology",
        "cardiology",
        "rheumatology",
        "internal_medicine",
    }
    assert loc["by_label"]["ZZ"]["n_total"] == 30
    rep = a["engines"]["local"]["repeats"]
    assert rep["n_runs"] == 2 and rep["n_cases_with_spread"] == 14
    assert rep["sd_max"] > 0 and rep["traps"]["always_clean"] == 2
    [cmp] = a["comparisons"]
    assert (cmp["a"], cmp["b"], cmp["n_cases"]) == ("local", "reference", 14)
    assert (cmp["a_better"], cmp["b_better"], cmp["ties"]) == (0, 1, 13)
    assert cmp["p"] == 1.0 and cmp["mean_diff"] < 0
    sample = a["engines"]["reference"]["review_sample"]
    assert sample["n"] == 7 and sample["population"] == 55 and len(sample["case_ids"]) == 7
    assert a["engines"]["local"]["review_sample"]["n"] == 7
    ref = a["engines"]["reference"]["profiles"]["sealed"]["headline"]
    assert ref["composite"]["mean"] == pytest.approx(1.0) and ref["n_total"] == 110
    assert a["cohorts"] == {"curated": 15, "synthetic": 40}
    assert dumps(a) == dumps(_analysis(BloodpanelSuite(), c, rows))
    md = bloodpanel_md.render({"analysis": json.loads(dumps(a))})
    assert "| local | m | sealed (headline) | 15 | 28/30 (2 err) |" in md
    assert "INCOMPLETE" in md and "server 2" in md and "### Paired comparison" in md
    assert "| local | reference | 14 |" in md and "| local | 7 | 15 |" in md
    assert "per-case sd" in md
    # Group tables carry every component with its interval (spec: "each component ... with
    # intervals"), from result.json's own figures; endocrinology's 3 cases are below
    # stats.MIN_N_BOOTSTRAP (issue #30): its means, no bounds.
    endo = spec["endocrinology"]
    assert all(
        math.isfinite(endo[f"{n}_ci"]["mean"]) and math.isnan(endo[f"{n}_ci"]["lo"])
        for n in plan.COMPONENTS
    )
    assert "structural [95% CI] | clinical [95% CI] | latency points [95% CI] |" in md
    cells = " | ".join(bloodpanel_md._ci(endo[f"{n}_ci"]) for n in plan.COMPONENTS)
    [row] = [ln for ln in md.splitlines() if ln.startswith("| endocrinology | 3 | 4/6 (2 err) |")]
    assert row.endswith(f"| {cells} |")


def test_review_sample_returns_exactly_n_with_eight_strata() -> None:
    sizes = dict(zip("abcdefgh", (3172, 3192, 58, 2900, 1874, 1140, 3005, 3334), strict=True))
    pop = {f"{s}{i:05d}": s for s, n in sizes.items() for i in range(n)}
    # Rounding (or flooring) each stratum on its own, as the published sampler did, loses cases:
    total = len(pop)
    assert sum(round(201 * n / total) for n in sizes.values()) == 200
    assert sum(201 * n // total for n in sizes.values()) < 200
    got = plan.review_sample(pop)
    assert got["n"] == 201 and len(set(got["case_ids"])) == 201
    assert got["allocation"] == dict(
        zip(sorted(sizes), largest_remainder([sizes[s] for s in sorted(sizes)], 201), strict=True)
    )
    assert Counter(pop[c] for c in got["case_ids"]) == {
        k: v for k, v in got["allocation"].items() if v
    }
    assert plan.review_sample(pop) == got
    assert plan.review_sample(pop, seed=1)["case_ids"] != got["case_ids"]
    small = {f"x{i}": "a" if i % 3 else "b" for i in range(50)}
    assert plan.review_sample(small)["n"] == 50


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_regrade_cli_reproduces_the_published_v11_scorer() -> None:
    fixture = shared_fixture("kantesti-v11", V11) / V11
    proc = _cli(
        "regrade",
        "bloodpanel",
        "--profile",
        "kantesti-v11",
        "--format",
        "kantesti",
        str(fixture),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert round(doc["aggregate"]["composite"], 4) == 0.9522
    assert round(doc["aggregate"]["structural"], 4) == 0.9951
    assert round(doc["aggregate"]["clinical"], 4) == 0.9283
    assert len(doc["cases"]) == 15 and doc["aggregate"]["trap_flags_fired"] == 10
    cases = {c["case_id"]: c for c in doc["cases"]}
    assert cases["BT-015-HEALTHY"]["composite"] == 0.739
    assert cases["BT-002-HASH"]["engine_path"] == "fallback"
    sealed = _cli(
        "regrade",
        "bloodpanel",
        "--profile",
        "sealed",
        "--format",
        "kantesti",
        str(fixture),
        "--json",
    )
    assert sealed.returncode == 0
    assert round(json.loads(sealed.stdout)["aggregate"]["composite"], 4) == 0.9879
    text = _cli(
        "regrade", "bloodpanel", "--profile", "kantesti-v11", "--format", "kantesti", str(fixture)
    )
    assert text.returncode == 0 and "composite 0.9522" in text.stdout


@pytest.mark.parametrize("content", ["not json", '{"cases": 3}', "[1, 2]", None])
def test_regrade_cli_bad_file_is_one_line_exit_2(tmp_path: Path, content: str | None) -> None:
    f = tmp_path / "run.json"
    if content is not None:
        f.write_text(content)
    proc = _cli("regrade", "bloodpanel", "--profile", "sealed", "--format", "kantesti", str(f))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("sealedeval: error:")
    assert str(f) in proc.stderr


def test_an_engine_with_only_errors_is_reported_not_dropped(suite: BloodpanelSuite) -> None:
    c = cfg(synthetic_n=0, engines=["local"])
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    rows = [
        _row(q, status="error", kind="timeout")
        for q in suite.requests(
            RequestContext(cfg=c, items=items, engine=c.engine("local"), model="m", seed=SEED)
        )
    ]
    a = json.loads(dumps(_analysis(suite, c, rows)))
    h = a["engines"]["local"]["profiles"]["sealed"]["headline"]
    assert (h["n_total"], h["n_ok"], h["n_error"]) == (15, 0, 15)
    assert h["composite"]["mean"] is None  # no completed answer: undefined, not 0
    assert h["composite_errors_as_zero"]["mean"] == 0.0
    md = bloodpanel_md.render({"analysis": a})
    assert "| local | m | sealed (headline) | 15 | 0/15 (15 err) | n/a |" in md
    assert "timeout 15" in md and "INCOMPLETE" in md


def test_raw_newlines_inside_strings_still_parse() -> None:
    # Seen from the embedded model: llama.cpp's JSON grammar admits a raw newline in a string.
    assert prompts.parse_report('{"introduction": {"introduction_summary": ["a\nb"]}}') == {
        "introduction": {"introduction_summary": ["a\nb"]}
    }


def test_request_keys_are_those_planned_before_capabilities(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planning from capabilities instead of kind names changed no request key, for any kind
    (the PDF engine's attachment is not in its key): sha256 of each engine's keys as the
    pre-redesign suite planned them (``fixtures/pre_redesign.json``). Those keys predate
    locale rendering (``locales``), which changes the prompt of every case whose label is not
    rendered as English with conventional units by design; every label is rendered the old way
    here, so the comparison is of the planning alone."""
    import hashlib

    from sealedeval.suites.bloodpanel import locales

    legacy = locales.locale_of(UNKNOWN_LABEL)
    monkeypatch.setattr(locales, "locale_of", lambda label: legacy)

    expected = json.loads(
        (Path(__file__).resolve().parent / "fixtures/pre_redesign.json").read_text("utf-8")
    )["request_keys_sha256"]
    engines = {
        "loc": {"kind": "local", "model": "m.gguf"},
        "ref": {"kind": "reference", "model": "reference"},
        "oa": {"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "gpt-x"},
        "kt": {"kind": "kantesti", "base_url": "http://127.0.0.1:9", "model": "kantesti-v11"},
    }
    bp = {
        "engines": list(engines),
        "synthetic_n": 20,
        "repeats": 2,
        "temperature": 0.0,
        "max_tokens": 1024,
    }
    c = load_config(ROOT, [], overrides={"engines": engines, "suites": {"bloodpanel": bp}})
    s = BloodpanelSuite()
    items = s.generate(GenerateContext(cfg=c, seed=SEED))
    got = {}
    for name, e in engines.items():
        reqs = s.requests(
            RequestContext(cfg=c, items=items, engine=c.engine(name), model=e["model"], seed=SEED)
        )
        got[name] = hashlib.sha256("\n".join(r.request_key for r in reqs).encode()).hexdigest()
        assert all(bool(r.attachments) == (name == "kt") for r in reqs)
    assert got == expected


def test_analysis_source_is_the_same_from_items_read_back(suite: BloodpanelSuite) -> None:
    """The stages hand analyze items read back from the items file (canonical JSON), often in a
    process that never generated them: the source description must not change."""
    c = cfg(limit=4)
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    again = json.loads(dumps(items))
    fresh = BloodpanelSuite()
    assert (
        fresh._source_for(c, again)
        == suite.source()
        == {
            "kind": "builtin",
            "curated": 4,
            "synthetic_n": 40,
            "synthetic_seed": derive_seed(SEED, "synthetic") % 2**63,
        }
    )
    assert BloodpanelSuite()._source_for(cfg(curated=False), again)["kind"] == "builtin"


def test_analysis_lists_typed_metrics(suite: BloodpanelSuite) -> None:
    from sealedeval.stats.metrics import sort_metrics, validate_metrics

    c = cfg(synthetic_n=0, repeats=1)
    items = suite.generate(GenerateContext(cfg=c, seed=SEED))
    rows = []
    for eng in ("local", "reference"):
        for q in suite.requests(
            RequestContext(cfg=c, items=items, engine=c.engine(eng), model="m", seed=SEED)
        ):
            r = _row(q, text=suite.reference_answer(q)) | {"engine": eng}
            if eng == "local" and q.item["case_id"] in ("BT-002-HASH", "BT-014-GILBERT"):
                r |= {"status": "error", "error_kind": "timeout", "output_text": ""}
            if eng == "local" and q.item["case_id"] == "BT-015-HEALTHY":
                r["output_text"] = "The patient has anemia."
            rows.append(r)
    a = _analysis(suite, c, rows)
    ms = validate_metrics(a["metrics"], "bloodpanel")
    assert ms == sort_metrics(ms)
    by = {(m["metric"], tuple(sorted(m["groups"].items()))): m for m in ms}

    def get(name: str, **groups: str) -> Any:
        return by[name, tuple(sorted(groups.items()))]

    for eng in ("local", "reference"):
        for prof in ("sealed", "kantesti-v11"):
            h = a["engines"][eng]["profiles"][prof]["headline"]
            comp = get("composite", engine=eng, profile=prof)
            assert (comp["estimate"], comp["lo"], comp["hi"]) == (
                h["composite"]["mean"],
                h["composite"]["lo"],
                h["composite"]["hi"],
            )
            assert comp["method"] == plan.HEADLINE_METHOD and comp["unit"] == "case"
            assert (comp["n_total"], comp["n_ok"], comp["n_error"]) == (
                h["n_total"],
                h["n_ok"],
                h["n_error"],
            )
            for name in ("structural", "clinical", "latency", "composite_errors_as_zero"):
                assert get(name, engine=eng, profile=prof)["estimate"] == h[name]["mean"]
            trap = get("trap_flag_rate", engine=eng, profile=prof)
            od = h["traps"]["overdiagnosis"]
            assert trap["method"] == "wilson" and trap["n_ok"] == od["n"]
            assert (trap["lo"], trap["hi"]) == (od["lo"], od["hi"])
    # local: 2 errors, one of them on a trap case; the other trap case fires a flag.
    trap = get("trap_flag_rate", engine="local", profile="sealed")
    assert (trap["estimate"], trap["n_ok"], trap["n_error"], trap["n_total"]) == (1.0, 1, 1, 2)
    comp = get("composite", engine="local", profile="sealed")
    assert (comp["n_total"], comp["n_ok"], comp["n_error"]) == (15, 13, 2)
    # Per specialty for the headline profile only.
    endo = get(
        "composite_by_specialty", engine="local", profile="sealed", specialty="endocrinology"
    )
    assert (endo["n_total"], endo["n_error"]) == (3, 1)
    # issue #30: 2 completed cases are too few for a bootstrap interval; the record says why
    assert endo["estimate"] is not None and endo["lo"] is None and endo["hi"] is None
    assert endo["note"].startswith("no interval: 2 cases, below the 10")
    assert {m["role"] for m in ms} == {"exploratory"}  # descriptive: no sealed test among them
    assert not any(
        m["metric"] == "composite_by_specialty" and m["groups"]["profile"] == "kantesti-v11"
        for m in ms
    )
