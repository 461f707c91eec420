"""How a result stands to its seal: what ``publish`` must say before anyone reads a number.

The audit proves a result; a reader sees the report first. So publish states, from the same
facts the audit reads (``rubric.lock``, the run ledger, the raw parts, git), what it can check
cheaply, and the audit re-derives the statement byte for byte (``publish.build.assemble`` calls
these functions for both):

- ``input_changes``: sealed inputs whose bytes differ from the lock. A result graded by code or
  data the seal does not cover is not published at all (``publish`` stops, exit 2).
- ``deviations``: a sealed engine or comparison the result lacks, a sealed engine answered by
  another model, a ledgered part missing or changed, a part no run wrote, rows under another
  rubric hash. Each is stated ("NOT AS SEALED: ...") in result.json and every report, and
  ``publish`` exits 1 unless told ``--allow-incomplete``.
- ``history``: per suite, ``pre-registered`` (every run made under the seal in force),
  ``amended`` (runs were made under earlier seals whose sealed files or design differ: each
  listed with its commit, date, runs, the sealed files that changed and whether its rows are
  still present), or ``not pre-registered`` (rows run unsealed, or a suite the lock does not
  hold). Seal, look, re-seal and publish is what a pre-registration exists to expose.

Dates are git committer dates (client-set, like every git date; the audit says which external
anchors exist). Nothing here reads a clock.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.config import Config
from sealedeval.fsutil import sha256_file
from sealedeval.seal import design, git, lock
from sealedeval.store import ledger, segments
from sealedeval.store.raw import raw_files

PRE_REGISTERED = "pre-registered"
AMENDED = "amended"
NOT_PRE_REGISTERED = "not pre-registered"
NOT_AS_SEALED = "NOT AS SEALED"
DESIGN_CHANGED = "(design: engines or comparisons)"
"""Named among an earlier seal's changed files when the sealed design of the suite differs."""


def input_changes(
    root: Path, lock_doc: Mapping[str, Any], suite: str, inputs: list[str]
) -> list[str]:
    """Names of the suite's sealed inputs that differ from the lock (added, removed, changed);
    ``inputs`` are the suite's rubric input patterns (``Suite.rubric_inputs``)."""
    sealed = (lock_doc.get("suites") or {}).get(suite)
    if sealed is None:
        return [f"(suite {suite} not in {lock.LOCK_NAME})"]
    now = lock.compute(root, {suite: inputs})["suites"][suite]["files"]
    was: Mapping[str, str] = sealed.get("files") or {}
    out = sorted(set(now) ^ set(was))
    out += sorted(n for n in set(now) & set(was) if now[n] != was[n])
    if lock.combine(dict(was)) != sealed.get("sha256"):
        out.append("(combined hash)")
    return out


def counted(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ledger entries that are runs of the study: not pilots (``ledger.is_pilot``), and not
    a resume check that found every planned key answered (a no-op the workflow repeats after a
    clone)."""
    return [
        e
        for e in entries
        if not ledger.is_pilot(e)
        and (int(e.get("ok", 0)) + int(e.get("error", 0)) > 0 or e.get("outcome") != "done")
    ]


def part_deviations(
    root: Path, lock_doc: Mapping[str, Any], present: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(suite, what) for every ledgered part of a run under the current seal that is missing or
    changed, and every present part no ledgered run wrote (the audit's "ledgered parts" check,
    stated before publishing). ``present``: path → sha256 of every raw part (the manifest's;
    hashed here when not given). Empty without a ledger: a project that never ledgered is
    judged by the audit alone."""
    every_entry = segments.all_entries(root)
    entries = [e for e in every_entry if not ledger.is_pilot(e)]
    if not entries:
        return []
    if present is None:
        present = {f.relative_to(root).as_posix(): sha256_file(f) for f in raw_files(root)}
    current = {s: str(v.get("sha256")) for s, v in (lock_doc.get("suites") or {}).items()}
    listed: dict[str, tuple[str, bool, str, str]] = {}
    every = {str(p["path"]) for e in every_entry for p in ledger.entry_parts(e)}
    for e in entries:
        suite = str(e["suite"])
        now = current.get(suite) == e.get("rubric_sha256")
        for part in ledger.entry_parts(e):
            listed[str(part["path"])] = (str(part["sha256"]), now, suite, str(e["engine"]))
    missing: dict[tuple[str, str], int] = defaultdict(int)
    changed: list[tuple[str, str]] = []
    for path, (digest, now, suite, engine) in sorted(listed.items()):
        if path not in present:
            if now:
                missing[(suite, engine)] += 1
        elif present[path] != digest:
            changed.append((suite, f"{path} differs from the ledger"))
    out = [
        (suite, f"{suite}/{engine}: {n} ledgered raw part{'s' if n != 1 else ''} missing")
        for (suite, engine), n in sorted(missing.items())
    ]
    return (
        out
        + changed
        + [
            (_suite_of(p), f"{p} was written by no ledgered run" + _RESUME_HINT)
            for p in sorted(set(present) - every)
        ]
    )


_RESUME_HINT = " (an interrupted run? running its engine again resumes and records it)"


def _suite_of(path: str) -> str:
    """The suite of a raw part's path (``results/raw/<suite>/<engine>/part-*.parquet``)."""
    parts = path.split("/")
    return parts[2] if len(parts) > 3 else ""


def design_deviations(name: str, section_design: Mapping[str, Any]) -> list[str]:
    """What a suite's ``design`` (``design.result_design``) lacks of what was sealed."""
    d = section_design
    out = [f"{name}/{e}: sealed engine has no rows" for e in d.get("missing_engines") or []]
    out += [
        f"{name}/{e}: sealed engine answered by another model"
        for e in d.get("changed_engines") or []
    ]
    out += [f"{name}: sealed comparison {c} missing" for c in d.get("missing_comparisons") or []]
    return out


def rows_deviations(name: str, lock_doc: Mapping[str, Any], seal: Mapping[str, Any]) -> list[str]:
    """Sealed rows under a rubric hash other than the one the lock holds for the suite."""
    want = str(((lock_doc.get("suites") or {}).get(name) or {}).get("sha256", ""))
    have = str(seal.get("rubric_sha256", ""))
    if not seal.get("pre_registered") or not want or have == want:
        return []
    return [f"{name}: rows under another rubric hash than the seal's ({have[:24]})"]


@dataclass(frozen=True)
class EarlierSeal:
    """Runs of one suite made under a seal whose sealed files or design differ from today's."""

    commit: str
    date: str
    rubric_sha256: str
    runs: int
    calls: int
    engines: tuple[str, ...]
    changed: tuple[str, ...]
    parts: tuple[str, ...]
    parts_present: tuple[str, ...]

    @property
    def rows_present(self) -> bool:
        return bool(self.parts) and self.parts == self.parts_present

    def as_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "rubric_sha256": self.rubric_sha256,
            "runs": self.runs,
            "calls": self.calls,
            "engines": list(self.engines),
            "changed": list(self.changed),
            "rows_present": self.rows_present,
        }


