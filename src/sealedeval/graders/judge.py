"""Model judges, and the statistics that measure a judge before anyone trusts it.

A judge is any engine asked, through an ordinary request, to grade. Two forms:

* **pointwise** — one candidate answer → ``PASS`` / ``FAIL`` under a written rule;
* **pairwise** — two candidates, labelled A and B → the letter of the better one.

Judge verdicts are raw rows like any other engine output (so the audit covers them); the
``judge`` grader below only parses a stored verdict. Unparseable replies are kept as
``UNPARSED`` and counted; where a binary label is needed they count as ``FAIL`` (a judge that did
not say PASS has not passed anything).

Pairwise verdicts are only used with **swap-and-agree** (MT-Bench): each pair is judged in both
orders, both verdicts are stored, and a candidate wins only if it is picked in both orders;
otherwise the pair is a tie. Position bias is measured first (the position test) because every
other pairwise measurement — verbosity bias included — is uninterpretable while it is present:
a judge that always picks A scores 50% on any balanced pairing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sealedeval import stats
from sealedeval.graders.base import Grade, grader
from sealedeval.graders.jsonparse import loads_object

PASS, FAIL, UNPARSED = "PASS", "FAIL", "UNPARSED"
_VERDICT = re.compile(r"\b(PASS|FAIL)(?:ED|ES|S)?\b", re.IGNORECASE)
_CHOICE = re.compile(r"\b([AB])\b")


# The verdict contracts. Judge calls ask for them with ``response_format`` (a server that
# supports it turns the schema into a grammar: a small model then cannot ramble past the
# verdict, and its one free choice is the label); replies of servers that ignore it are still
# read from the text.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": [PASS, FAIL]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
CHOICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
    "required": ["choice"],
    "additionalProperties": False,
}


def response_format(kind: str) -> dict[str, Any]:
    """The OpenAI ``response_format`` of a ``pointwise`` or ``pairwise`` judge call."""
    schema = {"pointwise": VERDICT_SCHEMA, "pairwise": CHOICE_SCHEMA}[kind]
    name = "judge_verdict" if kind == "pointwise" else "judge_choice"
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def _json_field(text: str, key: str) -> str | None:
    """The contract's string field when the whole reply is one JSON object, else None."""
    doc = loads_object(text)
    v = doc.get(key) if doc is not None else None
    return v if isinstance(v, str) else None


def parse_verdict(text: str) -> str:
    """``PASS`` / ``FAIL``: the contract's ``verdict`` field, else the first verdict word in the
    reply, else ``UNPARSED``."""
    v = _json_field(text, "verdict")
    if v is not None and v.upper() in (PASS, FAIL):
        return v.upper()
    m = _VERDICT.search(text or "")
    return m.group(1).upper() if m else UNPARSED


def parse_choice(text: str) -> str:
    """``A`` / ``B``: the contract's ``choice`` field, else the first standalone capital letter
    A or B, else ``UNPARSED``."""
    v = _json_field(text, "choice")
    if v in ("A", "B"):
        return v
    m = _CHOICE.search(text or "")
    return m.group(1) if m else UNPARSED


def binary(verdict: str) -> str:
    """The label used for agreement statistics: anything but PASS is FAIL."""
    return PASS if verdict == PASS else FAIL


@grader("judge", "1")
def judge(item: Mapping[str, Any], answer: str) -> Grade:
    """Grade from a stored pointwise judge reply (``item['judge_output']``), not from a call."""
    verdict = parse_verdict(str(item.get("judge_output", "")))
    ok = verdict == PASS
    return Grade(1.0 if ok else 0.0, ok, {"verdict": verdict})


# -- prompts -------------------------------------------------------------------------------------


def pointwise_messages(
    context: str, instructions: str, question: str, reference: str, candidate: str
) -> list[dict[str, str]]:
    """Shared context (the files) first, so a server's prompt cache reuses it across calls."""
    return [
        {"role": "system", "content": f"{context}\n\n{instructions.strip()}"},
        {
            "role": "user",
            "content": (
                f"Question: {question}\nReference answer: {reference}\n"
                f"Candidate answer: {candidate}\nVerdict:"
            ),
        },
    ]


def pairwise_messages(
    context: str, instructions: str, question: str, first: str, second: str
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": f"{context}\n\n{instructions.strip()}"},
        {
            "role": "user",
            "content": (
                f"Question: {question}\nAnswer A: {first}\nAnswer B: {second}\n"
                "Which answer is correct? Reply with one letter, A or B."
            ),
        },
    ]


