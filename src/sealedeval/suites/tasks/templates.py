"""Prompt templates over item columns.

``{column}`` is replaced by the item's value (text as is; numbers, lists and mappings as JSON);
only ``{identifier}`` is a placeholder, so JSON or code in a prompt needs no escaping, and
``{{column}}`` writes a literal ``{column}``. ``{files}`` is the ``files:`` directory rendered
as golden renders its files (``=== name (N bytes) ===`` blocks) when the suite has one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sealedeval.graders.kinds import text_of

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]\w*)\}\}|\{([A-Za-z_]\w*)\}")
FILES = "files"


def fields(template: str) -> list[str]:
    """The names a template uses, in order, without repeats."""
    out: list[str] = []
    for m in PLACEHOLDER.finditer(template):
        name = m.group(2)
        if name and name not in out:
            out.append(name)
    return out


def render(template: str, values: Mapping[str, Any]) -> str:
    """The template filled from ``values`` (every name must be present and not None)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return "{" + m.group(1) + "}"
        return text_of(values[m.group(2)])

    return PLACEHOLDER.sub(sub, template)


def render_files(files: Mapping[str, str]) -> str:
    """The files block (golden's ``prompts.render_files``: same bytes for the same files)."""
    parts = [
        f"=== {name} ({len(text.encode())} bytes) ===\n{text.rstrip()}"
        for name, text in files.items()
    ]
    return "\n\n".join(parts)