def commit_date(root: Path, commit: str) -> str:
    """The commit's committer date in UTC (``YYYY-MM-DD HH:MM UTC``), or "unknown" when the
    commit is not in this history."""
    if not commit or not git.is_repo(root):
        return "unknown"
    try:
        t = git.commit_time(root, commit)
    except Exception:  # a commit from a history this clone does not have
        return "unknown"
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _lock_at(root: Path, commit: str) -> dict[str, Any] | None:
    if not commit or not git.is_repo(root):
        return None
    text = git.show(root, commit, lock.LOCK_NAME)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _suite_design(lock_doc: Mapping[str, Any] | None, sources: Sequence[str], name: str) -> Any:
    entry = design.sealed_design(lock_doc or {}, sources)
    return (entry or {}).get("suites", {}).get(name) if entry else None


def changed_files(then: Mapping[str, Any] | None, now: Mapping[str, Any], name: str) -> list[str]:
    """The suite's sealed files whose digest differs between two locks (added or removed too)."""
    if then is None:
        return [f"({lock.LOCK_NAME} at that commit is not in this history)"]
    a = (((then.get("suites") or {}).get(name) or {}).get("files")) or {}
    b = (((now.get("suites") or {}).get(name) or {}).get("files")) or {}
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def history(
    cfg: Config, lock_doc: Mapping[str, Any], name: str, seal: Mapping[str, Any]
) -> tuple[str, list[EarlierSeal]]:
    """The suite's seal status and its earlier seals (oldest first).

    An earlier seal is the seal commit of ledgered runs of this suite (pilots and resume
    checks aside) under which the suite's sealed files or its sealed design (this profile's)
    differ from the lock in force. Runs under a re-seal that left this suite as it was (another
    suite re-sealed) are not an amendment of this one."""
    root = cfg.root
    current = (lock_doc.get("suites") or {}).get(name)
    if current is None or not seal.get("pre_registered"):
        return NOT_PRE_REGISTERED, []
    now_design = _suite_design(lock_doc, cfg.sources, name)
    present = {f.relative_to(root).as_posix() for f in raw_files(root, name)}
    by_commit: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in counted(segments.all_entries(root)):
        if e.get("suite") == name and e.get("sealed", True) and e.get("seal_commit"):
            by_commit[str(e["seal_commit"])].append(e)
    earlier: list[EarlierSeal] = []
    for commit, es in by_commit.items():
        then = _lock_at(root, commit)
        hashes = {str(e.get("rubric_sha256")) for e in es}
        same_rubric = hashes == {str(current.get("sha256"))}
        # no lock at that commit to compare with: the rubric hash decides
        same_design = then is None or _suite_design(then, cfg.sources, name) == now_design
        if same_rubric and same_design:
            continue
        changed = changed_files(then, lock_doc, name) if not same_rubric else []
        if not same_design:
            changed.append(DESIGN_CHANGED)
        parts = tuple(sorted({str(p["path"]) for e in es for p in ledger.entry_parts(e)}))
        earlier.append(
            EarlierSeal(
                commit=commit,
                date=commit_date(root, commit),
                rubric_sha256=sorted(hashes)[0],
                runs=len(es),
                calls=sum(int(e.get("ok", 0)) + int(e.get("error", 0)) for e in es),
                engines=tuple(sorted({str(e["engine"]) for e in es})),
                changed=tuple(changed),
                parts=parts,
                parts_present=tuple(p for p in parts if p in present),
            )
        )
    earlier.sort(key=lambda s: (s.date, s.commit))
    return (AMENDED if earlier else PRE_REGISTERED), earlier


def overall_status(statuses: Sequence[str], deviations: Sequence[str]) -> str:
    """result.json's ``status``: NOT AS SEALED with what, else the weakest suite status."""
    if deviations:
        more = f"; and {len(deviations) - 3} more" if len(deviations) > 3 else ""
        return f"{NOT_AS_SEALED}: " + "; ".join(deviations[:3]) + more
    if NOT_PRE_REGISTERED in statuses:
        return NOT_PRE_REGISTERED
    if AMENDED in statuses:
        return AMENDED
    return PRE_REGISTERED
