"""``judge``: a model grades each answer under a written rubric, with a JSON verdict.

The judge is an engine named by the config (``engine:``). Its calls are ordinary requests of
that engine, planned by the suite once the answers are stored (a second phase), so the audit
covers them like any raw row; this grader only reads the stored replies the suite hands it as
``item["judge_replies"]`` (one per order, None when that call has no ok row).

* The prompt: the rubric in the system message, then the question, the reference answer (the
  item's target, unless ``reference: false``) and the candidate answer. Replies are asked for as
  ``{"verdict": "PASS" | "FAIL"}`` (``response_format`` for engines declaring ``json_schema``)
  and read with ``graders.judge.parse_verdict``: the contract's field, else the first verdict
  word, else ``UNPARSED``.
* ``swap: true`` judges every answer twice, with the candidate shown last and first: the answer
  passes only if both verdicts are PASS (swap-and-agree; an unparsed or missing verdict never
  passes), and the share of answers whose two verdicts agree is reported (order consistency).
* ``labels:`` a file of human-labelled answers (``item``, ``answer``, ``label`` PASS/FAIL, an
  optional ``id``) the judge also grades, in the first phase; the suite reports agreement and
  Cohen's κ with the human labels, as golden's calibration does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sealedeval.graders.base import Grade
from sealedeval.graders.judge import FAIL, PASS, UNPARSED, parse_verdict
from sealedeval.graders.judge import response_format as _verdict_format
from sealedeval.graders.kinds import Configured, grader_kind, passed
from sealedeval.graders.kinds.text import normalise

ORDERS = ("candidate-last", "candidate-first")
MISSING = "MISSING"
SYSTEM = (
    "You grade one candidate answer to a question under the rubric below. Reply with a JSON "
    'object: {"verdict": "PASS"} if the candidate answer meets the rubric, otherwise '
    '{"verdict": "FAIL"}.'
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["engine"],
    "properties": {
        "engine": {"type": "string", "minLength": 1, "description": "the judging engine"},
        "rubric": {"type": "string", "minLength": 1},
        "rubric_file": {"type": "string", "minLength": 1},
        "reference": {"type": "boolean", "default": True, "description": "show the target"},
        "swap": {"type": "boolean", "default": False},
        "labels": {"type": "string", "minLength": 1, "description": "human-labelled answers"},
        "max_tokens": {"type": "integer", "minimum": 4, "default": 32},
    },
}


def orders(params: Mapping[str, Any]) -> tuple[str, ...]:
    return ORDERS if params.get("swap") else ORDERS[:1]


def messages(
    rubric: str, question: str, reference: str | None, candidate: str, order: str
) -> list[dict[str, str]]:
    """One judge call's messages (the rubric first: a prefix every call of the judge shares)."""
    q = f"Question:\n{question}"
    r = [f"Reference answer:\n{reference}"] if reference is not None else []
    c = f"Candidate answer:\n{candidate}"
    blocks = [q, *r, c] if order == ORDERS[0] else [c, q, *r]
    return [
        {"role": "system", "content": f"{SYSTEM}\n\nRubric:\n{rubric.strip()}"},
        {"role": "user", "content": "\n\n".join(blocks) + "\n\nVerdict:"},
    ]


def params(max_tokens: int, seed: int, *, constrained: bool) -> dict[str, Any]:
    """Greedy; constrained to the verdict contract where the engine supports it."""
    out: dict[str, Any] = {"temperature": 0.0, "max_tokens": max_tokens, "seed": seed}
    if constrained:
        out["response_format"] = _verdict_format("pointwise")
    return out


def reference_verdict(target: Any, candidate: str) -> str:
    """What the ``reference`` engine replies as a judge: PASS when the normalised target occurs
    in the candidate (or there is no target), else FAIL — the deterministic ceiling."""
    if target is None or target == "":
        return PASS
    targets = target if isinstance(target, list) else [target]
    hay = normalise(candidate, punctuation="all")
    for t in targets:
        needle = normalise(str(t), punctuation="all")
        if needle and f" {needle} " in f" {hay} ":
            return PASS
    return FAIL


def combine(verdicts: Sequence[str]) -> tuple[bool, bool | None]:
    """(passed, consistent): PASS only if every order said PASS; consistency is None with one
    order or when an order has no parsed verdict."""
    ok = bool(verdicts) and all(v == PASS for v in verdicts)
    if len(verdicts) < 2 or any(v in (MISSING, UNPARSED) for v in verdicts):
        return ok, None
    return ok, len(set(verdicts)) == 1


def _files(p: Mapping[str, Any]) -> list[str]:
    return [str(p[k]) for k in ("rubric_file", "labels") if p.get(k)]


@grader_kind("judge", "1", SCHEMA, files=_files, sources=("pkg:sealedeval/graders/judge.py",))
def build_judge(p: Mapping[str, Any], root: Path) -> Configured:
    given = [k for k in ("rubric", "rubric_file") if k in p]
    if len(given) != 1:
        raise ValueError("give exactly one of rubric, rubric_file")
    if "rubric" in p:
        rubric = str(p["rubric"])
    else:
        try:
            rubric = (root / str(p["rubric_file"])).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{p['rubric_file']}: cannot read ({e.__class__.__name__})") from None
        if not rubric.strip():
            raise ValueError(f"{p['rubric_file']}: the rubric file is empty")
    shown = orders(p)

    def fn(item: Mapping[str, Any], answer: str) -> Grade:
        replies = list(item.get("judge_replies") or [None] * len(shown))
        verdicts = [MISSING if r is None else parse_verdict(str(r)) for r in replies]
        ok, consistent = combine(verdicts)
        return passed(ok, {"verdicts": verdicts, "orders": list(shown), "consistent": consistent})

    fields = ("target",) if p["reference"] else ()
    return Configured(
        "judge", "1", dict(p), fn, fields=fields, extra={"rubric": rubric, "orders": shown}
    )
