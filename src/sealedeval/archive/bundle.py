"""The deposit bundle: what a reader needs to re-check the result, flat, with SHA256SUMS.

Repositories store files flat, so paths are flattened (``results/raw/golden/local/part-1.parquet``
→ ``raw__golden__local__part-1.parquet``); SHA256SUMS uses the flat names so ``sha256sum -c``
works in a downloaded copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, write_text_atomic

BUNDLE_DIR = Path("results/deposit/bundle")
REQUIRED = ("results/result.json", "rubric.lock")
OPTIONAL = (
    "results/report.pdf",
    "results/report.md",
    "rubric.lock.tsr",
    "rubric.lock.tsa.pem",
    "CITATION.cff",
    "ledger.jsonl",
)


def flat_name(rel: str) -> str:
    if rel.startswith("results/"):
        rel = rel[len("results/") :]
    return rel.replace("/", "__")


def collect(root: Path) -> list[str]:
    """Relative paths of everything that goes into the bundle (sorted, deterministic)."""
    missing = [p for p in REQUIRED if not (root / p).exists()]
    if missing:
        raise UserError(f"{missing[0]}: missing; run the workflow (and `sealedeval seal`) first")
    rels = list(REQUIRED) + [p for p in OPTIONAL if (root / p).exists()]
    for pattern in (
        "results/scorecards/*.csv",
        "results/figures/*.png",
        "results/figures/*.svg",
        "results/raw/**/*.parquet",
    ):
        rels += [p.relative_to(root).as_posix() for p in root.glob(pattern) if p.is_file()]
    return sorted(set(rels))


def build_bundle(root: Path) -> list[Path]:
    """Copy the files into results/deposit/bundle/ with SHA256SUMS; return the bundle files."""
    out = root / BUNDLE_DIR
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lines = []
    files = []
    for rel in collect(root):
        dest = out / flat_name(rel)
        shutil.copyfile(root / rel, dest)
        lines.append(f"{sha256_file(dest)}  {dest.name}")
        files.append(dest)
    write_text_atomic(out / "SHA256SUMS", "\n".join(lines) + "\n")
    return [*files, out / "SHA256SUMS"]
