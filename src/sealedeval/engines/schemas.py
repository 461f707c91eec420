"""The engine kinds by name, and each kind's own options schema, checked with the dispatcher's
keys.

The central schema (``workflow/config.schema.yaml``) types the keys every kind takes (model,
concurrency, retries, prices); everything else an engine's section holds belongs to its kind.
A built-in kind ships its options as ``engines/<kind>.options.yaml`` beside its module, so a
config is checked without importing the kind (HTTP clients, llama.cpp). A kind from another
package (entry-point group ``sealedeval.engines``) registers its options with the kind:
``engine_kind(name, caps, options=KindOptions(...))``; checking a config imports it for that.

A key the kind does not take (``n_ctx`` on an ``openai_chat`` engine, a typo) is one line
naming the kind and the closest option; a required key that is missing (``base_url`` of
``openai_chat``) is checked before anything runs, not discovered as a run of error rows; a value
of the wrong type is the kind's schema's line.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sealedeval import yamlio
from sealedeval.errors import UserError
from sealedeval.registry import Registry
from sealedeval.validation import validate

HERE = Path(__file__).resolve().parent
BUILTIN_KINDS = ("openai_chat", "anthropic", "local", "reference", "kantesti", "replay", "imported")
"""The kinds shipped here, each with ``<kind>.py`` and ``<kind>.options.yaml`` in this folder."""


@dataclass(frozen=True)
class KindOptions:
    """A kind's options: JSON Schema ``properties`` (one per option; ``{}`` takes any value)
    and the ones it ``required``. ``optional`` names options without a schema of their own."""

    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def names(self) -> frozenset[str]:
        return self.required | self.optional | frozenset(self.properties)

    @classmethod
    def from_schema(cls, doc: Mapping[str, Any], where: str) -> KindOptions:
        """From an options schema document (``required``, ``properties``)."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("properties", {}), Mapping):
            raise UserError(f"{where}: an options schema is a mapping with `properties`")
        props = {str(k): dict(v or {}) for k, v in (doc.get("properties") or {}).items()}
        return cls(required=frozenset(map(str, doc.get("required") or ())), properties=props)


engine_kinds: Registry[Callable[..., Any]] = Registry("engine kind", group="sealedeval.engines")
"""Engine kinds by name: the built-in ones import on first use; others come from entry points.
Each value is the kind's factory (``engines.base.EngineFactory``)."""
for _kind in BUILTIN_KINDS:
    engine_kinds.add_lazy(_kind, f"sealedeval.engines.{_kind}")

_registered: dict[str, KindOptions] = {}


def register(kind: str, options: KindOptions) -> None:
    """The options of a kind from another package (called by ``engine_kind``); a built-in
    kind's options cannot be replaced this way."""
    if kind in BUILTIN_KINDS or (kind in _registered and _registered[kind] != options):
        raise ValueError(f"engine kind {kind!r} already has registered options")
    _registered[kind] = options


@cache
def _builtin(kind: str) -> KindOptions:
    path = HERE / f"{kind}.options.yaml"
    return KindOptions.from_schema(yamlio.safe_load(path.read_text(encoding="utf-8")), str(path))


def kind_options(kind: str) -> KindOptions | None:
    """The kind's options; None for a kind from another package that registered none (its
    section is then checked by the central schema only)."""
    if kind in BUILTIN_KINDS:
        return _builtin(kind)
    if kind not in _registered:
        # raises for an unknown kind (did you mean ...); imports a plugin kind, which
        # registers its options as it is defined
        engine_kinds.get(kind)
    return _registered.get(kind)


def _hint(key: str, allowed: set[str]) -> str:
    """Whose option a foreign key is (an engine switched kind), else the closest allowed one."""
    owners = [k for k in BUILTIN_KINDS if key in _builtin(k).names]
    if owners:
        return f"; it is an option of kind {' and '.join(owners)}"
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_engine(
    name: str, section: Mapping[str, Any], where: str, common: Mapping[str, Any]
) -> dict[str, Any]:
    """The section, checked against ``common`` (the central schema's keys every kind takes)
    and the kind's options; one-line ``UserError`` otherwise. Returned as a plain dict."""
    kind = str(section.get("kind"))
    opts = kind_options(kind)
    out = dict(section)
    if opts is None:
        return out
    allowed = set(common) | opts.names
    for key in sorted(out):
        if key not in allowed:
            hint = _hint(key, allowed)
            raise UserError(
                f"{where}: engines.{name}.{key}: not an option of kind {kind}{hint} "
                f"(its options: {', '.join(sorted(allowed - {'kind'}))})"
            )
    for key in sorted(opts.required):
        if out.get(key) in (None, ""):
            raise UserError(f"{where}: engines.{name}: kind {kind} needs {key}")
    schema = {"type": "object", "properties": {**common, **opts.properties}}
    # nested as in the whole config, so the line reads as the central schema's do
    nest = {"properties": {"engines": {"properties": {name: schema}}}}
    validate({"engines": {name: out}}, nest, where)
    return out
