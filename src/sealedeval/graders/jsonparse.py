"""Finding the JSON object in an engine's answer: the one implementation every grader shares.

Three graders read JSON out of model output: the grounding contract (every track), bloodpanel's
report parser and the judge's verdict/choice contract. They differ in how forgiving they are,
by design and under their seals — grounding reports *how* it found the object (fenced, extra
text, repaired), bloodpanel accepts raw control characters inside strings (llama.cpp's grammar
lets a small model write them), the judge takes the reply only when it is one object — but
decoding, fence and brace matching and repair live here once. ``extract_json_object`` is the
full search; ``loads_object`` and ``fenced_blocks`` are the pieces the stricter readers use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


def loads_object(text: str, *, strict: bool = True) -> dict[str, Any] | None:
    """``text`` decoded when it is exactly one JSON object, else None (never raises).

    ``strict=False`` accepts raw control characters (a newline, a tab) inside strings.
    """
    try:
        value = json.loads(text, strict=strict)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def fenced_blocks(text: str, languages: str = r"[a-zA-Z]*") -> list[str]:
    """The bodies of Markdown code fences (```lang ... ```), in order; ``languages`` is the
    pattern of language tags a fence may carry (anything else stays part of the body)."""
    return [m.group(1) for m in re.finditer(rf"```(?:{languages})\s*\n?(.*?)```", text, re.DOTALL)]


@dataclass(frozen=True)
class ParseResult:
    """Outcome of looking for one JSON object in raw model output.

    Attributes:
        ok: A JSON object was decoded.
        data: The decoded object (None when ``ok`` is False).
        error: Why nothing was decoded.
        fenced: The object sat inside a Markdown code fence.
        extra_text: There was text before or after the object.
        repaired: A trailing comma or a missing closing brace/quote had to be fixed.
    """

    ok: bool
    data: dict[str, Any] | None
    error: str | None
    fenced: bool = False
    extra_text: bool = False
    repaired: bool = False


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    in_str = False
    esc = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _close_truncated(fragment: str) -> str:
    depth = 0
    in_str = False
    esc = False
    for ch in fragment:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
    return fragment + ('"' if in_str else "") + "}" * max(depth, 0)


def _loads(candidate: str) -> tuple[dict[str, Any] | None, bool]:
    for text, repaired in ((candidate, False), (_TRAILING_COMMA.sub(r"\1", candidate), True)):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value, repaired and text != candidate
    return None, False


def extract_json_object(raw: str) -> ParseResult:
    """Find the first decodable JSON object in raw model output.

    Order of attempts: the first fenced block, then every ``{`` in the text (the first that
    decodes wins), then a truncated object closed at the end. Strings are respected when
    matching braces, so a ``}`` inside a reason does not cut the object.
    """
    if not raw or not raw.strip():
        return ParseResult(False, None, "empty output")
    fence = _FENCE.search(raw)
    fenced = fence is not None
    body = fence.group(1) if fence is not None else raw
    starts = [m.start() for m in re.finditer(r"\{", body)]
    if not starts:
        return ParseResult(False, None, "no JSON object in output", fenced=fenced)
    for start in starts:
        end = _balanced_end(body, start)
        if end is None:
            continue
        data, repaired = _loads(body[start : end + 1])
        if data is not None:
            extra = bool(body[:start].strip() or body[end + 1 :].strip()) or (
                fence is not None and bool((raw[: fence.start()] + raw[fence.end() :]).strip())
            )
            return ParseResult(True, data, None, fenced=fenced, extra_text=extra, repaired=repaired)
    data, _ = _loads(_close_truncated(body[starts[0] :].rstrip()))
    if data is not None:
        return ParseResult(
            True,
            data,
            None,
            fenced=fenced,
            extra_text=bool(body[: starts[0]].strip()),
            repaired=True,
        )
    return ParseResult(False, None, "no decodable JSON object", fenced=fenced)
