"""Test doubles for the sealedeval test suite.

Names are re-exported lazily so ``python -m tests.fakes.openai_server`` does not import the
module twice (which would trigger a runpy RuntimeWarning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .openai_server import ALL_FAULTS, CREATED, FakeOpenAI, Recorded

__all__ = ["ALL_FAULTS", "CREATED", "FakeOpenAI", "Recorded"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import openai_server

        return getattr(openai_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
