"""``sealedeval verify SOURCE``: an auditor checks a deposit from its DOI alone.

SOURCE is a DOI (Zenodo and Figshare, through their public APIs; any other DOI is resolved
through doi.org to a record URL), a record URL, a zip of a bundle or a bundle directory. The
deposit is fetched (a line per file), its SHA256SUMS checked, the project rebuilt in a temporary
directory from the git history it carries (the commit DEPOSIT.json names), the inputs, the raw
runs and the results restored over it, and the full audit run with the installed sealedeval.
A Zenodo pre-registration (``seal --zenodo``) is read back from the records API: its
publication time is set by the repository, not the author, so it anchors the seal when it
precedes the first call.

Bad input (not a deposit, a file missing, a checksum that differs, a record that does not
exist) is a ``UserError``: one line, exit 2. An honest-looking deposit whose contents do not
hold up is an audit failure: the table names the check, exit 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import urlsplit

from sealedeval.archive import bundle, figshare, zenodo
from sealedeval.audit import Auditor, Check, ExternalAnchor, failed, render
from sealedeval.config import load_config
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file
from sealedeval.seal.lock import LOCK_NAME, PREREG_NAME

ZENODO_DEFAULT = "https://zenodo.org"
ZENODO_SANDBOX = "https://sandbox.zenodo.org"
ENV_DOI_RESOLVER = "SEALEDEVAL_DOI_RESOLVER"
DOI_RESOLVER = "https://doi.org"
ZENODO_DOI = re.compile(r"^10\.(5281|5072)/zenodo\.(\d+)$", re.IGNORECASE)
FIGSHARE_DOI = re.compile(r"^10\.6084/m9\.figshare\.(\d+)(?:\.v(\d+))?$", re.IGNORECASE)
DOI = re.compile(r"^10\.\d{4,9}/\S+$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
DRAFT_HINT = " (a draft is not public: publish it)"
TIMEOUT = 60.0
PROGRESS_EVERY = 64 << 20  # a progress line per 64 MiB of a large file
CHUNK = 1 << 20
# What a bundle must hold for the audit to run at all.
ESSENTIAL = (bundle.MANIFEST, bundle.HISTORY, bundle.RAW, "result.json", LOCK_NAME)
RESTORABLE = frozenset(bundle.REQUIRED + bundle.OPTIONAL)


@dataclass(frozen=True)
class RemoteFile:
    name: str
    url: str
    size: int | None
    md5: str | None


@dataclass(frozen=True)
class Record:
    """A published record as its repository's public API describes it."""

    service: str
    id: str
    doi: str
    published: str  # the repository's own time of publication (ISO 8601)
    url: str
    files: list[RemoteFile] = field(default_factory=list)


@dataclass
class Outcome:
    checks: list[Check]
    commit: str
    anchor: ExternalAnchor | None

    @property
    def ok(self) -> bool:
        return not failed(self.checks)


# -- sources ------------------------------------------------------------------------------------
def _doi_of(source: str) -> str | None:
    s = source.strip()
    for prefix in ("doi:", "https://doi.org/", "http://doi.org/", "https://dx.doi.org/"):
        if s.lower().startswith(prefix):
            s = s[len(prefix) :]
            break
    return s if DOI.match(s) else None


def zenodo_base(url: str | None, *, sandbox: bool = False) -> str:
    given = url or os.environ.get(zenodo.ENV_URL, "")
    return (given or (ZENODO_SANDBOX if sandbox else ZENODO_DEFAULT)).rstrip("/")


def figshare_base(url: str | None) -> str:
    return (url or os.environ.get(figshare.ENV_URL) or figshare.DEFAULT_URL).rstrip("/")


def _http() -> Any:
    import httpx

    return httpx.Client(timeout=TIMEOUT, follow_redirects=True)


