"""``sealedeval init DIR``: a new evaluation project that uses the installed package.

The project holds only what is the user's: a three-line Snakefile that includes the workflow
shipped in the package, its config, its data, ``dvc.yaml``, ``.gitignore``, ``.dvcignore`` and
a README with the next three commands. When DVC is installed the project is a DVC repository
with a default remote (``storage``: a directory beside the project, ``../<name>-dvc-storage``,
that works on one machine at once; the README says how to point it at the lab's SSH or WebDAV
server), so ``dvc push`` archives the raw runs and a clone gets them with ``dvc pull``; without
DVC this step is skipped and said so. Nothing of this repository is copied, so upgrading the
package upgrades the workflow. An existing file is never overwritten: without ``--force`` a
non-empty DIR is an error naming the first conflict; with ``--force`` the missing files are
added and every file that differs from the template is kept and listed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sealedeval.errors import UserError
from sealedeval.workflow import WORKFLOW_DIR

TEMPLATE = WORKFLOW_DIR / "template"
RENAMES = {"gitignore": ".gitignore", "dvcignore": ".dvcignore"}  # dotfiles do not survive
# every packaging tool
DVC_REMOTE = "storage"


@dataclass
class InitResult:
    root: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    git_init: bool = False
    dvc: str = ""  # what was done about DVC, one line


def template_files() -> dict[str, bytes]:
    """Project-relative path → bytes of every template file, with the project name filled in
    later (``init`` replaces the template's ``myeval``)."""
    out = {}
    for p in sorted(TEMPLATE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            rel = p.relative_to(TEMPLATE).as_posix()
            out[RENAMES.get(rel, rel)] = p.read_bytes()
    if not out:
        raise UserError(f"{TEMPLATE}: the project template is missing from this installation")
    return out


def _inside_git(path: Path) -> bool:
    proc = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def init_project(dest: Path, *, force: bool = False) -> InitResult:
    dest = dest.resolve()
    if dest.exists() and not dest.is_dir():
        raise UserError(f"{dest}: exists and is not a directory")
    name = dest.name
    files = {
        rel: data.replace(b"myeval", name.encode())
        if rel in ("README.md", "config/config.yaml")
        else data
        for rel, data in template_files().items()
    }
    existing = [rel for rel in files if (dest / rel).exists()]
    if dest.exists() and any(dest.iterdir()) and not force:
        first = existing[0] if existing else next(iter(sorted(p.name for p in dest.iterdir())))
        raise UserError(
            f"{dest}: not empty ({first}); use --force to add the missing files "
            "(existing files are never overwritten)"
        )
    res = InitResult(dest)
    for rel, data in files.items():
        target = dest / rel
        if target.exists():
            if target.read_bytes() != data:
                res.kept.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp-init")
        tmp.write_bytes(data)
        tmp.replace(target)
        res.written.append(rel)
    if not _inside_git(dest):
        subprocess.run(
            ["git", "init", "-q", "-b", "main"],
            cwd=dest,
            check=True,
            capture_output=True,
            text=True,
        )
        res.git_init = True
    res.dvc = setup_dvc(dest)
    return res


def default_remote(dest: Path) -> str:
    """The default DVC remote's URL: a directory beside the project (``dvc remote add``
    stores it relative to ``.dvc/``)."""
    return str(dest.parent / f"{dest.name}-dvc-storage")


def setup_dvc(dest: Path) -> str:
    """``dvc init`` and the default remote, unless DVC is missing or already set up."""
    if (dest / ".dvc").exists():
        return "kept your .dvc/ (DVC already set up)"
    if shutil.which("dvc") is None:
        return (
            "dvc is not installed: skipped `dvc init` (pip install 'sealedeval[workflow]', "
            f"then `dvc init && dvc remote add -d {DVC_REMOTE} URL`)"
        )
    url = default_remote(dest)
    for cmd in (
        ["dvc", "init", "-q"],
        ["dvc", "remote", "add", "-d", DVC_REMOTE, url],
    ):
        proc = subprocess.run(cmd, cwd=dest, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise UserError(f"{dest}: {' '.join(cmd[:3])}: {msg}")
    return f"dvc init; default remote {DVC_REMOTE} → {url} (change it: README.md)"
