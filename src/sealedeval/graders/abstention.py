"""Abstention detection: "I don't know" is its own category, not a wrong answer.

An answer abstains when it is short of content and carries an explicit refusal cue. The rule is
deliberately conservative (a cue plus no more than ``MAX_WORDS`` words) so that a hedged but
substantive answer is graded on its content:

* an empty answer is not an abstention: saying nothing is a failure to answer, not an "I don't
  know" (version 2; version 1 counted it as one);
* a cue inside a claim does not make the answer an abstention (version 2): the answer is cut
  into clauses (at sentence punctuation, commas, semicolons, dashes and but / although /
  however / ...), and *every* clause must be an abstention clause — a cue with nothing claimed
  before it ("The files do not say", "No information about deploy 19"), a statement that
  something is not given ("no phone number is given"), or filler ("sorry", "based on the
  files"). "unknown" counts only as the clause's predicate ("Unknown.", "The price is unknown"),
  not as an adjective inside a claim ("Deploy 19 failed with an unknown error"). Any guess
  ("probably", "maybe", "I think", "could be") makes it an answer. So "Mira made 4 deploys; the
  exact number is unknown" and "There is no information, but it costs about 5 EUR" are graded
  on their claims, as wrong answers.

Every version-2 abstention is also a version-1 abstention (the fix only removes false ones).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sealedeval.graders.base import Grade, grader

MAX_WORDS = 40
_CUES = re.compile(
    r"(?i)\b(i (do not|don't|cannot|can't) (know|tell|determine|say)|not (mentioned|stated|"
    r"specified|given|available|in the files)|do(es)? not (say|mention|contain|specify|state)|"
    r"no (information|mention|record)|cannot be determined|unknown|"
    r"unable to (determine|answer|find))"
)
_GUESS = re.compile(
    r"(?i)\b(probably|maybe|perhaps|likely|possibly|presumably|i (think|guess|believe|assume|"
    r"suspect)|my (best )?guess|might be|could be|must be)\b"
)
_CLAUSES = re.compile(
    r"[.!?;:]+(?=\s|$)|,|\s[-–—]+\s|\s*\b(?:but|although|though|however|yet|whereas|while|"
    r"except|instead|otherwise)\b",
    re.IGNORECASE,
)
# "not given", "no phone number is listed", "none is recorded": an absence, not a claim
_ABSENT = re.compile(
    r"(?i)\b(no|not|none|nothing|neither|nor)\b.*\b(given|mentioned|listed|stated|provided|"
    r"found|available|included|specified|recorded|shown|known|information|data|details?)\b"
)
_UNKNOWN_PREDICATE = re.compile(r"(?i)^(unknown\b.*|.*\bunknown)$")
_FILLER = frozenset(
    {
        *("sorry", "unfortunately", "afraid", "i'm", "im", "i", "am", "based", "on", "from"),
        *("in", "the", "these", "those", "this", "that", "provided", "given", "context"),
        *("documents", "document", "files", "file", "data", "information", "available"),
        *("so", "far", "as", "can", "tell", "see", "according", "to", "answer", "it", "is"),
        *("there", "a", "an"),
    }
)
_DIGIT = re.compile(r"\d")


def _clause_abstains(clause: str) -> bool:
    """One clause is an abstention clause (see the module docstring)."""
    words = [w.strip("'\"()[]*_`").lower() for w in clause.split()]
    words = [w for w in words if w]
    if not words:
        return True
    if all(w in _FILLER for w in words):
        return True
    for m in _CUES.finditer(clause):
        if m.group(0).lower() == "unknown" and not _UNKNOWN_PREDICATE.match(clause.strip()):
            continue  # "an unknown error": an adjective inside a claim
        if not _DIGIT.search(clause[: m.start()]):  # nothing claimed before the cue
            return True
    absent = _ABSENT.search(clause)
    return absent is not None and not _DIGIT.search(clause[: absent.start()])


def is_abstention(answer: str) -> bool:
    text = answer.strip()
    if not text:
        return False  # an empty answer is a failure, not an abstention
    if not (_CUES.search(text) and len(text.split()) <= MAX_WORDS):
        return False
    if _GUESS.search(text):
        return False
    return all(_clause_abstains(c) for c in _CLAUSES.split(text))


@grader("abstention", "2")
def abstention(item: Mapping[str, Any], answer: str) -> Grade:
    a = is_abstention(answer)
    return Grade(1.0 if a else 0.0, a)
