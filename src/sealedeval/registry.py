"""A small typed registry for graders, engines and suites, looked up by name.

Modelled on lm-eval's ``api/registry.py``: entries are registered by decorator, lookups of unknown
names fail with a "did you mean" hint, and the registry records a version per entry so every
graded row can name the exact grader that produced it.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from sealedeval.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name → object mapping with one-line errors for unknown names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._lock = threading.Lock()

    def register(self, name: str) -> Callable[[T], T]:
        """Register ``obj`` under ``name``; registering a second object is a programming bug."""

        def deco(obj: T) -> T:
            with self._lock:
                if name in self._entries and self._entries[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} registered twice")
                self._entries[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._entries), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self._entries)) or "none"
            raise UserError(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def names(self) -> list[str]:
        return sorted(self._entries)
