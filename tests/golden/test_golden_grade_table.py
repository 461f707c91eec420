"""Golden's column-wise grade (``grade_table``, what the grade stage uses) gives the same graded
table, byte for byte once written, and the same analysis as its row-by-row grade
(``iter_grade``), on a run with answers right and wrong, repeated and
distinct, failed calls, agent branches, judge replies on answers, injection and
attribute-swap probes — rows as plain dicts and as ``latest_records`` reads them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from sealedeval.canonical import dumps
from sealedeval.config import Config, load_config
from sealedeval.plugins import (
    AnalyzeContext,
    GenerateContext,
    GradeContext,
    RequestContext,
    get_suite,
    suite_info,
)
from sealedeval.stages import artifacts
from sealedeval.stages.grade import ORDER, grade
from sealedeval.store.columns import Coded, HexKeys
from sealedeval.store.raw import (
    LatestRows,
    RawWriter,
    latest_records,
    raw_dir,
    raw_files,
    record_column,
)
from sealedeval.store.schema import RAW_SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path) -> Config:
    extra = tmp_path / "grade.yaml"
    extra.write_text(
        yaml.safe_dump(
            {
                "engines": {"other": {"kind": "reference"}},
                "suites": {
                    "golden": {
                        "engines": ["reference", "other"],
                        "limit": 6,
                        "repeats": 3,
                        "branches": {
                            "A": {"solver": "single", "tools": False},
                            "B": {"solver": "agent", "tools": True, "tasks": "all"},
                        },
                        "branch_engines": ["reference", "other"],
                        "judge": {"engines": []},
                        "probes": {
                            "engines": ["reference", "other"],
                            "injection": {"branches": ["A"], "tasks": "all"},
                            "attribute_swap": {"branch": "A"},
                        },
                    }
                },
            }
        )
    )
    return load_config(ROOT, ["config/tiny.yaml", str(extra)])


def _rows(cfg: Config, hex_keys: bool = False) -> list[dict[str, Any]]:
    """Every planned call of both engines answered: the reference answer, a wrong one, the
    same wrong one again, a distinct one or a failed call, by position; a judge reply on every
    third answer of ``reference``. Keys named for what they are, or sha256 hex as real runs
    key their rows (``hex_keys``)."""

    def key(name: str) -> str:
        return hashlib.sha256(name.encode()).hexdigest()[:32] if hex_keys else name

    suite = get_suite("golden", cfg)
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    template = {c: "" for c in RAW_SCHEMA.names} | {
        "suite": "golden",
        "params": "{}",
        "messages": "[]",
        "response": "{}",
        "trajectory": "[]",
        "tokens_in": 1,
        "tokens_out": 1,
        "cost_usd": 0.0,
        "latency_s": 0.0,
        "attempts": 1,
        "seed": 7,
        "sealed": True,
        "engine_path": "primary",
        "finished_at": "2026-01-01T00:00:00Z",
        "started_at": "2026-01-01T00:00:00Z",
    }
    rows: list[dict[str, Any]] = []
    for eng in ("reference", "other"):
        ctx = RequestContext(cfg=cfg, items=items, engine=cfg.engine(eng), model=eng, seed=7)
        for n, r in enumerate(suite.requests(ctx)):
            text = suite.reference_answer(r)
            status, kind = "ok", ""
            if n % 5 == 1:
                text = "zzz"
            elif n % 5 == 2:
                text = "I don't know."
            elif n % 5 == 3:
                text = f"{text} (and {n})"
            elif n % 7 == 4:
                text, status, kind = "", "error", "timeout"
            rows.append(
                template
                | {
                    "request_key": key(f"{eng}-{n:04d}"),
                    "engine": eng,
                    "engine_kind": "reference",
                    "model": eng,
                    "item_id": r.item_id,
                    "condition": r.condition,
                    "repeat": r.repeat,
                    "status": status,
                    "error_kind": kind,
                    "output_text": text,
                }
            )
            if eng == "reference" and n % 3 == 0 and "/" in r.condition:
                if r.condition.split("/", 1)[0] in ("judge", "probe"):
                    continue
                rows.append(
                    template
                    | {
                        "request_key": key(f"{eng}-{n:04d}-judge"),
                        "engine": eng,
                        "engine_kind": "reference",
                        "model": eng,
                        "item_id": r.item_id,
                        "condition": f"judge/transcript/{r.condition}",
                        "repeat": r.repeat,
                        "status": "ok",
                        "output_text": json.dumps({"verdict": "PASS" if n % 2 else "FAIL"}),
                    }
                )
    return rows


def _row_by_row(cfg: Config, items: Any, rows: Any) -> artifacts.GradedRows:
    suite = get_suite("golden", cfg)
    extra = {"suite": "golden", "suite_version": str(suite_info("golden", cfg)["version"])}
    ctx = GradeContext(cfg=cfg, items=items, rows=rows)
    return artifacts.GradedRows.from_rows(suite.iter_grade(ctx), extra).sorted_by(ORDER)


def _latest(store: Path, rows: list[dict[str, Any]]) -> LatestRows:
    """The rows written as raw parts (40 rows each) under ``store`` and read back."""
    w = RawWriter(raw_dir(store, "golden", "all"), flush_rows=40, flush_s=3600)
    for r in rows:
        w.append(r)
    w.close()
    latest = latest_records(raw_files(store, "golden"))
    assert isinstance(latest, LatestRows)
    return latest


@pytest.mark.parametrize("keys", ["named", "hex"])
@pytest.mark.parametrize("store", ["dicts", "latest_records"])
def test_grade_table_is_the_row_by_row_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, keys: str
) -> None:
    """... and the analysis reads the same categories whichever way it finds a graded row's
    raw row: by the table's own raw positions, by hex keys as bytes (graded rows read back
    from their file, written a few rows per row group), or through a dict of keys."""
    monkeypatch.setattr(artifacts, "_HEX_KEYS_MIN", 1)
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 50)
    cfg = _config(tmp_path)
    suite = get_suite("golden", cfg)
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    plain = sorted(_rows(cfg, keys == "hex"), key=lambda r: (r["engine"], r["request_key"]))
    rows: Any = plain if store == "dicts" else _latest(tmp_path / "store", plain)
    conditions = {r["condition"].split("/", 1)[0] for r in plain}
    assert {"A", "B", "judge", "probe"} <= conditions  # every kind of row is there
    assert {r["status"] for r in plain} == {"ok", "error"}

    table = artifacts.normalize_graded(grade(cfg, suite, items, rows))
    rowwise = artifacts.normalize_graded(_row_by_row(cfg, items, rows))
    assert len(table) > len(rows)  # several graders per answer
    assert {g["grader"] for g in table} >= {"-", "regex", "exact", "facts", "abstention", "judge"}
    assert table.names == rowwise.names
    assert table == rowwise
    written, expected = artifacts.graded_table(table), artifacts.graded_table(rowwise)
    assert written.equals(expected)
    assert written.schema.equals(expected.schema, check_metadata=True)

    def analysis(graded: Any) -> str:
        ctx = AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows)
        return dumps(suite.analyze(ctx))

    path = tmp_path / "graded.parquet"
    artifacts.write_graded(path, table)
    back = artifacts.read_graded(path)
    assert back == table and pq.ParquetFile(path).num_row_groups == -(-len(table) // 50)
    if keys == "hex":  # both sides hold the keys as bytes: no str per key
        assert isinstance(back.column("request_key"), Coded)
        assert isinstance(back.column("request_key").values, HexKeys)  # type: ignore[attr-defined]
        if store == "latest_records":
            assert isinstance(record_column(rows, "request_key"), HexKeys)
    expected = analysis(table)
    assert expected == analysis(rowwise) == analysis(list(map(dict, rowwise)))
    assert analysis(back) == expected


def test_equal_answers_are_graded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo: a task's graders run once per distinct answer, not once per row."""
    from sealedeval.suites.golden import rubric

    cfg = _config(tmp_path)
    suite = get_suite("golden", cfg)
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    rows = sorted(_rows(cfg), key=lambda r: (r["engine"], r["request_key"]))
    calls: list[str] = []
    real = rubric.grade_answer

    def counted(task: Any, answer: str, judged: str | None) -> Any:
        calls.append(answer)
        return real(task, answer, judged)

    monkeypatch.setattr(rubric, "grade_answer", counted)
    suite.grade_table(GradeContext(cfg=cfg, items=items, rows=rows))
    answers = [r for r in rows if r["status"] == "ok" and not r["condition"].startswith("judge/")]
    assert 0 < len(calls) < len(answers)
    assert calls.count("zzz") <= len({r["item_id"] for r in rows}) * 2  # per task (and swap)


