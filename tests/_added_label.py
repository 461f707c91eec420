"""Shared checks for the suites' presentation tests: an engine added after the seal is labelled
wherever a suite's own report section or figure names it (issue 25, item 2)."""

from __future__ import annotations

import json
from typing import Any

from sealedeval.render.metrics import ADDED_LABEL


def with_added(section: dict[str, Any], engine: str) -> dict[str, Any]:
    """The section as publish hands it over when ``engine`` was added after the seal."""
    out: dict[str, Any] = json.loads(json.dumps(section))
    out["design"] = {"status": "deviates from the sealed design", "added_after_seal": [engine]}
    return out


def assert_only_labelled(plain: str, labelled: str, engine: str) -> None:
    """Every table row and heading naming ``engine`` carries the label, and the label is the only
    change (tables are unpadded, so removing it gives the unlabelled text back)."""
    shown = f"{engine} ({ADDED_LABEL})"
    assert labelled.replace(f" ({ADDED_LABEL})", "") == plain
    rows = [ln for ln in labelled.splitlines() if ln.startswith("| ")]
    naming = [ln for ln in rows if any(c.split(" ")[0] == engine for c in ln[2:-2].split(" | "))]
    assert naming, f"no table row names {engine}"
    for ln in naming:
        cells = [c for c in ln[2:-2].split(" | ") if c.split(" ")[0] == engine]
        assert all(c.startswith(shown) for c in cells), ln
    for ln in labelled.splitlines():
        if ln.startswith("#") and f"`{engine}" in ln:
            assert f"`{shown}" in ln, ln


def drawn_texts(fig: Any) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text)]
