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


def _write(root: Path, seed: int, pool: list[str] | None = None) -> list[Path]:
    """Two engines' attempts in many parts: keys repeat (drawn from ``pool`` when given: then
    within and across engines, and every fifth key of the pool only ever fails), and attempts
    often finish at the same second (ties)."""
    rng = random.Random(seed)
    for engine in ("b", "a"):
        writer = RawWriter(raw_dir(root, "s", engine), flush_rows=5)
        for i in range(120):
            row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
            key = rng.choice(pool) if pool else f"{engine}{rng.randrange(40):03d}"
            status = rng.choice(["ok", "error", "error", "refused"])
            row |= {
                "request_key": key,
                "engine": engine,
                "status": "error" if pool and pool.index(key) % 5 == 0 else status,
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


def _hex_key(rng: random.Random, width: int) -> str:
    return f"{rng.getrandbits(width * 4):0{width}x}"


@pytest.mark.parametrize(
    ("shape", "fast"),
    [
        ("sha256 hex, 32 digits", True),
        ("sha256 hex, 64 digits (imported rows)", True),
        ("32 and 64 digits mixed", False),
        ("upper-case hex", False),
        ("not hex", False),
    ],
)
@pytest.mark.parametrize("seed", [5, 6])
def test_hex_keys_choose_the_rows_the_row_rule_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, fast: bool, seed: int
) -> None:
    """Keys that are hex digits of one width are sorted as integers (``_latest_hex``); any
    other keys go through Arrow's string sort. Both give the row rule's rows, in order."""
    rng = random.Random(seed)
    keys = {
        "sha256 hex, 32 digits": [_hex_key(rng, 32) for _ in range(30)],
        "sha256 hex, 64 digits (imported rows)": [_hex_key(rng, 64) for _ in range(30)],
        "32 and 64 digits mixed": [_hex_key(rng, rng.choice([32, 64])) for _ in range(30)],
        "upper-case hex": [_hex_key(rng, 32).upper() for _ in range(30)],
        "not hex": [f"key-{i:027d}" for i in range(30)],
    }[shape]
    files = _write(tmp_path, seed, keys)
    used: list[str] = []
    arrow = raw._latest_arrow
    monkeypatch.setattr(raw, "_latest_arrow", lambda t: used.append("arrow") or arrow(t))
    for eager in (10**9, 0):
        monkeypatch.setattr(raw, "_EAGER_ROWS", eager)
        expected = sorted(
            latest_rows(read_raw(files).to_pylist()).values(),
            key=lambda r: (r["engine"], r["request_key"]),
        )
        assert [dict(r) for r in latest_records(files)] == expected
    assert used == ([] if fast else ["arrow", "arrow"])


def test_hex_words_order_and_equality_are_the_strings() -> None:
    rng = random.Random(7)
    keys = sorted({_hex_key(rng, 32) for _ in range(500)} | {"0" * 32, "f" * 32})
    words = raw._hex_words(raw.pa.array(keys))
    assert words is not None and words.shape == (len(keys), 2)
    as_ints = [(int(a), int(b)) for a, b in words]
    assert as_ints == sorted(as_ints) and len(set(as_ints)) == len(keys)
    assert as_ints[0] == (0, 0) and as_ints[-1] == (2**64 - 1, 2**64 - 1)
    assert [f"{a:016x}{b:016x}" for a, b in as_ints] == keys
    for bad in (["abc"], ["g" * 32], ["A" * 32], [None, "0" * 32], ["0" * 16, "0" * 32]):
        assert raw._hex_words(raw.pa.array(bad, raw.pa.string())) is None


def test_rows_at_reads_the_rows_at_its_positions() -> None:
    rows = [{"i": i} for i in range(10)]
    view = raw.RowsAt(rows, [7, 2, 2])
    view.append(9)
    assert len(view) == 4 and list(view) == [rows[7], rows[2], rows[2], rows[9]]
    assert view[0] is rows[7] and view[-1] is rows[9]
    assert list(view[1:3]) == [rows[2], rows[2]] and isinstance(view[1:3], raw.RowsAt)
    both = view + raw.RowsAt(rows, [0])
    assert isinstance(both, raw.RowsAt) and list(both) == [*view, rows[0]]
    mixed = (view + [rows[5]], [rows[5]] + view)  # noqa: RUF005 (the operators are tested)
    assert list(mixed[0]) == [*view, rows[5]] and mixed[1] == [rows[5], *view]
    assert list(view.positions) == [7, 2, 2, 9]
    assert not raw.RowsAt(rows)


