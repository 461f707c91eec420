"""Exact match: byte-equal to the reference after stripping outer whitespace.

Kept on purpose although it mostly measures formatting: reporting it next to the regex grader
shows how much of a score is the grader, not the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sealedeval.graders.base import Grade, grader


@grader("exact", "1")
def exact(item: Mapping[str, Any], answer: str) -> Grade:
    ok = answer.strip() == str(item["answer"]).strip()
    return Grade(1.0 if ok else 0.0, ok)
