"""Harness-neutral part of an import: seal state, engine names, keys, writing and the ledger.

Everything is read and checked before anything is written: a bad log stops the whole import
with one line naming the file, and no part or ledger entry is left behind.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.plugins import get_suite
from sealedeval.run.dispatcher import now_iso
from sealedeval.seal import git, lock, timestamp
from sealedeval.stages.pipeline import suite_config_sha256
from sealedeval.store import ledger
from sealedeval.store.raw import RawWriter, raw_dir, raw_files, read_columns

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def engine_name(model: str) -> str:
    """A directory-safe engine name from a model name (``mockllm/model`` → ``mockllm-model``)."""
    name = _UNSAFE.sub("-", model).strip("-.")
    if not name:
        raise UserError(f"model {model!r}: gives no usable engine name")
    return name


def suite_name(task: str) -> str:
    """The default suite name from a harness task name (``pkg/arc_easy`` → ``arc_easy``)."""
    return engine_name(task.rsplit("/", 1)[-1])


def request_key(harness: str, task: str, sample_id: str, epoch: int, model: str) -> str:
    """Stable key of one imported (sample, epoch): the same sample of the same task by the same
    model is the same key in every log that holds it."""
    body = {"harness": harness, "task": task, "sample": sample_id, "epoch": epoch, "model": model}
    return hashlib.sha256(compact(body).encode()).hexdigest()


#: Keys whose string values are credentials in the logs we read (lm-eval's model_args, a
#: promptfoo provider's config): ``api_key``/``apiKey``, ``*_token``, ``password``, ...
_SECRET_KEY = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|secret|password|passwd|authorization|token|"
    r"access[_-]?key|private[_-]?key|credentials?)$"
)
#: ``scheme://user:password@host``: the user part of a URL is dropped.
_URL_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
REDACTED = "[redacted]"


def redact(obj: Any) -> Any:
    """A copy of a log's config tree safe to store: string values under credential-like keys
    replaced, user info removed from URLs. Rows and ledger entries never carry a secret."""
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            key = str(k)
            if isinstance(v, str) and v and _SECRET_KEY.search(key.lower()):
                out[key] = REDACTED
            else:
                out[key] = redact(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return _URL_USERINFO.sub("", obj)
    return obj


def epoch_utc(seconds: float) -> str:
    """A Unix time as the raw store's ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_utc(value: str | None, fallback: str) -> str:
    """A log timestamp as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (the raw store's form)."""
    if not value:
        return fallback
    t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Seal:
    rubric_sha256: str
    seal_commit: str
    sealed: bool


def seal_state(cfg: Config | None, suite: str) -> Seal:
    """The suite's current seal when it is sealed and committed; else unsealed (``""``).
    Without a config (a first read, before the import writes the suite's block): unsealed."""

    if cfg is None:
        return Seal("", "", False)
    cfg.suite(suite)  # a suite not in the config is a one-line error
    try:
        s = lock.check(cfg.root, suite, get_suite(suite, cfg).rubric_inputs())
    except UserError:
        return Seal("", "", False)
    return Seal(s.rubric_sha256, s.seal_commit, s.sealed)


#: The label a suite's ``harness:`` key uses for each importer's ``HARNESS`` (rows' params).
HARNESS_LABELS = {"inspect_ai": "inspect", "lm_eval": "lm-eval", "promptfoo": "promptfoo"}


def check_harness(cfg: Config | None, suite: str, harness: str, path: Path) -> None:
    """A suite configured for one harness takes no other harness's logs (its sealed
    definition names that harness)."""
    if cfg is None or suite not in (cfg.data.get("suites") or {}):
        return
    want = cfg.suite(suite).get("harness")
    label = HARNESS_LABELS.get(harness, harness)
    if want and want != label:
        raise UserError(
            f"{path}: a {label} log, but suite {suite!r} is configured with harness: {want}"
        )


@dataclass
class Ingest:
    """One log, read and converted, not yet written."""

    path: Path
    sha256: str
    harness: str
    harness_version: str
    suite: str
    engine: str
    model: str
    rows: list[dict[str, Any]]
    source: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    path: Path
    suite: str
    engine: str
    rows: int
    ok: int
    error: int
    noop: bool
    predating: int = 0


