"""rubric.lock: the sha256 of every rubric input, per suite, plus combined hashes.

What is sealed per suite: its own rubric inputs (``Suite.rubric_inputs``: its hand-written data,
its own folder's sources with presentation excluded, the shared graders it uses) plus what turns
any suite's rows into numbers (``ANALYSIS_INPUTS``: the request-key/seed module, ``stats/``, the
grade and analyze stages). The suite protocol and registry (``sealedeval.plugins``) are not
sealed, so adding a suite re-seals nothing else. Package sources are named ``pkg:<module path>``
so the lock is the same whether the package is installed editable or not; a suite from another
distribution names its own package (``pkg:my_suite/...``).

Python sources are hashed on a normalised form (``PY_HASH``): the AST with docstrings removed,
dumped without positions, so ``ruff format`` or a comment edit is not a seal event while any
change to what the code does is. Every other file is hashed on its bytes. The config is
deliberately *not* sealed: profiles (how many repeats, which engines) may change without
invalidating the pre-registration; the config hash is recorded in result.json instead.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.canonical import dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_text_atomic
from sealedeval.seal import git

LOCK_NAME = "rubric.lock"
LOCK_FORMAT = "sealedeval.rubric.lock/2"
PREREG_NAME = "rubric.lock.zenodo.json"  # written by `sealedeval seal --zenodo`
PY_HASH = "sha256 of the docstring-free AST dump (ast-v1)"
PKG_PREFIX = "pkg:"
_PKG_ROOT = Path(__file__).resolve().parents[2]

ANALYSIS_INPUTS = (
    "pkg:sealedeval/keys.py",
    "pkg:sealedeval/stats/*.py",
    "pkg:sealedeval/stages/grade.py",
    "pkg:sealedeval/stages/analyze.py",
)
"""Sealed with every suite: request keys and seeds, the statistics and the stages that turn raw
rows into graded rows and numbers. Editing any of them after the seal stops ``run``."""


def suite_patterns(patterns: list[str]) -> list[str]:
    """A suite's own rubric inputs plus the shared analysis code."""
    return list(patterns) + [p for p in ANALYSIS_INPUTS if p not in patterns]


def _pkg_base(rel: str) -> Path:
    """The directory ``pkg:`` names resolve under: this package's parent, or the parent of
    another installed top-level package (a suite from the user's own distribution)."""
    top = rel.split("/", 1)[0]
    if top == "sealedeval":
        return _PKG_ROOT
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"rubric input pkg:{rel}: package {top!r} is not importable")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def resolve_input(root: Path, name: str) -> Path:
    if name.startswith(PKG_PREFIX):
        rel = name[len(PKG_PREFIX) :]
        return _pkg_base(rel) / rel
    return root / name


_DOC_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
"""Nodes whose ``body`` may open with a docstring (which the normalised form leaves out)."""


def _is_docstring(stmt: ast.AST) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _dump(tree: ast.AST) -> str:
    """A canonical dump of an AST without docstrings that does not depend on the Python
    version's optional fields: a field that is None or an empty list is left out (3.12 added
    ``type_params=[]``; 3.13's ``ast.dump`` omits empty values), positions are never written,
    and a body that was only a docstring dumps as ``[Pass()]``.

    One pass, appending pieces: the first form (an ``ast.walk`` stripping docstrings, then a
    recursive dump joining strings) cost ~13 ms a file, and every ``generate`` and ``run`` job
    hashes a suite's ~80 sealed sources. The output is the same string (``PY_HASH`` ast-v1;
    tests/seal/test_lock_hash.py checks it against that form)."""
    out: list[str] = []
    put = out.append

    def walk(node: object) -> None:
        if isinstance(node, ast.AST):
            put(type(node).__name__)
            put("(")
            sep = ""
            owner = isinstance(node, _DOC_OWNERS)
            for name in node._fields:
                value = getattr(node, name, None)
                if owner and name == "body" and value and _is_docstring(value[0]):
                    value = value[1:] or [ast.Pass()]
                if value is None or value == []:
                    continue
                put(sep)
                put(name)
                put("=")
                walk(value)
                sep = ","
            put(")")
        elif isinstance(node, list):
            put("[")
            for i, v in enumerate(node):
                if i:
                    put(",")
                walk(v)
            put("]")
        else:
            put(repr(node))

    walk(tree)
    return "".join(out)


