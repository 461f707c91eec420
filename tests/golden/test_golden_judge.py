"""Judges measured before trusted: verdict parsing, swap-and-agree, calibration statistics, flip
counts and the position / verbosity tests, on hand-made data with known answers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sealedeval.graders import judge as jg
from sealedeval.graders.judge import FAIL, PASS, UNPARSED, PairVerdicts
from sealedeval.plugins import GenerateContext, RequestContext
from sealedeval.suites.golden import judging

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("PASS", PASS),
        (" fail.", FAIL),
        ("Verdict: passed", PASS),
        ("I think it FAILS", FAIL),
        ("PASS or FAIL", PASS),
        ("", UNPARSED),
        ("The answer is correct", UNPARSED),
        ('{"verdict": "FAIL"}', FAIL),  # the JSON contract
        ('{"verdict":"pass"}', PASS),
        ('{"verdict": "FA', UNPARSED),  # a contract cut at max_tokens
        ('{"other": "x"} PASS', PASS),  # not the contract: the text is read
    ],
)
def test_parse_verdict(text: str, want: str) -> None:
    assert jg.parse_verdict(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("A", "A"),
        ("B.", "B"),
        ("Answer B", "B"),
        ("a", UNPARSED),
        ("Both", UNPARSED),
        ("", UNPARSED),
        ('{"choice": "B"}', "B"),
        ('{"choice": "A"}', "A"),
        ('{"choice": "C"}', UNPARSED),
    ],
)
def test_parse_choice(text: str, want: str) -> None:
    assert jg.parse_choice(text) == want


def test_swap_and_agree() -> None:
    # shown (x, y) then (y, x): a win needs the same candidate in both orders
    assert jg.swap_and_agree("A", "B") == "x"
    assert jg.swap_and_agree("B", "A") == "y"
    assert jg.swap_and_agree("A", "A") == "tie"  # always the first slot: disagreement → tie
    assert jg.swap_and_agree("B", "B") == "tie"
    assert jg.swap_and_agree("A", UNPARSED) == "tie"


def test_position_test_of_a_judge_that_always_picks_a() -> None:
    """The seed's judge: FIRST 40/40, order-consistent 0/20 [0.0, 16.1], CORRECT 20/40."""
    pairs = [PairVerdicts(f"p{i:02d}", "A", "A") for i in range(20)]
    t = jg.pair_test(pairs)
    assert (t["picked_first"]["k"], t["picked_first"]["n"]) == (40, 40)
    assert (t["order_consistent"]["k"], t["order_consistent"]["n"]) == (0, 20)
    assert t["order_consistent"]["lo"] == 0.0
    assert t["order_consistent"]["hi"] == pytest.approx(0.161, abs=5e-4)
    assert (t["picked_target"]["k"], t["picked_target"]["n"]) == (20, 40)
    assert t["swap_and_agree"] == {"target_wins": 0, "other_wins": 0, "ties": 20}
    assert t["per_pair"]["p00"] == ["A", "A", "tie"]  # both verdicts kept


def test_position_test_mixed() -> None:
    pairs = [
        PairVerdicts("p1", "A", "B"),  # right both ways
        PairVerdicts("p2", "B", "A"),  # wrong both ways
        PairVerdicts("p3", "A", "A"),  # always first
        PairVerdicts("p4", "A", UNPARSED),
    ]
    t = jg.pair_test(pairs)
    assert t["picked_first"]["k"] == 5  # p1 A, p2 A (second order), p3 A A, p4 A
    assert t["picked_target"]["k"] == 4  # p1 ×2, p3 once, p4 once
    assert t["order_consistent"]["k"] == 2
    assert t["unparsed"] == 1
    assert t["swap_and_agree"] == {"target_wins": 1, "other_wins": 1, "ties": 2}


def test_calibration_matches_the_reference_vector() -> None:
    """2×2 counts (40, 10, 5, 45) → p_o 0.85, κ 0.70 (stats.md)."""
    judge = [PASS] * 40 + [PASS] * 10 + [FAIL] * 5 + [FAIL] * 45
    human = [PASS] * 40 + [FAIL] * 10 + [PASS] * 5 + [FAIL] * 45
    c = jg.calibration(judge, human)
    assert c["agreement"] == pytest.approx(0.85)
    assert c["kappa"] == pytest.approx(0.70)
    assert c["table"] == {
        "judge_pass_human_pass": 40,
        "judge_pass_human_fail": 10,
        "judge_fail_human_pass": 5,
        "judge_fail_human_fail": 45,
    }
    assert (c["judge_pass"]["k"], c["human_pass"]["k"]) == (50, 45)


def test_a_constant_judge_has_no_agreement_beyond_chance() -> None:
    """The seed's judge said PASS 60/60 where the human said 18%: κ = 0, not 'agreement 18%'."""
    human = [PASS] * 11 + [FAIL] * 49
    c = jg.calibration([PASS] * 60, human)
    assert c["judge_pass"]["rate"] == 1.0
    assert c["agreement"] == pytest.approx(11 / 60)
    assert c["kappa"] == pytest.approx(0.0)
    both_constant = jg.calibration([PASS] * 5, [PASS] * 5)
    assert math.isnan(both_constant["kappa"])  # undefined, never a spurious 1.0


