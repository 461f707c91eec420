"""The stage files are lossless: what a stage writes reads back as the value it computed."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval import canonical
from sealedeval.stages import artifacts
from sealedeval.store.columns import Coded, HexKeys

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
nested = st.recursive(
    scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(
    # every graded row has at least its request key (stages.grade.BASE_COLUMNS)
    rows=st.lists(
        st.fixed_dictionaries(
            {"request_key": st.text(max_size=4)},
            optional={k: nested for k in ("a", "b", "c")},
        ),
        max_size=6,
    )
)
def test_graded_rows_round_trip_through_the_file(rows, tmp_path_factory) -> None:
    path = Path(tmp_path_factory.mktemp("g")) / "g.parquet"
    artifacts.write_graded(path, rows, {"stage_key": "k"})
    back = artifacts.read_graded(path)
    # the in-memory normalisation is exactly what the file gives back
    assert back == artifacts.normalize_graded(rows)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    # exact, unless a value went through canonical JSON (nested, or a column of mixed types),
    # which rounds floats to canonical.FLOAT_DIGITS significant digits by design
    assert back == [{c: r.get(c) for c in cols} for r in rows] or any(
        isinstance(v, dict | list)
        or (isinstance(v, float) and (math.isnan(v) or canonical.normalise(v) != v))
        for r in rows
        for v in r.values()
    )
    assert artifacts.read_graded_meta(path)["stage_key"] == "k"


def test_mixed_types_in_a_column_keep_their_python_types(tmp_path: Path) -> None:
    rows = [{"x": 1, "y": {"k": [1, 2]}}, {"x": 1.5, "y": None}, {"x": True, "y": "s"}]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    back = artifacts.read_graded(path)
    assert back == rows
    assert [type(r["x"]) for r in back] == [int, float, bool]


def test_items_round_trip_with_their_metadata(tmp_path: Path) -> None:
    items = [{"id": "a", "n": 1, "xs": [1.5, None]}, {"id": "b", "n": 2, "xs": []}]
    path = tmp_path / "i.parquet"
    artifacts.write_items(path, items, {"rubric_sha256": "r", "seed": "1"})
    assert artifacts.read_items(path) == artifacts.normalize_items(items) == items
    assert artifacts.read_items_meta(path) == {"rubric_sha256": "r", "seed": "1"}


def _dict_rows(rows: list[dict[str, object]], extra: dict[str, object]) -> list[dict[str, object]]:
    """What the grade stage did before it kept columns: ``{**g, **extra}`` per row, sorted,
    then one dict per row over the columns in first-seen order (None where a row lacks one)."""
    out = sorted(({**g, **extra} for g in rows), key=lambda g: (g["engine"], g["request_key"]))
    cols = list(dict.fromkeys(k for g in out for k in g))
    return [{c: g.get(c) for c in cols} for g in out]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"engine": st.sampled_from(["b", "a", "é"]), "request_key": st.text(max_size=3)},
            optional={k: scalar for k in ("x", "suite", "y")},
        ),
        max_size=8,
    )
)
def test_columns_hold_the_rows_the_dicts_held(rows: list[dict[str, object]]) -> None:
    """Columnar graded rows equal the dicts they replace: same rows in the same stable order,
    same keys in the same order (first seen after the sort), extra columns overriding."""
    extra = {"suite": "s", "suite_version": "1"}
    got = artifacts.GradedRows.from_rows(iter(rows), extra).sorted_by(("engine", "request_key"))
    want = _dict_rows(rows, extra)
    assert got == want
    assert [list(g) for g in got] == [list(w) for w in want]
    assert [dict(g) for g in got] == want
    assert artifacts.graded_table(got).equals(artifacts.graded_table(want))


def test_graded_rows_read_back_as_columns_equal_to_the_derived_ones(tmp_path: Path) -> None:
    rows = [
        {"request_key": "k2", "engine": "e", "score": 1.0, "details": '{"a":1}'},
        {"request_key": "k1", "engine": "e", "score": 0.5, "details": '{"a":1}', "extra": [1]},
    ]
    derived = artifacts.normalize_graded(rows)
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, derived)
    back = artifacts.read_graded(path)
    assert back == derived
    assert (back != derived) is False  # the audit compares with !=
    assert back != artifacts.normalize_graded(rows[:1])
    # equal strings are one object after reading: a column of repeated details costs a pointer
    assert back[0]["details"] is back[1]["details"]
    assert back[1]["extra"] == [1] and back[0]["extra"] is None
    assert back[-1]["request_key"] == "k1" and len(back[0:1]) == 1
    with pytest.raises(KeyError):
        back[0]["nope"]


def test_a_mixed_column_rounds_floats_as_canonical_json_does(tmp_path: Path) -> None:
    """Hypothesis found it: a column holding a bool and a float is stored as canonical JSON,
    so 10000000001.0 comes back as canonical's 10-digit 1e10 — the file and the in-memory
    normalisation agree, and a plain float column keeps every digit."""
    rows = [{"request_key": "a", "x": False}, {"request_key": "b", "x": 10000000001.0}]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    back = artifacts.read_graded(path)
    assert back == artifacts.normalize_graded(rows)
    assert [r["x"] for r in back] == [False, 1e10]
    artifacts.write_graded(path, rows[1:])
    assert [r["x"] for r in artifacts.read_graded(path)] == [10000000001.0]


def test_a_file_of_many_row_groups_reads_back_every_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written and read a few rows per row group: floats come back bit for bit (-0.0, NaN,
    None beside them), strings with nulls, integers, booleans and JSON; hex request keys are
    held as bytes until a row group holds other keys, then every key is a string again."""
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 4)
    monkeypatch.setattr(artifacts, "_HEX_KEYS_MIN", 2)
    floats = [0.0, -0.0, float("nan"), None, 1.5, 5e-324, 0.1 + 0.2]
    keys = [f"{i:032x}" for i in range(13)] + ["k-not-hex", "k2"]
    rows = [
        {
            "request_key": k,
            "score": floats[i % len(floats)],
            "item": None if i % 5 == 0 else f"item {i % 3}",
            "n": i % 4,
            "passed": None if i == 3 else i % 2 == 0,
            "details": {"i": i % 2},
        }
        for i, k in enumerate(keys)
    ]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    assert pq.ParquetFile(path).num_row_groups == 4
    back = artifacts.read_graded(path)
    assert [r["request_key"] for r in back] == keys
    got = [r["score"] for r in back]
    assert [repr(v) for v in got] == [repr(floats[i % len(floats)]) for i in range(len(keys))]
    for name in ("item", "n", "passed", "details"):
        assert [r[name] for r in back] == [r[name] for r in rows], name
    assert isinstance(back.column("request_key"), Coded)
    assert not isinstance(back.column("request_key").values, HexKeys)  # the last keys: not hex

    hex_only = rows[:12]
    artifacts.write_graded(path, hex_only)
    again = artifacts.read_graded(path)
    assert isinstance(again.column("request_key").values, HexKeys)
    assert [r["request_key"] for r in again] == keys[:12]
    assert again != back  # (NaN is not equal to itself: two reads of it are not ==)


