"""pyarrow without the pandas import it makes on its first Python → Arrow conversion.

pyarrow asks, on the first ``pa.array(list)`` (and inside ``pyarrow.dataset``, which
``pq.read_table`` imports), whether the value is a pandas object, and to answer it imports
pandas: 0.75 s of every ``sealedeval`` command that writes or reads a stage file, for code that
never uses pandas (``python -X importtime -m sealedeval.cli grade golden``; ``benchmarks/
analysis.py`` runs twelve such commands). This module lets that one probe find pandas absent,
so pyarrow records "no pandas" for its array-like check only. Anything that really converts to
or from pandas (``Table.to_pandas``, ``Table.from_pandas``) asks again and imports it then: only
the probe is skipped. Values, types and Parquet bytes are the same either way.

Import ``pa`` from here (``store.schema`` does, so every store module does too).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

import pyarrow as pa

_PANDAS = "pandas"


class _NoPandasProbe:
    """A meta-path finder that reports pandas not installed (only while probing)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == _PANDAS or name.startswith(_PANDAS + "."):
            raise ModuleNotFoundError(f"{name}: skipped by sealedeval.store.arrow", name=name)
        return None


def _skip_pandas_probe() -> None:
    """Run pyarrow's pandas probe once with pandas hidden (a no-op when pandas is imported
    already, or pyarrow has probed before)."""
    if _PANDAS in sys.modules:
        return
    finder = _NoPandasProbe()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


_skip_pandas_probe()

__all__ = ["pa"]


def give_back_memory() -> None:
    """Return freed memory to the operating system: Arrow's pool, then the C heap's free
    pages (glibc's ``malloc_trim``; elsewhere a no-op).

    Between the steps of ``sealedeval publish`` at ten million rows, the scorecard's freed
    row-group columns stayed resident (~0.6 GB): glibc raises its mmap threshold after big
    frees, so arrays of a few MB come from the heap, and a heap is not shrunk below its
    highest live block. The peak a later step reaches is then its own, not its own plus the
    earlier step's leftovers as counted by the OS (what ``/usr/bin/time`` and a cluster's
    memory limit see)."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` when this process runs on glibc, else None (looked up once)."""
    global _TRIM
    if _TRIM is False:
        _TRIM = None
        try:
            glibc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; absent elsewhere
        except (ValueError, OSError, AttributeError):
            glibc = None
        if glibc:
            try:
                _TRIM = ctypes.CDLL(None).malloc_trim  # this process's own C library
            except (OSError, AttributeError):
                _TRIM = None
    return _TRIM


_TRIM: Any = False
"""``_malloc_trim``'s answer once looked up (False: not yet)."""
