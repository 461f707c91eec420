"""Sharded runs: the sealed shard plan, per-shard ledger segments, the verified merge and its
Merkle root; the audit FAILs naming the shard when a segment is deleted, duplicated or swapped.

A local sharded run: golden of the tiny profile in 3 shards, each ``sealedeval run --shard K/3``
(in process; the SLURM test runs them as cluster jobs), published, committed, audited.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.seal.conftest import TINY, Project, _copy_inputs

from sealedeval.seal import design, shards
from sealedeval.store import segments

SHARDED = "config/tiny-shards.yaml"
CONFIGS = (TINY, SHARDED)
N = 3
SEG = "ledger/golden/reference"


@pytest.fixture(scope="module")
def sharded_template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("sharded") / "proj"
    root.mkdir()
    _copy_inputs(root)
    (root / SHARDED).write_text(f"suites:\n  golden:\n    shards: {N}\n", encoding="utf-8")
    p = Project(root, "", "")
    p.git("init", "-q", "-b", "main")
    for k, v in (("user.name", "t"), ("user.email", "t@t.invalid"), ("commit.gpgsign", "false")):
        p.git("config", k, v)
    p.init_commit = p.commit("inputs")
    p.seal()
    rc, _, err = p.cli("seal", "-c", TINY, "-c", SHARDED)  # the layered profile's design
    assert rc == 0, err
    p.seal_commit = p.commit("Seal rubric", "rubric.lock")
    for k in range(N):
        assert p.run("--shard", f"{k}/{N}", configs=CONFIGS) == 0
    p.publish(CONFIGS)
    p.commit("Raw runs, results and the ledger segments", "results", "ledger")
    return p


@pytest.fixture
def sharded(sharded_template: Project, tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "proj"
    shutil.copytree(sharded_template.root, root, symlinks=True)
    yield Project(root, sharded_template.init_commit, sharded_template.seal_commit)


def _seg(p: Project, k: int) -> Path:
    return p.root / SEG / f"shard-{k}-of-{N}.jsonl"


def test_merkle_root_vectors() -> None:
    """The definition in store/segments.py, computed here by hand."""
    h = hashlib.sha256
    d = [h(x).hexdigest() for x in (b"a", b"b", b"c")]
    assert segments.merkle_root([]) == h(b"").hexdigest()
    assert segments.merkle_root([d[0]]) == h(b"\x00" + bytes.fromhex(d[0])).hexdigest()
    leaves = [h(b"\x00" + x).digest() for x in sorted(bytes.fromhex(x) for x in d)]
    pair = h(b"\x01" + leaves[0] + leaves[1]).digest()
    three = h(b"\x01" + pair + leaves[2]).hexdigest()  # the odd leaf goes up unchanged
    assert segments.merkle_root(d) == three
    assert segments.merkle_root(reversed(d)) == three  # a set: order-free
    assert segments.merkle_root(d[:2]) != segments.merkle_root(d[1:])
    # published vectors (docs/cluster.md): leaves are sha256(b"a"), sha256(b"b"), ...
    assert segments.merkle_root(d[:1]) == (
        "a23bd5b06da9048238a65b3f1d9d0b9e15fae3dde262688e6489aa4c763d1820"
    )
    assert segments.merkle_root(d[:2]) == (
        "73a57aee9ae28c072b7e0ed9b56a57a69cc6fb048a723d7f052177084d1250ee"
    )
    assert three == "dd67a4e94fcb4fff954bcb093257364a5b5d0832bda9ffb7a5b6340e45ca647b"
    four = [*d, h(b"d").hexdigest()]
    l4 = [h(b"\x00" + x).digest() for x in sorted(bytes.fromhex(x) for x in four)]
    top = h(
        b"\x01" + h(b"\x01" + l4[0] + l4[1]).digest() + h(b"\x01" + l4[2] + l4[3]).digest()
    ).hexdigest()
    assert segments.merkle_root(four) == top
    assert top == "60c033ce90d2dcafc4d5713560fcb0ed0c1bcf5a7c402143a01cc9f2e155e5eb"


def test_the_partition_is_a_function_of_the_key() -> None:
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(300)]
    parts = shards.split(keys, 4)
    assert sorted(k for p in parts for k in p) == sorted(keys)
    assert all(shards.shard_of(k, 4) == i for i, p in enumerate(parts) for k in p)
    assert shards.shard_of("00000000000a" + "f" * 52, 4) == 10 % 4


def test_a_changed_shard_count_is_a_design_change() -> None:
    sealed = {
        "engines": {"r": {}},
        "parameters": {},
        "shards": shards.shard_plan({"shards": 3, "engines": ["r"]}),
    }
    now = {"parameters": {}, "shards": shards.shard_plan({"shards": 2, "engines": ["r"]})}
    out = design.compare(sealed, now, engines_present={"r": {}}, comparisons_present=[])
    assert out["parameter_changes"] == ["shards.r: 3 → 2"]
    assert out["status"] == "sealed, parameters changed"
    # a design sealed before the plan was recorded: its parameters.shards reads as the plan
    legacy = {"engines": {"r": {}}, "parameters": {"shards": 3}}
    out = design.compare(legacy, now, engines_present={"r": {}}, comparisons_present=[])
    assert out["parameter_changes"] == ["shards.r: 3 → 2"]
    same = design.compare(
        legacy,
        {"parameters": {}, "shards": sealed["shards"]},
        engines_present={"r": {}},
        comparisons_present=[],
    )
    assert same["parameter_changes"] == []


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_the_sealed_design_records_the_shard_plan(sharded: Project) -> None:
    lock = json.loads((sharded.root / "rubric.lock").read_text(encoding="utf-8"))
    (entry,) = [v for k, v in lock["designs"].items() if k.endswith(design.profile_key(CONFIGS))]
    assert entry["suites"]["golden"]["shards"] == {
        "partition": shards.PARTITION,
        "n": {"reference": N},
    }
    assert "shards" not in entry["suites"]["golden"]["parameters"]


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_each_shard_chains_its_own_segment_and_the_merge_records_the_root(
    sharded: Project,
) -> None:
    assert not (sharded.root / "ledger.jsonl").exists()  # no shared file, no lock
    segs = sorted((sharded.root / SEG).iterdir())
    assert [s.name for s in segs] == [f"shard-{k}-of-{N}.jsonl" for k in range(N)]
    for k, s in enumerate(segs):
        entries = [json.loads(line) for line in s.read_text().splitlines()]
        assert entries[0]["prev"] == "0" * 64 and entries[0]["seq"] == 0
        assert {tuple(e["shard"]) for e in entries} == {(k, N)}
    result = json.loads(sharded.result_path.read_text(encoding="utf-8"))
    rec = result["suites"]["golden"]["shards"]
    assert rec["partition"] == shards.PARTITION
    eng = rec["engines"]["reference"]
    assert eng["n"] == N and [s["shard"] for s in eng["segments"]] == list(range(N))
    digests = [hashlib.sha256(s.read_bytes()).hexdigest() for s in segs]
    assert [s["sha256"] for s in eng["segments"]] == digests
    assert eng["merkle_root"] == segments.merkle_root(digests)
    planned = sum(s["planned"] for s in eng["segments"])
    assert planned == result["suites"]["golden"]["seal"]["counts"]["reference"]["requests"]
    a = sharded.audit(configs=CONFIGS)
    assert a.rc == 0, a
    assert a.status("shard merge") == "PASS", a
    assert "Merkle roots match" in a.detail("shard merge")
    assert a.status("ledger chain") == "PASS" and "3 shard segments" in a.detail("ledger chain")
    assert a.status("ledgered parts") == "PASS", a
    # the tiny profile runs golden alone; the shard plan is as sealed (no change disclosed)
    assert a.detail("design as sealed") == "sealed but never run: bloodpanel, grounding"


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_a_deleted_segment_fails_naming_the_shard(sharded: Project) -> None:
    _seg(sharded, 1).unlink()
    a = sharded.audit(configs=CONFIGS)
    assert a.rc == 1 and a.status("shard merge") == "FAIL", a
    assert f"golden/reference shard 1-of-{N}: no segment holds it (missing)" in a.detail(
        "shard merge"
    )
    assert "Merkle root" in a.detail("shard merge")


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_a_duplicated_segment_fails_naming_the_shard(sharded: Project) -> None:
    shutil.copy(_seg(sharded, 0), _seg(sharded, 2))  # shard 0 twice, shard 2 gone
    a = sharded.audit(configs=CONFIGS)
    assert a.rc == 1 and a.status("shard merge") == "FAIL", a
    d = a.detail("shard merge")
    assert f"shard 2-of-{N}: {SEG}/shard-2-of-{N}.jsonl holds the entries of shard 0-of-{N}" in d
    assert f"shard 0-of-{N}: present 2 times" in d


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_a_swapped_segment_fails_naming_the_shards(sharded: Project) -> None:
    a0, a1 = _seg(sharded, 0).read_bytes(), _seg(sharded, 1).read_bytes()
    _seg(sharded, 0).write_bytes(a1)
    _seg(sharded, 1).write_bytes(a0)
    a = sharded.audit(configs=CONFIGS)
    assert a.rc == 1 and a.status("shard merge") == "FAIL", a
    d = a.detail("shard merge")
    assert f"shard 0-of-{N}: {SEG}/shard-0-of-{N}.jsonl holds the entries of shard 1-of-{N}" in d
    assert f"shard 1-of-{N}: {SEG}/shard-1-of-{N}.jsonl holds the entries of shard 0-of-{N}" in d


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_a_segment_planning_another_shards_keys_fails(sharded: Project) -> None:
    """A segment whose entries were re-chained under the right shard number but whose run
    planned another key set: the planned-keys hash names it."""
    path = _seg(sharded, 2)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    other = json.loads(_seg(sharded, 0).read_text().splitlines()[-1])["planned_keys_sha256"]
    for e in entries:
        e["planned_keys_sha256"] = other
        segments.append(sharded.root, "golden", "reference", (2, N), e)
    a = sharded.audit(configs=CONFIGS)
    assert a.rc == 1 and a.status("shard merge") == "FAIL", a
    assert f"shard 2-of-{N}: planned keys differ" in a.detail("shard merge")


@pytest.mark.slow  # a sharded project: 3 shard runs and a publish
def test_publish_refuses_a_broken_merge(sharded: Project) -> None:
    _seg(sharded, 1).unlink()
    sharded.publish(CONFIGS, not_as_sealed="shard 1-of-3: no segment holds it (missing)")
