"""The generate stage: items → ``results/items/SUITE.parquet`` for inspection and DVC.

The run stage regenerates items in memory (they are a pure function of the sealed inputs, the
config and the seed), so this file is an artefact, never a second source of truth.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.fsutil import atomic_path
from sealedeval.run.runner import plan


def write_items(cfg: Config, suite: str, *, unsealed: bool = False) -> tuple[Path, int]:
    p = plan(cfg, suite, unsealed=unsealed)
    out = cfg.root / "results" / "items" / f"{suite}.parquet"
    table = pa.table(
        {
            "item_id": [str(i.get("id", i.get("item_id", ""))) for i in p.items],
            "record": [compact(i) for i in p.items],
        }
    )
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return out, len(p.items)