def _stored(
    tmp_path: Path,
) -> tuple[Config, Any, Any, list[dict[str, Any]], LatestRows, list[Path]]:
    """The test rows (hex keys, in canonical order) stored as raw parts under ``tmp_path``:
    config, suite, items, the rows, their latest rows read back, the parts."""
    cfg = _config(tmp_path)
    suite = get_suite("golden", cfg)
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    plain = sorted(_rows(cfg, hex_keys=True), key=lambda r: (r["engine"], r["request_key"]))
    latest = _latest(tmp_path / "store", plain)
    return cfg, suite, items, plain, latest, raw_files(tmp_path / "store", "golden")


@pytest.mark.parametrize("bucket_rows", [1, 8, 64, 10**6], ids=["256-buckets", "64", "8", "one"])
def test_grading_by_chunk_writes_the_file_grading_whole_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket_rows: int
) -> None:
    """``stages.chunked``: each engine's latest rows graded a key-prefix bucket at a time (the
    judge's replies found in every bucket first) give the graded file grading every row at
    once gives, byte for byte, row groups and pieces cut anywhere; the items are asked for
    the rows' rubric hashes."""
    from sealedeval.stages import chunked

    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 50)
    monkeypatch.setattr(artifacts, "_PIECE_ROWS", 16)
    cfg, suite, items, plain, latest, files = _stored(tmp_path)
    whole = tmp_path / "whole.parquet"
    meta = {"stage_key": "k"}
    table = artifacts.normalize_graded(grade(cfg, suite, items, latest))
    artifacts.write_graded(whole, table, meta)
    asked: list[set[str]] = []

    def items_for(hashes: set[str]) -> Any:
        asked.append(hashes)
        return items

    by_chunk = tmp_path / "chunked.parquet"
    n = chunked.grade_by_chunk(
        cfg, suite, files, items_for, by_chunk, meta, bucket_rows=bucket_rows
    )
    assert n == len(table) and asked == [{str(r["rubric_sha256"]) for r in plain}]
    assert by_chunk.read_bytes() == whole.read_bytes()
    assert pq.ParquetFile(by_chunk).num_row_groups == -(-len(table) // 50)


def test_a_judge_reply_in_another_chunk_still_grades_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``grade_scan``'s replies, an answer graded in one chunk would lose the judge's
    verdict written in another: the file would differ (the test above would catch a scan that
    missed them)."""
    from sealedeval.stages import chunked

    cfg, suite, items, _plain, latest, files = _stored(tmp_path)
    table = artifacts.normalize_graded(grade(cfg, suite, items, latest))
    judged = sum(1 for g in table if g["grader"] == "judge")
    assert judged

    def graders(path: Path) -> int:
        return sum(1 for g in artifacts.read_graded(path) if g["grader"] == "judge")

    path = tmp_path / "g.parquet"
    assert chunked.grade_by_chunk(cfg, suite, files, lambda h: items, path, {}, bucket_rows=1)
    assert graders(path) == judged
    monkeypatch.setattr(type(suite), "grade_scan", lambda self, ctx: {"verdicts": {}})
    assert chunked.grade_by_chunk(cfg, suite, files, lambda h: items, path, {}, bucket_rows=1)
    assert graders(path) < judged


@pytest.mark.parametrize("bucket_rows", [1, 8, 64], ids=["256-buckets", "64", "8"])
def test_the_analysis_by_chunk_is_the_analysis_of_all_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket_rows: int
) -> None:
    """Golden's analysis reading each engine's rows a key-prefix bucket at a time, with each
    bucket's stretch of the graded file (``stages.chunked.row_chunks``), is the analysis of
    every row at once: the same document, byte for byte (repeats, agent runs, top transcripts,
    probes, judge columns, the main answers' tables)."""
    from sealedeval.stages import chunked

    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 50)
    cfg, suite, items, plain, latest, files = _stored(tmp_path)
    graded = artifacts.normalize_graded(grade(cfg, suite, items, latest))
    path = tmp_path / "graded.parquet"
    artifacts.write_graded(path, graded)
    whole = dumps(suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=latest)))
    with chunked.row_chunks(suite, files, path, bucket_rows=bucket_rows) as found:
        assert found is not None
        src, hashes = found
        assert hashes == {str(r["rubric_sha256"]) for r in plain}
        n_chunks = sum(1 for e in src.engines for _ in src.chunks(e))
        assert n_chunks > len(src.engines)  # several stretches per engine
        ctx = AnalyzeContext(cfg=cfg, items=items, graded=(), rows=(), chunks=src)
        assert dumps(suite.analyze(ctx)) == whole


def test_a_graded_file_out_of_the_rows_order_is_analysed_whole(tmp_path: Path) -> None:
    """A graded file whose rows are not in the latest rows' order (or name an engine with no
    latest row) cannot be cut by cell: ``row_chunks`` says so and the stage reads rows whole."""
    from sealedeval.stages import chunked

    cfg, suite, items, _plain, latest, files = _stored(tmp_path)
    graded = artifacts.normalize_graded(grade(cfg, suite, items, latest))
    path = tmp_path / "graded.parquet"
    backwards = [dict(g) for g in graded][::-1]
    artifacts.write_graded(path, backwards)
    with chunked.row_chunks(suite, files, path, bucket_rows=8) as found:
        assert found is None
    stranger = [dict(g) | {"engine": "nobody"} if i == 0 else dict(g) for i, g in enumerate(graded)]
    artifacts.write_graded(path, stranger)
    with chunked.row_chunks(suite, files, path, bucket_rows=8) as found:
        assert found is None
    artifacts.write_graded(path, graded)
    with chunked.row_chunks(suite, files, path, bucket_rows=8) as found:
        assert found is not None
