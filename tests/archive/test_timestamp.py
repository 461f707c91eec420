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


@pytest.mark.slow
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


@pytest.mark.slow
def test_without_anchor_audit_says_only_git_date(project: Callable[..., Path]) -> None:
    root = project()
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", *TINY)
    sealedeval(root, "publish", *TINY)
    line = _anchor_line(sealedeval(root, "audit", *TINY, check=False).stdout)
    assert "WARN" in line and "only git dates" in line


def _ledger_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("ledger chain"))


@pytest.mark.slow
def test_the_ledger_head_time_stamped_at_publish_fixes_every_entry(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """`seal --tsa URL --ledger-head` after publish: the audit names the stamped head; a ledger
    rewritten afterwards with a consistent, recomputed chain (and no git history to compare
    with) still fails, because the stamped position no longer carries the stamped hash."""
    import json

    from sealedeval.store import ledger

    root = project()
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", *TINY)
    sealedeval(root, "publish", *TINY)
    make_tsa(tmp_path / "tsa")
    lock_before = (root / "rubric.lock").read_bytes()
    with serve_tsa(tmp_path / "tsa") as url:
        out = sealedeval(
            root, "seal", "--tsa", url, "--tsa-ca", str(tmp_path / "tsa/ca.pem"), "--ledger-head"
        ).stdout
    assert "over the ledger head (1 entries" in out
    assert (root / "rubric.lock").read_bytes() == lock_before  # the rubric is not re-sealed
    head = json.loads((root / "ledger.head.json").read_text())
    entries = ledger.read(root)
    assert head["entries"] == len(entries) and head["head"] == entries[-1]["hash"]
    proc = sealedeval(root, "audit", *TINY, check=False)
    line = _ledger_line(proc.stdout)
    assert "PASS" in line and "head of 1 entries time-stamped" in line, proc.stdout

    # A later run appends: the stamped prefix is intact, the audit still passes the chain.
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", *TINY)
    assert "PASS" in _ledger_line(sealedeval(root, "audit", *TINY, check=False).stdout)

    # Rewrite entry 1 (say, fewer errors) and recompute the whole chain consistently; the
    # ledger was never committed, so git history cannot tell. The token can.
    entries = ledger.read(root)
    entries[0]["ok"] += 1
    prev = ledger.GENESIS
    for e in entries:
        e["prev"] = prev
        e["hash"] = ledger.entry_hash(e)
        prev = e["hash"]
    assert not ledger.chain_problems(entries)
    (root / "ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    proc = sealedeval(root, "audit", *TINY, check=False)
    line = _ledger_line(proc.stdout)
    assert proc.returncode == 1 and "FAIL" in line
    assert "entries up to #1 were rewritten after their timestamp" in line


@pytest.mark.slow
def test_ledger_head_needs_a_tsa_and_a_ledger(project: Callable[..., Path]) -> None:
    root = project()
    proc = sealedeval(root, "seal", "--ledger-head", check=False)
    assert proc.returncode == 2 and "needs --tsa URL" in proc.stderr
    proc = sealedeval(root, "seal", "--ledger-head", "--tsa", "http://127.0.0.1:9", check=False)
    assert proc.returncode == 2 and "no entries to time-stamp" in proc.stderr
    assert not (root / "ledger.head.json").exists()
