"""Atomic file writes: a reader (or a crash) never sees half a file.

Files are created with mode 0o666 less the process umask, as ``open()`` creates them: results
are meant to be shared (a deposit, a colleague's checkout, a web server), and the user's umask
is how she says how far. ``tempfile.mkstemp`` creates 0o600 whatever the umask.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from sealedeval.errors import UserError

FILE_MODE = 0o666
"""The mode new files are created with before the umask applies (``open()``'s default)."""

_TEMP_ATTEMPTS = 100
"""Names tried for a temp file before giving up (each a fresh 64-bit random name)."""


def _create_temp(path: Path) -> Path:
    """A new, empty file beside ``path``, created exclusively (``O_EXCL``: never someone
    else's file) with ``FILE_MODE``, which the kernel masks with the umask. Reading the umask
    to apply it ourselves would need ``os.umask``'s set-and-restore, which races with the
    threads that write files."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_TEMP_ATTEMPTS):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, flags, FILE_MODE)
        except FileExistsError:
            continue
        except OSError as e:
            raise UserError(f"{path.parent}: cannot write ({e.strerror})") from e
        os.close(fd)
        return tmp
    raise UserError(f"{path.parent}: cannot write (no free temporary file name)")


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success fsync and rename it into place.

    The temp file lives in the same directory so the rename is atomic on POSIX. On any error the
    temp file is removed and ``path`` is untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = _create_temp(path)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
        with contextlib.suppress(OSError):
            dfd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except OSError as e:
        tmp_path.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write ({e.strerror})") from e
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
