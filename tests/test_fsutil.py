"""Atomic writes create files the way ``open()`` does: mode 0o666 less the process umask (a
results directory is meant to be shared; ``tempfile.mkstemp`` made every output 0600)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path, write_bytes_atomic, write_text_atomic


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.usefixtures("umask")
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_have_the_umasks_mode(tmp_path: Path, mask: int, mode: int) -> None:
    os.umask(mask)
    text, data, other = tmp_path / "r.md", tmp_path / "d/f.png", tmp_path / "p.parquet"
    write_text_atomic(text, "x")
    write_bytes_atomic(data, b"y")
    with atomic_path(other) as tmp:
        tmp.write_bytes(b"z")  # as pyarrow writes a part: into the temp path
    for p in (text, data, other):
        assert stat.S_IMODE(p.stat().st_mode) == mode, p
    # replacing a file gives the new file the umask's mode too, not the old file's
    os.umask(0o022)
    write_text_atomic(text, "again")
    assert stat.S_IMODE(text.stat().st_mode) == 0o644
    assert text.read_text() == "again"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["d", "f.png", "p.parquet", "r.md"]


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(UserError, match="ro: cannot write"):
            write_text_atomic(d / "x", "y")
    finally:
        d.chmod(0o700)