@pytest.mark.parametrize("n", [10, 5000])
def test_integer_columns_read_through_a_pool_keep_their_values(n: int) -> None:
    pool: dict[Any, Any] = {}
    values = [(i * 7919) % 300 + 10**6 for i in range(n)]  # few distinct, none cached by Python
    got = raw._pylist(raw.pa.array(values, raw.pa.int64()), pool)
    assert got == values
    if n >= raw._POOL_INTS:
        assert len({id(v) for v in got}) == len(set(values))  # one object per value
    unique = list(range(10**6, 10**6 + n))  # all distinct: no pool is grown for them
    assert raw._pylist(raw.pa.array(unique, raw.pa.int64()), {}) == unique


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
def test_float_columns_are_doubles_and_keep_every_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    """cost_usd and latency_s come back as the floats written (-0.0, NaN, tiny and huge ones
    included), held as doubles; a column with a null anywhere comes back with None there."""
    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    specials = [-0.0, float("nan"), 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 3.0]
    written: dict[str, tuple[float, float | None]] = {}
    for part in range(3):
        writer = RawWriter(raw_dir(tmp_path, "s", "e"), flush_rows=10**6)
        for i in range(7):
            key = f"k{part}-{i}"
            cost = specials[(part * 7 + i) % len(specials)] * (1 if i % 2 else -1)
            latency = None if part == 1 and i == 3 else i / 7
            written[key] = (cost, latency)
            row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
            row |= {"request_key": key, "engine": "e", "status": "ok", "sealed": True}
            row |= {"repeat": i, "seed": i}
            row |= {"cost_usd": cost, "latency_s": latency}
            writer.append(row)
        writer.close()
    got = latest_records(raw_files(tmp_path, "s"))
    costs = raw.record_column(got, "cost_usd")
    assert isinstance(costs, raw.array) and costs.typecode == "d"
    assert isinstance(raw.record_column(got, "latency_s"), list)  # one null among them
    assert len(got) == len(written) == 21
    for r in got:
        cost, latency = written[r["request_key"]]
        assert type(r["cost_usd"]) is float
        assert repr(r["cost_usd"]) == repr(cost)  # the sign of -0.0 and NaN kept
        assert r["latency_s"] == latency


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
def test_a_subset_of_the_latest_rows_reads_those_rows_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    """``subset(at)`` is the rows at those positions, in that order, with columns of their
    own: a column read for the subset is as long as the subset, and the whole rows' columns
    stay unread."""
    files = _write(tmp_path, 5)
    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    got = latest_records(files)
    want = [dict(r) for r in latest_records(files)]
    assert isinstance(got, raw.LatestRows)
    for at in ([], [0], [1, 4, 5, 30, len(want) - 1], list(range(0, len(want), 3))):
        some = got.subset(at)
        assert len(some) == len(at)
        assert [r["output_text"] for r in some] == [want[i]["output_text"] for i in at]
        assert [dict(r) for r in some] == [want[i] for i in at]
        assert all(len(c) == len(at) for c in some.latest_columns.loaded.values())
    if not eager:
        assert not got.latest_columns.loaded
    for bad in ([3, 2], [1, 1], [-1], [len(want)]):
        with pytest.raises(IndexError):
            got.subset(bad)


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("seed", [7, 8])
def test_the_latest_rows_chosen_by_key_bucket_are_the_rows_chosen_in_memory(
    tmp_path: Path, width: int, seed: int
) -> None:
    """``store.buckets``: attempts split by the first bits of their key and each bucket chosen
    alone give ``latest_records``' rows in its order, whatever the number of buckets; any
    latest row is read by its position in that order; the keys of the latest rows, and no
    other, are found; the bucket files are gone on exit."""
    import numpy as np

    from sealedeval.store import buckets

    rng = random.Random(seed)
    pool = [_hex_key(rng, width) for _ in range(60)]
    files = _write(tmp_path / "runs", seed, pool)
    expected = [dict(r) for r in latest_records(files)]
    keys = [r["request_key"] for r in expected]
    packed = np.frombuffer(b"".join(bytes.fromhex(k) for k in keys), dtype=np.uint8)
    others = [_hex_key(rng, width) for _ in range(30)]
    other = np.frombuffer(b"".join(bytes.fromhex(k) for k in others), dtype=np.uint8)
    # 240 attempts: 256 buckets (the most), 64 (7 x 32 < 240), 4, one
    for bucket_rows, n_buckets in ((1, 256), (7, 64), (64, 4), (10**6, 1)):
        with buckets.latest_buckets(files, bucket_rows=bucket_rows) as lb:
            assert lb is not None and len(lb) == len(expected)
            assert lb.buckets == n_buckets
            assert [dict(r) for r in lb.rows_at(np.arange(len(lb)))] == expected
            at = np.array(sorted(rng.sample(range(len(expected)), 9)))
            assert [dict(r) for r in lb.rows_at(at)] == [expected[i] for i in at.tolist()]
            assert lb.contains(packed.reshape(len(keys), -1)).all()
            assert not lb.contains(other.reshape(len(others), -1)).any()
            where = lb.dir
        assert not where.exists()


