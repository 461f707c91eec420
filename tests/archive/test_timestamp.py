"""RFC 3161 seal anchors against a throwaway TSA made with `openssl ts` on loopback."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.archive.tsa import make_tsa, serve_tsa
from tests.conftest import git, sealedeval

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="apt-get install openssl")
TINY = ("-c", "config/tiny.yaml")


def _anchor_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("external anchors"))


def test_tsa_token_verifies_and_tamper_fails(project: Callable[..., Path], tmp_path: Path) -> None:
    root = project(commit_lock=False)
    make_tsa(tmp_path / "tsa")
    with serve_tsa(tmp_path / "tsa") as url:
        sealedeval(root, "seal", "--tsa", url, "--tsa-ca", str(tmp_path / "tsa/ca.pem"))
    assert (root / "rubric.lock.tsr").exists() and (root / "rubric.lock.tsa.pem").exists()
    git(root, "add", "rubric.lock", "rubric.lock.tsr", "rubric.lock.tsa.pem")
    git(root, "commit", "-qm", "seal")
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", *TINY)
    sealedeval(root, "publish", *TINY)
    out = sealedeval(root, "audit", *TINY, check=False).stdout
    line = _anchor_line(out)
    assert "PASS" in line and "RFC 3161 token" in line and "before the first call" in line

    # Flip one byte of the signed token: the signature no longer verifies.
    tsr = root / "rubric.lock.tsr"
    good = tsr.read_bytes()
    bad = bytearray(good)
    bad[-20] ^= 0xFF
    tsr.write_bytes(bytes(bad))
    proc = sealedeval(root, "audit", *TINY, check=False)
    assert proc.returncode == 1 and "FAIL" in _anchor_line(proc.stdout)

    # A valid token from another TSA whose CA we do not hold also fails.
    make_tsa(tmp_path / "rogue", name="Rogue TSA")
    from sealedeval.seal import timestamp

    with serve_tsa(tmp_path / "rogue") as url:
        tsr.write_bytes(good)
        keep = (root / "rubric.lock.tsa.pem").read_bytes()
        timestamp.stamp(root, url)  # no CA: stores the rogue token, keeps our chain
        (root / "rubric.lock.tsa.pem").write_bytes(keep)
    proc = sealedeval(root, "audit", *TINY, check=False)
    assert proc.returncode == 1 and "signature does not verify" in _anchor_line(proc.stdout)


def test_without_anchor_audit_says_only_git_date(project: Callable[..., Path]) -> None:
    root = project()
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", *TINY)
    sealedeval(root, "publish", *TINY)
    line = _anchor_line(sealedeval(root, "audit", *TINY, check=False).stdout)
    assert "WARN" in line and "only git dates" in line
