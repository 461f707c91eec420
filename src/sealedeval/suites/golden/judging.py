"""Golden judges: the requests that measure a judge, and the analysis of their verdicts.

Any engine can judge (``judge.engines``); its judge calls are ordinary requests in its own raw
runs, under their own conditions:

* ``judge/calibration/{v}`` — prompt variant ``v`` on each of the 60 human-labelled answers
  (``data/golden/human_labels.yaml``): PASS rate vs the human rate, agreement, Cohen's κ, and
  the verdicts that flip between variants that differ only in label order;
* ``judge/position/right-first|right-second`` — 20 pairs, one clearly right and one clearly
  wrong answer, in both orders: picked first, order-consistent (Wilson), picked correct, and the
  swap-and-agree outcome (both verdicts stored as two rows);
* ``judge/verbosity/padded-first|padded-second`` — the same right answer with and without 36
  empty words, both orders; reported only beside the position result, which decides whether it
  can be read at all;
* ``judge/transcript/{condition}`` — phase 2: the judge grades this engine's own ``{B}/main``
  transcripts (the ``judge`` grader column beside exact / regex / facts).

The reference engine as a judge replies with the human label / the right letter: the ceiling
that shows the statistics can report a perfect judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.errors import UserError
from sealedeval.graders import graders
from sealedeval.graders import judge as jg
from sealedeval.keys import derive_seed
from sealedeval.run.solvers import CallFn, SolveResult, solvers
from sealedeval.suites.golden import prompts
from sealedeval.suites.golden.design import make_request
from sealedeval.suites.golden.items import (
    load_human_labels,
    load_judge_pairs,
    load_judge_prompts,
    load_tasks,
)

ORDERS = {
    "position": ("right-first", "right-second"),
    "verbosity": ("padded-first", "padded-second"),
}


def _params(jc: Mapping[str, Any], seed: int, kind: str) -> dict[str, Any]:
    """Greedy, and constrained to the verdict contract (``graders/judge.py``): no stop string,
    since the JSON grammar may place a newline before the closing brace."""
    return {
        "temperature": 0.0,
        "max_tokens": int(jc.get("max_tokens", 16)),
        "seed": seed,
        "response_format": jg.response_format(kind),
    }


@solvers.register("judge_call")
async def judge_call(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """One judge call. A verdict is read from the start of the reply, so a reply cut at
    ``max_tokens`` ("The answer is FAIL, bec…") is kept as the judge's output with
    ``finish_reason: length`` — the judge rambling is its behaviour, not an infrastructure
    error. Every other engine error propagates (and is retried) as for any call."""
    try:
        return SolveResult(await call(request))
    except EngineError as e:
        if e.kind != "truncated":
            raise
        usage = e.response.get("usage") or {}
        msg = {"role": "assistant", "content": e.output_text}
        comp = Completion(
            e.output_text,
            e.response,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            "length",
            message=msg,
        )
        return SolveResult(comp)


def judge_requests(
    root: Path,
    scfg: Mapping[str, Any],
    engine: EngineConfig,
    model: str,
    tasks: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
    suite_seed: int,
) -> list[Request]:
    """Calibration, position and verbosity requests, grouped by prompt (cache-friendly order).
    With ``limit`` set, only answers and pairs of the tasks in use are judged."""
    jc = scfg.get("judge") or {}
    if engine.name not in (jc.get("engines") or []):
        return []
    pr = load_judge_prompts(root)
    ctx = prompts.judge_context(files)
    all_ids = _all_task_ids(root)
    out: list[Request] = []

    def add(
        item_id: str, cond: str, msgs: list[dict[str, str]], item: dict[str, Any], kind: str
    ) -> None:
        seed = derive_seed(suite_seed, cond, item_id) % (2**31)
        out.append(
            make_request(
                engine,
                model,
                item_id,
                cond,
                0,
                seed,
                msgs,
                _params(jc, seed, kind),
                item,
                solver="judge_call",
            )
        )

    if jc.get("calibration", True):
        labels = load_human_labels(root, all_ids)["answers"]
        for v in jc.get("variants") or list(pr["pointwise"]):
            if v not in pr["pointwise"]:
                raise UserError(f"suites.golden.judge.variants: unknown variant {v!r}")
            # grouped by task: consecutive calls share the question and reference too
            for a in sorted(labels, key=lambda a: (a["task"], a["id"])):
                if a["task"] not in tasks:
                    continue
                t = tasks[a["task"]]
                msgs = jg.pointwise_messages(
                    ctx, pr["pointwise"][v], t["prompt"], t["answer"], a["answer"]
                )
                add(
                    a["id"],
                    f"judge/calibration/{v}",
                    msgs,
                    {"id": a["id"], "task": a["task"], "reference_reply": a["human"]},
                    "pointwise",
                )
    pairs = [p for p in load_judge_pairs(root, all_ids) if p["task"] in tasks]
    tests = [t for t in ("position", "verbosity") if jc.get(t, True)]
    # A profile may run the verbosity test on the first N pairs only (the position test, which
    # decides whether the verbosity result can be read at all, always runs on every pair).
    n_verbosity = jc.get("verbosity_pairs")
    verbose_ids = {p["id"] for p in pairs[: int(n_verbosity) if n_verbosity else len(pairs)]}
    for p in pairs:
        t = tasks[p["task"]]
        right, wrong, padded = p["right"], p["wrong"], f"{p['right']} {pr['pad']}"
        # Per pair, in an order where each prompt shares the longest prefix with the one before
        # (A = right / B = wrong, then A = right / B = padded, A = padded / B = right, then
        # A = wrong): the server evaluates only what differs. The reference judge picks the
        # right answer, and the concise one when both are right.
        calls = {
            "position": [("right-first", right, wrong, "A"), ("right-second", wrong, right, "B")],
            "verbosity": [
                ("padded-second", right, padded, "A"),
                ("padded-first", padded, right, "B"),
            ],
        }
        ordered = [
            ("position", *calls["position"][0]),
            *(("verbosity", *c) for c in calls["verbosity"]),
            ("position", *calls["position"][1]),
        ]
        for test, order, a, b, ref in ordered:
            if test not in tests or (test == "verbosity" and p["id"] not in verbose_ids):
                continue
            msgs = jg.pairwise_messages(ctx, pr["pairwise"], t["prompt"], a, b)
            add(
                p["id"],
                f"judge/{test}/{order}",
                msgs,
                {"id": p["id"], "task": p["task"], "reference_reply": ref},
                "pairwise",
            )
    return out


def _all_task_ids(root: Path) -> set[str]:
    return {t["id"] for t in load_tasks(root)}


def transcript_requests(
    root: Path,
    scfg: Mapping[str, Any],
    engine: EngineConfig,
    model: str,
    tasks: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
    suite_seed: int,
    rows: Sequence[Mapping[str, Any]],
) -> list[Request]:
    """Phase 2: the judge grades this engine's own ``{B}/main`` answers (ok rows only)."""
    jc = scfg.get("judge") or {}
    wanted = {f"{b}/main" for b in jc.get("transcripts") or []}
    if engine.name not in (jc.get("engines") or []) or not wanted:
        return []
    pr = load_judge_prompts(root)
    v = pr["transcript_variant"]
    ctx = prompts.judge_context(files)
    regex = graders.get("regex")
    out = []
    for r in sorted(rows, key=lambda r: (r["condition"], r["item_id"], int(r["repeat"]))):
        if r["engine"] != engine.name or r["status"] != "ok" or r["condition"] not in wanted:
            continue
        t = tasks.get(r["item_id"])
        if t is None:
            continue
        answer = r["output_text"] or ""
        cond = f"judge/transcript/{r['condition']}"
        seed = derive_seed(suite_seed, cond, r["item_id"], r["repeat"]) % (2**31)
        msgs = jg.pointwise_messages(ctx, pr["pointwise"][v], t["prompt"], t["answer"], answer)
        ref = "PASS" if regex(t, answer).passed else "FAIL"
        out.append(
            make_request(
                engine,
                model,
                r["item_id"],
                cond,
                int(r["repeat"]),
                seed,
                msgs,
                _params(jc, seed, "pointwise"),
                {"id": t["id"], "reference_reply": ref},
                solver="judge_call",
            )
        )
    return out


