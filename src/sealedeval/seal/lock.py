"""rubric.lock: the sha256 of every rubric input, per suite, plus combined hashes.

What is sealed per suite: its hand-written data (items, references, labels), the grader and
suite-rubric source, the prompt templates and the analysis plan. Package sources are named
``pkg:sealedeval/...`` so the lock is the same whether the package is installed editable or not.
The config is deliberately *not* sealed: profiles (how many repeats, which engines) may change
without invalidating the pre-registration; the config hash is recorded in result.json instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sealedeval
from sealedeval.canonical import dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_text_atomic
from sealedeval.seal import git

LOCK_NAME = "rubric.lock"
LOCK_FORMAT = "sealedeval.rubric.lock/1"
PKG_PREFIX = "pkg:"
_PKG_ROOT = Path(sealedeval.__file__).resolve().parent.parent


def resolve_input(root: Path, name: str) -> Path:
    if name.startswith(PKG_PREFIX):
        return _PKG_ROOT / name[len(PKG_PREFIX) :]
    return root / name


def expand_inputs(root: Path, patterns: list[str]) -> list[str]:
    """Expand globs into sorted input names; a pattern matching nothing is a packaging bug."""
    names: set[str] = set()
    for pat in patterns:
        if pat.startswith(PKG_PREFIX):
            base, rel = _PKG_ROOT, pat[len(PKG_PREFIX) :]
            prefix = PKG_PREFIX
        else:
            base, rel, prefix = root, pat, ""
        hits = [p for p in base.glob(rel) if p.is_file() and "__pycache__" not in p.parts]
        if not hits:
            raise UserError(f"rubric input {pat!r} matches no file under {base}")
        names.update(prefix + p.relative_to(base).as_posix() for p in hits)
    return sorted(names)


def combine(hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(hashes):
        h.update(f"{name}\t{hashes[name]}\n".encode())
    return h.hexdigest()


def compute(root: Path, suites: dict[str, list[str]]) -> dict[str, Any]:
    """The lock document for the given suite → input patterns."""
    out: dict[str, Any] = {}
    for suite, patterns in sorted(suites.items()):
        files = {n: sha256_file(resolve_input(root, n)) for n in expand_inputs(root, patterns)}
        out[suite] = {"files": files, "sha256": combine(files)}
    combined = combine({s: v["sha256"] for s, v in out.items()})
    return {"format": LOCK_FORMAT, "sha256": combined, "suites": out}


def write(root: Path, suites: dict[str, list[str]]) -> dict[str, Any]:
    doc = compute(root, suites)
    write_text_atomic(root / LOCK_NAME, dumps(doc))
    return doc


def read(root: Path) -> dict[str, Any]:
    import json

    path = root / LOCK_NAME
    if not path.exists():
        raise UserError(f"{LOCK_NAME}: missing; run `sealedeval seal` and commit it first")
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise UserError(f"{LOCK_NAME}: not valid JSON ({e})") from None
    if doc.get("format") != LOCK_FORMAT or "suites" not in doc:
        raise UserError(f"{LOCK_NAME}: unknown format {doc.get('format')!r}")
    return doc


def mismatches(root: Path, doc: dict[str, Any], suite: str) -> list[str]:
    """Names of inputs whose bytes differ from the lock (or that appeared/vanished)."""
    entry = doc["suites"].get(suite)
    if entry is None:
        return [f"(suite {suite} not in lock)"]
    bad = []
    for name, digest in entry["files"].items():
        p = resolve_input(root, name)
        if not p.exists():
            bad.append(f"{name} (missing)")
        elif sha256_file(p) != digest:
            bad.append(name)
    if combine(entry["files"]) != entry["sha256"]:
        bad.append("(combined hash)")
    return bad


@dataclass(frozen=True)
class SealState:
    suite: str
    rubric_sha256: str
    seal_commit: str
    sealed: bool


def check(root: Path, suite: str, patterns: list[str], *, unsealed: bool = False) -> SealState:
    """Refuse (UserError) unless the lock exists, matches the files and is committed.

    With ``unsealed`` the run goes ahead, but the state says so and every row is marked.
    """
    if unsealed:
        current = compute(root, {suite: patterns})["suites"][suite]["sha256"]
        return SealState(suite, current, "", False)
    doc = read(root)
    if suite not in doc["suites"]:
        raise UserError(f"{LOCK_NAME}: suite {suite!r} is not sealed; run `sealedeval seal`")
    now = compute(root, {suite: patterns})["suites"][suite]
    if set(now["files"]) != set(doc["suites"][suite]["files"]):
        extra = sorted(set(now["files"]) ^ set(doc["suites"][suite]["files"]))
        raise UserError(f"{LOCK_NAME}: rubric inputs of {suite} changed since the seal: {extra[0]}")
    bad = mismatches(root, doc, suite)
    if bad:
        raise UserError(
            f"{LOCK_NAME}: {bad[0]} changed after the seal (suite {suite}); "
            "re-seal and commit, or run with --unsealed"
        )
    if not git.is_repo(root):
        raise UserError(f"{root}: not a git repository; the seal must be committed")
    if not git.is_clean(root, LOCK_NAME):
        raise UserError(f"{LOCK_NAME}: not committed (git add {LOCK_NAME} && git commit)")
    commit = git.last_commit_touching(root, LOCK_NAME)
    return SealState(suite, doc["suites"][suite]["sha256"], commit, True)
