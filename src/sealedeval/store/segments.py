"""Per-shard ledger segments and the Merkle root over them.

A sharded run (``shards: N``) runs each shard as its own job, on whatever node the scheduler
picks. Appending all of them to one ``ledger.jsonl`` needs a lock every node honours, and shared
cluster file systems (NFS without lockd, some parallel file systems) do not always honour
``flock``. So each shard job writes its own segment,
``ledger/<suite>/<engine>/shard-K-of-N.jsonl``: the entry format of ``store/ledger.py``, its own
hash chain starting at the genesis hash, one writer per file, no lock. The segments sit beside
``ledger.jsonl`` and are committed with it (``results/`` is not in git). Unsharded runs keep
appending to ``ledger.jsonl``.

The merge (``stages/merge.py``) checks every planned segment is present once and holds its own
shard, and records a Merkle root over the segments in result.json (``merkle_root``):

* leaf of a segment = sha256(0x00 ‖ D) where D is the 32-byte sha256 of the segment file's
  bytes (``sha256sum`` prints D in hex);
* the leaves are sorted by D (ascending bytes);
* each level pairs neighbours left to right, node = sha256(0x01 ‖ left ‖ right); an odd node at
  the end of a level goes up unchanged;
* the root is the one node left, in lowercase hex; no segment gives sha256 of the empty string.

The 0x00 / 0x01 prefixes keep a leaf from ever reading as an inner node (RFC 6962's domain
separation), so one root names one set of segments. Sorting makes the root a function of the
set, not of the order a file system lists it in.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.errors import UserError
from sealedeval.store import ledger

SEGMENT_ROOT = Path("ledger")
"""Segments live under ``ledger/<suite>/<engine>/`` in the project root, committed like
``ledger.jsonl``."""
NAME = re.compile(r"^shard-(\d+)-of-(\d+)\.jsonl$")
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"


@dataclass(frozen=True)
class Segment:
    """One segment file as found on disk.

    Attributes:
        path: Relative to the project root (``ledger/S/E/shard-K-of-N.jsonl``).
        suite, engine: From the directory names.
        shard: (K, N) from the file name; None when the name is not a segment's.
        sha256: Of the file's bytes (the Merkle leaf's input).
        entries: The parsed entries (empty when the file does not parse; see ``error``).
        error: Why the file does not parse, else empty.
    """

    path: str
    suite: str
    engine: str
    shard: tuple[int, int] | None
    sha256: str
    entries: tuple[dict[str, Any], ...]
    error: str = ""


def segment_path(root: Path, suite: str, engine: str, shard: tuple[int, int]) -> Path:
    return root / SEGMENT_ROOT / suite / engine / f"shard-{shard[0]}-of-{shard[1]}.jsonl"


def append(
    root: Path, suite: str, engine: str, shard: tuple[int, int], entry: Mapping[str, Any]
) -> dict[str, Any]:
    """Append ``entry`` to the shard's own segment, chained to the segment's head, fsynced.

    No lock: one shard is one job, the segment's only writer (the workflow never runs a shard
    twice at once)."""
    path = segment_path(root, suite, engine, shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    where = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text and not text.endswith("\n"):
        raise UserError(f"{where}: last line is incomplete; restore it from git")
    entries = ledger.parse(text, where)
    doc = {
        "format": ledger.FORMAT,
        "seq": len(entries),
        "prev": entries[-1]["hash"] if entries else ledger.GENESIS,
        **{k: v for k, v in entry.items() if k not in ("format", "seq", "prev", "hash")},
    }
    doc["hash"] = ledger.entry_hash(doc)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (compact(doc) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return doc


def read_segments(root: Path, suite: str | None = None) -> list[Segment]:
    """Every file under ``ledger/<suite>/<engine>/`` (all suites when ``suite`` is None),
    sorted by path; a file that does not parse is returned with ``error`` set."""
    base = root / SEGMENT_ROOT
    if not base.is_dir():
        return []
    pattern = f"{suite}/*/*" if suite else "*/*/*"
    out = []
    for f in sorted(p for p in base.glob(pattern) if p.is_file()):
        rel = f.relative_to(root).as_posix()
        data = f.read_bytes()
        m = NAME.match(f.name)
        shard = (int(m.group(1)), int(m.group(2))) if m else None
        try:
            entries = tuple(ledger.parse(data.decode("utf-8"), rel))
            error = ""
        except (UserError, UnicodeDecodeError) as e:
            entries, error = (), str(e)
        out.append(
            Segment(
                path=rel,
                suite=f.parent.parent.name,
                engine=f.parent.name,
                shard=shard,
                sha256=hashlib.sha256(data).hexdigest(),
                entries=entries,
                error=error,
            )
        )
    return out


def all_entries(root: Path) -> list[dict[str, Any]]:
    """Every ledger entry of the project: ``ledger.jsonl``'s, then each segment's in path
    order. What reads runs (parts, attempts, status) reads this; the chain of each file is
    checked on its own."""
    out = ledger.read(root)
    for s in read_segments(root):
        out.extend(s.entries)
    return out


def merkle_root(digests: Iterable[str]) -> str:
    """The Merkle root (hex) over segment sha256 digests (hex), as the module docstring
    defines it."""
    leaves = sorted(bytes.fromhex(d) for d in digests)
    if not leaves:
        return hashlib.sha256(b"").hexdigest()
    level = [hashlib.sha256(LEAF_PREFIX + d).digest() for d in leaves]
    while len(level) > 1:
        up = [
            hashlib.sha256(NODE_PREFIX + level[i] + level[i + 1]).digest()
            for i in range(0, len(level) - 1, 2)
        ]
        if len(level) % 2:
            up.append(level[-1])
        level = up
    return level[0].hex()


def chain_problems(segment: Segment) -> list[str]:
    """Where a segment's own chain breaks (``ledger.chain_problems``), or why it does not parse."""
    if segment.error:
        return [segment.error]
    return [f"{segment.path}: {p}" for p in ledger.chain_problems(list(segment.entries))]