def _get_json(url: str, what: str, *, hint: str = "") -> Any:
    import httpx

    try:
        with _http() as client:
            r = client.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError as e:
        raise UserError(f"{what}: {url}: {type(e).__name__} (offline?)") from None
    if r.status_code == 404:
        raise UserError(f"{what}: not found at {url}{hint}")
    if r.status_code >= 400:
        try:
            msg = str(r.json().get("message", ""))[:200]
        except ValueError:
            msg = r.text[:200]
        raise UserError(f"{what}: {url}: HTTP {r.status_code} {msg}".rstrip())
    try:
        return r.json()
    except ValueError:
        raise UserError(f"{what}: {url}: not JSON") from None


def zenodo_record(base: str, record_id: str) -> Record:
    """``GET /api/records/{id}``: files (key, size, md5, content link), DOI, creation time."""
    doc = _get_json(
        f"{base}/api/records/{record_id}", f"zenodo record {record_id}", hint=DRAFT_HINT
    )
    files = []
    for f in doc.get("files") or []:
        checksum = str(f.get("checksum") or "")
        links = f.get("links") or {}
        files.append(
            RemoteFile(
                name=str(f.get("key") or f.get("filename") or ""),
                url=str(links.get("self") or links.get("content") or ""),
                size=f.get("size") or f.get("filesize"),
                md5=checksum.split(":", 1)[1] if checksum.startswith("md5:") else None,
            )
        )
    return Record(
        service="zenodo",
        id=str(doc.get("id", record_id)),
        doi=str(doc.get("doi") or ""),
        published=str(doc.get("created") or ""),
        url=str((doc.get("links") or {}).get("html") or ""),
        files=files,
    )


def figshare_record(base: str, article: str, version: str | None) -> Record:
    """``GET /articles/{id}[/versions/{v}]``: files (name, size, md5, download URL), DOI and
    ``published_date``."""
    path = f"/articles/{article}" + (f"/versions/{version}" if version else "")
    doc = _get_json(base + path, f"figshare article {article}", hint=DRAFT_HINT)
    files = [
        RemoteFile(
            name=str(f.get("name") or ""),
            url=str(f.get("download_url") or ""),
            size=f.get("size"),
            md5=f.get("computed_md5") or None,
        )
        for f in doc.get("files") or []
    ]
    return Record(
        service="figshare",
        id=str(doc.get("id", article)),
        doi=str(doc.get("doi") or ""),
        published=str(doc.get("published_date") or ""),
        url=str(doc.get("figshare_url") or doc.get("url_public_html") or ""),
        files=files,
    )


def resolve_record(
    source: str, *, zenodo_url: str | None = None, figshare_url: str | None = None
) -> Record | None:
    """The record SOURCE names (a DOI or a record URL), or None when it names a local path."""
    doi = _doi_of(source)
    if doi:
        m = ZENODO_DOI.match(doi)
        if m:
            return zenodo_record(zenodo_base(zenodo_url, sandbox=m.group(1) == "5072"), m.group(2))
        m = FIGSHARE_DOI.match(doi)
        if m:
            return figshare_record(figshare_base(figshare_url), m.group(1), m.group(2))
        resolver = os.environ.get(ENV_DOI_RESOLVER, DOI_RESOLVER).rstrip("/")
        doc = _get_json(f"{resolver}/api/handles/{doi}", f"DOI {doi}")
        urls = [v["data"]["value"] for v in doc.get("values", []) if v.get("type") == "URL"]
        if not urls:
            raise UserError(f"DOI {doi}: resolves to no URL")
        source = str(urls[0])
    if not source.startswith(("http://", "https://")):
        return None
    u = urlsplit(source)
    origin = f"{u.scheme}://{u.netloc}"
    m = re.search(r"/(?:api/)?(?:records?|deposit|uploads)/(\d+)", u.path)
    if m and ("zenodo" in u.netloc or "/articles/" not in u.path):
        return zenodo_record((zenodo_url or origin).rstrip("/"), m.group(1))
    m = re.search(r"/articles/(?:[^/]+/[^/]+/)?(\d+)(?:/(\d+))?/?$", u.path)
    if m:
        base = figshare_url or os.environ.get(figshare.ENV_URL)
        if not base:
            base = figshare.DEFAULT_URL if "figshare" in u.netloc else origin + "/v2"
        return figshare_record(base.rstrip("/"), m.group(1), m.group(2))
    raise UserError(f"{source}: not a Zenodo record or Figshare article URL")


