"""``sealedeval audit``: prove result.json follows from raw runs made under a prior seal.

The audit sits on top of every stage and is the only module allowed to import them all: it
re-derives each suite's items, graded rows and analysis in memory with the very stage functions
the workflow ran (``stages.pipeline.derive``), compares them with the files on disk, and
assembles result.json and report.md again with publish's own ``assemble``.

Each check is independent and reported as a row (PASS / FAIL / WARN with a one-line reason); any
FAIL makes the exit code non-zero. Order in time is judged from git committer dates and the rows'
``started_at``. Both are set by clients, so the table says plainly when nothing stronger (an
RFC 3161 token, a deposit) anchors the seal.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval import yamlio
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.plugins import get_suite
from sealedeval.publish.build import assemble, published_suites, versions
from sealedeval.seal import design, git, lock, timestamp
from sealedeval.seal.lock import PREREG_NAME
from sealedeval.stages import artifacts
from sealedeval.stages.ingest import seal_time
from sealedeval.stages.merge import audit_shards
from sealedeval.stages.pipeline import derive
from sealedeval.stages.sequential import suite_plan
from sealedeval.store import ledger, segments
from sealedeval.store.arrow import pa
from sealedeval.store.columns import Coded
from sealedeval.store.raw import latest_records, raw_files, read_columns, read_raw, record_column

RESULT = Path("results/result.json")
REPORT_MD = Path("results/report.md")


def dvc_dir_md5(directory: Path) -> str:
    """The md5 DVC 3 records for a directory output (``<md5>.dir`` in dvc.lock): the md5 of the
    JSON list of ``{"md5", "relpath"}`` of every file, sorted by path."""

    entries = []
    for f in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest = hashlib.md5(f.read_bytes(), usedforsecurity=False).hexdigest()
        entries.append({"md5": digest, "relpath": f.relative_to(directory).as_posix()})
    entries.sort(key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries).encode(), usedforsecurity=False).hexdigest() + ".dir"


def _dvc_lock_raw_md5s(text: str | None) -> set[str]:
    """Every md5 a dvc.lock text records for ``results/raw`` (as a stage's out or dep)."""

    try:
        doc = yamlio.safe_load(text or "") or {}
    except Exception:  # an unreadable old dvc.lock records nothing we can match
        return set()
    out = set()
    for stage in (doc.get("stages") or {}).values():
        for entry in [*(stage.get("outs") or []), *(stage.get("deps") or [])]:
            if isinstance(entry, dict) and entry.get("path") == "results/raw" and entry.get("md5"):
                out.add(str(entry["md5"]))
    return out


@dataclass(frozen=True)
class ExternalAnchor:
    """A pre-registration record as its repository's public API reports it (read by
    ``sealedeval verify``; the plain audit stays offline and has none): the publication time
    the repository set, which no author can choose, and the sha256 of the rubric.lock the
    record holds. ``error`` says why it could not be read."""

    service: str
    record_id: str
    doi: str
    published: str | None
    url: str
    lock_sha256: str | None
    error: str = ""


@dataclass
class Check:
    name: str
    status: str  # PASS | FAIL | WARN
    detail: str


def _ts(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


_FACT_COLUMNS = ("suite", "sealed", "seal_commit", "rubric_sha256", "started_at")
"""What the audit's row checks read of every attempt row (the counts read the latest rows)."""


@dataclass
class RowGroup:
    """Attempt rows of one (suite, sealed, seal commit, rubric hash): how many, the earliest
    ``started_at`` (string order, as ``min`` of the strings), and, for unsealed rows that
    name a seal commit (imported samples), every ``started_at`` (each is held against the
    seal's time)."""

    rows: int = 0
    first: str | None = None
    starts: list[str] | None = None


@dataclass
class RowFacts:
    """Every attempt row's facts the checks need, by group (``RowGroup``), read part by part
    a few columns at a time: the rows as dicts were ~2.5 KB each (a million rows: 2.5 GB;
    ten million did not fit in 24 GB)."""

    groups: dict[tuple[str, bool, str, str], RowGroup]
    n: int

    @property
    def suites(self) -> list[str]:
        return sorted({suite for suite, _, _, _ in self.groups})

    def commits(self) -> set[str]:
        """Every seal commit a row names."""
        return {commit for _, _, commit, _ in self.groups if commit}

    def first_sealed_start(self) -> str | None:
        firsts = [g.first for (_, sealed, _, _), g in self.groups.items() if sealed and g.first]
        return min(firsts) if firsts else None


def row_facts(files: Sequence[Path]) -> RowFacts:
    """``RowFacts`` of the raw parts ``files``."""
    import pyarrow.compute as pc

    groups: dict[tuple[str, bool, str, str], RowGroup] = {}
    n = 0
    for f in files:
        t = read_columns([f], _FACT_COLUMNS)
        n += t.num_rows
        if not t.num_rows:
            continue
        t = pa.table(
            {
                "suite": pc.fill_null(t["suite"], ""),
                "sealed": pc.fill_null(t["sealed"], False),
                "seal_commit": pc.fill_null(t["seal_commit"], ""),
                "rubric_sha256": pc.fill_null(t["rubric_sha256"], ""),
                "started_at": t["started_at"],
            }
        )
        keys = ["suite", "sealed", "seal_commit", "rubric_sha256"]
        agg = t.group_by(keys).aggregate(
            [("started_at", "min"), ("started_at", "count", pc.CountOptions(mode="all"))]
        )
        for row in agg.to_pylist():
            key = (row["suite"], bool(row["sealed"]), row["seal_commit"], row["rubric_sha256"])
            g = groups.setdefault(key, RowGroup())
            g.rows += row["started_at_count"]
            first = row["started_at_min"]
            if first is not None and (g.first is None or first < g.first):
                g.first = first
        imported = pc.and_(pc.invert(t["sealed"]), pc.not_equal(t["seal_commit"], ""))
        if pc.any(imported).as_py():
            for row in t.filter(imported).to_pylist():
                key = (row["suite"], False, row["seal_commit"], row["rubric_sha256"])
                got = groups[key]
                if got.starts is None:
                    got.starts = []
                got.starts.append(row["started_at"])
    return RowFacts(groups, n)


class Auditor:
    def __init__(
        self,
        cfg: Config,
        *,
        allow_unsealed: bool = False,
        anchors: Sequence[ExternalAnchor] = (),
    ) -> None:
        self.cfg = cfg
        self.anchors = list(anchors)
        self.root = cfg.root
        self.allow_unsealed = allow_unsealed
        self.checks: list[Check] = []
        self.facts = RowFacts({}, 0)
        self.result: dict[str, Any] | None = None

    def add(self, name: str, ok: bool, detail: str, *, warn: bool = False) -> None:
        self.checks.append(Check(name, "PASS" if ok else ("WARN" if warn else "FAIL"), detail))

    def _guard(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except UserError as e:
            self.add(name, False, str(e))

    def run(self) -> list[Check]:
        self._guard("raw runs readable", self.load)
        self._guard("lock matches files", self.check_lock)
        self._guard("lock committed", self.check_committed)
        self._guard("seal precedes runs", self.check_order)
        self._guard("rows bound to seal", self.check_binding)
        self._guard("manifest checksums", self.check_manifest)
        self._guard("config as built", self.check_config)
        self._guard("result re-derives", self.check_rederive)
        self._guard("sequential stop", self.check_sequential)
        self._guard("environment", self.check_environment)
        self._guard("design as sealed", self.check_design)
        self._guard("counts add up", self.check_counts)
        self._guard("ledger chain", self.check_ledger)
        self._guard("ledgered parts", self.check_ledger_parts)
        self._guard("shard merge", self.check_shards)
        self._guard("attempts", self.check_attempts)
        self._guard("external anchors", self.check_anchors)
        self._guard("harness headline", self.check_harness_headline)
        return self.checks

    # -- checks ---------------------------------------------------------------------------------
    def load(self) -> None:
        files = raw_files(self.root)
        self.facts = row_facts(files)
        self.add(
            "raw runs readable",
            bool(files),
            f"{len(files)} parts, {self.facts.n} rows"
            if files
            else "no raw runs under results/raw",
        )
        path = self.root / RESULT
        if path.exists():
            try:
                self.result = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                raise UserError(f"{RESULT}: not valid JSON ({e})") from None

    def suites_in_rows(self) -> list[str]:
        return self.facts.suites

    def check_lock(self) -> None:
        doc = lock.read(self.root)
        bad: list[str] = []
        for s in self.suites_in_rows():
            suite = get_suite(s, self.cfg)
            now = lock.compute(self.root, {s: suite.rubric_inputs()})["suites"][s]
            if s not in doc["suites"]:
                bad.append(f"{s}: not in lock")
                continue
            if set(now["files"]) != set(doc["suites"][s]["files"]):
                bad.append(f"{s}: input set changed")
            bad += [f"{s}: {m}" for m in lock.mismatches(self.root, doc, s)]
        self.add(
            "lock matches files",
            not bad,
            "; ".join(bad[:3]) or f"{len(doc['suites'])} suites, combined {doc['sha256'][:12]}",
        )

    def check_committed(self) -> None:
        if not git.is_repo(self.root):
            raise UserError(f"{self.root}: not a git repository")
        ok = git.is_clean(self.root, lock.LOCK_NAME)
        self.add(
            "lock committed",
            ok,
            "tracked and unchanged since its commit"
            if ok
            else f"{lock.LOCK_NAME} is untracked or modified",
        )

    def check_order(self) -> None:
        """Seal commit is an ancestor of HEAD and of every raw-run commit, and precedes the
        earliest started_at of the rows bound to it."""
        problems: list[str] = []
        by_commit: dict[str, list[str]] = {}
        claimed: dict[str, set[tuple[str, str]]] = {}
        groups = self.facts.groups
        orphans = sum(g.rows for (_, sealed, c, _), g in groups.items() if sealed and not c)
        if orphans:
            problems.append(f"{orphans} rows claim to be sealed but name no seal commit")
        for (suite, sealed, commit, rubric), g in groups.items():
            if sealed and commit:
                by_commit.setdefault(commit, []).extend([g.first] if g.first else [])
                claimed.setdefault(commit, set()).add((suite, rubric))
        if not by_commit:
            # imported logs run before the seal are disclosed as such (and verified to predate
            # it by "rows bound to seal"); anything else unsealed fails here
            predated = self.facts.n > 0 and all(
                not sealed and commit for (_, sealed, commit, _) in groups
            )
            self.add(
                "seal precedes runs",
                False,
                "no sealed rows: every imported sample predates the seal (not pre-registered)"
                if predated
                else "no sealed rows",
                warn=predated,
            )
            return
        raw_commits = (
            git.git(self.root, "log", "--format=%H", "--", "results/raw", check=False).split()
            + self._dvc_lock_commits_of_these_runs()
        )
        for commit, starts in sorted(by_commit.items()):
            if not git.is_ancestor(self.root, commit, "HEAD"):
                problems.append(f"seal commit {commit[:12]} is not in this history")
                continue
            lock_then = git.show(self.root, commit, lock.LOCK_NAME)
            if lock_then is None:
                problems.append(f"seal commit {commit[:12]} holds no {lock.LOCK_NAME}")
            else:
                # The rows must carry the hash that commit sealed, not merely today's lock hash.
                try:
                    sealed_then = json.loads(lock_then).get("suites", {})
                except ValueError:
                    sealed_then = {}
                for suite, digest in sorted(claimed[commit]):
                    if sealed_then.get(suite, {}).get("sha256") != digest:
                        problems.append(
                            f"{suite} rubric {digest[:12]} was not sealed in {commit[:12]}"
                        )
            if not starts:
                problems.append(f"rows bound to seal commit {commit[:12]} have no started_at")
                continue
            first = min(starts)
            t_seal = git.commit_time(self.root, commit)
            if _ts(first) < t_seal:
                problems.append(
                    f"first call {first} precedes seal commit {commit[:12]} "
                    f"({dt.datetime.fromtimestamp(t_seal, dt.UTC):%Y-%m-%dT%H:%M:%SZ})"
                )
            for c in raw_commits:
                if not git.is_ancestor(self.root, commit, c):
                    problems.append(f"raw runs committed in {c[:12]}, not after seal {commit[:12]}")
                    break
        self.add(
            "seal precedes runs",
            not problems,
            "; ".join(problems[:3])
            or f"{len(by_commit)} seal commit(s) in this history, each before the first call "
            "bound to it (git dates are client-set); "
            + (
                f"{len(raw_commits)} raw-run commit(s) descend from the seal"
                if raw_commits
                else "raw runs are not in git (DVC): ancestry checked against HEAD"
            ),
        )

    def _dvc_lock_commits_of_these_runs(self) -> list[str]:
        """The commits whose dvc.lock records exactly the raw runs audited: ``results/raw``
        with the md5 DVC gives the directory now. A dvc.lock committed for earlier runs (the
        default run before a re-seal, say) records other runs, so its date says nothing about
        these; one that records these runs must descend from their seal."""
        commits = git.git(self.root, "log", "--format=%H", "--", "dvc.lock", check=False).split()
        if not commits:
            return []
        want = dvc_dir_md5(self.root / "results/raw")
        return [
            c for c in commits if want in _dvc_lock_raw_md5s(git.show(self.root, c, "dvc.lock"))
        ]

    def check_binding(self) -> None:
        doc = lock.read(self.root)

        bad = Counter[str]()
        unsealed = 0
        predating = Counter[str]()
        times: dict[str, float] = {}
        for (suite, sealed, commit, rubric), g in sorted(self.facts.groups.items()):
            want = doc["suites"].get(suite, {}).get("sha256")
            if not sealed and commit and rubric == want:
                # imported samples the harness ran before the seal: bound to the seal they were
                # imported under, declared not pre-registered — if they really predate it
                if commit not in times:
                    times[commit] = seal_time(self.root, commit)
                early = sum(1 for t in g.starts or () if _ts(str(t)) < times[commit])
                predating[suite] += early
                unsealed += g.rows - early
            elif not sealed:
                unsealed += g.rows
            elif rubric != want:
                bad[suite] += g.rows
        problems = [f"{n} {s} rows carry another rubric hash" for s, n in sorted(bad.items())]
        if unsealed and not self.allow_unsealed:
            problems.append(f"{unsealed} unsealed rows (run with --unsealed) mixed in")
        notes = [
            f"{s}: {n} imported samples predate the seal (not pre-registered)"
            for s, n in sorted(predating.items())
        ]
        self.add(
            "rows bound to seal",
            not problems,
            "; ".join(problems)
            or f"{self.facts.n} rows carry the lock hash"
            + (f" ({unsealed} unsealed, declared)" if unsealed else "")
            + (f"; {'; '.join(notes)}" if notes else ""),
        )

    def check_manifest(self) -> None:
        if self.result is None:
            raise UserError(f"{RESULT}: missing; run `sealedeval publish`")
        listed = {m["path"]: m for m in self.result.get("manifest", [])}
        present = {f.relative_to(self.root).as_posix(): f for f in raw_files(self.root)}
        problems = [f"{p} missing" for p in sorted(set(listed) - set(present))]
        problems += [f"{p} not in manifest" for p in sorted(set(present) - set(listed))]
        for p in sorted(set(listed) & set(present)):
            if sha256_file(present[p]) != listed[p]["sha256"]:
                problems.append(f"{p} sha256 differs")
            elif read_raw([present[p]]).num_rows != listed[p]["rows"]:
                problems.append(f"{p} row count differs")
        self.add(
            "manifest checksums",
            not problems,
            "; ".join(problems[:3]) or f"{len(listed)} files match",
        )

    def check_rederive(self) -> None:
        """Every stage again, in memory: items, graded rows and analysis per suite against the
        files the workflow wrote (where present), then result.json and report.md."""

        problems = []
        docs = {}
        stages_checked = 0
        for name in published_suites(self.cfg):
            d = derive(self.cfg, name)
            docs[name] = d.doc
            ipath = artifacts.items_path(self.root, name)
            if ipath.exists():
                stages_checked += 1
                if artifacts.read_items(ipath) != d.items:
                    problems.append(
                        f"{ipath.relative_to(self.root)} differs from the re-derivation"
                    )
            gpath = artifacts.graded_path(self.root, name)
            if gpath.exists():
                stages_checked += 1
                if artifacts.read_graded(gpath) != d.graded:
                    problems.append(
                        f"{gpath.relative_to(self.root)} differs from the re-derivation"
                    )
            apath = artifacts.analysis_path(self.root, name)
            if apath.exists():
                stages_checked += 1
                if apath.read_bytes() != dumps(d.doc).encode("utf-8"):
                    problems.append(
                        f"{apath.relative_to(self.root)} differs from the re-derivation"
                    )
        recorded = (self.result or {}).get("versions")
        text, report = assemble(self.cfg, docs, environment=recorded)
        have = (self.root / RESULT).read_bytes() if (self.root / RESULT).exists() else b""
        if have != text.encode("utf-8"):
            problems.append(f"{RESULT} differs from the re-derivation")
        md = self.root / REPORT_MD
        if md.exists() and md.read_bytes() != report.encode("utf-8"):
            problems.append(f"{REPORT_MD} differs from the re-derivation")
        self.add(
            "result re-derives",
            not problems,
            "; ".join(problems[:3])
            or f"{stages_checked} stage files, result.json and report.md rebuilt byte for byte",
        )

    def check_sequential(self) -> None:
        """A suite with a sealed sequential rule (``analysis.sequential``) stopped where the rule
        said: the rule replayed on the raw rows in the sealed item order (the suite's analysis,
        derived again) finds no stop it did not allow and no answers past its stop, and every
        look the ledger records (``sequential`` in the entry of the slice run that completed
        it) equals the replay's look at that n, and every look of the replay is recorded."""

        current = {s: e["sha256"] for s, e in lock.read(self.root)["suites"].items()}
        entries = ledger.counted(self._entries())
        problems: list[str] = []
        said: list[str] = []
        for name in published_suites(self.cfg):
            if suite_plan(self.cfg, name) is None:
                continue
            seq = derive(self.cfg, name).doc["analysis"].get("sequential") or {}
            if seq.get("violation"):
                problems.append(f"{name}: {seq['violation']}")
            replay = {int(lk["n"]): lk for lk in seq.get("looks") or []}
            recorded = [
                e["sequential"]
                for e in entries
                if e.get("suite") == name
                and e.get("rubric_sha256") == current.get(name)
                and isinstance(e.get("sequential"), dict)
            ]
            for r in recorded:
                lk = replay.get(int(r["n"]))
                if lk is None:
                    problems.append(
                        f"{name}: the ledger records look {r['look']} at n = {r['n']} "
                        f"({r['decision']}), which the rule never made on the rows"
                    )
                elif lk["decision"] != r["decision"] or any(
                    abs(float(lk[k]) - float(r[v])) > 1e-9
                    for k, v in (("mean", "estimate"), ("lo", "lo"), ("hi", "hi"))
                ):
                    problems.append(
                        f"{name}: look {r['look']} at n = {r['n']}: the ledger says "
                        f"{r['decision']!r} ({float(r['estimate']):+.4f}), the replay "
                        f"{lk['decision']!r} ({float(lk['mean']):+.4f})"
                    )
            missing = sorted(set(replay) - {int(r["n"]) for r in recorded})
            problems += [
                f"{name}: the look at n = {n} ({replay[n]['decision']}) is not in the ledger"
                for n in missing
            ]
            said.append(
                f"{name}: {len(replay)} looks replayed, stopped at n = {seq.get('stopped_at')} "
                f"of {seq.get('max_n')} ({seq.get('decision')}), "
                f"{seq.get('calls_saved')} calls saved"
            )
        if problems or said:
            self.add("sequential stop", not problems, "; ".join(problems[:3] or said))

    def check_config(self) -> None:
        """The config this audit uses is the one result.json was built with (files and merged
        content hash): a config edited after the build is named, not silently re-derived."""
        if self.result is None:
            raise UserError(f"{RESULT}: missing; run `sealedeval publish`")
        built = self.result.get("config") or {}
        now = {"sources": list(self.cfg.sources), "sha256": self.cfg.sha256()}
        problems = []
        if built.get("sources") != now["sources"]:
            problems.append(
                f"built with {', '.join(built.get('sources') or [])}, "
                f"audited with {', '.join(now['sources'])}"
            )
        elif built.get("sha256") != now["sha256"]:
            problems.append(
                f"{', '.join(now['sources'])} changed since the build "
                f"(merged sha256 {str(built.get('sha256'))[:12]} then, "
                f"{now['sha256'][:12]} now)"
            )
        self.add(
            "config as built",
            not problems,
            "; ".join(problems)
            or f"{', '.join(now['sources'])} (merged sha256 "
            f"{now['sha256'][:12]}), as recorded in {RESULT}",
        )

    def check_environment(self) -> None:
        """Library versions are provenance, kept apart from the numbers: a difference is
        reported (WARN), never a failure; any number that differs fails the re-derivation."""

        if self.result is None:
            return
        recorded = self.result.get("versions") or {}
        now = versions()
        diff = [
            f"{k} {recorded.get(k, 'absent')} → {now.get(k, 'absent')}"
            for k in sorted(set(recorded) | set(now))
            if recorded.get(k) != now.get(k)
        ]
        self.add(
            "environment",
            not diff,
            (
                "built under other versions: "
                + ", ".join(diff)
                + "; every number and table re-derived equal"
            )
            if diff
            else "same library versions as the build",
            warn=True,
        )

    def check_design(self) -> None:
        """The result keeps the design sealed for its profile (``seal/design.py``): every sealed
        suite, engine (same model) and comparison is in it, and the design was already in the
        lock at the commit every row is bound to — so it predates the calls as the rubric does.
        An engine the design does not name is allowed and named "added after the seal"; a
        changed parameter (repeats, counts) is a WARN with both values."""

        if self.result is None:
            return
        doc = lock.read(self.root)
        key = design.profile_key(self.cfg.sources)
        entry = design.sealed_design(doc, self.cfg.sources)
        if entry is None:
            self.add(
                "design as sealed",
                False,
                f"no design sealed for {key}: engines, sizes and comparisons were not "
                "pre-registered (`sealedeval seal` with this config before the first run)",
                warn=True,
            )
            return
        problems: list[str] = []
        notes: list[str] = []
        changes: list[str] = []
        suites = self.result.get("suites") or {}
        ledgered = {e["suite"] for e in ledger.counted(self._entries())}
        not_run: list[str] = []
        for name in sorted(entry.get("suites") or {}):
            if name not in suites:
                if name in ledgered:  # it ran, and the result leaves it out
                    problems.append(f"{name}: sealed suite ran but is missing from the result")
                else:
                    not_run.append(name)
                continue
            d = design.result_design(self.cfg, doc, name, suites[name])
            problems += [f"{name}/{e}: sealed engine missing" for e in d["missing_engines"]]
            problems += [
                f"{name}/{e}: sealed engine answered by another model" for e in d["changed_engines"]
            ]
            problems += [f"{name}: sealed comparison {c} missing" for c in d["missing_comparisons"]]
            notes += [f"{name}/{e} added after the seal" for e in d["added_after_seal"]]
            changes += [f"{name}.{c}" for c in d["parameter_changes"]]
        notes += [
            f"{n}: suite added after the seal" for n in sorted(suites) if n not in entry["suites"]
        ]
        # the design in force at each call: the lock at the commit the rows are bound to. A
        # design sealed only after the calls fails; one re-sealed since is disclosed, and what
        # it promised then (an engine, a comparison) must still be in the result.
        for commit in sorted(self.facts.commits()):
            text = git.show(self.root, commit, lock.LOCK_NAME)
            then = json.loads(text) if text else {}
            was = design.sealed_design(then, self.cfg.sources)
            if was is None:
                problems.append(f"the design of {key} was not in {lock.LOCK_NAME} at {commit[:12]}")
                continue
            if was.get("sha256") == entry.get("sha256"):
                continue
            changes.append(f"design re-sealed after the calls bound to {commit[:12]}")
            for name in sorted(set(was.get("suites") or {}) & set(suites)):
                d = design.result_design(self.cfg, then, name, suites[name])
                problems += [
                    f"{name}/{e}: engine sealed at {commit[:12]} missing"
                    for e in d["missing_engines"]
                ]
                problems += [
                    f"{name}: comparison {c} sealed at {commit[:12]} missing"
                    for c in d["missing_comparisons"]
                ]
        if problems:
            self.add("design as sealed", False, "; ".join(problems[:4]))
        elif changes or not_run:
            said = [f"sealed but never run: {', '.join(not_run)}"] if not_run else []
            if changes:
                said.append("parameters changed since the seal: " + "; ".join(changes[:6]))
            self.add("design as sealed", False, "; ".join(said), warn=True)
        else:
            self.add(
                "design as sealed",
                True,
                f"{key}: {len(entry['suites'])} suites as sealed"
                + (f"; {', '.join(notes)}" if notes else ""),
            )

    def check_counts(self) -> None:
        if self.result is None:
            raise UserError(f"{RESULT}: missing")
        # the latest row per request key within each suite, as the build reads them (one
        # suite's raw files at a time): an imported key is (harness, task, sample, epoch,
        # model), so the same task and model imported into two suites (two harness releases)
        # share keys across suites, and one suite's rows must not stand for the other's
        problems = []
        for suite, s in self.result.get("suites", {}).items():
            counts = latest_counts(raw_files(self.root, suite), suite)
            for eng, c in s["seal"]["counts"].items():
                st = counts.get(eng, Counter())
                if c["ok"] + c["error"] + c["refused"] != c["requests"]:
                    problems.append(f"{suite}/{eng}: ok+error+refused != requests")
                mine = (st["ok"], st["error"], st.total())
                if mine != (c["ok"], c["error"], c["requests"]):
                    problems.append(f"{suite}/{eng}: counts differ from raw rows")
        self.add(
            "counts add up",
            not problems,
            "; ".join(problems[:3]) or "ok + error + refused = requests for every suite and engine",
        )

    # -- the run ledger ---------------------------------------------------------------------
    def _entries(self) -> list[dict[str, Any]]:
        """Every entry: ``ledger.jsonl``'s and every shard segment's (``store/segments.py``)."""
        if not hasattr(self, "_ledger_entries"):
            self._ledger_entries = segments.all_entries(self.root)
        return self._ledger_entries

    def check_shards(self) -> None:
        """Sharded suites: the merge again (``stages/merge.py``), naming any shard missing,
        present twice or holding another shard's keys, and its Merkle root against result.json's."""

        ok, detail = audit_shards(self.cfg, self.result)
        if detail:
            self.add("shard merge", ok, detail)

    def check_ledger(self) -> None:
        """The chain holds, and the working ledger extends every committed version of it."""
        entries = ledger.read(self.root)
        history = git.file_history(self.root, ledger.LEDGER_NAME)
        segs = segments.read_segments(self.root)  # shard segments: each its own chain
        if not entries and not history and not segs:
            self.add(
                "ledger chain",
                not raw_files(self.root),
                f"no {ledger.LEDGER_NAME}: the raw runs are accounted for by no ledger",
            )
            return
        problems = ledger.chain_problems(entries)
        problems += [p for seg in segs for p in segments.chain_problems(seg)]
        path = self.root / ledger.LEDGER_NAME
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        later = [t for _, t in history[1:]] + [text] if history else []
        for (commit, old), new in zip(history, later, strict=True):
            if not new.startswith(old):
                problems.append(
                    f"{ledger.LEDGER_NAME} rewritten after commit {commit[:12]} "
                    "(a committed entry was changed or removed)"
                )
                break
        committed = len(ledger.parse(history[-1][1])) if history else 0
        pending = len(entries) - committed

        head_problems, head = timestamp.ledger_head_problems(self.root, entries)
        problems += head_problems
        self.add(
            "ledger chain",
            not problems,
            "; ".join(problems[:3])
            or f"{len(entries)} entries chained; "
            + (f"{pending} not committed yet" if pending else "all committed")
            + (f"; {len(segs)} shard segments chained" if segs else "")
            + (f"; {head}" if head else ""),
            warn=False,
        )

    def check_ledger_parts(self) -> None:
        """Every part a run wrote under the published seal is present with its bytes, every
        present part was written by a ledgered run, and result.json reports every ledgered
        (suite, engine). Pilots wrote outside the study (``results/pilot``): not checked."""
        entries = ledger.counted(self._entries())
        if not entries:
            return
        current = {s: e["sha256"] for s, e in lock.read(self.root)["suites"].items()}
        listed: dict[str, tuple[str, int, bool]] = {}
        adopted = 0
        for e in entries:
            now = current.get(e["suite"]) == e["rubric_sha256"]
            adopted += len(e.get("adopted") or [])
            for part in ledger.entry_parts(e):
                listed[part["path"]] = (part["sha256"], part["rows"], now)
        present = {f.relative_to(self.root).as_posix(): f for f in raw_files(self.root)}
        problems = []
        aside = 0
        for path, (digest, _rows, now) in sorted(listed.items()):
            f = present.get(path)
            if f is None:
                if now:
                    problems.append(f"{path} is in the ledger but missing")
                else:
                    aside += 1
            elif sha256_file(f) != digest:
                problems.append(f"{path} differs from the ledger (edited or swapped)")
        problems += [
            f"{p} was written by no ledgered run (an interrupted run? running its engine again "
            "resumes and records it)"
            for p in sorted(set(present) - set(listed))
        ]
        reported = {
            (suite, eng)
            for suite, sec in (self.result or {}).get("suites", {}).items()
            for eng in sec["seal"]["counts"]
        }
        ledgered = {
            (e["suite"], e["engine"])
            for e in entries
            if current.get(e["suite"]) == e["rubric_sha256"] and ledger.entry_parts(e)
        }
        problems += [
            f"{s}/{e} has ledgered runs but is not in {RESULT}"
            for s, e in sorted(ledgered - reported)
        ]
        note = f"; {aside} parts of runs under an earlier seal are not present" if aside else ""
        if adopted:
            note += (
                f"; {adopted} part{'s' if adopted != 1 else ''} of interrupted runs adopted by "
                "the run that resumed them"
            )
        self.add(
            "ledgered parts",
            not problems,
            "; ".join(problems[:3]) or f"{len(listed)} ledgered parts present and unchanged{note}",
        )

    def check_attempts(self) -> None:
        """Disclose how many runs each (suite, engine) had, and under how many seals/configs;
        pilots are disclosed per suite and not counted (unsealed, outside the study)."""
        all_entries = self._entries()
        if not all_entries:
            return
        entries = ledger.counted(all_entries)
        by: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for e in entries:
            by.setdefault((e["suite"], e["engine"]), []).append(e)
        parts = []
        for (suite, eng), all_es in sorted(by.items()):
            # a run that found every planned key answered made no call: a resume check, not an
            # attempt (the workflow reruns run jobs as no-ops after a clone)
            es = [e for e in all_es if e["ok"] + e["error"] > 0 or e["outcome"] != "done"]
            checks = len(all_es) - len(es)
            seals = len({e["rubric_sha256"] for e in es})
            configs = len({e["config_sha256"] for e in es})
            extra = []
            if seals > 1:
                extra.append(f"{seals} seals")
            if configs > 1:
                extra.append(f"{configs} configs")
            if checks:
                extra.append(f"+{checks} resume check{'s' if checks != 1 else ''}")
            parts.append(
                f"{suite}/{eng} {len(es)} run{'s' if len(es) != 1 else ''}"
                + (f" ({', '.join(extra)})" if extra else "")
            )
        pilots = Counter(str(e["suite"]) for e in ledger.pilots(all_entries))
        parts += [
            f"{suite}: {n} pilot run{'s' if n != 1 else ''} (unsealed, not counted)"
            for suite, n in sorted(pilots.items())
        ]
        self.add("attempts", True, "; ".join(parts))

    def check_anchors(self) -> None:
        """RFC 3161 token and/or pre-registration deposit; each must predate the first call."""

        first = self.facts.first_sealed_start()
        found: list[str] = []
        problems: list[str] = []
        unsure: list[str] = []
        if (self.root / timestamp.TSR_NAME).exists():
            ok, detail, info = timestamp.verify(self.root)
            if not ok:
                problems.append(detail)
            elif info is not None and first is not None and info.time.timestamp() > _ts(first):
                problems.append(f"{detail}, after the first call {first}")
            else:
                found.append(detail + (f", before the first call {first}" if first else ""))
        prereg = self.root / PREREG_NAME
        if prereg.exists():
            try:
                rec = json.loads(prereg.read_text(encoding="utf-8"))
            except ValueError:
                rec = {}
            read = next((a for a in self.anchors if a.record_id == str(rec.get("id"))), None)
            if rec.get("rubric_lock_sha256") != sha256_file(self.root / lock.LOCK_NAME):
                problems.append(f"{PREREG_NAME} records another {lock.LOCK_NAME}")
            elif read is not None:
                self._read_anchor(read, rec, first, found, problems, unsure)
            elif not rec.get("published"):
                found.append(
                    f"{rec.get('service', 'deposit')} draft {rec.get('id')} "
                    "(unpublished: not a public anchor)"
                )
            elif first is not None and rec.get("created") and _ts(rec["created"]) > _ts(first):
                problems.append(f"pre-registration {rec.get('doi')} was made after the first call")
            else:
                found.append(
                    f"pre-registration {rec.get('doi')} ({rec.get('created')}; check it online)"
                )
        if problems:
            self.add("external anchors", False, "; ".join(problems))
        elif unsure:
            self.add("external anchors", False, "; ".join(found + unsure), warn=True)
        elif found:
            self.add("external anchors", True, "; ".join(found))
        else:
            self.add(
                "external anchors",
                False,
                "none: only git dates exist, and a git date is set "
                "by the client and proves nothing on its own",
                warn=True,
            )

    @staticmethod
    def _read_anchor(
        a: ExternalAnchor,
        rec: dict[str, Any],
        first: str | None,
        found: list[str],
        problems: list[str],
        unsure: list[str],
    ) -> None:
        """The pre-registration as the repository reports it: public, the DOI the project
        names, holding this rubric.lock, published before the first sealed call."""
        name = f"pre-registration {a.doi or rec.get('doi')}"
        if a.error:
            unsure.append(f"{name} not read back from {a.service} ({a.error})")
        elif rec.get("doi") and a.doi and a.doi != rec.get("doi"):
            problems.append(f"{a.service} record {a.record_id} has DOI {a.doi}, not {rec['doi']}")
        elif a.lock_sha256 is None:
            problems.append(f"{name} holds no {lock.LOCK_NAME}")
        elif a.lock_sha256 != rec.get("rubric_lock_sha256"):
            problems.append(f"{name} holds another {lock.LOCK_NAME} than {PREREG_NAME} names")
        elif not a.published:
            unsure.append(f"{name}: {a.service} reports no publication time")
        elif first is not None and _ts(a.published) > _ts(first):
            problems.append(
                f"{name} published {a.published} ({a.service}), after the first call {first}"
            )
        else:
            found.append(
                f"{name} published {a.published} (read back from {a.service})"
                + (f", before the first call {first}" if first else "")
            )

    def check_harness_headline(self) -> None:
        """Imported runs: the metric each harness reported in its log equals ours recomputed
        from the log's samples (``analysis.headline_mismatches``, both numbers named). A
        headline on a subset, errors silently excluded or samples edited after the run fail."""
        compared, problems = 0, []
        for suite, sec in sorted(((self.result or {}).get("suites") or {}).items()):
            an = sec.get("analysis") or {}
            if "headline_mismatches" not in an:
                continue
            compared += sum(len(e.get("headline") or []) for e in an.get("engines", {}).values())
            problems += [f"{suite}: {m}" for m in an["headline_mismatches"]]
        if compared or problems:
            self.add(
                "harness headline",
                not problems,
                "; ".join(problems[:3])
                or f"{compared} reported metric(s) equal ours recomputed from the samples",
            )


def latest_counts(files: Sequence[Path], suite: str) -> dict[str, Counter[str]]:
    """Statuses of the latest row per request key of ``files`` whose suite is ``suite``, by
    engine: read column-wise (``latest_records``), the status, engine and suite columns only
    (a dict per attempt row was the audit's memory at a million rows)."""
    import numpy as np

    rows = latest_records(files)
    out: dict[str, Counter[str]] = {}
    if not len(rows):
        return out
    cols = [record_column(rows, c) for c in ("suite", "engine", "status")]
    if all(isinstance(c, Coded) and isinstance(c.values, list) for c in cols):
        coded = [c for c in cols if isinstance(c, Coded)]
        views = [c.code_view().astype(np.int64) for c in coded]
        widths = [len(c.values) for c in coded]
        flat = (views[0] * widths[1] + views[1]) * widths[2] + views[2]
        found, n = np.unique(flat, return_counts=True)
        for code, k in zip(found.tolist(), n.tolist(), strict=True):
            rest, st = divmod(code, widths[2])
            su, en = divmod(rest, widths[1])
            values = [coded[0].values[su], coded[1].values[en], coded[2].values[st]]
            if values[0] == suite:
                out.setdefault(str(values[1]), Counter())[str(values[2])] += k
        return out
    for su, en, st in zip(*cols, strict=True):
        if su == suite:
            out.setdefault(str(en), Counter())[str(st)] += 1
    return out


def render(checks: list[Check]) -> str:
    w = max(len(c.name) for c in checks)
    lines = [f"{'check':<{w}}  result  detail"]
    lines += [f"{c.name:<{w}}  {c.status:<6}  {c.detail}" for c in checks]
    return "\n".join(lines)


def failed(checks: list[Check]) -> bool:
    return any(c.status == "FAIL" for c in checks)