def hash_input(path: Path) -> str:
    """The sealed digest of one input: normalised for Python sources (``PY_HASH``)."""
    if path.suffix != ".py":
        return sha256_file(path)
    text = path.read_bytes().decode("utf-8")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise UserError(f"{path}:{e.lineno}: not valid Python ({e.msg}); cannot seal it") from None
    return hashlib.sha256(_dump(tree).encode()).hexdigest()


def expand_inputs(root: Path, patterns: list[str]) -> list[str]:
    """Expand globs into sorted input names; a pattern matching nothing is a packaging bug."""
    names: set[str] = set()
    for pat in patterns:
        if pat.startswith(PKG_PREFIX):
            rel = pat[len(PKG_PREFIX) :]
            base = _pkg_base(rel)
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


def compute(
    root: Path, suites: dict[str, list[str]], cache: dict[str, str] | None = None
) -> dict[str, Any]:
    """The lock document for the given suite → input patterns. ``cache`` (input name → digest)
    lets checks of several suites in one process hash the inputs they share once."""
    out: dict[str, Any] = {}
    hashes = {} if cache is None else cache
    for suite, patterns in sorted(suites.items()):
        names = expand_inputs(root, suite_patterns(patterns))
        for n in names:
            if n not in hashes:
                hashes[n] = hash_input(resolve_input(root, n))
        files = {n: hashes[n] for n in names}
        out[suite] = {"files": files, "sha256": combine(files)}
    combined = combine({s: v["sha256"] for s, v in out.items()})
    return {"format": LOCK_FORMAT, "python_hash": PY_HASH, "sha256": combined, "suites": out}


def write(
    root: Path, suites: dict[str, list[str]], designs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write the lock; ``designs`` (profile key → sealed design, ``seal/design.py``) ride along,
    outside the rubric's hashes."""
    doc = compute(root, suites)
    if designs:
        doc["designs"] = {k: designs[k] for k in sorted(designs)}
    write_text_atomic(root / LOCK_NAME, dumps(doc))
    return doc


def read(root: Path) -> dict[str, Any]:

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
        elif hash_input(p) != digest:
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


def check(
    root: Path,
    suite: str,
    patterns: list[str],
    *,
    unsealed: bool = False,
    cache: dict[str, str] | None = None,
) -> SealState:
    """Refuse (UserError) unless the lock exists, matches the files and is committed.

    With ``unsealed`` the run goes ahead, but the state says so and every row is marked.
    ``cache`` is ``compute``'s: one dict across the checks of several suites.
    """
    if unsealed:
        current = compute(root, {suite: patterns})["suites"][suite]["sha256"]
        return SealState(suite, current, "", False)
    doc = read(root)
    if suite not in doc["suites"]:
        raise UserError(f"{LOCK_NAME}: suite {suite!r} is not sealed; run `sealedeval seal`")
    now = compute(root, {suite: patterns}, cache)["suites"][suite]
    if set(now["files"]) != set(doc["suites"][suite]["files"]):
        extra = sorted(set(now["files"]) ^ set(doc["suites"][suite]["files"]))
        raise UserError(f"{LOCK_NAME}: rubric inputs of {suite} changed since the seal: {extra[0]}")
    # the hashes just computed, not a second pass over the files (``mismatches``)
    sealed = doc["suites"][suite]
    bad = [n for n, digest in sorted(now["files"].items()) if sealed["files"][n] != digest]
    if combine(sealed["files"]) != sealed["sha256"]:
        bad.append("(combined hash)")
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
