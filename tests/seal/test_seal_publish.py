"""``sealedeval publish`` on a real sealed project: determinism, the manifest, and the counts."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from sealedeval.config import load_config
from sealedeval.publish.build import build

ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _result(sealed) -> dict:
    return json.loads(sealed.result_path.read_text(encoding="utf-8"))


# -- 3. determinism ----------------------------------------------------------------------------
def test_clean_rebuild_from_raw_alone_is_byte_identical(sealed, sealed_template):
    before = (sealed_template.result_path.read_bytes(), sealed_template.report_path.read_bytes())
    results = sealed.root / "results"
    for child in results.iterdir():
        if child.name != "raw":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    assert sorted(c.name for c in results.iterdir()) == ["raw"]
    sealed.publish()
    # a different directory, a later time, the same bytes
    assert (sealed.result_path.read_bytes(), sealed.report_path.read_bytes()) == before


@pytest.mark.slow
def test_two_builds_in_a_row_are_identical(sealed):
    cfg = load_config(sealed.root, ["config/tiny.yaml"])
    assert build(cfg) == build(cfg)
    sealed.publish()
    first = (sealed.result_path.read_bytes(), sealed.report_path.read_bytes())
    sealed.publish()
    assert (sealed.result_path.read_bytes(), sealed.report_path.read_bytes()) == first


def test_result_has_no_wall_clock_and_names_its_sources(sealed):
    text = sealed.result_path.read_text(encoding="utf-8")
    for day in {dt.date.today(), dt.datetime.now(dt.UTC).date()}:
        assert day.isoformat() not in text
    assert not ISO_TIMESTAMP.search(text)  # not even the rows' started_at leaks in
    doc = json.loads(text)
    for key in ("versions", "manifest", "config"):
        assert doc[key], key
    assert doc["versions"]["sealedeval"]
    assert doc["config"]["sources"] == ["config/config.yaml", "config/tiny.yaml"]
    assert len(doc["config"]["sha256"]) == 64


def test_manifest_lists_every_part_with_its_hash_and_rows(sealed):
    manifest = {m["path"]: m for m in _result(sealed)["manifest"]}
    parts = sealed.parts()
    assert set(manifest) == {p.relative_to(sealed.root).as_posix() for p in parts}
    total = 0
    for p in parts:
        m = manifest[p.relative_to(sealed.root).as_posix()]
        assert m["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        assert m["rows"] == pq.read_metadata(p).num_rows
        total += m["rows"]
    assert total == sum(pq.read_metadata(p).num_rows for p in parts) == len(sealed.all_rows())


# -- 4. counts ---------------------------------------------------------------------------------
PLANNED = 6 * (1 + 3)  # tiny: 6 tasks x (1 greedy + 3 sampled) on the reference engine


def test_counts_add_up_on_the_clean_project(sealed):
    counts = _result(sealed)["suites"]["golden"]["seal"]["counts"]
    assert set(counts) == {"reference"}
    c = counts["reference"]
    assert c["ok"] + c["error"] + c["refused"] == c["requests"] == PLANNED
    assert c["missing"] == 0
    assert c["complete"] is True
    assert c["attempt_rows"] == len(sealed.all_rows())
    assert "| complete |" in sealed.report_path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_lost_part_shows_as_missing_and_incomplete_after_republish(sealed):
    gone = sealed.parts()[-1]
    lost_keys = {r["request_key"] for r in sealed.read_part(gone)}
    assert lost_keys
    gone.unlink()
    assert sealed.audit().status("manifest checksums") == "FAIL"

    sealed.publish(not_as_sealed="golden/reference: 1 ledgered raw part missing")
    c = _result(sealed)["suites"]["golden"]["seal"]["counts"]["reference"]
    assert c["ok"] + c["error"] + c["refused"] == c["requests"]
    assert c["missing"] == len(lost_keys) > 0
    assert c["requests"] + c["missing"] == PLANNED
    assert c["complete"] is False
    report = sealed.report_path.read_text(encoding="utf-8")
    assert "INCOMPLETE" in report

    a = sealed.audit()
    assert a.status("manifest checksums") == "PASS", a
    assert a.status("counts add up") == "PASS", a
    assert a.status("result re-derives") == "PASS", a

    # resume re-requests exactly what is missing: every count is whole again, but the lost
    # part stays in the ledger, so the result still says (as the audit does) it is not as sealed
    assert sealed.run() == 0
    sealed.publish(not_as_sealed="golden/reference: 1 ledgered raw part missing")
    c = _result(sealed)["suites"]["golden"]["seal"]["counts"]["reference"]
    assert (c["requests"], c["missing"], c["complete"]) == (PLANNED, 0, True)
    assert sealed.audit().status("ledgered parts") == "FAIL"