# -- fetching -----------------------------------------------------------------------------------
def _safe_name(name: str, where: str) -> str:
    if not SAFE_NAME.match(name) or name in (".", ".."):
        raise UserError(f"{where}: file name {name!r} is not a plain file name")
    return name


def download(record: Record, dest: Path, log: IO[str]) -> None:
    """Every file of the record into ``dest``, a line of progress per file on ``log``; each
    file's md5 (when the API gives one) is checked as it arrives."""
    import httpx

    total = sum(f.size or 0 for f in record.files)
    log.write(
        f"verify: {record.service} record {record.id}, DOI {record.doi or '-'}: "
        f"{len(record.files)} files, {bundle.human(total)}\n"
    )
    done = 0
    with _http() as client:
        for i, f in enumerate(record.files, 1):
            name = _safe_name(f.name, f"{record.service} record {record.id}")
            md5 = hashlib.md5(usedforsecurity=False)
            try:
                with client.stream("GET", f.url) as r, open(dest / name, "wb") as out:
                    if r.status_code >= 400:
                        raise UserError(f"{name}: download failed: HTTP {r.status_code}")
                    got = 0
                    for chunk in r.iter_bytes(CHUNK):
                        out.write(chunk)
                        md5.update(chunk)
                        got += len(chunk)
                        if got // PROGRESS_EVERY != (got - len(chunk)) // PROGRESS_EVERY:
                            log.write(
                                f"fetch [{i}/{len(record.files)}] {name} ... "
                                f"{bundle.human(got)} of {bundle.human(f.size or 0)}\n"
                            )
                            log.flush()
            except httpx.HTTPError as e:
                raise UserError(f"{name}: download failed: {type(e).__name__}") from None
            size = (dest / name).stat().st_size
            if f.md5 and md5.hexdigest() != f.md5:
                raise UserError(f"{name}: md5 differs from the record's ({record.service})")
            done += size
            log.write(
                f"fetch [{i}/{len(record.files)}] {name} {bundle.human(size)} "
                f"({bundle.human(done)} of {bundle.human(total)})\n"
            )
            log.flush()


def _extract_zip(path: Path, dest: Path) -> Path:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise UserError(f"{path}: not a zip file ({e})") from None
    with zf:
        for info in zf.infolist():
            p = PurePosixPath(info.filename)
            if p.is_absolute() or ".." in p.parts:
                raise UserError(f"{path}: entry {info.filename!r} leaves the archive")
        zf.extractall(dest)
    tops = [p for p in dest.iterdir() if not p.name.startswith("__MACOSX")]
    if len(tops) == 1 and tops[0].is_dir():
        return tops[0]
    return dest


