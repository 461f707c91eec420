"""The merge of a sharded suite: every planned shard present exactly once, each with its keys.

Shards run as separate jobs (``seal/shards.py``), each chaining its ledger entries into its own
segment (``store/segments.py``). Before a sharded suite is published, and again in the audit,
the merge proves, per engine:

* every shard K of the plan's N has a segment, and exactly one: a segment is judged by the
  shard its entries name, not by its file name, so a copied or swapped file is caught;
* a segment's file name and its entries name the same shard, suite and engine;
* each segment's chain holds (``seq``, ``prev``, ``hash``);
* the latest completed run in a segment planned exactly the keys the partition assigns that
  shard (``planned_keys_sha256`` against the keys recomputed from the sealed items);
* every row of the parts a segment lists answers a key of that shard, and no key is answered
  ok twice within the shard (a shard run twice at once);

and records the segments and their Merkle root (``segments.merkle_root``) in result.json, so
the audit can recompute the root from the segments and name the shard that broke it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.config import Config
from sealedeval.engines import build_engine
from sealedeval.keys import suite_seed
from sealedeval.plugins import RequestContext, get_suite
from sealedeval.seal import lock, shards
from sealedeval.stages.pipeline import load_items
from sealedeval.stages.run import suite_engine
from sealedeval.store import ledger, segments
from sealedeval.store.raw import read_columns


@dataclass(frozen=True)
class EngineMerge:
    """One engine's merge: the record result.json holds and what is wrong (empty: merged)."""

    engine: str
    record: dict[str, Any]
    problems: tuple[str, ...]


def planned_keys(cfg: Config, suite: str, engine: str, rubric_sha256: str) -> list[str]:
    """The request keys a full run of ``engine`` on ``suite`` plans (phase 1), as ``run`` builds
    them from the items generated under ``rubric_sha256``."""

    s = get_suite(suite, cfg)
    ecfg = suite_engine(cfg, suite, engine)
    model = build_engine(ecfg, answerer=s.reference_answer, root=cfg.root).model
    seed = suite_seed(cfg, suite, rubric_sha256)
    items = load_items(cfg, suite, rubric_sha256)
    ctx = RequestContext(cfg=cfg, items=items, engine=ecfg, model=model, seed=seed)
    return [r.request_key for r in s.requests(ctx)]


def _rubric(cfg: Config, suite: str) -> str:
    """The suite's sealed rubric hash (what its rows were run under), or, with no lock, the
    hash of its inputs now (an unsealed project)."""
    if (cfg.root / lock.LOCK_NAME).exists():
        found = (lock.read(cfg.root).get("suites") or {}).get(suite)
        if found:
            return str(found["sha256"])

    inputs = get_suite(suite, cfg).rubric_inputs()
    return str(lock.compute(cfg.root, {suite: inputs})["suites"][suite]["sha256"])


def _claims(seg: segments.Segment) -> set[tuple[int, int]]:
    return {(int(e["shard"][0]), int(e["shard"][1])) for e in seg.entries if e.get("shard")}


def _latest_run(seg: segments.Segment, rubric: str) -> Mapping[str, Any] | None:
    done = [
        e
        for e in seg.entries
        if e.get("kind", "run") == "run"
        and e.get("outcome") == "done"
        and e.get("rubric_sha256") == rubric
    ]
    return done[-1] if done else None


def _part_problems(root: Path, seg: segments.Segment, k: int, n: int, label: str) -> list[str]:
    """Rows of the segment's parts that answer another shard's keys, or a key twice."""
    files = [root / str(p["path"]) for e in seg.entries for p in ledger.entry_parts(e)]
    files = [f for f in files if f.exists()]  # a missing part is the audit's "ledgered parts"
    if not files:
        return []
    t = read_columns(files, ["request_key", "status"])
    keys = t.column("request_key").to_pylist()
    status = t.column("status").to_pylist()
    out = []
    foreign = Counter(shards.shard_of(key, n) for key in keys if shards.shard_of(key, n) != k)
    for j, rows in sorted(foreign.items()):
        out.append(f"{label}: {rows} rows answer keys of shard {j}-of-{n}")
    ok = Counter(key for key, s in zip(keys, status, strict=True) if s == "ok")
    twice = sum(1 for c in ok.values() if c > 1)
    if twice:
        out.append(f"{label}: {twice} keys answered ok more than once (the shard ran twice)")
    return out


