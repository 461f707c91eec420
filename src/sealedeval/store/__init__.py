"""Raw-run store: append-only Parquet parts, resume keys, manifest.

The names below are imported on first use (PEP 562), not with the package: importing
``sealedeval.store.ledger`` (``sealedeval status``, which ends every Snakemake build) then
costs no pyarrow import (~0.12 s).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "RAW_SCHEMA": "schema",
    "raw_row": "schema",
    "RawWriter": "raw",
    "latest_rows": "raw",
    "raw_dir": "raw",
    "raw_files": "raw",
    "read_raw": "raw",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