# -- the bundle ---------------------------------------------------------------------------------
def check_sums(folder: Path, label: str) -> dict[str, Any]:
    """SHA256SUMS holds for every file it lists, and lists what the audit needs; returns
    DEPOSIT.json."""
    sums = folder / bundle.SUMS
    if not sums.is_file():
        raise UserError(f"{label}: not a sealedeval deposit (no {bundle.SUMS})")
    listed: dict[str, str] = {}
    for n, line in enumerate(sums.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise UserError(f"{label}: {bundle.SUMS} line {n} is not '<sha256>  <name>'")
        listed[_safe_name(name.lstrip("*"), f"{label}: {bundle.SUMS}")] = digest
    for name in ESSENTIAL:
        if name not in listed:
            raise UserError(f"{label}: not a complete sealedeval deposit ({name} not listed)")
    for name, digest in sorted(listed.items()):
        path = folder / name
        if not path.is_file():
            raise UserError(f"{label}: {name} is listed in {bundle.SUMS} but missing")
        if sha256_file(path) != digest:
            raise UserError(f"{label}: {name}: sha256 differs from {bundle.SUMS}")
    try:
        manifest: dict[str, Any] = json.loads((folder / bundle.MANIFEST).read_text("utf-8"))
    except ValueError as e:
        raise UserError(f"{label}: {bundle.MANIFEST}: not valid JSON ({e})") from None
    if manifest.get("format") != bundle.FORMAT:
        raise UserError(f"{label}: {bundle.MANIFEST}: unknown format {manifest.get('format')!r}")
    if not re.fullmatch(r"[0-9a-f]{40}", str(manifest.get("commit", ""))):
        raise UserError(f"{label}: {bundle.MANIFEST}: no commit recorded")
    manifest["_listed"] = sorted(listed)
    return manifest


def _extract_tar(archive: Path, dest: Path, prefix: str | None) -> int:
    """Regular files and directories only, inside ``dest`` (and under ``prefix``)."""
    n = 0
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for m in tar.getmembers():
                p = PurePosixPath(m.name)
                if p.is_absolute() or ".." in p.parts or not (m.isfile() or m.isdir()):
                    raise UserError(f"{archive.name}: entry {m.name!r} is not a plain file")
                if prefix and not m.name.startswith(prefix + "/"):
                    raise UserError(f"{archive.name}: entry {m.name!r} is outside {prefix}/")
                if m.isdir():
                    continue
                src = tar.extractfile(m)
                if src is None:
                    continue
                target = dest / m.name
                target.parent.mkdir(parents=True, exist_ok=True)
                with src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                n += 1
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UserError(f"{archive.name}: not a readable tar.gz ({e})") from None
    return n


def _git(cwd: Path, *args: str, what: str) -> None:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise UserError(f"{what}: {msg}")


def rebuild(folder: Path, manifest: dict[str, Any], proj: Path) -> None:
    """The project as the author audited it: the recorded commit checked out from the history,
    then the inputs, the raw runs (results/raw replaced whole) and the results restored."""
    commit = manifest["commit"]
    _git(
        proj.parent,
        "clone",
        "-q",
        "--no-checkout",
        str(folder / bundle.HISTORY),
        proj.name,
        what=f"{bundle.HISTORY}: not a git bundle",
    )
    _git(
        proj,
        "-c",
        "advice.detachedHead=false",
        "checkout",
        "-q",
        "--detach",
        commit,
        what=f"{bundle.HISTORY}: commit {commit[:12]} cannot be checked out",
    )
    if (folder / bundle.INPUTS).exists():
        _extract_tar(folder / bundle.INPUTS, proj, None)
    shutil.rmtree(proj / bundle.RAW_DIR, ignore_errors=True)
    _extract_tar(folder / bundle.RAW, proj, bundle.RAW_DIR)
    for flat, rel in sorted((manifest.get("restore") or {}).items()):
        if rel not in RESTORABLE or flat not in manifest["_listed"]:
            raise UserError(f"{bundle.MANIFEST}: restores {rel!r}, which no deposit restores")
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / flat, proj / rel)


def environment_note(folder: Path) -> str:
    """How this environment differs from the one the deposit pins (``environment.txt``)."""
    path = folder / bundle.ENVIRONMENT
    if not path.exists():
        return f"{bundle.ENVIRONMENT}: not in the deposit"
    pinned: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pinned[name.strip().lower()] = version.strip()
    have = {(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}
    diff = [
        f"{n} {v} → {have.get(n, 'absent')}" for n, v in sorted(pinned.items()) if have.get(n) != v
    ]
    if not diff:
        return f"{bundle.ENVIRONMENT}: all {len(pinned)} pinned distributions as installed here"
    more = f", +{len(diff) - 6} more" if len(diff) > 6 else ""
    return (
        f"{bundle.ENVIRONMENT}: {len(diff)} of {len(pinned)} pinned distributions differ here "
        f"({', '.join(diff[:6])}{more}); the audit's environment row names those that build "
        "the numbers"
    )


# -- the external anchor ------------------------------------------------------------------------
def read_prereg(proj: Path, *, zenodo_url: str | None) -> ExternalAnchor | None:
    """The pre-registration rubric.lock.zenodo.json names, read back from the records API: its
    DOI, the repository's publication time and the sha256 of the rubric.lock it holds."""
    path = proj / PREREG_NAME
    if not path.exists():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    rid = str(rec.get("id", ""))
    base = zenodo_base(zenodo_url, sandbox=bool(rec.get("sandbox")))
    try:
        record = zenodo_record(base, rid)
        lock_sha = None
        for f in record.files:
            if f.name == LOCK_NAME:
                lock_sha = hashlib.sha256(_fetch_bytes(f.url)).hexdigest()
        return ExternalAnchor(
            service="zenodo",
            record_id=record.id,
            doi=record.doi,
            published=record.published or None,
            url=record.url,
            lock_sha256=lock_sha,
        )
    except UserError as e:
        return ExternalAnchor(
            service="zenodo",
            record_id=rid,
            doi=str(rec.get("doi", "")),
            published=None,
            url="",
            lock_sha256=None,
            error=str(e),
        )


def _fetch_bytes(url: str) -> bytes:
    import httpx

    try:
        with _http() as client:
            r = client.get(url)
    except httpx.HTTPError as e:
        raise UserError(f"{url}: {type(e).__name__}") from None
    if r.status_code >= 400:
        raise UserError(f"{url}: HTTP {r.status_code}")
    return bytes(r.content)


# -- the whole check ----------------------------------------------------------------------------
@contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep = keep.resolve()
        if keep.exists() and any(keep.iterdir()):
            raise UserError(f"{keep}: not empty; --keep needs a new or empty directory")
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="sealedeval-verify-") as tmp:
        yield Path(tmp)


