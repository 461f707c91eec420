"""The column-wise graded table (``stages.grade.GradedTable``), the integer sort of coded
string keys, constant columns, and the latest rows' shared columns."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import REPO

from sealedeval.config import load_config
from sealedeval.plugins import GradeContext, SuiteBase
from sealedeval.stages import artifacts
from sealedeval.stages.artifacts import Coded, GradedRows
from sealedeval.stages.grade import BASE_COLUMNS, ORDER, GradedTable, Verdict, grade, graded_row
from sealedeval.store.raw import (
    LatestRows,
    RawWriter,
    latest_records,
    raw_dir,
    raw_files,
    record_column,
)


def _raw(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [
        {
            "request_key": f"k{rnd.randrange(10**6):06d}-{i}",
            "engine": rnd.choice(["b", "a", "c"]),
            "item_id": f"t{rnd.randrange(5)}",
            "condition": rnd.choice(["x/main", "x/sample"]),
            "repeat": rnd.randrange(3),
            "status": rnd.choice(["ok", "ok", "error"]),
        }
        for i in range(n)
    ]


VERDICTS = [
    Verdict("regex", "1", 1.0, True, "correct", '{"m":1}'),
    Verdict("exact", "1", 0.0, False, "correct", "{}"),
    Verdict("exact", "1", -0.0, False, "correct", "{}"),  # equal to 0.0, yet its own value
    Verdict("facts", "2", 1, True, "wrong", "{}"),  # an int score beside 1.0
    Verdict("facts", "2", None, False, "wrong", "{}"),
]


def test_a_built_table_holds_what_graded_rows_would() -> None:
    raw = _raw(200)
    t = GradedTable(raw)
    dicts = []
    for i, r in enumerate(raw):
        vs = VERDICTS[i % 5 :] + VERDICTS[: i % 2]
        t.add(i, vs)
        dicts += [graded_row(r, **v._asdict()) for v in vs]
    built = t.done()
    assert built.names == list(BASE_COLUMNS)
    assert len(built) == len(dicts)
    for got, want in zip(built, dicts, strict=True):
        assert dict(got) == want
        # each row gets its own value back, not an equal one (-0.0 vs 0.0, 1 vs 1.0)
        assert repr(got["score"]) == repr(want["score"])
        assert type(got["score"]) is type(want["score"])


def test_an_empty_table_has_no_columns() -> None:
    assert GradedTable([]).done() == GradedRows.from_rows([])
    assert len(GradedTable(_raw(3)).done()) == 0


class _TableSuite(SuiteBase):
    name = "tabled"

    def __init__(self, bad: bool = False) -> None:
        self.bad = bad

    def grade_table(self, ctx: GradeContext) -> Any:
        if self.bad:
            return [dict(r) for r in ctx.rows]
        t = GradedTable(ctx.rows)
        for i in reversed(range(len(ctx.rows))):  # out of order: the stage sorts
            t.add(i, [VERDICTS[0], VERDICTS[1]])
        return t.done()


def test_the_stage_prefers_grade_table_and_adds_provenance_and_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sealedeval.stages.grade as G

    monkeypatch.setattr(G, "suite_info", lambda name, cfg: {"version": "9"})
    cfg = load_config(REPO, ["config/tiny.yaml"])
    raw = _raw(50)
    out = grade(cfg, _TableSuite(), [], raw)  # type: ignore[arg-type]
    assert out.names == [*BASE_COLUMNS, "suite", "suite_version"]
    assert {(g["suite"], g["suite_version"]) for g in out} == {("tabled", "9")}
    keys = [tuple(g[k] for k in ORDER) for g in out]
    assert keys == sorted(keys) and len(out) == 100
    with pytest.raises(ValueError, match="grade_table"):
        grade(cfg, _TableSuite(bad=True), [], raw)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["b", "a", "é", "B", ""]), st.text(max_size=3), st.integers(0, 3)
        ),
        max_size=60,
    )
)
def test_sorting_coded_string_keys_is_pythons_stable_sort(rows: list[tuple[str, str, int]]) -> None:
    """The integer-rank sort of ``Coded`` string columns orders as ``sorted`` does, stably
    (the third column, not a key, shows the order among equal keys): values ranked in Python
    or by Arrow, order checked in one chunk or in chunks of two rows."""
    dicts = [{"e": e, "k": k, "n": n} for e, k, n in rows]
    expected = sorted(rows, key=lambda r: (r[0], r[1]))
    for arrow_from, chunk in ((65_536, 1 << 20), (0, 2)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(artifacts, "_RANK_IN_ARROW", arrow_from)
            mp.setattr(artifacts, "_SORTED_CHUNK", chunk)
            table = GradedRows.from_rows(dicts)
            out = table.sorted_by(["e", "k"])
            assert [(g["e"], g["k"], g["n"]) for g in out] == expected


def test_an_already_sorted_table_is_returned_as_it_is() -> None:
    rows = [{"e": e, "k": str(i)} for i, e in enumerate("abcab")]
    rows.sort(key=lambda r: (r["e"], r["k"]))
    table = GradedRows.from_rows(rows)
    assert table.sorted_by(["e", "k"]) is table


def test_constant_columns_are_added_or_replace_one() -> None:
    table = GradedRows.from_rows([{"a": 1, "suite": "x"}, {"a": 2, "suite": "y"}])
    out = table.with_constants({"suite": "s", "v": "1", "nan": math.nan})
    assert out.names == ["a", "suite", "v", "nan"]
    assert [g["suite"] for g in out] == ["s", "s"] and [g["v"] for g in out] == ["1", "1"]
    assert all(math.isnan(g["nan"]) for g in out)
    assert isinstance(out.column("v"), Coded)
    assert [dict(g) for g in table] == [{"a": 1, "suite": "x"}, {"a": 2, "suite": "y"}]


def test_latest_rows_share_their_columns_and_refuse_changes(tmp_path: Any) -> None:
    from sealedeval.store.schema import RAW_SCHEMA

    w = RawWriter(raw_dir(tmp_path, "s", "e"), flush_rows=3, flush_s=3600)
    for i in range(7):
        row = {c: "" for c in RAW_SCHEMA.names} | {
            "request_key": f"k{i}",
            "status": "ok",
            "repeat": i,
            "seed": 0,
            "tokens_in": 0,
            "tokens_out": 0,
            "cost_usd": 0.0,
            "latency_s": 0.0,
            "attempts": 1,
            "sealed": True,
        }
        w.append(row)
    w.close()
    rows = latest_records(raw_files(tmp_path, "s"))
    assert isinstance(rows, LatestRows)
    assert list(record_column(rows, "request_key")) == [r["request_key"] for r in rows]
    assert record_column(rows, "repeat") is record_column(rows, "repeat")  # shared, no copy
    plain = [dict(r) for r in rows]
    assert record_column(plain, "repeat") == [r["repeat"] for r in rows]
    for name in ("append", "sort", "pop", "insert", "reverse", "clear"):
        assert not hasattr(rows, name)
    with pytest.raises(TypeError):
        rows[0] = rows[1]  # type: ignore[index]
    # no row object is kept: each access makes one over the shared columns
    assert rows[0] is not rows[0] and rows[0] == rows[0] == rows[-7]
    assert rows[2:4] == [rows[2], rows[3]] and rows == list(rows)
    assert rows + rows == [*rows, *rows] and [rows[0]] + rows == [rows[0], *rows]  # noqa: RUF005
    with pytest.raises(IndexError):
        rows[7]
    copy = list(rows)
    copy.reverse()
    assert copy[0]["request_key"] == "k6"


def test_graded_column_is_the_column_or_the_values() -> None:
    table = GradedRows.from_rows([{"a": "x"}, {"a": "y"}])
    assert artifacts.graded_column(table, "a") is table.column("a")
    assert artifacts.graded_column([{"a": 1}, {"a": 2}], "a") == [1, 2]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["b", "a"]), st.integers(0, 5), st.integers(0, 3)),
        max_size=40,
    ),
    st.sampled_from([16, 32]),
    st.booleans(),
)
def test_hex_keys_are_checked_in_order_by_their_bytes(
    rows: list[tuple[str, int, int]], width: int, presorted: bool
) -> None:
    """A ``Coded`` column over hex keys (``HexKeys``) is checked for order word by word
    (keys here share their first words, so later words decide): a table in order comes back
    as it is without ranking its keys; one out of order sorts as ``sorted`` on the strings."""
    import numpy as np

    from sealedeval.store.columns import Coded, HexKeys, code_array

    # six keys: pairs equal but for their last byte, so every word of a key is compared
    packed = np.zeros((6, width), dtype=np.uint8)
    packed[:, -1] = [3, 1, 2, 1, 0, 9]
    packed[:, 0] = [0, 0, 1, 1, 0, 0]
    keys = HexKeys(packed)
    if presorted:
        rows = sorted(rows, key=lambda r: (r[0], keys[r[1]]))
    expected = sorted(rows, key=lambda r: (r[0], keys[r[1]]))
    n = len(rows)
    e = Coded(code_array(np.array([0 if r[0] == "a" else 1 for r in rows]), 2), ["a", "b"])
    k = Coded(code_array(np.array([r[1] for r in rows], dtype=np.int64), 6), keys)
    table = GradedRows(["e", "k", "n"], [e, k, [r[2] for r in rows]], n)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(artifacts, "_SORTED_CHUNK", 3)
        if presorted:
            mp.setattr(HexKeys, "ranks", lambda self: pytest.fail("ranked keys in order"))
            assert table.sorted_by(["e", "k"]) is table
        out = table.sorted_by(["e", "k"])
    assert [(g["e"], g["k"], g["n"]) for g in out] == [(a, keys[b], c) for a, b, c in expected]
