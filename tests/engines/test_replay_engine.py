"""The replay kind on a small recorded run: matching, error rows, provenance, whole rows.

The source is written by the real store (``RawWriter``) and read back by the engine; the
replayed rows go through the real dispatcher, so what a ``sealedeval run`` of a replay stores
is what is checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from sealedeval.canonical import compact
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request, build_engine
from sealedeval.engines.replay import AMBIGUOUS, MISSING, ReplayEngine
from sealedeval.errors import UserError
from sealedeval.run.dispatcher import Dispatcher, RunStats
from sealedeval.seal.lock import SealState
from sealedeval.store import ledger
from sealedeval.store.raw import RawWriter, raw_dir, read_raw
from sealedeval.store.schema import raw_row

OLD = SealState("golden", "0a" * 32, "", False)
NEW = SealState("golden", "0b" * 32, "", False)
TRAJ = [{"type": "model", "step": 1}, {"type": "final", "stop": "answer", "answer": "x"}]


def _row(key: str, item: str, rep: int = 0, **kw: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "request_key": key,
        "suite": "golden",
        "item_id": item,
        "condition": "A/sample",
        "repeat": rep,
        "seed": 1,
        "engine": "local",
        "engine_kind": "local",
        "model": "smollm2",
        "engine_identity": "{}",
        "params": "{}",
        "messages": "[]",
        "started_at": "t",
        "finished_at": "t",
        "status": "ok",
        "rubric_sha256": OLD.rubric_sha256,
        "seal_commit": "",
        "sealed": False,
        "harness_version": "0",
        "output_text": f"answer {item} {rep}",
        "response": compact({"id": key}),
        "tokens_in": 10,
        "tokens_out": 3,
        "finish_reason": "stop",
        "engine_path": "primary",
    }
    return raw_row(**(fields | kw))


def _source(root: Path, rows: list[dict[str, Any]]) -> Path:
    d = root / "archive/golden-local"
    w = RawWriter(d, flush_rows=2)
    for r in rows:
        w.append(r)
    w.close()
    return d


def _req(key: str, item: str, rep: int = 0, solver: str = "single") -> Request:
    return Request(key, "golden", item, "A/sample", rep, 99, (), {}, solver=solver)


def _engine(root: Path, **extra: Any) -> ReplayEngine:
    cfg = EngineConfig(name="old", kind="replay", extra={"source": "archive/golden-local"} | extra)
    eng = build_engine(cfg, root=root)
    assert isinstance(eng, ReplayEngine)
    return eng


def _replay(root: Path, eng: ReplayEngine, reqs: list[Request]) -> list[dict[str, Any]]:
    writer = RawWriter(raw_dir(root, "golden", "old"))
    stats = RunStats(requested=len(reqs))
    asyncio.run(Dispatcher(eng, writer, NEW, progress=False).run(reqs, stats))
    writer.close()
    rows: list[dict[str, Any]] = read_raw(
        sorted(raw_dir(root, "golden", "old").glob("part-*"))
    ).to_pylist()
    return sorted(rows, key=lambda r: r["request_key"])


RECORDED = [
    _row("k1", "g01", trajectory=compact(TRAJ)),
    _row("k2", "g02"),
    _row(
        "k3",
        "g03",
        status="error",
        error_kind="truncated",
        error_message="hit max_tokens",
        output_text="half an ans",
    ),
    _row("k4", "g04", status="error", error_kind="rate_limit", error_message="429"),
    _row("k4", "g04"),  # the retry that answered: the ok row is the one served
    _row("k5", "g05", rep=0),
    _row("k5b", "g05", rep=0),  # two different keys for one item/condition/repeat
]


def test_rows_are_served_by_key_then_by_item_and_every_miss_is_an_error_row(tmp_path: Path) -> None:
    _source(tmp_path, RECORDED)
    eng = _engine(tmp_path)
    rows = _replay(
        tmp_path,
        eng,
        [
            _req("k1", "g01", solver="agent"),  # by key; an agent row replays whole
            _req("new2", "g02"),  # by item: keys differ after a re-seal
            _req("new3", "g03"),  # a recorded error is served as that error
            _req("new4", "g04"),
            _req("new5", "g05"),  # ambiguous
            _req("new6", "g06"),  # never recorded
            _req("new7", "g02", rep=1),  # recorded item, unrecorded repeat
        ],
    )
    by = {r["request_key"]: r for r in rows}
    assert len(rows) == 7
    assert by["k1"]["output_text"] == "answer g01 0" and json.loads(by["k1"]["trajectory"]) == TRAJ
    assert by["k1"]["attempts"] == 0  # no engine call was made
    assert by["new2"]["output_text"] == "answer g02 0"
    assert by["new2"]["response"] == compact({"id": "k2"})  # the recorded bytes
    assert (by["new2"]["tokens_in"], by["new2"]["tokens_out"]) == (10, 3)
    assert by["new2"]["rubric_sha256"] == NEW.rubric_sha256  # bound to the current seal
    assert (by["new3"]["status"], by["new3"]["error_kind"]) == ("error", "truncated")
    assert by["new3"]["output_text"] == "half an ans"
    assert by["new4"]["status"] == "ok"
    assert (by["new5"]["error_kind"], by["new6"]["error_kind"]) == (AMBIGUOUS, MISSING)
    assert by["new7"]["error_kind"] == MISSING
    assert "item g02, condition A/sample, repeat 1" in by["new7"]["error_message"]


def test_match_key_only_does_not_fall_back_to_items(tmp_path: Path) -> None:
    _source(tmp_path, RECORDED)
    rows = _replay(tmp_path, _engine(tmp_path, match="key"), [_req("k2", "g02"), _req("x", "g02")])
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert rows[1]["error_kind"] == MISSING


def test_identity_records_the_sources_hash_and_ledger_entries(tmp_path: Path) -> None:
    src = _source(tmp_path, RECORDED)
    parts = sorted(src.glob("part-*.parquet"))
    shas = [hashlib.sha256(p.read_bytes()).hexdigest() for p in parts]
    ledger.append(tmp_path, {"kind": "run", "parts": [{"path": "x", "sha256": shas[0], "rows": 2}]})
    ledger.append(tmp_path, {"kind": "run", "parts": [{"path": "y", "sha256": "f" * 64}]})
    entries = ledger.read(tmp_path)
    eng = _engine(tmp_path)
    ident = eng.identity()
    expected = hashlib.sha256(
        compact([[p.name, s] for p, s in zip(parts, shas, strict=True)]).encode()
    ).hexdigest()
    assert ident["source_sha256"] == expected and ident["source_parts"] == len(parts)
    assert ident["source_ledger"] == [entries[0]["hash"]]
    assert eng.model == "smollm2"  # the recorded model, so keys built from it match
    # every replayed row carries it
    rows = _replay(tmp_path, eng, [_req("k2", "g02")])
    assert json.loads(rows[0]["engine_identity"])["source_sha256"] == expected
    # a changed part is a different source
    with parts[0].open("ab") as f:
        f.write(b"\0")
    with pytest.raises(UserError):  # (and no longer valid Parquet: a one-line error)
        _engine(tmp_path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"source": "archive/nothing"}, "engines.old.source: archive/nothing: no such directory"),
        ({"source": "archive"}, "engines.old.source: archive: no raw parts"),
        ({"match": "fuzzy"}, "engines.old.match: one of auto, key, item"),
    ],
)
def test_bad_sources_are_one_line_errors(
    tmp_path: Path, extra: dict[str, Any], message: str
) -> None:
    _source(tmp_path, RECORDED[:1])
    with pytest.raises(UserError) as e:
        _engine(tmp_path, **extra)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
