"""Progress a user can see under Snakemake: throttled one-line reports, then one table of runs.

The tqdm bar redraws one line with carriage returns: right for a terminal, unreadable in the
log file the run rule sends stderr to and lost entirely under Snakemake, which shows only "k of
n steps done". So a run can also write compact status lines (``sealedeval run --status-fd N``;
the run rule points N at Snakemake's own stderr while the full log still goes to the file):

    golden/local: 120/259 (46%), ok 118, error 2 (timeout 1, truncated 1), 0.9/s, ETA 2m35s

one line at a time, no carriage returns, at most every ``EVERY_S`` seconds or every
``EVERY_FRACTION`` of the run (whichever comes first, never twice within ``MIN_GAP_S``), plus a
first and a last line, so many parallel runs stay readable in Snakemake's output.

``status_table`` is the end-of-build summary (``sealedeval status``, printed by the workflow's
``onsuccess``/``onerror`` handlers): one row per run in the ledger — calls planned, ok, skipped
(already ok), errors by kind, wall time, outcome (``done``, ``interrupted``, or ``failed: `` and
the ledger's short reason, e.g. ``failed: unreachable: connection refused``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO, Any, Final, Protocol

EVERY_S: Final = 5.0
"""A status line at least this often (seconds) while calls are being made."""

EVERY_FRACTION: Final = 0.05
"""... and whenever another 5% of the run's calls are done (on a fast run, 5 s is too coarse)."""

MIN_GAP_S: Final = 1.0
"""... but never twice within a second: a 10,000-calls/s run would print its 20 lines at once."""

REASON_CHARS: Final = 60
"""A failed run's reason is cut to this many characters in the status table (the ledger and
the run's own error line keep all of it)."""


class _Stats(Protocol):
    """What a status line reads of ``run.dispatcher.RunStats`` (read-only)."""

    @property
    def ok(self) -> int: ...
    @property
    def error(self) -> int: ...
    @property
    def by_kind(self) -> Mapping[str, int]: ...


def duration(seconds: float | None) -> str:
    """``"2m35s"``, ``"1h02m"``, ``"45s"``, ``"0.4s"``; ``"?"`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    if seconds < 10:
        return f"{seconds:.1f}s"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def eta(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the rate so far; None before the first call ends."""
    if done <= 0 or elapsed <= 0:
        return None
    return (total - done) * elapsed / done


def kinds_text(by_kind: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items()) if v)


def format_line(
    label: str,
    done: int,
    total: int,
    ok: int,
    error: int,
    by_kind: Mapping[str, int],
    elapsed: float,
    *,
    skipped: int = 0,
    final: bool = False,
) -> str:
    """One status line (no newline, no carriage return)."""
    pct = f" ({100 * done // total}%)" if total else ""
    kinds = kinds_text(by_kind)
    err = f"error {error}" + (f" ({kinds})" if kinds else "")
    rate = f"{done / elapsed:.1f}/s" if elapsed > 0 and done else "-/s"
    skip = f", {skipped} already ok" if skipped else ""
    tail = f"done in {duration(elapsed)}" if final else f"ETA {duration(eta(done, total, elapsed))}"
    return f"{label}: {done}/{total}{pct}, ok {ok}, {err}{skip}, {rate}, {tail}"