def test_a_graded_file_is_read_a_column_when_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the columns asked for are read; all of them when every column is; and from the
    file as it was opened, when it is written over in between (as an atomic write does)."""
    rows = [{"request_key": f"k{i}", "category": "correct", "score": i / 2} for i in range(9)]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    read: list[str] = []
    real = artifacts._ReadColumn.done

    def counted(self: artifacts._ReadColumn) -> object:
        out = real(self)
        read.append(str(len(out)))
        return out

    monkeypatch.setattr(artifacts._ReadColumn, "done", counted)
    back = artifacts.read_graded(path)
    assert read == [] and len(back) == 9
    artifacts.write_graded(path, [{"request_key": "other", "category": "x", "score": 0.0}])
    assert back[3]["score"] == 1.5 and back.column("score")[8] == 4.0
    assert len(read) == 1
    assert back[0].get("category") == "correct" and back[0].get("nope", 7) == 7
    assert len(read) == 2
    assert [r["request_key"] for r in back] == [f"k{i}" for i in range(9)]
    assert len(read) == 3 and len(back.columns) == 3 and len(read) == 3
    assert back == rows


def test_comparing_a_graded_file_keeps_none_of_its_columns(tmp_path: Path) -> None:
    """The audit compares a graded file with its re-derivation: each column of the file is
    read for the comparison and let go (held, they were every column of every row)."""
    rows = [{"request_key": f"k{i}", "category": "correct", "score": i / 2} for i in range(9)]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    back = artifacts.read_graded(path)
    assert back == artifacts.normalize_graded(rows) and not back.bycol
    assert back != artifacts.normalize_graded([*rows[:8], rows[8] | {"score": 9.0}])
    assert not back.bycol and back[8]["score"] == 4.0 and list(back.bycol) == ["score"]


def test_some_rows_of_a_graded_file_and_its_row_groups_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_graded(path, rows)`` gives the rows at those positions, whichever row groups
    they fall in (none, some or all of one); ``parts()`` gives the row groups in order, each
    read on its own, from the file as it was opened, and the parent reads no column for it."""
    import numpy as np

    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 4)
    rows = [
        {
            "request_key": f"{i:032x}",
            "category": ["correct", "wrong", "abstain"][i % 3],
            "score": i / 4,
            "details": {"i": i} if i % 2 else None,
        }
        for i in range(18)
    ]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    assert pq.ParquetFile(path).num_row_groups == 5
    for at in ([], [0], [1, 2, 3, 4, 5, 6, 7], [3, 8, 9, 10, 11, 17], list(range(18))):
        some = artifacts.read_graded(path, np.array(at, dtype=np.int64))
        assert len(some) == len(at)
        assert [dict(r) for r in some] == [rows[i] for i in at], at
    with pytest.raises(IndexError):
        artifacts.read_graded(path, np.array([18]))

    whole = artifacts.read_graded(path)
    artifacts.write_graded(path, rows[:2])  # written over: the open file is still read
    pieces = list(whole.parts())
    assert [len(p) for p in pieces] == [4, 4, 4, 4, 2]
    assert [dict(r) for p in pieces for r in p] == rows
    assert not whole.bycol  # nothing read into the whole rows
    some = artifacts.read_graded(path, np.array([1]))
    assert [dict(r) for r in some] == [rows[1]]
    assert [len(p) for p in some.parts()] == [1]
    in_memory = artifacts.normalize_graded(rows)
    assert [p is in_memory for p in in_memory.parts()] == [True]