# -- analysis ------------------------------------------------------------------------------------


def _ok(rows: Sequence[Mapping[str, Any]], cond: str) -> dict[str, str]:
    return {
        r["item_id"]: r["output_text"] or ""
        for r in rows
        if r["condition"] == cond and r["status"] == "ok"
    }


def _count(rows: Sequence[Mapping[str, Any]], prefix: str) -> dict[str, int]:
    mine = [r for r in rows if r["condition"].startswith(prefix)]
    err = sum(1 for r in mine if r["status"] != "ok")
    return {"n_total": len(mine), "n_ok": len(mine) - err, "n_error": err}


def judge_analysis(
    root: Path,
    scfg: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    tasks: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Calibration, variant flips, position and verbosity tests of one judge engine."""
    jrows = [r for r in rows if r["condition"].startswith("judge/")]
    if not jrows:
        return {}
    pr = load_judge_prompts(root)
    out: dict[str, Any] = {"counts": _count(jrows, "judge/")}
    labels = load_human_labels(root, _all_task_ids(root))
    human = {a["id"]: a["human"] for a in labels["answers"]}
    verdicts: dict[str, dict[str, str]] = {}
    for v in pr["pointwise"]:
        got = _ok(jrows, f"judge/calibration/{v}")
        if got:
            verdicts[v] = {k: jg.parse_verdict(t) for k, t in got.items()}
    if verdicts:
        cal = {}
        for v, vd in sorted(verdicts.items()):
            ids = sorted(set(vd) & set(human))
            cal[v] = jg.calibration([vd[i] for i in ids], [human[i] for i in ids])
        flips = {}
        for a, b in pr["label_order_pairs"]:
            if a in verdicts and b in verdicts:
                flips[f"{a}-{b}"] = jg.flips(verdicts[a], verdicts[b]) | {"kind": "label order"}
        firsts = [p[0] for p in pr["label_order_pairs"] if p[0] in verdicts]
        for a, b in itertools.pairwise(firsts):
            flips[f"{a}-{b}"] = jg.flips(verdicts[a], verdicts[b]) | {"kind": "phrasing"}
        out["calibration"] = {
            "rule": labels["rule"],
            "variants": cal,
            "flips": flips,
            "counts": _count(jrows, "judge/calibration/"),
        }
    for test, (first, second) in ORDERS.items():
        a, b = _ok(jrows, f"judge/{test}/{first}"), _ok(jrows, f"judge/{test}/{second}")
        ids = sorted(set(a) & set(b))
        if ids:
            pairs = [jg.PairVerdicts(i, jg.parse_choice(a[i]), jg.parse_choice(b[i])) for i in ids]
            out[test] = jg.pair_test(pairs) | {"counts": _count(jrows, f"judge/{test}/")}
    return out


def calibration_labels(
    root: Path, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[float], list[float]]:
    """``(human, judge)`` as aligned 0/1 lists on the labelled answers the transcript variant
    judged (sorted by answer id): the labelled half of the prediction-powered correction of the
    judge's transcript PASS rate (``plan.judge_column``). Empty when that variant did not run."""
    variant = load_judge_prompts(root)["transcript_variant"]
    got = _ok(rows, f"judge/calibration/{variant}")
    if not got:
        return [], []
    human = {a["id"]: a["human"] for a in load_human_labels(root, _all_task_ids(root))["answers"]}
    ids = sorted(set(got) & set(human))
    h = [1.0 if jg.binary(human[i]) == jg.PASS else 0.0 for i in ids]
    j = [1.0 if jg.binary(jg.parse_verdict(got[i])) == jg.PASS else 0.0 for i in ids]
    return h, j


def transcript_verdicts(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], str]:
    """(answer condition, item, repeat) → the judge's raw reply, from ``judge/transcript/*``."""
    out = {}
    for r in rows:
        if r["condition"].startswith("judge/transcript/") and r["status"] == "ok":
            cond = r["condition"].removeprefix("judge/transcript/")
            out[(cond, r["item_id"], int(r["repeat"]))] = r["output_text"] or ""
    return out