@pytest.mark.parametrize("seed", [7, 8])
def test_cells_of_buckets_carry_their_columns_and_are_the_canonical_order(
    tmp_path: Path, seed: int
) -> None:
    """``latest_buckets(columns=...)``: each engine's rows of each bucket (``cell``), taken
    engine by engine and bucket after bucket, are ``latest_records``' rows in its order; the
    carried columns come with them (those asked for, when some are), any other column is read
    from the parts; an engine with no row in a bucket is an empty cell."""
    from sealedeval.store import buckets

    rng = random.Random(seed)
    pool = [_hex_key(rng, 32) for _ in range(60)]
    files = _write(tmp_path / "runs", seed, pool)
    expected = [dict(r) for r in latest_records(files)]
    carried = ("request_key", "output_text", "repeat", "status")
    for bucket_rows in (1, 7, 64, 10**6):
        with buckets.latest_buckets(files, bucket_rows=bucket_rows, columns=carried) as lb:
            assert lb is not None
            got: list[dict[str, Any]] = []
            for e in range(len(lb.engines)):
                for b in range(lb.buckets):
                    cell = lb.cell(e, b)
                    assert len(cell) == lb.counts[e, b]
                    held = cell.latest_columns.held
                    assert held is not None and tuple(held.column_names) == carried
                    got += [dict(r) for r in cell]
                    # a reader of some carried columns reads those of the spill file only
                    some = lb.cell(e, b, ("status", "request_key", "not-carried"))
                    held = some.latest_columns.held
                    assert held is not None and held.column_names == ["request_key", "status"]
                    assert [dict(r) for r in some] == [dict(r) for r in cell]
            assert got == expected


def test_keys_that_are_not_hex_are_left_to_the_choice_in_memory(tmp_path: Path) -> None:
    from sealedeval.store import buckets

    files = _write(tmp_path, 3)  # keys like "a017"
    with buckets.latest_buckets(files, bucket_rows=4) as lb:
        assert lb is None


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
def test_engine_identities_are_those_of_each_engines_first_latest_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    """``pipeline.identities`` reads the identity at each engine's first latest row only,
    and gives what a pass over every row gives (the first row's identity, where an engine's
    rows name several)."""
    from sealedeval.stages import pipeline

    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    for engine in ("c", "b", "a"):
        writer = RawWriter(raw_dir(tmp_path, "s", engine), flush_rows=4)
        for i in range(9 if engine != "b" else 1):
            row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
            row |= {
                "request_key": f"{engine}{i:03d}",
                "engine": engine,
                "engine_identity": f'{{"{engine}": {i % 3}}}',
                "status": "ok",
                "finished_at": "2026-01-01T00:00:00Z",
                "repeat": i,
                "seed": i,
                "sealed": True,
            }
            writer.append(row)
        writer.close()
    rows = latest_records(raw_files(tmp_path, "s"))
    assert isinstance(rows, raw.LatestRows)
    plain = [dict(r) for r in rows]
    want = pipeline.identities(plain)
    assert want == {"a": '{"a": 0}', "b": '{"b": 0}', "c": '{"c": 0}'}
    assert pipeline.identities(rows) == want
    # rows a000..a008, b000, c000..c008: a003, b000 and c002 first in this subset
    sub = rows.subset([3, 9, 12])
    assert pipeline.identities(sub) == {"a": '{"a": 0}', "b": '{"b": 0}', "c": '{"c": 2}'}


def test_a_few_rows_of_a_part_are_read_from_their_row_groups_only(tmp_path: Path) -> None:
    """``raw._read_rows``: rows in any order (repeats too) from a part of many row groups are
    the rows a read of the whole part takes; only their row groups are read."""
    import pyarrow.parquet as pq

    path = tmp_path / "part.parquet"
    table = raw.pa.table({"x": list(range(50)), "y": [f"v{i}" for i in range(50)]})
    pq.write_table(table, path, row_group_size=7)  # 8 row groups
    rng = random.Random(3)
    for k in (1, 3, 12, 50):
        rows = [rng.randrange(50) for _ in range(k)]
        local = raw.pa.array(rows, raw.pa.int32())
        pf = pq.ParquetFile(path)
        read: list[list[int]] = []

        def spy(g: list[int], _read: Any = read, _of: Any = pf.read_row_groups, **kw: Any) -> Any:
            _read.append(list(g))
            return _of(g, **kw)

        pf.read_row_groups = spy  # type: ignore[method-assign]
        got = raw._read_rows(pf, ["x", "y"], local)
        assert got.to_pylist() == table.take(local).to_pylist()
        wanted = sorted({i // 7 for i in rows})
        assert read == ([wanted] if len(wanted) < 8 else [])
