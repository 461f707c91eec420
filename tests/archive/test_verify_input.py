"""What ``sealedeval verify`` accepts from a downloaded (untrusted) deposit, before any audit:
sources it understands, SHA256SUMS it can read, archives that stay inside their folder."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from sealedeval.archive import bundle, verify
from sealedeval.errors import UserError


@pytest.mark.parametrize(
    ("source", "doi"),
    [
        ("10.5281/zenodo.123", "10.5281/zenodo.123"),
        ("doi:10.5281/zenodo.123", "10.5281/zenodo.123"),
        ("https://doi.org/10.6084/m9.figshare.42.v2", "10.6084/m9.figshare.42.v2"),
        ("results/deposit/bundle", None),
        ("https://zenodo.org/records/123", None),
    ],
)
def test_dois_are_recognised(source: str, doi: str | None) -> None:
    assert verify._doi_of(source) == doi


def test_a_local_path_is_not_a_record() -> None:
    assert verify.resolve_record("results/deposit/bundle") is None
    with pytest.raises(UserError, match="not a Zenodo record or Figshare article URL"):
        verify.resolve_record("https://example.org/somewhere/else")


def _deposit(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir()
    manifest = {"format": bundle.FORMAT, "commit": "a" * 40, "restore": {}}
    files = {**files, bundle.MANIFEST: json.dumps(manifest).encode()}
    for name in verify.ESSENTIAL:
        files.setdefault(name, b"x")
    for name, data in files.items():
        (folder / name).write_bytes(data)
    sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in sorted(files.items()))
    (folder / bundle.SUMS).write_text(sums)


def test_sums_hold_and_list_what_the_audit_needs(tmp_path: Path) -> None:
    _deposit(tmp_path / "ok", {})
    assert verify.check_sums(tmp_path / "ok", "ok")["commit"] == "a" * 40
    _deposit(tmp_path / "bad", {})
    with (tmp_path / "bad" / bundle.SUMS).open("a") as fh:
        fh.write("not a line\n")
    with pytest.raises(UserError, match=r"SHA256SUMS line \d+ is not"):
        verify.check_sums(tmp_path / "bad", "bad")
    _deposit(tmp_path / "escape", {})
    with (tmp_path / "escape" / bundle.SUMS).open("a") as fh:
        fh.write(f"{'0' * 64}  ../outside\n")
    with pytest.raises(UserError, match="is not a plain file name"):
        verify.check_sums(tmp_path / "escape", "escape")
    _deposit(tmp_path / "short", {})
    text = (tmp_path / "short" / bundle.SUMS).read_text()
    (tmp_path / "short" / bundle.SUMS).write_text(
        "".join(line + "\n" for line in text.splitlines() if not line.endswith("raw.tar.gz"))
    )
    with pytest.raises(UserError, match=r"not a complete sealedeval deposit \(raw.tar.gz"):
        verify.check_sums(tmp_path / "short", "short")


def _tar(path: Path, members: dict[str, bytes], *, link: str | None = None) -> None:
    with tarfile.open(path, "w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            t.addfile(info)


def test_archives_stay_inside_their_folder(tmp_path: Path) -> None:
    dest = tmp_path / "proj"
    dest.mkdir()
    _tar(tmp_path / "ok.tar.gz", {"results/raw/s/e/part-1.parquet": b"p"})
    assert verify._extract_tar(tmp_path / "ok.tar.gz", dest, "results/raw") == 1
    _tar(tmp_path / "up.tar.gz", {"../evil": b"x"})
    with pytest.raises(UserError, match="is not a plain file"):
        verify._extract_tar(tmp_path / "up.tar.gz", dest, None)
    _tar(tmp_path / "link.tar.gz", {}, link="results/raw/link")
    with pytest.raises(UserError, match="is not a plain file"):
        verify._extract_tar(tmp_path / "link.tar.gz", dest, None)
    _tar(tmp_path / "other.tar.gz", {"config/config.yaml": b"x"})
    with pytest.raises(UserError, match="outside results/raw/"):
        verify._extract_tar(tmp_path / "other.tar.gz", dest, "results/raw")
    assert not (tmp_path / "evil").exists()

    z = tmp_path / "d.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../evil", b"x")
    with pytest.raises(UserError, match="leaves the archive"):
        verify._extract_zip(z, tmp_path / "unzipped")
    (tmp_path / "not.zip").write_bytes(b"no")
    with pytest.raises(UserError, match="not a zip file"):
        verify._extract_zip(tmp_path / "not.zip", tmp_path / "unzipped2")
