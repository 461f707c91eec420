"""The compact columns give back every row's value: codes as narrow as the distinct values
allow, hex keys as bytes that order and spell out as their strings; latest raw rows hold their
columns in these forms, and in lists where they cannot (nulls, keys that are not hex)."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.store import raw
from sealedeval.store.columns import Coded, HexKeys, KeyIndex, code_array, hex_packed
from sealedeval.store.raw import RawWriter, latest_records, raw_dir, raw_files, record_column
from sealedeval.store.schema import REQUIRED_COLUMNS, ROW_DEFAULTS


@pytest.mark.parametrize(
    ("n_values", "typecode"),
    [(1, "B"), (256, "B"), (257, "H"), (65_536, "H"), (65_537, "I")],
)
def test_codes_are_as_narrow_as_the_values_allow(n_values: int, typecode: str) -> None:
    codes = np.arange(3 * n_values) % n_values
    values = [f"v{i}" for i in range(n_values)]
    col = Coded(code_array(codes, n_values), values)
    assert col.codes.typecode == typecode
    assert len(col) == 3 * n_values and col[-1] == values[-1] and col[n_values] == "v0"
    assert list(col) == [values[c] for c in codes.tolist()]
    assert col[1:4] == [values[c] for c in codes[1:4].tolist()]
    order = np.arange(len(col))[::-1]
    taken = col.taken(order)
    assert taken.codes.typecode == typecode and list(taken) == list(col)[::-1]


def test_a_coded_column_can_code_into_another_column() -> None:
    inner = Coded(code_array(np.array([2, 0, 1]), 3), ["a", "b", "c"])
    outer = Coded(array("I", [2, 2, 0, 1]), inner)
    assert list(outer) == ["b", "b", "c", "a"] and outer == ["b", "b", "c", "a"]


hex_keys = st.integers(min_value=1, max_value=32).flatmap(
    lambda w: st.lists(
        st.text(alphabet="0123456789abcdef", min_size=2 * w, max_size=2 * w), max_size=40
    )
)


@settings(max_examples=80, deadline=None)
@given(keys=hex_keys)
def test_hex_keys_are_their_strings_in_string_order(keys: list[str]) -> None:
    packed = hex_packed(pa.array(keys, pa.string()))
    if not keys:
        assert packed is None
        return
    col = HexKeys(packed)
    assert len(col) == len(keys) and list(col) == keys and col == keys
    assert [col[i] for i in range(-len(keys), len(keys))] == keys + keys
    assert col[1:3] == keys[1:3]
    ranks = col.ranks().tolist()
    for i in range(len(keys)):
        for j in range(len(keys)):
            assert (ranks[i] < ranks[j]) == (keys[i] < keys[j])
            assert (ranks[i] == ranks[j]) == (keys[i] == keys[j])
    at = np.arange(len(keys))[::-1]
    chars, width = col.hex_chars(at)
    text = bytes(chars).decode()
    assert [text[k * width : (k + 1) * width] for k in range(len(at))] == keys[::-1]
    with pytest.raises(IndexError):
        col[len(keys)]


@pytest.mark.parametrize(
    "bad",
    [["abc"], ["g" * 32], ["A" * 32], [None, "0" * 32], ["0" * 16, "0" * 32], ["", ""]],
    ids=["odd width", "not hex", "upper case", "a null", "two widths", "empty"],
)
def test_other_strings_are_not_hex_keys(bad: list[str | None]) -> None:
    assert hex_packed(pa.array(bad, pa.string())) is None


def _hex(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(32))


def _write(root: Path, keys: list[str], *, null_tokens: bool) -> dict[str, dict[str, Any]]:
    """Rows in several parts: few conditions, repeat numbers and answers, many seeds; a null
    ``tokens_in`` in one row when ``null_tokens``."""
    written = {}
    writer = RawWriter(raw_dir(root, "s", "e"), flush_rows=7)
    for i, key in enumerate(keys):
        row: dict[str, Any] = {c: "" for c in REQUIRED_COLUMNS} | ROW_DEFAULTS
        row |= {
            "request_key": key,
            "engine": "e",
            "status": "ok" if i % 4 else "error",
            "condition": f"A/{'main' if i % 3 else 'sample'}",
            "output_text": None if i % 11 == 5 else f"answer {i % 5}",
            "repeat": i % 4,
            "seed": 10**9 + i,
            "tokens_in": None if null_tokens and i == 8 else 100 + i % 3,
            "sealed": True,
        }
        writer.append(row)
        written[key] = row
    writer.close()
    return written


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
def test_latest_columns_are_compact_and_keep_every_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    monkeypatch.setattr(raw, "_CODED_INTS", 8)  # seeds: more distinct values than this
    rng = random.Random(3)
    written = _write(tmp_path / "a", [_hex(rng) for _ in range(40)], null_tokens=False)
    rows = latest_records(raw_files(tmp_path / "a", "s"))
    assert isinstance(record_column(rows, "request_key"), HexKeys)
    for name in ("condition", "output_text", "status", "engine", "repeat", "sealed"):
        col = record_column(rows, name)
        assert isinstance(col, Coded) and col.codes.typecode == "B", name
    seeds = record_column(rows, "seed")
    assert isinstance(seeds, array) and seeds.typecode == "q"
    assert isinstance(record_column(rows, "tokens_in"), Coded)
    assert len(rows) == len(written)
    for r in rows:
        assert dict(r) == {c: written[r["request_key"]][c] for c in r}
        assert type(r["repeat"]) is int and type(r["sealed"]) is bool


@pytest.mark.parametrize("eager", [True, False], ids=["all-columns-at-once", "per-column"])
def test_columns_that_cannot_be_compact_are_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    """Keys that are not hex (here: one part's) and integers with a null read as lists, the
    rows read before the change of form given back too."""
    monkeypatch.setattr(raw, "_EAGER_ROWS", 10**9 if eager else 0)
    rng = random.Random(4)
    keys = [_hex(rng) for _ in range(30)] + [f"key-{i}" for i in range(10)]
    written = _write(tmp_path, keys, null_tokens=True)
    rows = latest_records(raw_files(tmp_path, "s"))
    assert isinstance(record_column(rows, "request_key"), list)
    assert isinstance(record_column(rows, "tokens_in"), list)
    assert sorted(r["request_key"] for r in rows) == sorted(keys)
    for r in rows:
        assert dict(r) == {c: written[r["request_key"]][c] for c in r}


@settings(max_examples=60, deadline=None)
@given(
    column=st.lists(st.integers(0, 40), max_size=30),
    asked=st.lists(st.integers(0, 60), max_size=30),
    strays=st.lists(
        st.sampled_from(["", "ABCD" * 4, "zz" * 8, "00" * 9, "0" * 15, None, 7]), max_size=4
    ),
)
def test_a_key_index_finds_each_key_where_a_dict_of_the_column_would(
    column: list[int], asked: list[int], strays: list[Any]
) -> None:
    """Each key's first position in the column, -1 where absent: asked as ``HexKeys`` of the
    same width, of another width, or as strings (upper case, other widths and non-strings
    are never keys of the column)."""
    keys = [f"{k:016x}" for k in column]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    packed = hex_packed(pa.array(keys, pa.string())) if keys else np.zeros((0, 8), np.uint8)
    index = KeyIndex(HexKeys(packed))
    wanted = [f"{k:016x}" for k in asked]
    if wanted:
        as_bytes = HexKeys(hex_packed(pa.array(wanted, pa.string())))
        assert index.find(as_bytes).tolist() == [first.get(k, -1) for k in wanted]
        wider = HexKeys(hex_packed(pa.array([k + "00" for k in wanted], pa.string())))
        assert index.find(wider).tolist() == [-1] * len(wanted)
    mixed = wanted + strays
    assert index.find(mixed).tolist() == [first.get(k, -1) for k in wanted] + [-1] * len(strays)
    assert index.find([k.upper() for k in wanted if k.upper() != k]).tolist() == [
        -1 for k in wanted if k.upper() != k
    ]


@pytest.mark.parametrize("span", [1, 200, 256, 257, 1000, 65_536])
def test_integers_within_a_span_become_their_offsets_a_slice_at_a_time(
    monkeypatch: pytest.MonkeyPatch, span: int
) -> None:
    """An integer column within ``_CODED_INTS`` values is held as offsets from its least value,
    one byte a row up to 256 values and two up to 65,536; made a slice at a time, every row
    gives back its own value (negative ones too), in whatever order the rows were gathered."""
    monkeypatch.setattr(raw, "_OFFSET_STEP", 7)
    rng = random.Random(span)
    n = 50
    values = [-5 + rng.randrange(span) for _ in range(n)]
    values[rng.randrange(n)] = -5
    values[rng.randrange(n)] = -5 + span - 1
    gather = raw._Gather("tokens_in", n)
    order = list(range(n))
    rng.shuffle(order)
    for chunk in (order[:20], order[20:]):
        gather.add(np.array(chunk), pa.chunked_array([pa.array([values[i] for i in chunk])]))
    col = gather.done()
    assert isinstance(col, Coded) and col.codes.typecode == ("B" if span <= 256 else "H")
    assert list(col) == values and all(type(v) is int for v in col)


def test_hex_keys_spell_out_as_an_arrow_array() -> None:
    keys = [f"{i * 7919:032x}" for i in range(9)]
    hk = HexKeys(hex_packed(pa.array(keys, pa.string())))
    for at in ([], [0], [8, 3, 3, 0]):
        got = hk.arrow(np.array(at, dtype=np.int64))
        assert got.type == pa.large_string() and got.to_pylist() == [keys[i] for i in at]
