"""The generic scorecard, made a few rows at a time, is the CSV ``csv.writer`` writes of every
graded row: same quoting, same cells, from a graded table (coded columns formatted once per
distinct value) or from plain rows; and it reaches the file in pieces."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealedeval.publish import generic, scorecards
from sealedeval.stages import artifacts
from sealedeval.store.columns import Coded, HexKeys


def _reference(rows: list[dict[str, Any]]) -> str:
    """What the scorecard was before it was made in pieces: ``csv.writer`` over every row."""
    columns: dict[str, None] = {}
    for g in rows:
        for k in g:
            columns.setdefault(k, None)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(columns))
    for g in rows:
        w.writerow([generic._cell(g.get(c)) for c in columns])
    return buf.getvalue()


text = st.text(alphabet='ab ,"\n\r\tç', max_size=6)
cell = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), text)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"request_key": text, "category": text},
            optional={"score": cell, "details": st.dictionaries(text, cell, max_size=2)},
        ),
        max_size=8,
    ),
    step=st.integers(1, 4),
)
def test_the_scorecard_is_csv_writers_text(rows: list[dict[str, Any]], step: int) -> None:
    want = _reference(rows)
    old, generic._CSV_ROWS = generic._CSV_ROWS, step
    try:
        assert "".join(generic.scorecard_text(rows)) == want
        table = artifacts.normalize_graded(rows)
        assert "".join(generic.scorecard_text(table)) == _reference([dict(r) for r in table])
    finally:
        generic._CSV_ROWS = old


def test_the_scorecard_file_is_written_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"request_key": f"k{i}", "category": "wrong, sadly", "score": i / 3} for i in range(7)]
    path = artifacts.graded_path(tmp_path, "s")
    artifacts.write_graded(path, rows)
    monkeypatch.setattr(generic, "_CSV_ROWS", 2)
    pieces = scorecards.build_scorecards(tmp_path, {"suites": {"s": {}}})["s.csv"]
    assert not isinstance(pieces, str)
    written = scorecards.write_scorecards(tmp_path, {"suites": {"s": {}}})
    got = (tmp_path / written[0]).read_text(encoding="utf-8")
    assert got == _reference([dict(r) for r in artifacts.read_graded(path)])
    assert got.count("\n") == 8 and '"wrong, sadly"' in got
    assert json.dumps(got)  # plain text


@pytest.mark.parametrize("hex_min", [1, None], ids=["keys-as-bytes", "keys-as-strings"])
def test_the_scorecard_of_a_graded_file_reads_a_row_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hex_min: int | None
) -> None:
    """The scorecard of a graded file of several row groups is the same text, made from one
    row group's columns at a time: no whole column of the file is ever read. Request keys
    read back as bytes (``HexKeys``) are spelled from them."""
    if hex_min is not None:
        monkeypatch.setattr(artifacts, "_HEX_KEYS_MIN", hex_min)
    rows = [
        {"request_key": f"{i:032x}", "category": ["a", "b,c"][i % 2], "score": i / 3}
        for i in range(11)
    ]
    path = artifacts.graded_path(tmp_path, "s")
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 3)
    artifacts.write_graded(path, rows)
    opened: list[artifacts.GradedRows] = []
    real = artifacts.read_graded

    def spy(p: Path, at: Any = None) -> artifacts.GradedRows:
        opened.append(real(p, at))
        return opened[-1]

    monkeypatch.setattr(artifacts, "read_graded", spy)
    monkeypatch.setattr(generic, "_CSV_ROWS", 2)
    written = scorecards.write_scorecards(tmp_path, {"suites": {"s": {}}})
    got = (tmp_path / written[0]).read_text(encoding="utf-8")
    assert got == _reference(rows)
    assert len(opened) == 1 and not opened[0].bycol
    piece = next(opened[0].parts())
    keys = piece.column("request_key")
    assert isinstance(keys, Coded) and isinstance(keys.values, HexKeys) == (hex_min is not None)


def test_a_scorecard_of_one_column_and_of_no_rows() -> None:
    one = [{"k": "a,b"}, {"k": None}, {"k": 2.5}]
    assert "".join(generic.scorecard_text(one)) == _reference(one)
    table = artifacts.normalize_graded(one)
    assert "".join(generic.scorecard_text(table)) == _reference(one)
    assert "".join(generic.scorecard_text([])) == _reference([])
