"""The config an import needs, written by the import: no hand-written suite or engine block.

``sealedeval import HARNESS FILE...`` reads the logs first; every suite they go into that the
project lacks gets a block (``kind: imported``, ``harness``, ``engines``), every model an engine
of ``kind: imported`` with the log's model id (nothing callable). An engine that is configured
with another model is one line at import, not a FAIL at audit. The additions are written into
``config/config.yaml`` as text after the ``engines:`` / ``suites:`` lines, so the user's comments
and layout stay; when the file's layout does not allow that (flow style), it is rewritten from
its parsed value and the message says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sealedeval.canonical import compact
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.stages.ingest import HARNESS_LABELS, Ingest

CONFIG = Path("config/config.yaml")


@dataclass
class Additions:
    """What the import adds to the config (empty: nothing to write)."""

    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    suites: dict[str, dict[str, Any]] = field(default_factory=dict)
    suite_engines: dict[str, list[str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.engines or self.suites or self.suite_engines)

    def lines(self) -> list[str]:
        """What is written, one line per block, as the user reads it."""
        out = [f"engines.{n}: {compact(b)}" for n, b in self.engines.items()]
        out += [f"suites.{n}: {compact(b)}" for n, b in self.suites.items()]
        out += [f"suites.{n}.engines: + {', '.join(e)}" for n, e in self.suite_engines.items()]
        return out


def read_doc(root: Path) -> dict[str, Any]:
    path = root / CONFIG
    if not path.is_file():
        raise UserError(f"{path}: no project config (sealedeval import writes into it)")
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(doc, dict):
        raise UserError(f"{path}: config must be a mapping at the top level")
    return doc


def plan(doc: Mapping[str, Any], ingests: Sequence[Ingest]) -> Additions:
    """The blocks the logs need that the config lacks; a configured engine whose model is not
    the log's is a one-line error."""
    engines = dict(doc.get("engines") or {})
    suites = dict(doc.get("suites") or {})
    add = Additions()
    for ing in ingests:
        have = engines.get(ing.engine) or add.engines.get(ing.engine)
        if have is None:
            add.engines[ing.engine] = {"kind": "imported", "model": ing.model}
        else:
            model = str(have.get("model") or "")
            if model and model != ing.model:
                raise UserError(
                    f"{ing.path}: model {ing.model!r}, but engine {ing.engine!r} is configured "
                    f"with model {model!r} in {CONFIG}; import into another engine or fix "
                    "the config"
                )
        label = HARNESS_LABELS.get(ing.harness, ing.harness)
        if ing.suite not in suites:
            block = add.suites.setdefault(
                ing.suite, {"kind": "imported", "harness": label, "engines": []}
            )
            if ing.engine not in block["engines"]:
                block["engines"].append(ing.engine)
        else:
            listed = list((suites[ing.suite] or {}).get("engines") or [])
            more = add.suite_engines.setdefault(ing.suite, [])
            if listed and ing.engine not in listed and ing.engine not in more:
                more.append(ing.engine)
    add.suite_engines = {k: v for k, v in add.suite_engines.items() if v}
    return add


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6)
    return text.strip()


def _insert(text: str, key: str, entries: Mapping[str, Any]) -> str | None:
    """``text`` with ``NAME: {...}`` lines added under the top-level block mapping ``key``
    (appended as a new block when the key is absent); None when ``key`` is not a block."""
    lines = [f"{key}:" if ln.rstrip() == f"{key}: {{}}" else ln for ln in text.splitlines()]
    at = next((i for i, ln in enumerate(lines) if ln.split("#", 1)[0].rstrip() == f"{key}:"), None)
    new = [f"{name}: {_flow(block)}" for name, block in entries.items()]
    if at is None:
        if any(ln.startswith(f"{key}:") for ln in lines):
            return None  # flow style or a value on the key's line
        body = [f"  {ln}" for ln in new]
        return "\n".join([*lines, f"{key}:", *body]) + "\n"
    indent = "  "
    for ln in lines[at + 1 :]:
        if ln.strip() and not ln.lstrip().startswith("#"):
            indent = ln[: len(ln) - len(ln.lstrip())] or "  "
            break
    return "\n".join([*lines[: at + 1], *(indent + ln for ln in new), *lines[at + 1 :]]) + "\n"


def apply(root: Path, doc: Mapping[str, Any], add: Additions) -> bool:
    """Write the additions into config/config.yaml; True when the file was rewritten whole
    (its comments lost) because its layout did not take inserted lines."""
    path = root / CONFIG
    want = dict(doc)
    want["engines"] = {**(doc.get("engines") or {}), **add.engines}
    suites = {k: dict(v or {}) for k, v in (doc.get("suites") or {}).items()}
    for name, more in add.suite_engines.items():
        suites[name]["engines"] = [*suites[name].get("engines", []), *more]
    want["suites"] = {**suites, **add.suites}
    text: str | None = path.read_text(encoding="utf-8")
    if add.engines and text is not None:
        text = _insert(text, "engines", add.engines)
    if add.suites and text is not None:
        text = _insert(text, "suites", add.suites)
    if add.suite_engines:
        text = None  # a list inside a block: rewrite rather than edit in place
    if text is not None and yaml.safe_load(text) == want:
        write_text_atomic(path, text)
        return False
    write_text_atomic(path, yaml.safe_dump(want, sort_keys=False, allow_unicode=True))
    return True