def test_graded_rows_read_from_a_file_are_freed_without_the_cycle_collector(
    tmp_path: Path,
) -> None:
    """A graded file's rows, their columns read, are freed as soon as nothing holds them: no
    reference cycle waits for the cyclic collector (the scorecard's row groups piled up,
    +0.5 GB, until it ran)."""
    import gc

    rows = [{"request_key": f"k{i}", "category": "correct", "score": i / 2} for i in range(9)]
    path = tmp_path / "g.parquet"
    artifacts.write_graded(path, rows)
    gc.collect()
    gc.disable()
    try:
        back = artifacts.read_graded(path)
        assert back[3]["score"] == 1.5 and [len(p) for p in back.parts()] == [9]
        del back
        assert gc.collect() == 0
    finally:
        gc.enable()


@settings(max_examples=60, deadline=None)
@given(
    details=st.lists(
        st.one_of(st.none(), st.dictionaries(st.text(max_size=2), nested, max_size=2)),
        max_size=8,
    ),
    tail=st.sampled_from([None, "text", 1.5]),
)
def test_a_column_of_dicts_is_coded_by_canonical_json(details: list[object], tail: object) -> None:
    """``from_rows`` codes a column of JSON containers by their canonical text (the first
    value of a text stands for later ones), and the rows normalise to what the dicts do,
    chunk by chunk; a scalar among them (in a later chunk) makes the column a list again."""
    rows = [{"request_key": str(i), "details": d} for i, d in enumerate([*details, tail])]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(artifacts, "_CHUNK", 3)
        got = artifacts.GradedRows.from_rows(iter(rows))
    assert artifacts.normalize_graded(got) == artifacts.normalize_graded(rows)
    col = got.column("details")
    if tail is None or not any(isinstance(d, dict) for d in details):  # dicts, or scalars
        assert isinstance(col, Coded)
        texts = [None if v is None else canonical.compact(v) for v in col.values]
        assert len(set(texts)) == len(texts)  # one value a text
        assert [None if g["details"] is None else canonical.compact(g["details"]) for g in got] == [
            None if r["details"] is None else canonical.compact(r["details"]) for r in rows
        ]
    else:
        assert not isinstance(col, Coded)
        assert [canonical.compact(v) for v in col] == [
            canonical.compact(r["details"]) for r in rows
        ]


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "request_key": st.text(max_size=4),
                "score": st.one_of(st.none(), st.floats(allow_nan=False), st.integers(0, 3)),
                "tag": st.one_of(st.none(), st.text(max_size=3)),
                "details": nested,
            }
        ),
        min_size=1,
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 12), max_size=4),
    write_rows=st.integers(1, 6),
)
def test_graded_chunks_write_the_file_of_all_their_rows(
    rows: list[dict[str, object]], cuts: list[int], write_rows: int, tmp_path_factory
) -> None:
    """``GradedChunks``: rows added a chunk at a time (a chunk may hold only Nones in a column,
    or no row) make the file ``write_graded`` makes of all of them, byte for byte, at any row
    group size; where two chunks' columns have kinds that cannot be one column's without
    seeing the other's values (an int here, a float there), nothing is written."""
    tmp = tmp_path_factory.mktemp("chunks")
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    chunks = [rows[a:b] for a, b in itertools.pairwise(bounds)] + [[]]
    mp = pytest.MonkeyPatch()
    mp.setattr(artifacts, "_WRITE_ROWS", write_rows)
    mp.setattr(artifacts, "_PIECE_ROWS", 2)
    try:
        expected = tmp / "whole.parquet"
        artifacts.write_graded(expected, artifacts.GradedRows.from_rows(rows), {"stage_key": "k"})
        (tmp / "spill").mkdir()
        out = artifacts.GradedChunks(tmp / "spill")
        for c in chunks:
            out.add(artifacts.GradedRows.from_rows(c))
        path = tmp / "chunked.parquet"
        full = [c for c in chunks if c]
        names = {tuple(artifacts.GradedRows.from_rows(c).names) for c in full}
        kinds = [
            {
                artifacts._column_kind([r[n] for r in c])
                for c in full
                if any(r[n] is not None for r in c)
            }
            for n in ("score", "tag", "details")
        ]
        if out.write(path, {"stage_key": "k"}):
            assert path.read_bytes() == expected.read_bytes()
        else:
            assert not path.exists()
            assert len(names) > 1 or any(len(k) > 1 for k in kinds)
        assert not any((tmp / "spill").iterdir())  # each chunk's file removed once copied
    finally:
        mp.undo()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_an_analysis_document_is_written_as_its_canonical_text(doc: dict[str, Any]) -> None:
    """``write_analysis`` encodes into the file as it goes (``canonical.dump``): the bytes are
    ``canonical.dumps``' text, rounded floats and non-finite ones as null included."""
    import tempfile

    from sealedeval.canonical import dumps

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.json"
        artifacts.write_analysis(path, doc)
        assert path.read_text(encoding="utf-8") == dumps(doc)