def test_unparsed_counts_as_fail_and_is_reported() -> None:
    c = jg.calibration([UNPARSED, PASS], [PASS, PASS])
    assert c["unparsed"] == 1
    assert c["table"]["judge_fail_human_pass"] == 1


def test_flip_counts() -> None:
    a = {"h1": PASS, "h2": PASS, "h3": FAIL, "h4": UNPARSED, "h5": PASS}
    b = {"h1": FAIL, "h2": PASS, "h3": PASS, "h4": FAIL, "h6": PASS}
    assert jg.flips(a, b) == {"n": 4, "flips": 2, "to_pass": 1, "to_fail": 1}


def test_judge_grader_reads_a_stored_verdict() -> None:
    from sealedeval.graders import graders

    g = graders.get("judge")
    assert (g.name, g.version) == ("judge", "1")
    assert g({"judge_output": "PASS"}, "whatever").passed
    res = g({"judge_output": "hmm"}, "whatever")
    assert not res.passed and res.details == {"verdict": UNPARSED}


def _row(cond: str, item: str, text: str, status: str = "ok") -> dict[str, Any]:
    return {
        "condition": cond,
        "item_id": item,
        "output_text": text,
        "status": status,
        "engine": "j",
        "repeat": 0,
    }


def test_judge_analysis_on_hand_made_rows() -> None:
    """The suite's analysis of judge rows: calibration per variant, label-order flips, the
    position test from both stored orders (one errored row drops only its pair)."""
    from sealedeval.suites.golden.items import load_human_labels, load_tasks

    ids = {t["id"] for t in load_tasks(ROOT)}
    labels = load_human_labels(ROOT, ids)["answers"]
    rows = []
    for a in labels:  # v1 agrees with the human; v2 says PASS to everything
        rows.append(_row("judge/calibration/v1", a["id"], a["human"]))
        rows.append(_row("judge/calibration/v2", a["id"], "PASS"))
    for i in range(1, 21):
        rows.append(_row("judge/position/right-first", f"p{i:02d}", "A"))
        rows.append(
            _row("judge/position/right-second", f"p{i:02d}", "A", "error" if i == 20 else "ok")
        )
    out = judging.judge_analysis(ROOT, {}, rows, {})
    cal = out["calibration"]["variants"]
    assert cal["v1"]["kappa"] == pytest.approx(1.0)
    assert cal["v2"]["judge_pass"]["rate"] == 1.0
    n_fail = sum(1 for a in labels if a["human"] == FAIL)
    assert out["calibration"]["flips"]["v1-v2"] == {
        "n": len(labels),
        "flips": n_fail,
        "to_pass": n_fail,
        "to_fail": 0,
        "kind": "label order",
    }
    pos = out["position"]
    assert pos["n_pairs"] == 19 and pos["counts"]["n_error"] == 1
    assert pos["order_consistent"]["k"] == 0
    assert "verbosity" not in out


def test_a_judge_reply_cut_at_max_tokens_is_kept_not_an_error() -> None:
    import asyncio

    from sealedeval.engines.base import EngineError, Request

    calls: list[Request] = []

    async def truncated(req: Request) -> Any:
        calls.append(req)
        raise EngineError(
            "truncated",
            "output hit max_tokens",
            response={"usage": {"prompt_tokens": 1800, "completion_tokens": 6}},
            output_text="The answer is FAIL, because",
        )

    async def refused(req: Request) -> Any:
        raise EngineError("server", "HTTP 500")

    req = Request("k", "golden", "h01", "judge/calibration/v1", 0, 1, (), {})
    res = asyncio.run(judging.judge_call(None, req, truncated))  # type: ignore[arg-type]
    c = res.completion
    assert (c.output_text, c.finish_reason, c.tokens_in, c.tokens_out) == (
        "The answer is FAIL, because",
        "length",
        1800,
        6,
    )
    assert jg.parse_verdict(c.output_text) == FAIL
    with pytest.raises(EngineError):  # anything else is still an engine error
        asyncio.run(judging.judge_call(None, req, refused))  # type: ignore[arg-type]


def test_judge_requests_ask_for_the_verdict_contract() -> None:
    """Every judge call is greedy and constrained to its JSON contract (the verdict or the
    letter), so a small model cannot ramble past it; the reference judge answers in it."""
    import json

    from sealedeval.config import load_config
    from sealedeval.plugins import get_suite

    cfg = load_config(ROOT, ["config/embedded-full.yaml"])
    suite = get_suite("golden")
    items = suite.generate(GenerateContext(cfg=cfg, seed=1))
    reqs = [
        r
        for r in suite.requests(
            RequestContext(cfg=cfg, items=items, engine=cfg.engine("reference"), model="m", seed=1)
        )
        if r.condition.startswith("judge/")
    ]
    kinds = {r.condition.split("/")[1] for r in reqs}
    assert kinds == {"calibration", "position", "verbosity"}
    for r in reqs:
        assert r.params["temperature"] == 0.0 and "stop" not in r.params
        schema = r.params["response_format"]["json_schema"]["schema"]
        key = "verdict" if r.condition.startswith("judge/calibration/") else "choice"
        assert schema["required"] == [key]
        assert schema["properties"][key]["enum"] == (
            [PASS, FAIL] if key == "verdict" else ["A", "B"]
        )
        reply = suite.reference_answer(r)
        assert json.loads(reply) == {key: r.item["reference_reply"]}
        parse = jg.parse_verdict if key == "verdict" else jg.parse_choice
        assert parse(reply) == r.item["reference_reply"]