# -- swap-and-agree ----------------------------------------------------------------------------


def picked(choice: str, first: str, second: str) -> str | None:
    """Which candidate id a letter points at, given the order shown; None if unparsed."""
    return first if choice == "A" else second if choice == "B" else None


def swap_and_agree(choice_xy: str, choice_yx: str, x: str = "x", y: str = "y") -> str:
    """Winner of a pair judged twice: shown (x, y), then (y, x). Both must pick the same
    candidate, else ``"tie"`` (an unparsed verdict is never a win)."""
    a = picked(choice_xy, x, y)
    b = picked(choice_yx, y, x)
    return a if a is not None and a == b else "tie"


# -- statistics --------------------------------------------------------------------------------


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else math.nan, "lo": lo, "hi": hi}


def calibration(judge_verdicts: Sequence[str], human_labels: Sequence[str]) -> dict[str, Any]:
    """Judge vs human on the same answers: PASS rates, the 2×2 table, agreement and Cohen's κ.

    A judge that says PASS to everything has κ = nan (no variance) or 0, never a high number,
    however high its raw agreement on a PASS-heavy set.
    """
    if len(judge_verdicts) != len(human_labels):
        raise ValueError("judge verdicts and human labels must be aligned")
    j = [binary(v) for v in judge_verdicts]
    h = [binary(v) for v in human_labels]
    n = len(j)
    table = {
        f"judge_{a.lower()}_human_{b.lower()}": sum(
            1 for x, y in zip(j, h, strict=True) if (x, y) == (a, b)
        )
        for a in (PASS, FAIL)
        for b in (PASS, FAIL)
    }
    return {
        "n": n,
        "judge_pass": _rate(j.count(PASS), n),
        "human_pass": _rate(h.count(PASS), n),
        "unparsed": sum(1 for v in judge_verdicts if v == UNPARSED),
        "table": table,
        "agreement": stats.agreement(j, h),
        "kappa": stats.cohen_kappa(j, h),
    }


def flips(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, int]:
    """How many verdicts change between two prompt variants on the same answers (binary labels;
    ``to_pass`` / ``to_fail`` give the direction from ``a`` to ``b``)."""
    common = sorted(set(a) & set(b))
    ch = [(binary(a[k]), binary(b[k])) for k in common if binary(a[k]) != binary(b[k])]
    return {
        "n": len(common),
        "flips": len(ch),
        "to_pass": sum(1 for _, y in ch if y == PASS),
        "to_fail": sum(1 for _, y in ch if y == FAIL),
    }


@dataclass(frozen=True)
class PairVerdicts:
    """One pair judged in both orders. ``target`` is the candidate under test (the right answer
    in the position test, the padded copy in the verbosity test): ``choice_target_first`` is the
    reply when it was shown as A, ``choice_target_second`` when shown as B."""

    pair_id: str
    choice_target_first: str
    choice_target_second: str


def pair_test(pairs: Sequence[PairVerdicts]) -> dict[str, Any]:
    """Position/verbosity test on pairs judged in both orders.

    * picked FIRST: replies ``A`` out of 2·n;
    * picked TARGET: replies that point at the target candidate out of 2·n (the right answer in
      the position test; the padded copy in the verbosity test);
    * order-consistent: pairs where both orders point at the same candidate, of n (Wilson);
    * swap-and-agree: target wins / other wins / ties.
    """
    n = len(pairs)
    first = sum((p.choice_target_first == "A") + (p.choice_target_second == "A") for p in pairs)
    target = sum((p.choice_target_first == "A") + (p.choice_target_second == "B") for p in pairs)
    unparsed = sum(
        (p.choice_target_first == UNPARSED) + (p.choice_target_second == UNPARSED) for p in pairs
    )
    outcomes = [
        swap_and_agree(p.choice_target_first, p.choice_target_second, "target", "other")
        for p in pairs
    ]
    consistent = sum(1 for o in outcomes if o != "tie")
    return {
        "n_pairs": n,
        "n_verdicts": 2 * n,
        "picked_first": _rate(first, 2 * n),
        "picked_target": _rate(target, 2 * n),
        "order_consistent": _rate(consistent, n),
        "unparsed": unparsed,
        "swap_and_agree": {
            "target_wins": outcomes.count("target"),
            "other_wins": outcomes.count("other"),
            "ties": outcomes.count("tie"),
        },
        "per_pair": {
            p.pair_id: [p.choice_target_first, p.choice_target_second, o]
            for p, o in zip(pairs, outcomes, strict=True)
        },
    }
