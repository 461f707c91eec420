"""The deposit bundle: everything an auditor needs to re-check the result, flat, with SHA256SUMS.

An auditor who has only the DOI must be able to rebuild the project and run the audit
(``sealedeval verify``), so the bundle carries the project's git history (``history.bundle``:
the seal commit, the ledger's committed versions and the commits of the runs are what "seal
precedes runs" is judged from), its config and sealed inputs as they stood (``inputs.tar.gz``),
the raw runs (``raw.tar.gz``), the ledger and its head token, rubric.lock and its tokens, the
environment it was built in (``environment.txt``), result.json and the reports, a short
VERIFY.md and ``DEPOSIT.json`` (the commit to check out). Repositories store files flat, so
other paths are flattened (``results/figures/x.png`` → ``figures__x.png``); SHA256SUMS uses the
flat names so ``sha256sum -c`` works in a downloaded copy.

Nothing secret goes in: files named like credentials are never collected, and before anything
is written the value of every credential-like environment variable (``*_KEY``, ``*_TOKEN``,
...) is searched for in every collected file, in the raw runs' text and in the whole git
history; a hit stops the bundle, naming the variable and the file, never the value.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from sealedeval._version import __version__
from sealedeval.canonical import dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_bytes_atomic, write_text_atomic

BUNDLE_DIR = Path("results/deposit/bundle")
FORMAT = "sealedeval.deposit/1"
MANIFEST = "DEPOSIT.json"
HISTORY = "history.bundle"
INPUTS = "inputs.tar.gz"
RAW = "raw.tar.gz"
ENVIRONMENT = "environment.txt"
VERIFY_MD = "VERIFY.md"
SUMS = "SHA256SUMS"
RAW_DIR = "results/raw"
REQUIRED = ("results/result.json", "rubric.lock")
# Restored at the project root (or under results/) by verify, byte for byte.
OPTIONAL = (
    "results/report.md",
    "rubric.lock.tsr",
    "rubric.lock.tsa.pem",
    "rubric.lock.zenodo.json",
    "ledger.jsonl",
    "ledger.head.json",
    "ledger.head.json.tsr",
    "ledger.head.json.tsa.pem",
    "CITATION.cff",
)
# For the reader only; the audit does not use them (it re-derives the graded rows from the raw
# runs). The graded files are the per-sample table a reader loads (``sealedeval.samples_df``).
READER = (
    "results/graded/*.parquet",
    "results/report.pdf",
    "results/report.html",
    "results/scorecards/*.csv",
    "results/figures/*.png",
    "results/figures/*.svg",
)
READER_PREFIXES = (
    "results/graded/",
    "results/report.pdf",
    "results/report.html",
    "results/scorecards/",
    "results/figures/",
)
# Inputs beyond the files rubric.lock lists: every config file and the sealed specs of
# config-defined suites; plus any file the config names by a relative path.
INPUT_DIRS = ("config", ".sealedeval")
# Files that hold credentials by convention are never bundled, whatever directory they are in.
SECRET_FILES = (".env", ".env.*", "*.env", ".netrc", ".pypirc", "*.key", "id_rsa*", "id_ed25519*")
SECRET_VARS = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
MIN_SECRET_LEN = 8  # shorter values ("1", "true") would match by chance, and are no credential


@dataclass(frozen=True)
class BundleInfo:
    """What ``build_bundle`` wrote: the files (SHA256SUMS last) and the sizes it prints."""

    files: list[Path]
    commit: str
    raw_parts: int
    raw_bytes: int
    raw_archive_bytes: int
    total_bytes: int

    def summary(self) -> dict[str, Any]:
        """The sizes and commit, as results/deposit.json keeps them."""
        return {
            "commit": self.commit,
            "bytes": self.total_bytes,
            "raw_parts": self.raw_parts,
            "raw_bytes": self.raw_bytes,
            "raw_archive_bytes": self.raw_archive_bytes,
        }


def flat_name(rel: str) -> str:
    if rel.startswith("results/"):
        rel = rel[len("results/") :]
    return rel.replace("/", "__")


def _is_secret_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, pat) for pat in SECRET_FILES)


def collect(root: Path) -> list[str]:
    """Relative paths of the files copied flat into the bundle (sorted, deterministic)."""
    missing = [p for p in REQUIRED if not (root / p).exists()]
    if missing:
        raise UserError(f"{missing[0]}: missing; run the workflow (and `sealedeval seal`) first")
    rels = list(REQUIRED) + [p for p in OPTIONAL if (root / p).exists()]
    for pattern in READER:
        rels += [p.relative_to(root).as_posix() for p in root.glob(pattern) if p.is_file()]
    return sorted(set(rels))


def _config_paths(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _config_paths(v)
    elif isinstance(value, list):
        for v in value:
            yield from _config_paths(v)
    elif isinstance(value, str) and "/" in value and not value.startswith(("/", "http")):
        yield value


def input_files(root: Path) -> list[str]:
    """The project's inputs as they stand: config files, the sealed specs, every project file
    rubric.lock lists and every file the merged config names by a relative path."""
    rels: set[str] = set()
    for d in INPUT_DIRS:
        if (root / d).is_dir():
            rels.update(
                p.relative_to(root).as_posix() for p in (root / d).rglob("*") if p.is_file()
            )
    doc = json.loads((root / "rubric.lock").read_text(encoding="utf-8"))
    for suite in (doc.get("suites") or {}).values():
        rels.update(f for f in suite.get("files", {}) if not f.startswith("pkg:"))
    result = json.loads((root / "results/result.json").read_text(encoding="utf-8"))
    sources = (result.get("config") or {}).get("sources") or []
    for src in sources:
        try:
            import yaml

            data = yaml.safe_load((root / src).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        rels.update(p for p in _config_paths(data) if (root / p).is_file())
    root_r = root.resolve()
    out = []
    for rel in sorted(rels):
        path = (root / rel).resolve()
        if path.is_file() and path.is_relative_to(root_r) and not _is_secret_file(rel):
            out.append(rel)
    return out


def _tar_gz(root: Path, rels: Iterable[str], dest: Path) -> None:
    """A reproducible tar.gz: sorted names, no owner, mtime 0 (same inputs, same bytes)."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for rel in sorted(rels):
            info = tarfile.TarInfo(rel)
            data = (root / rel).read_bytes()
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    write_bytes_atomic(dest, buf.getvalue())


