"""A small typed registry for graders, engine kinds and suites, looked up by name.

Modelled on lm-eval's ``api/registry.py`` and Inspect AI's registry: entries are registered by
decorator, or named lazily as ``"module:attr"`` (imported on first lookup, so ``sealedeval run
golden`` never imports grounding), or contributed by an installed package through a Python
entry-point group (``sealedeval.suites``, ``sealedeval.graders``, ``sealedeval.engines``), so a
package adds a suite without touching this repository. Lookups of unknown names fail with a
"did you mean" hint. Every entry records where it came from, its version and its parameters, so
a graded row can name exactly what produced it.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from sealedeval._version import __version__
from sealedeval.errors import UserError

T = TypeVar("T")

BUILTIN = "sealedeval"


@dataclass(frozen=True)
class EntryInfo:
    """What a registered object is: its name, the distribution that provides it, its version
    and the parameters it was registered with (recorded in graded rows and result.json)."""

    name: str
    source: str = BUILTIN
    version: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    target: str = ""

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "version": self.version,
            "params": dict(self.params),
        }


def _package_version() -> str:

    return __version__


def load_target(target: str) -> Any:
    """Import ``"module:attr"`` (or a plain module, which registers on import) and return it."""
    mod_name, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise UserError(f"cannot import {target!r}: {e}") from None
    if not attr:
        return mod
    obj: Any = mod
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UserError(f"{target!r}: module {mod_name} has no attribute {attr!r}") from None
    if isinstance(obj, type(mod)):
        # a submodule of the same name shadowed the object (``pkg.suite`` module vs ``suite``)
        raise UserError(f"{target!r} names a module, not a registered object")
    return obj


class Registry(Generic[T]):
    """Name → object mapping with lazy entries, entry points and one-line errors."""

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        check: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self.check = check
        """Called with (name, object) before an object is registered: raises ``UserError``
        naming what is wrong with it (the suite registry checks the hooks a suite defines)."""
        self._entries: dict[str, T] = {}
        self._info: dict[str, EntryInfo] = {}
        self._lazy: dict[str, EntryInfo] = {}
        self._eps_loaded = group is None
        self._lock = threading.RLock()

    def register(
        self,
        name: str,
        *,
        version: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Callable[[T], T]:
        """Register ``obj`` under ``name``; registering a second object is a programming bug."""

        def deco(obj: T) -> T:
            if self.check is not None:
                self.check(name, obj)
            with self._lock:
                if name in self._entries and self._entries[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} registered twice")
                self._entries[name] = obj
                lazy = self._lazy.get(name)
                self._info[name] = EntryInfo(
                    name,
                    source=lazy.source if lazy else BUILTIN,
                    version=version or (lazy.version if lazy else "") or _package_version(),
                    params=dict(params or {}),
                    target=lazy.target if lazy else "",
                )
            return obj

        return deco

    def replace(self, name: str, obj: T, info: EntryInfo) -> None:
        """Bind ``name`` to ``obj`` whatever was there (a suite configured from a kind: the
        config names it, and loading another config in the same process rebinds it)."""
        if self.check is not None:
            self.check(name, obj)
        with self._lock:
            self._entries[name] = obj
            self._info[name] = info

    def add_lazy(self, name: str, target: str, *, source: str = BUILTIN, version: str = "") -> None:
        """Name ``target`` ("module:attr" or a module that registers ``name`` on import)."""
        with self._lock:
            if name not in self._entries and name not in self._lazy:
                self._lazy[name] = EntryInfo(name, source=source, version=version, target=target)

    def _load_entry_points(self) -> None:
        if self._eps_loaded:
            return
        self._eps_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=cast(str, self.group)):
            dist = getattr(ep, "dist", None)
            source = dist.name if dist is not None else "entry point"
            version = dist.version if dist is not None else ""
            self.add_lazy(ep.name, ep.value, source=source, version=version)

    def _resolve(self, name: str) -> bool:
        lazy = self._lazy.get(name)
        if lazy is None:
            return False
        obj = load_target(lazy.target)
        with self._lock:
            if name not in self._entries:  # a module target registers itself on import
                if lazy.target.partition(":")[2] == "":
                    return name in self._entries
                self.register(name, version=lazy.version or None)(cast(T, obj))
        return True

    def get(self, name: str) -> T:
        if name in self._entries:
            return self._entries[name]
        if not self._resolve(name):
            self._load_entry_points()
            self._resolve(name)
        try:
            return self._entries[name]
        except KeyError:
            known = self.names()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UserError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(known) or 'none'})"
            ) from None

    def target(self, name: str) -> str:
        """The ``"module:attr"`` a lazy entry names, without importing it ("" when the entry was
        registered directly); unknown names fail like ``get``."""
        if name in self._lazy:
            return self._lazy[name].target
        self._load_entry_points()
        if name in self._lazy:
            return self._lazy[name].target
        if name in self._info:
            return self._info[name].target
        self.get(name)  # raises the did-you-mean error
        return ""

    def info(self, name: str) -> EntryInfo:
        self.get(name)
        return self._info[name]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self._load_entry_points()
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(set(self._entries) | set(self._lazy))