def _ts(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def seal_time(root: Path, commit: str) -> float:
    """When the seal provably existed: its commit's date, or the RFC 3161 token's time when a
    token over rubric.lock is present and later (a sample must start after both)."""

    t = float(git.commit_time(root, commit))
    if (root / timestamp.TSR_NAME).exists():
        # an unreadable token is the audit's to report, not the import's
        with contextlib.suppress(UserError):
            t = max(t, timestamp.token_info(root / timestamp.TSR_NAME).time.timestamp())
    return t


def mark_predating(root: Path, rows: Sequence[dict[str, Any]]) -> int:
    """Rows of a sealed suite whose sample started before the seal are not pre-registered: the
    harness ran before the rubric was fixed. They keep the seal's hash and commit (what they
    were imported under) but ``sealed`` becomes False; the count is returned and ledgered, and
    the suite reads "not pre-registered: samples predate the seal". Git's commit date has whole
    seconds, so a sample in the seal's own second counts as after it."""
    times: dict[str, float] = {}
    n = 0
    for r in rows:
        commit = str(r.get("seal_commit") or "")
        if not r.get("sealed") or not commit:
            continue
        if commit not in times:
            times[commit] = seal_time(root, commit)
        if _ts(str(r["started_at"])) < times[commit]:
            r["sealed"] = False
            n += 1
    return n


def already_imported(root: Path, ing: Ingest) -> bool:
    """The same bytes were imported into this suite/engine and their keys are all present."""

    seen = any(
        e.get("kind") == "import"
        and e.get("suite") == ing.suite
        and e.get("engine") == ing.engine
        and (e.get("source") or {}).get("sha256") == ing.sha256
        for e in ledger.read(root)
    )
    if not seen:
        return False
    files = [f for f in raw_files(root, ing.suite) if f.parent.name == ing.engine]
    present = set(read_columns(files, ["request_key"]).column("request_key").to_pylist())
    return all(r["request_key"] in present for r in ing.rows)


def write(cfg: Config, ing: Ingest) -> Outcome:
    """Write the rows as parts and append the ledger entry (or nothing: a no-op re-import)."""

    ok = sum(1 for r in ing.rows if r["status"] == "ok")
    if already_imported(cfg.root, ing):
        return Outcome(ing.path, ing.suite, ing.engine, 0, 0, 0, True)
    predating = mark_predating(cfg.root, ing.rows)
    started = now_iso()
    out_dir = raw_dir(cfg.root, ing.suite, ing.engine)
    writer = RawWriter(out_dir, flush_rows=max(len(ing.rows), 1), flush_s=1e9)
    try:
        for r in ing.rows:
            writer.append(r)
    finally:
        writer.close()
    parts = [
        {
            "path": (out_dir / name).relative_to(cfg.root).as_posix(),
            "sha256": sha256_file(out_dir / name),
            "rows": n,
        }
        for name, n in writer.parts
    ]
    first = ing.rows[0] if ing.rows else {}
    ledger.append(
        cfg.root,
        {
            "kind": "import",
            "suite": ing.suite,
            "engine": ing.engine,
            "model": ing.model,
            "rubric_sha256": first.get("rubric_sha256", ""),
            "seal_commit": first.get("seal_commit", ""),
            "sealed": bool(ing.rows) and all(r["sealed"] for r in ing.rows),
            "predating_seal": predating,
            "config_sha256": suite_config_sha256(cfg, ing.suite),
            "shard": [0, 1],
            "planned": len(ing.rows),
            "planned_keys_sha256": ledger.keys_sha256([r["request_key"] for r in ing.rows]),
            "parts": parts,
            "ok": ok,
            "error": len(ing.rows) - ok,
            "skipped": 0,
            "outcome": "done",
            "harness": ing.harness,
            "harness_version": ing.harness_version,
            "source": {**ing.source, "path": ing.path.as_posix(), "sha256": ing.sha256},
            "started_at": started,
            "finished_at": now_iso(),
        },
    )
    return Outcome(
        ing.path, ing.suite, ing.engine, len(ing.rows), ok, len(ing.rows) - ok, False, predating
    )


def bind(cfg: Config, ingests: Sequence[Ingest]) -> None:
    """Give ingests read without a config (``seal_state(None, ...)``) their suite's harness
    check and current seal, once the config holds their suites."""
    for ing in ingests:
        check_harness(cfg, ing.suite, ing.harness, ing.path)
        seal = seal_state(cfg, ing.suite)
        for r in ing.rows:
            r["rubric_sha256"] = seal.rubric_sha256
            r["seal_commit"] = seal.seal_commit
            r["sealed"] = seal.sealed


def write_all(cfg: Config, ingests: Sequence[Ingest]) -> list[Outcome]:
    return [write(cfg, ing) for ing in ingests]


def check_unique(ingests: Sequence[Ingest]) -> None:
    """Two logs given at once that hold the same key would be two rows of one request."""
    where: dict[str, Path] = {}
    for ing in ingests:
        for r in ing.rows:
            k = r["request_key"]
            if k in where and where[k] != ing.path:
                raise UserError(
                    f"{ing.path}: sample {r['item_id']} epoch {r['repeat'] + 1} of "
                    f"{ing.model} is also in {where[k]}; import one of them"
                )
            where[k] = ing.path