def environment_text() -> str:
    """Every installed distribution as ``name==version`` (requirements format), sorted."""
    pins = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            pins[name.lower()] = f"{name}=={dist.version}"
    head = (
        f"# The environment the deposit was made in: python {platform.python_version()} "
        f"({platform.system()} {platform.machine()}), sealedeval {__version__}.\n"
        "# Install with: pip install -r environment.txt\n"
    )
    return head + "\n".join(pins[k] for k in sorted(pins)) + "\n"


def _secret_values() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if SECRET_VARS.search(k) and len(v.strip()) >= MIN_SECRET_LEN
    }


def _raw_text_contains(path: Path, value: str) -> bool:
    """Whether any string column of a raw part contains ``value`` (the bytes are compressed,
    so a byte search would miss it)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError):
        return value.encode() in path.read_bytes()
    for col in table.columns:
        text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        if text and pc.any(pc.match_substring(col, value)).as_py():
            return True
    return False


def check_no_secrets(root: Path, files: Iterable[Path], raw: Iterable[Path]) -> None:
    """Refuse (one line naming the variable and where, never the value) if the value of any
    credential-like environment variable is in a bundled file, a raw run or the git history."""
    secrets = _secret_values()
    if not secrets:
        return
    for f in files:
        data = f.read_bytes()
        for name, value in secrets.items():
            if value.encode() in data:
                raise UserError(f"{f}: contains the value of ${name}; not bundling a secret")
    for f in raw:
        for name, value in secrets.items():
            if _raw_text_contains(f, value):
                raise UserError(f"{f}: contains the value of ${name}; not bundling a secret")
    for name, value in secrets.items():
        # -S: a commit whose files gain or lose the value (--text: binary files too);
        # --grep: a commit message that holds it
        for query in (["--text", "-S", value], ["-F", f"--grep={value}"]):
            proc = subprocess.run(
                ["git", "log", "--all", "--format=%H", *query],
                cwd=root,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.stdout.strip():
                commit = proc.stdout.split()[-1]
                raise UserError(
                    f"git history: commit {commit[:12]} holds the value of ${name}; "
                    "not bundling a secret (rewrite that commit out of the history first)"
                )


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise UserError(f"{root}: git {' '.join(args[:2])}: {msg}")
    return proc.stdout.strip()


def verify_md(commit: str, sources: list[str]) -> str:
    cfg = " ".join(f"-c {s}" for s in sources if s != "config/config.yaml")
    return f"""# How to verify this deposit