def test_judge_calls_come_in_prefix_sharing_order() -> None:
    """The server evaluates only what differs from the previous prompt, so judge calls are
    ordered to share long prefixes: calibration answers grouped by task, and per pair the
    four pairwise calls in the order right/wrong, right/padded, padded/right, wrong/right."""
    import itertools

    from sealedeval.config import load_config
    from sealedeval.plugins import get_suite

    def shared_prefix(a: str, b: str) -> str:
        n = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        return a[:n]

    cfg = load_config(ROOT, ["config/embedded-full.yaml"])
    suite = get_suite("golden")
    reqs = [
        r
        for r in suite.requests(
            RequestContext(
                cfg=cfg,
                items=suite.generate(GenerateContext(cfg=cfg, seed=1)),
                engine=cfg.engine("local"),
                model="m",
                seed=1,
            )
        )
        if r.condition.startswith("judge/")
    ]
    cal = [r for r in reqs if r.condition == "judge/calibration/v1"]
    tasks = [r.item["task"] for r in cal]
    assert tasks == sorted(tasks) and len(set(tasks)) == 20  # three answers per task in a row
    pair_calls = [r for r in reqs if not r.condition.startswith("judge/calibration/")]
    assert [r.condition.split("/", 1)[1] for r in pair_calls[:4]] == [
        "position/right-first",
        "verbosity/padded-second",
        "verbosity/padded-first",
        "position/right-second",
    ]
    assert {r.item_id for r in pair_calls[:4]} == {"p01"}
    for prev, cur in itertools.pairwise(pair_calls):
        if prev.item_id != cur.item_id:
            continue
        shared = shared_prefix(prev.messages[1]["content"], cur.messages[1]["content"])
        assert shared.startswith("Question: ") and "\nAnswer A: " in shared, cur.condition


def test_ppi_corrects_the_judge_transcript_rate_with_the_human_labels() -> None:
    """A judge (transcript variant v1) that says PASS to every labelled answer whose id number
    is divisible by 3: its calibration errors, measured on the labels, correct its transcript
    PASS rate (PPI: judge mean − mean(judge − human), written out here)."""
    from sealedeval.suites.golden import plan
    from sealedeval.suites.golden.items import load_human_labels, load_tasks

    ids = {t["id"] for t in load_tasks(ROOT)}
    labels = sorted(load_human_labels(ROOT, ids)["answers"], key=lambda a: a["id"])

    def says(a: dict[str, Any]) -> str:
        return PASS if int(a["id"][1:]) % 3 == 0 else a["human"]

    rows = [_row("judge/calibration/v1", a["id"], f'{{"verdict": "{says(a)}"}}') for a in labels]
    rows.append(_row("judge/calibration/v2", "h01", "PASS"))  # another variant: not used
    human, judge = judging.calibration_labels(ROOT, rows)
    assert len(human) == len(judge) == len(labels)
    assert human == [1.0 if a["human"] == PASS else 0.0 for a in labels]
    assert judge == [1.0 if says(a) == PASS else 0.0 for a in labels]
    # 12 transcripts, 7 judged PASS by the judge, graded beside the regex grader
    main = [{"request_key": f"k{i}"} for i in range(12)]
    graded = [
        {"request_key": f"k{i}", "grader": g, "passed": i < 7}
        for i in range(12)
        for g in ("judge", "regex")
    ]
    col = plan.judge_column(main, graded, (human, judge))
    p = col["ppi"]
    h, j = np.array(human), np.array(judge)
    assert col["pass"]["rate"] == pytest.approx(7 / 12) == p["judge"]["estimate"]
    assert p["ppi"]["estimate"] == pytest.approx(7 / 12 - (j - h).mean())
    assert p["ppi"]["estimate"] < 7 / 12  # the judge over-passes; the correction lowers it
    assert p["classical"]["estimate"] == pytest.approx(h.mean())
    assert (p["n_labelled"], p["n_unlabelled"]) == (len(labels), 12)
    assert "not a random draw" in p["assumption"]
    assert p["lam"] == 1.0 and p["ppi_pp"] == p["ppi"]  # golden: plain PPI, not PPI++
    # without labels, or with one, no correction is claimed
    assert "ppi" not in plan.judge_column(main, graded)
    assert "ppi" not in plan.judge_column(main, graded, ([1.0], [1.0]))
