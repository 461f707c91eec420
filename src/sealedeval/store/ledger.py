"""The run ledger: one hash-chained line per ``run`` (and import), committed with the code.

Raw runs live in DVC, so nothing in git says which calls were made, how often, under which seal.
The ledger does: every run appends an entry (seal hash, config hash, suite, engine, the planned
request count and a hash of the planned key set, the parts it wrote with sha256 and row counts,
ok/error counts, start and end). Each entry carries the sha256 of the previous entry, so removing
or editing one breaks the chain; rewriting the whole chain consistently is caught by the
ledger's committed history (every committed version must be a prefix of the next) or by a
timestamp of its head (``sealedeval seal --tsa`` at publish). The audit checks all of it and
discloses the attempt count per (suite, engine): runs started, re-seeded or re-sealed before the
published one are counted, not hidden.

A run killed before its entry (``kill -9``, out of memory, a lost node) leaves parts no entry
lists. The next run of that engine resumes from their rows, so it lists them as ``adopted``
(path, sha256, rows): they are data of the study, recorded by the first run that used them, and
the audit discloses how many were adopted rather than calling them unledgered.

A pilot (``sealedeval pilot``) is chained like any run, with ``kind: pilot`` and parts under
``results/pilot/``: disclosed, never counted as an attempt, never checked as a part of the study
(``counted``, ``pilots``).

The ledger is the one file a run writes outside ``results/``; appends hold an exclusive lock on
it, so parallel run jobs (one per engine under Snakemake) never interleave.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.errors import UserError

LEDGER_NAME = "ledger.jsonl"
FORMAT = "sealedeval.ledger/1"
GENESIS = "0" * 64
PILOT_KIND = "pilot"
"""The ``kind`` of a pilot's entry: unsealed calls into the pilot store, outside the study."""


def entry_hash(entry: Mapping[str, Any]) -> str:
    """sha256 of the entry's canonical JSON without its own ``hash`` field."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(compact(body).encode()).hexdigest()


def parse(text: str, where: str = LEDGER_NAME) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as e:
            raise UserError(f"{where}:{n}: not valid JSON ({e})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise UserError(f"{where}:{n}: not a {FORMAT} entry")
        out.append(doc)
    return out


def read(root: Path) -> list[dict[str, Any]]:
    path = root / LEDGER_NAME
    if not path.exists():
        return []
    return parse(path.read_text(encoding="utf-8"))


def chain_problems(entries: list[dict[str, Any]]) -> list[str]:
    """Where the chain breaks: a removed, reordered or edited entry."""
    problems = []
    prev = GENESIS
    for i, e in enumerate(entries):
        if e.get("seq") != i:
            problems.append(f"entry {i}: sequence number {e.get('seq')} (an entry was removed?)")
        if e.get("prev") != prev:
            problems.append(f"entry {i}: does not chain to the entry before it")
        if e.get("hash") != entry_hash(e):
            problems.append(f"entry {i}: its hash does not match its content (edited)")
        prev = str(e.get("hash"))
    return problems


def append(root: Path, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Append ``entry`` (chained to the current head) under an exclusive lock, fsynced."""
    path = root / LEDGER_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(fd, "r+", encoding="utf-8", closefd=False) as f:
            f.seek(0)
            text = f.read()
        entries = parse(text)
        if text and not text.endswith("\n"):
            raise UserError(f"{LEDGER_NAME}: last line is incomplete; restore it from git")
        doc = {
            "format": FORMAT,
            "seq": len(entries),
            "prev": entries[-1]["hash"] if entries else GENESIS,
            **{k: v for k, v in entry.items() if k not in ("format", "seq", "prev", "hash")},
        }
        doc["hash"] = entry_hash(doc)
        os.write(fd, (compact(doc) + "\n").encode())
        os.fsync(fd)
        return doc
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def keys_sha256(keys: list[str]) -> str:
    """The planned key set as one hash (sorted, newline-separated)."""
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


def is_pilot(entry: Mapping[str, Any]) -> bool:
    return entry.get("kind") == PILOT_KIND


def counted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of the study: every run and import, no pilot."""
    return [e for e in entries if not is_pilot(e)]


def entry_parts(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The parts an entry answers for: those its run wrote and those it adopted from an
    interrupted run of the same engine."""
    return [*(entry.get("parts") or []), *(entry.get("adopted") or [])]


def pilots(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pilot entries (disclosed by the audit, never counted as attempts)."""
    return [e for e in entries if is_pilot(e)]
