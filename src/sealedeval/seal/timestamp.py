"""RFC 3161 time anchors for rubric.lock.

A git date is set by the client and proves nothing; a token signed by a time-stamping authority
(TSA) over the sha256 of rubric.lock proves the lock existed at the TSA's time. ``stamp`` asks a
TSA (``openssl ts -query`` builds the request, so no ASN.1 code lives here) and stores the reply
beside the lock; ``verify`` checks it with ``openssl ts -verify`` against the CA chain stored with
it, and that its imprint is the lock's current sha256.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.canonical import dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_bytes_atomic
from sealedeval.seal.lock import LOCK_NAME
from sealedeval.store import ledger

TSR_NAME = LOCK_NAME + ".tsr"
CHAIN_NAME = LOCK_NAME + ".tsa.pem"


@dataclass(frozen=True)
class TokenInfo:
    time: dt.datetime
    imprint_sha256: str
    tsa: str


def _openssl(*args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("openssl")
    if exe is None:
        raise UserError("openssl is not installed; RFC 3161 tokens need it (apt: openssl)")
    return subprocess.run([exe, *args], input=data, capture_output=True, timeout=60, check=False)


def build_query(digest_hex: str) -> bytes:
    """A DER TimeStampReq for a sha256 digest, asking the TSA to include its certificate."""
    proc = _openssl("ts", "-query", "-digest", digest_hex, "-sha256", "-cert")
    if proc.returncode != 0:
        raise UserError(f"openssl ts -query failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def token_info(tsr: Path) -> TokenInfo:
    """Time, message imprint and TSA name of a stored reply (raises UserError if unreadable)."""
    proc = _openssl("ts", "-reply", "-in", str(tsr), "-text")
    text = proc.stdout.decode(errors="replace")
    if proc.returncode != 0 or "Status: Granted" not in text:
        raise UserError(f"{tsr.name}: not a granted RFC 3161 time-stamp reply")
    m = re.search(r"Time stamp: (\w+ +\d+ [\d:]+)(?:\.\d+)? (\d{4}) GMT", text)
    if m is None:
        raise UserError(f"{tsr.name}: no time in the token")
    when = dt.datetime.strptime(f"{m.group(1)} {m.group(2)}", "%b %d %H:%M:%S %Y").replace(
        tzinfo=dt.UTC
    )
    block = re.search(r"Message data:\n((?:\s+[0-9a-f]{4} - .*\n)+)", text)
    if block is None:
        raise UserError(f"{tsr.name}: no message imprint in the token")
    hexes: list[str] = []
    for line in block.group(1).splitlines():
        # "    0000 - 2c 26 b4 6b 68 ff c6 8f-f9 9b 45 3c 1d 30 41 34   ,&.kh..." : 47 hex chars
        hexes += line.split(" - ", 1)[1][:47].replace("-", " ").split()
    tsa = re.search(r"TSA: (.*)", text)
    return TokenInfo(when, "".join(hexes), tsa.group(1).strip() if tsa else "unspecified")


def stamp(root: Path, url: str, ca_file: Path | None = None, *, timeout: float = 30) -> TokenInfo:
    """Ask the TSA at ``url`` for a token over rubric.lock's sha256; store it (and the CA)."""
    if not (root / LOCK_NAME).exists():
        raise UserError(f"{LOCK_NAME}: missing; run `sealedeval seal` first")
    return stamp_file(root, LOCK_NAME, TSR_NAME, CHAIN_NAME, url, ca_file, timeout=timeout)


def stamp_file(
    root: Path,
    target: str,
    tsr_name: str,
    chain_name: str,
    url: str,
    ca_file: Path | None = None,
    *,
    timeout: float = 30,
) -> TokenInfo:
    """A token over the sha256 of ``root/target``, stored as ``tsr_name`` (CA as ``chain_name``).
    Nothing is written unless the TSA answered with a token over exactly that digest (and, with a
    CA, one that verifies)."""
    import httpx

    digest = sha256_file(root / target)
    try:
        resp = httpx.post(
            url,
            content=build_query(digest),
            headers={"Content-Type": "application/timestamp-query"},
            timeout=timeout,
        )
    except httpx.HTTPError as e:
        raise UserError(f"{url}: time-stamp request failed ({type(e).__name__})") from None
    if resp.status_code != 200:
        raise UserError(f"{url}: time-stamp authority answered HTTP {resp.status_code}")
    with tempfile.TemporaryDirectory() as tmp:
        tsr = Path(tmp) / tsr_name
        tsr.write_bytes(resp.content)
        info = token_info(tsr)
        if info.imprint_sha256 != digest:
            raise UserError(f"{url}: token imprint is not the sha256 of {target}")
        if ca_file is not None:
            ok, why = _verify_with(tsr, digest, ca_file)
            if not ok:
                raise UserError(f"{url}: token does not verify against {ca_file}: {why}")
    write_bytes_atomic(root / tsr_name, resp.content)
    if ca_file is not None:
        write_bytes_atomic(root / chain_name, Path(ca_file).read_bytes())
    return info


