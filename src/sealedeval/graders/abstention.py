"""Abstention detection: "I don't know" is its own category, not a wrong answer.

An answer abstains when it is short of content and carries an explicit refusal cue. The rule is
deliberately conservative (a cue plus no more than ``MAX_WORDS`` words) so that a hedged but
substantive answer is graded on its content.
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


def is_abstention(answer: str) -> bool:
    text = answer.strip()
    if not text:
        return True
    return bool(_CUES.search(text)) and len(text.split()) <= MAX_WORDS


@grader("abstention", "1")
def abstention(item: Mapping[str, Any], answer: str) -> Grade:
    a = is_abstention(answer)
    return Grade(1.0 if a else 0.0, a)