This deposit carries everything `sealedeval audit` needs: the project's git history
(`{HISTORY}`, commit `{commit}`), its config and sealed inputs (`{INPUTS}`), the raw runs
(`{RAW}`), the run ledger, `rubric.lock` with any time-stamp token, `result.json` and the
reports. `{ENVIRONMENT}` pins the environment it was built in.

With sealedeval installed (`pip install -r {ENVIRONMENT}`, or any later sealedeval: library
version differences are reported, never hidden):

```bash
sealedeval verify DOI            # or a record URL, this folder, or a zip of it
```

It checks `{SUMS}`, rebuilds the project from the history in a temporary directory, restores
the raw runs and results, runs the full audit (seal before the first call, every number
re-derived byte for byte, the ledger complete) and reads any Zenodo pre-registration back
from the repository's API. By hand:

```bash
sha256sum -c {SUMS}
git clone {HISTORY} project && cd project && git checkout {commit}
tar -xzf ../{INPUTS} && tar -xzf ../{RAW}
cp ../result.json ../report.md results/ && cp ../rubric.lock* ../ledger* . 2>/dev/null
sealedeval audit {cfg}
```
"""


def build_bundle(root: Path) -> BundleInfo:
    """Write results/deposit/bundle/ with SHA256SUMS; nothing is written if a check fails."""
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True
    )
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
        raise UserError(f"{root}: not the top of a git repository; the deposit carries the history")
    rels = collect(root)
    inputs = input_files(root)
    raw_dir = root / RAW_DIR
    raw = sorted(p for p in raw_dir.rglob("*") if p.is_file()) if raw_dir.is_dir() else []
    check_no_secrets(
        root, [root / r for r in rels + inputs], [p for p in raw if p.suffix == ".parquet"]
    )
    commit = _git(root, "rev-parse", "HEAD")
    result = json.loads((root / "results/result.json").read_text(encoding="utf-8"))
    sources = list((result.get("config") or {}).get("sources") or ["config/config.yaml"])

    final = root / BUNDLE_DIR
    out = final.with_name(f".{final.name}.partial")  # renamed into place once complete
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = []
    for rel in rels:
        dest = out / flat_name(rel)
        shutil.copyfile(root / rel, dest)
        files.append(dest)
    # one thread: the same history packs to the same bytes
    _git(root, "-c", "pack.threads=1", "bundle", "create", "-q", str(out / HISTORY), "--all")
    _tar_gz(root, inputs, out / INPUTS)
    _tar_gz(root, [p.relative_to(root).as_posix() for p in raw], out / RAW)
    write_text_atomic(out / ENVIRONMENT, environment_text())
    write_text_atomic(out / VERIFY_MD, verify_md(commit, sources))
    parts = [p for p in raw if p.name.startswith("part-") and p.suffix == ".parquet"]
    raw_bytes = sum(p.stat().st_size for p in raw)
    manifest = {
        "format": FORMAT,
        "commit": commit,
        "config_sources": sources,
        "sealedeval": __version__,
        "python": platform.python_version(),
        "raw": {"files": len(raw), "parts": len(parts), "bytes": raw_bytes},
        "restore": {flat_name(r): r for r in rels if not r.startswith(READER_PREFIXES)},
    }
    write_text_atomic(out / MANIFEST, dumps(manifest))
    files += [out / n for n in (HISTORY, INPUTS, RAW, ENVIRONMENT, VERIFY_MD, MANIFEST)]
    files.sort(key=lambda p: p.name)
    lines = [f"{sha256_file(f)}  {f.name}" for f in files]
    write_text_atomic(out / SUMS, "\n".join(lines) + "\n")
    files.append(out / SUMS)
    for f in files:  # atomic writes make private temp files; a deposit is for everyone
        f.chmod(0o644)
    raw_archive_bytes = (out / RAW).stat().st_size
    total_bytes = sum(f.stat().st_size for f in files)
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    files = [final / f.name for f in files]
    return BundleInfo(
        files=files,
        commit=commit,
        raw_parts=len(parts),
        raw_bytes=raw_bytes,
        raw_archive_bytes=raw_archive_bytes,
        total_bytes=total_bytes,
    )


def human(n: int) -> str:
    """Bytes in a unit a reader takes in at a glance (1024-based, one decimal)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
