"""The latest raw row per key, chosen column-wise and read column by column on access, is the
row the row-by-row rule picks (first ok per key, else the latest attempt, ties: first read)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sealedeval.store import raw
from sealedeval.store.raw import (
    RawWriter,
    latest_records,
    latest_rows,
    raw_dir,
    raw_files,
    read_raw,
)
from sealedeval.store.schema import REQUIRED_COLUMNS, ROW_DEFAULTS


def _write(root: Path, seed: int) -> list[Path]:
    rng = random.Random(seed)
    for engine in ("b", "a"):
        writer = RawWriter(raw_dir(root, "s", engine), flush_rows=5)
        for i in range(120):
            row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
            row |= {
                "request_key": f"{engine}{rng.randrange(40):03d}",
                "engine": engine,
                "status": rng.choice(["ok", "error", "error", "refused"]),
                # few distinct times: ties between attempts of a key are common
                "finished_at": f"2026-01-01T00:00:{rng.randrange(4):02d}Z",
                "output_text": rng.choice(["x", "y", f"answer {i}"]),
                "response": f"body {i}",
                "repeat": i,
                "seed": i,
                "sealed": True,
            }
            writer.append(row)
        writer.close()
    return raw_files(root, "s")


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_latest_records_are_the_rows_the_row_rule_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool, seed: int
) -> None:
    files = _write(tmp_path, seed)
    assert len(files) > 20  # many parts: rows chosen from every one of them
    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    expected = sorted(
        latest_rows(read_raw(files).to_pylist()).values(),
        key=lambda r: (r["engine"], r["request_key"]),
    )
    got = latest_records(files)
    # one column first (the others are not read yet), then every row in full
    assert [r["output_text"] for r in got] == [r["output_text"] for r in expected]
    assert [dict(r) for r in got] == expected
    assert got[0].get("no such column", 7) == 7
    with pytest.raises(KeyError):
        got[0]["no such column"]


def test_a_part_removed_before_its_column_is_read_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _write(tmp_path, 4)
    monkeypatch.setattr(raw, "_EAGER_ROWS", 0)
    got = latest_records(files)
    for f in files:
        f.unlink()
    with pytest.raises(raw.UserError, match="corrupt raw-run part"):
        got[0]["output_text"]
