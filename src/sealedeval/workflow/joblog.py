"""A workflow job's log, and the one line of it the terminal must show.

Every rule runs ``sealedeval --log LOG --job RULE <command> ...``: the command's whole output
(progress bars, retries, tracebacks, its own subprocesses') goes to LOG as before, and when the
command fails, its one-line reason goes to the terminal too, named by rule and wildcards and
followed by the log's path::

    run golden/local: sealedeval: error: golden/local: 30 of 30 calls... (logs/run/golden.local.log)

Without this the terminal shows only Snakemake's ``CalledProcessError ... check log file(s)``.
The same line is appended to ``FAILED_JOBS``, which ``sealedeval status --since`` (the end of
every build) reads to name the real reason per failed job.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from sealedeval.errors import UserError

FAILED_JOBS = Path("logs/failed-jobs.jsonl")
"""One JSON line per failed job, appended (concurrent jobs each write one short line with
O_APPEND, so lines never interleave); the build's closing table reads the ones since it began."""


@dataclass(frozen=True)
class JobFailure:
    """One failed job: what ``status --since`` prints and what the terminal got at the time."""

    at: str
    """UTC ISO time the job ended (the format of the build's ``--since``)."""
    job: str
    """Rule and wildcards, e.g. ``run golden/local``."""
    error: str
    """The one line: ``sealedeval: error: ...`` or, for a bug, the exception's type and text."""
    log: str
    suite: str = ""
    engine: str = ""

    def line(self) -> str:
        return f"{self.job}: {self.error} ({self.log})"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record(root: Path, failure: JobFailure) -> None:
    path = root / FAILED_JOBS
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(asdict(failure), sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def failures(root: Path, since: str) -> list[JobFailure]:
    """The failures recorded at or after ``since``, in the order they happened. A line that is
    not a record (a hand edit, a torn write) is skipped: this is a display, not evidence."""
    path = root / FAILED_JOBS
    if not path.exists():
        return []
    out = []
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            doc = json.loads(text)
            f = JobFailure(**{k: str(v) for k, v in doc.items()})
        except (ValueError, TypeError):
            continue
        if f.at >= since:
            out.append(f)
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _last_line(log: Path) -> str:
    """The last non-empty line of a log: what a command that returned non-zero said last."""
    try:
        lines = [x for x in log.read_text(encoding="utf-8", errors="replace").splitlines() if x]
    except OSError:
        return ""
    return _one_line(lines[-1]) if lines else ""


@contextmanager
def _output_to(log: Path, *, tee: bool) -> Iterator[IO[str]]:
    """Send file descriptors 1 and 2 (so also subprocesses' output) to ``log``; with ``tee``,
    to the original stdout as well. Yields the original stderr, for the one terminal line."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(2), "w", buffering=1)
    logfd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    copier = None
    if tee:
        read_end, write_end = os.pipe()
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)

        def copy() -> None:
            while chunk := os.read(read_end, 65536):
                os.write(logfd, chunk)
                os.write(saved[0], chunk)
            os.close(read_end)

        copier = threading.Thread(target=copy, daemon=True)
        copier.start()
    else:
        os.dup2(logfd, 1)
        os.dup2(logfd, 2)
    try:
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)  # the pipe's last write ends closed: the copier reads to its end
        if copier is not None:
            copier.join()
        for fd in saved:
            os.close(fd)
        os.close(logfd)


def run_logged(
    root: Path,
    log: Path,
    job: str,
    fn: Callable[[], int],
    *,
    tee: bool = False,
    suite: str = "",
    engine: str = "",
) -> int:
    """Run a command with its output in ``log`` (and on stdout too with ``tee``); on failure,
    its one line to the terminal and to ``FAILED_JOBS``. Returns the command's exit status (2
    for a ``UserError``, as without a log)."""
    with _output_to(log, tee=tee) as terminal:
        try:
            rc = fn()
            error = ""
        except UserError as e:
            error = f"sealedeval: error: {e}"
            print(error, file=sys.stderr)
            rc = e.exit_code
        except KeyboardInterrupt:
            error = "sealedeval: interrupted; completed rows are stored, rerun to resume"
            print(error, file=sys.stderr)
            rc = 130
        except Exception as e:  # a bug: the traceback stays in the log, one line goes out
            traceback.print_exc()
            error = _one_line(f"{type(e).__name__}: {e}")
            rc = 1
    if rc != 0:
        error = error or _last_line(log) or f"exit status {rc}"
        failure = JobFailure(now(), job, error, str(log), suite, engine)
        terminal.write(failure.line() + "\n")
        terminal.close()
        record(root, failure)
    else:
        terminal.close()
    return rc