def verify(
    source: str,
    *,
    zenodo_url: str | None = None,
    figshare_url: str | None = None,
    offline: bool = False,
    keep: Path | None = None,
    out: IO[str] | None = None,
    log: IO[str] | None = None,
) -> Outcome:
    """Fetch, check, rebuild and audit SOURCE; print the table and a verdict on ``out``."""
    out = out or sys.stdout
    log = log or sys.stderr
    with _workdir(keep) as work:
        local = Path(source)
        if local.is_dir():
            folder, label = local.resolve(), str(local)
        elif local.is_file():
            folder, label = _extract_zip(local, work / "deposit"), str(local)
        elif offline:
            raise UserError(f"{source}: no such file or directory (--offline: nothing fetched)")
        else:
            record = resolve_record(source, zenodo_url=zenodo_url, figshare_url=figshare_url)
            if record is None:
                raise UserError(f"{source}: no such file or directory, and not a DOI or URL")
            folder, label = work / "deposit", f"{record.service} record {record.id}"
            folder.mkdir()
            download(record, folder, log)
        manifest = check_sums(folder, label)
        out.write(f"{bundle.SUMS}: {len(manifest['_listed'])} files match\n")
        proj = work / "project"
        rebuild(folder, manifest, proj)
        out.write(
            f"rebuilt commit {manifest['commit'][:12]} from {bundle.HISTORY} with "
            f"{manifest.get('raw', {}).get('parts', '?')} raw parts"
            + (f" in {proj}" if keep else "")
            + "\n"
        )
        out.write(environment_note(folder) + "\n")
        anchor = None if offline else read_prereg(proj, zenodo_url=zenodo_url)
        sources = [s for s in manifest.get("config_sources") or [] if s != "config/config.yaml"]
        cfg = load_config(proj, sources)
        checks = Auditor(cfg, anchors=[anchor] if anchor else []).run()
        out.write(render(checks) + "\n")
        outcome = Outcome(checks, manifest["commit"], anchor)
        out.write(verdict(outcome) + "\n")
        out.flush()
        return outcome


def verdict(o: Outcome) -> str:
    bad = [c.name for c in o.checks if c.status == "FAIL"]
    warns = [c.name for c in o.checks if c.status == "WARN"]
    if bad:
        return f"verify: FAILED ({', '.join(bad)})"
    anchor = next((c for c in o.checks if c.name == "external anchors"), None)
    if anchor is not None and anchor.status == "PASS":
        said = f"; anchored: {anchor.detail}"
    elif anchor is not None and "not read back" in anchor.detail:
        said = "; the pre-registration could not be read back: the order in time is unconfirmed"
    else:
        said = "; no external anchor: the order in time rests on git dates"
    return (
        f"verify: passed ({len(o.checks)} checks"
        + (f", warnings: {', '.join(warns)}" if warns else "")
        + f"){said}"
    )