def merge_engine(cfg: Config, suite: str, engine: str, n: int) -> EngineMerge:
    """Verify and record one engine's segments under the plan of ``n`` shards."""
    rubric = _rubric(cfg, suite)
    planned = shards.split(planned_keys(cfg, suite, engine, rubric), n)
    found = [s for s in segments.read_segments(cfg.root, suite) if s.engine == engine]
    problems: list[str] = []
    holders: dict[int, list[str]] = defaultdict(list)
    listed: list[dict[str, Any]] = []
    for seg in found:
        if seg.shard is None:
            problems.append(f"{seg.path}: not a segment name (shard-K-of-N.jsonl)")
            continue
        k, m = seg.shard
        label = f"{suite}/{engine} shard {k}-of-{m}"
        if m != n or k >= n:
            problems.append(f"{label}: {seg.path} is not in the plan of {n} shards")
            continue
        problems += [f"{label}: {p}" for p in segments.chain_problems(seg)]
        claims = _claims(seg)
        for j, _ in sorted(claims):
            holders[j].append(seg.path)
        other = sorted(c for c in claims if c != (k, n))
        if other:
            names = ", ".join(f"{j}-of-{c}" for j, c in other)
            problems.append(f"{label}: {seg.path} holds the entries of shard {names} (swapped?)")
        strays = {(str(e.get("suite")), str(e.get("engine"))) for e in seg.entries} - {
            (suite, engine)
        }
        if strays:
            problems.append(f"{label}: {seg.path} holds entries of {'/'.join(sorted(strays)[0])}")
        want = ledger.keys_sha256(planned[k])
        run = _latest_run(seg, rubric)
        if run is None:
            problems.append(f"{label}: no completed run under the sealed rubric in {seg.path}")
        elif run.get("planned_keys_sha256") != want:
            problems.append(
                f"{label}: planned keys differ from the {len(planned[k])} keys the partition "
                "assigns it (another shard's keys?)"
            )
        problems += _part_problems(cfg.root, seg, k, n, label)
        listed.append(
            {
                "shard": k,
                "path": seg.path,
                "sha256": seg.sha256,
                "planned": len(planned[k]),
                "planned_keys_sha256": want,
            }
        )
    for k in range(n):
        label = f"{suite}/{engine} shard {k}-of-{n}"
        if not holders.get(k):
            problems.append(f"{label}: no segment holds it (missing)")
        elif len(holders[k]) > 1:
            problems.append(
                f"{label}: present {len(holders[k])} times ({', '.join(holders[k])}; run twice?)"
            )
    record = {
        "n": n,
        "segments": listed,
        "merkle_root": segments.merkle_root(s["sha256"] for s in listed),
    }
    return EngineMerge(engine, record, tuple(problems))


def merge_suite(
    cfg: Config, suite: str, engines: Iterable[str]
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the ``shards`` record of the suite's result.json section, problems) over the engines
    the result reports; (None, []) when the suite is not sharded."""
    n = shards.suite_shards(cfg.suite(suite))
    if n == 1:
        return None, []
    merged = [merge_engine(cfg, suite, e, n) for e in sorted(set(engines))]
    record = {"partition": shards.PARTITION, "engines": {m.engine: m.record for m in merged}}
    return record, [p for m in merged for p in m.problems]


def audit_shards(cfg: Config, result: Mapping[str, Any] | None) -> tuple[bool, str]:
    """The audit's "shard merge" check: (passed, one line); ``(True, "")`` when no published
    suite is sharded. Every suite result.json reports is merged again from the segments on
    disk; a problem names its shard, and a recorded Merkle root that the segments no longer
    give (a segment edited, added or removed since publishing) names the engine."""
    problems: list[str] = []
    roots = 0
    for name, section in sorted(((result or {}).get("suites") or {}).items()):
        engines = (section.get("seal") or {}).get("counts") or {}
        record, found = merge_suite(cfg, name, engines)
        recorded = section.get("shards")
        if record is None and recorded is None:
            continue
        problems += found
        now = (record or {}).get("engines") or {}
        then = (recorded or {}).get("engines") or {}
        for eng in sorted(set(now) | set(then)):
            a = (then.get(eng) or {}).get("merkle_root")
            b = (now.get(eng) or {}).get("merkle_root")
            roots += 1
            if a != b:
                problems.append(
                    f"{name}/{eng}: Merkle root of the segments {str(b)[:12]}… differs from "
                    f"result.json's {str(a)[:12]}…"
                )
    if not problems and not roots:
        return True, ""
    if problems:
        return False, "; ".join(problems[:4]) + (
            f" (+{len(problems) - 4} more)" if len(problems) > 4 else ""
        )
    return True, f"{roots} sharded runs merged: every shard once, its own keys, Merkle roots match"
