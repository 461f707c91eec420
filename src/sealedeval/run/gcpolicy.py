"""How a run uses CPython's cyclic garbage collector: rarely, and never on what it planned.

A run builds every request up front (10,000s of ``Request`` objects with their prompts) and
keeps them, plus a buffer of raw rows, alive until it ends. With the default thresholds
(a young collection every 700 net container allocations, older ones every 10 of those) the
collector scanned that live set again and again: on the zero-latency server of
``benchmarks/dispatch.py`` it took ~40 µs of a ~500 µs call (measured with ``gc.callbacks``),
and more while planning. Nothing on the per-call path depends on cycles being reclaimed
promptly (rows and responses are freed by reference counting), so inside ``quiet_gc`` the young
threshold is raised and everything alive at entry is frozen (``gc.freeze``: never scanned
until unfrozen). Both are restored when the outermost block exits, so a library caller's
process is left as it was.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["keep_alive", "quiet_gc"]

YOUNG_THRESHOLD = 50_000
"""Net container allocations between young collections inside ``quiet_gc`` (default 700):
bounds the cyclic garbage a run can hold to a few MB."""

_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """Freeze what is alive now and collect rarely until the outermost block exits.

    Nested blocks (``sealedeval run`` around planning, each ``Dispatcher.run`` inside it)
    freeze what was created since; only the outermost exit restores the thresholds and
    unfreezes.
    """
    global _depth, _saved
    if _depth == 0:
        _saved = gc.get_threshold()
        gc.set_threshold(max(_saved[0], YOUNG_THRESHOLD), _saved[1], _saved[2])
    gc.freeze()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None
            gc.unfreeze()


def keep_alive() -> None:
    """Inside ``quiet_gc``: freeze what is alive now, as entering a nested block would.

    For a stage that loads a large, long-lived set and then works on it (the build: a million
    latest raw rows, then their graded table, then the analysis): each collection of the
    oldest generation would scan that set again (nine of them in the 1M-row build, ~5 % of
    its CPU; each scans ten times as much at 10M rows, ``benchmarks/scale.py``)."""
    if _depth:
        gc.freeze()