class StatusLines:
    """Throttled status lines for one dispatch of ``total`` calls.

    ``update`` after every finished call, ``close`` at the end; ``out`` receives each line
    (with its newline) and is flushed. ``clock`` is injectable for tests."""

    def __init__(
        self,
        label: str,
        total: int,
        out: IO[str],
        *,
        skipped: int = 0,
        every_s: float = EVERY_S,
        every_fraction: float = EVERY_FRACTION,
        min_gap_s: float = MIN_GAP_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.out, self.skipped = label, total, out, skipped
        self.every_s, self.min_gap_s, self.clock = every_s, min_gap_s, clock
        self.step = max(1, int(total * every_fraction)) if total else 1
        self.t0 = clock()
        self.last_t = self.t0
        self.next_done = self.step
        self.done = 0
        self.base_ok = self.base_error = 0
        self.base_kinds: dict[str, int] = {}
        self.lines = 0

    def start(self, stats: _Stats) -> None:
        """The first line; ``stats`` may already hold an earlier phase's counts, which this
        dispatch's lines leave out."""
        self.base_ok, self.base_error = stats.ok, stats.error
        self.base_kinds = dict(stats.by_kind)
        skip = f", {self.skipped} already ok" if self.skipped else ""
        self.out.write(f"{self.label}: starting {self.total} calls{skip}\n")
        self.out.flush()
        self.lines += 1

    def _counts(self, stats: _Stats) -> tuple[int, int, dict[str, int]]:
        kinds = {k: v - self.base_kinds.get(k, 0) for k, v in stats.by_kind.items()}
        return stats.ok - self.base_ok, stats.error - self.base_error, kinds

    def _emit(self, stats: _Stats, *, final: bool) -> None:
        now = self.clock()
        ok, error, kinds = self._counts(stats)
        line = format_line(
            self.label,
            self.done,
            self.total,
            ok,
            error,
            kinds,
            now - self.t0,
            skipped=self.skipped,
            final=final,
        )
        self.out.write(line + "\n")
        self.out.flush()
        self.last_t = now
        self.lines += 1

    def update(self, stats: _Stats, n: int = 1) -> bool:
        """Count ``n`` finished calls; write a line when one is due. True when written."""
        self.done += n
        now = self.clock()
        gap = now - self.last_t
        due = gap >= self.every_s or (self.done >= self.next_done and gap >= self.min_gap_s)
        if self.done >= self.next_done:
            while self.next_done <= self.done:
                self.next_done += self.step
        if due and self.done < self.total:
            self._emit(stats, final=False)
            return True
        return False

    def close(self, stats: _Stats) -> None:
        self._emit(stats, final=True)


def _seconds(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    try:
        t0 = datetime.fromisoformat(a.replace("Z", "+00:00"))
        t1 = datetime.fromisoformat(b.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t1 - t0).total_seconds()


STATUS_HEADER = (
    "suite",
    "engine",
    "shard",
    "planned",
    "ok",
    "skipped",
    "error",
    "errors by kind",
    "wall",
    "outcome",
)


def status_rows(
    entries: Iterable[Mapping[str, Any]], *, since: str | None = None
) -> list[list[str]]:
    """One row per run entry of the ledger (imports and other kinds are left out) that ended
    at or after ``since`` (an ISO time; None: the latest run of every suite, engine and
    shard). Ordered by suite, engine, shard."""
    latest: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    chosen: list[Mapping[str, Any]] = []
    for e in entries:
        if e.get("kind") != "run":
            continue
        if since is not None:
            if str(e.get("finished_at", "")) >= since:
                chosen.append(e)
            continue
        shard = e.get("shard") or [0, 1]
        latest[(str(e["suite"]), str(e["engine"]), f"{shard[0]}-of-{shard[1]}")] = e
    if since is None:
        chosen = list(latest.values())
    rows = []
    for e in chosen:
        shard = e.get("shard") or [0, 1]
        kinds = e.get("errors_by_kind")
        error = int(e.get("error", 0))
        kind_text = ("not recorded" if error else "") if kinds is None else kinds_text(kinds)
        rows.append(
            [
                str(e["suite"]),
                str(e["engine"]),
                "-" if int(shard[1]) == 1 else f"{shard[0] + 1}/{shard[1]}",
                str(e.get("planned", "")),
                str(e.get("ok", "")),
                str(e.get("skipped", "")),
                str(error),
                kind_text or "-",
                duration(_seconds(e.get("started_at"), e.get("finished_at"))),
                outcome_text(e),
            ]
        )
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return rows


def outcome_text(entry: Mapping[str, Any]) -> str:
    """The outcome cell: ``done``, ``interrupted``, ``failed: <reason>`` (cut to
    ``REASON_CHARS``)."""
    outcome = str(entry.get("outcome", ""))
    reason = str(entry.get("reason") or "")
    if not reason:
        return outcome
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return f"{outcome}: {reason}"


def status_table(rows: list[list[str]]) -> str:
    """A plain-text table (fixed-width columns: a terminal, not Markdown)."""
    cells = [list(STATUS_HEADER), *rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(STATUS_HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


class _Batch(Protocol):
    """What a batch status line reads of ``engines.batch.BatchStatus``."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def done(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def failed(self) -> int: ...


BATCHES_SHOWN: Final = 4
"""Batches named one by one on a batch status line; the rest are summed by state."""


def batch_line(batches: Sequence[_Batch]) -> str:
    """The batches of a run as one line: ``batch_abc in_progress 40/100 (failed 2), ...``
    (the provider's own state words), "" when there are none."""
    if not batches:
        return ""
    parts = []
    for b in batches[:BATCHES_SHOWN]:
        failed = f" (failed {b.failed})" if b.failed else ""
        parts.append(f"{b.id} {b.state} {b.done}/{b.total}{failed}")
    rest = batches[BATCHES_SHOWN:]
    if rest:
        by_state = Counter(b.state for b in rest)
        parts.append(
            f"{len(rest)} more (" + ", ".join(f"{s} {n}" for s, n in sorted(by_state.items())) + ")"
        )
    done = sum(b.done for b in batches)
    total = sum(b.total for b in batches)
    return f"batches: {done}/{total} done; " + ", ".join(parts)