def _verify_with(tsr: Path, digest: str, chain: Path) -> tuple[bool, str]:
    proc = _openssl(
        "ts",
        "-verify",
        "-in",
        str(tsr),
        "-digest",
        digest,
        "-CAfile",
        str(chain),
        "-untrusted",
        str(chain),
    )
    out = (proc.stdout + proc.stderr).decode(errors="replace").strip()
    if proc.returncode == 0 and "Verification: OK" in out:
        return True, "OK"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return False, (lines[-1] if lines else f"openssl exited {proc.returncode}")[:200]


def verify(root: Path) -> tuple[bool, str, TokenInfo | None]:
    """(ok, one-line detail, token info) for the stored token against the current lock."""
    return verify_file(root, LOCK_NAME, TSR_NAME, CHAIN_NAME)


def verify_file(
    root: Path, target: str, tsr_name: str, chain_name: str
) -> tuple[bool, str, TokenInfo | None]:
    """(ok, one-line detail, token info) for ``tsr_name`` against the current ``target``."""
    tsr, chain = root / tsr_name, root / chain_name
    digest = sha256_file(root / target)
    try:
        info = token_info(tsr)
    except UserError as e:
        return False, str(e), None
    if info.imprint_sha256 != digest:
        return False, f"{tsr_name} stamps another file, not the current {target}", info
    if not chain.exists():
        return False, f"{chain_name}: missing; the token's signature cannot be checked", info
    ok, why = _verify_with(tsr, digest, chain)
    if not ok:
        return False, f"{tsr_name}: signature does not verify ({why})", info
    return True, f"RFC 3161 token from {info.tsa} at {info.time:%Y-%m-%dT%H:%M:%SZ}", info


# -- the ledger head ---------------------------------------------------------------------------
HEAD_NAME = "ledger.head.json"
HEAD_TSR = HEAD_NAME + ".tsr"
HEAD_CHAIN = HEAD_NAME + ".tsa.pem"


def stamp_ledger_head(
    root: Path, url: str, ca_file: Path | None = None, *, timeout: float = 30
) -> tuple[TokenInfo, dict[str, Any]]:
    """Time-stamp the run ledger as it stands at publish: ``ledger.head.json`` names the number
    of entries and the last entry's chained hash, and an RFC 3161 token covers that file. Every
    entry up to the head is then fixed at the TSA's time: a ledger rewritten later — even with a
    recomputed chain and a rewritten git history — no longer has that hash at that position."""

    entries = ledger.read(root)
    if not entries:
        raise UserError(f"{ledger.LEDGER_NAME}: no entries to time-stamp; run the engines first")
    bad = ledger.chain_problems(entries)
    if bad:
        raise UserError(f"{ledger.LEDGER_NAME}: {bad[0]}; not time-stamping a broken chain")
    head = {
        "format": "sealedeval.ledger-head/1",
        "entries": len(entries),
        "head": entries[-1]["hash"],
        "last_finished_at": entries[-1].get("finished_at", ""),
    }
    path = root / HEAD_NAME
    previous = path.read_bytes() if path.exists() else None
    write_bytes_atomic(path, dumps(head).encode())
    try:
        info = stamp_file(root, HEAD_NAME, HEAD_TSR, HEAD_CHAIN, url, ca_file, timeout=timeout)
    except BaseException:  # no head without its token: put the old one back
        if previous is None:
            path.unlink()
        else:
            write_bytes_atomic(path, previous)
        raise
    return info, head


def ledger_head_problems(root: Path, entries: list[dict[str, Any]]) -> tuple[list[str], str]:
    """(problems, detail) of a stored ledger-head token against the ledger now: the token must
    verify over ``ledger.head.json``, and the ledger's entry at that position must still carry
    that hash (entries appended since are fine: the ledger grows)."""

    if not (root / HEAD_NAME).exists() or not (root / HEAD_TSR).exists():
        return [], ""
    ok, detail, _ = verify_file(root, HEAD_NAME, HEAD_TSR, HEAD_CHAIN)
    if not ok:
        return [detail], ""
    head = json.loads((root / HEAD_NAME).read_text(encoding="utf-8"))
    n = int(head.get("entries", 0))
    if n < 1 or n > len(entries):
        return [f"{HEAD_NAME}: names {n} entries, the ledger has {len(entries)}"], ""
    if entries[n - 1].get("hash") != head.get("head"):
        return [f"ledger entries up to #{n} were rewritten after their timestamp ({detail})"], ""
    return [], f"head of {n} entries time-stamped: {detail}"
