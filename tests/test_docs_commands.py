"""The README and docs/ as a user reads them: the commands marked to run, run as written.

A fenced ```bash block right after ``<!-- run -->`` (or ``<!-- run expect="TEXT" -->``: its output
must contain TEXT) is run. Each page's marked blocks run in order, in one shell, in a fresh
``git clone`` of this repository (what a reader has), with this venv's ``sealedeval`` and
``snakemake`` on PATH. The two long README commands are not marked: `.ci/run` runs the test
command, and the main command calls the embedded model; they are checked to stay byte for byte.
``docs/your-own-eval.md`` has its own test (``tests/tasks/test_tasks_guide.py``, embedded
engine), so its blocks are left to it. Links between the pages must resolve.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import REPO, SHARED_FIXTURES

from sealedeval.config import load_config
from sealedeval.plugins import get_suite
from sealedeval.seal import lock

PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
OWN_TEST = {"docs/your-own-eval.md": "tests/tasks/test_tasks_guide.py"}
MARK = re.compile(r'^<!-- run(?: expect="(?P<expect>[^"]*)")? -->$')
FENCE = re.compile(r"^```bash\n(?P<code>.*?)\n```$", re.M | re.S)
SLOW = {"README.md", "docs/golden.md", "docs/grounding.md"}  # each builds part of the tiny profile


@dataclass(frozen=True)
class Block:
    line: int
    code: str
    expect: str | None


def rel(p: Path) -> str:
    return p.relative_to(REPO).as_posix()


def marked_blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line.strip())
        if not m:
            continue
        rest = "\n".join(lines[i + 1 :])
        f = FENCE.match(rest)
        assert f, f"{rel(page)}:{i + 1}: a run marker must be followed by a ```bash block"
        out.append(Block(i + 1, f["code"], m["expect"]))
    return out


def test_markers_sit_on_bash_blocks_and_the_guide_pages_have_some() -> None:
    marked = {rel(p): marked_blocks(p) for p in PAGES}  # asserts every marker is well placed
    for page in ("README.md", "docs/golden.md", "docs/bloodpanel.md", "docs/grounding.md"):
        assert marked.get(page), f"{page} has no command marked <!-- run -->"


def _bash_blocks(text: str) -> list[str]:
    return [m["code"] for m in FENCE.finditer(text)]


def test_the_two_readme_commands_stay_as_ci_runs_them() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci/run").read_text(encoding="utf-8").strip().splitlines()[-1]
    blocks = _bash_blocks(readme)
    assert ci in blocks, ".ci/run's command is no longer a README block of its own"
    main = [b for b in blocks if b.endswith("snakemake --cores 8 && sealedeval audit")]
    assert len(main) == 1 and main[0].startswith("python3 -m venv .venv && . .venv/bin/activate")
    unmarked = {b.code for b in marked_blocks(REPO / "README.md")}
    assert ci not in unmarked and main[0] not in unmarked


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return out


def test_links_between_pages_resolve_and_every_page_is_reachable() -> None:
    reached = set()
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() and dest.name in {"imports.md"}:
                continue  # written by another change (the import guide)
            assert dest.exists(), f"{rel(page)}: link to {target} does not resolve"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest), f"{rel(page)}: no heading #{anchor} in {path}"
            reached.add(dest)
    readme_links = {
        (REPO / t.partition("#")[0]).resolve()
        for t in _LINK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    }
    for page in (REPO / "docs").glob("*.md"):
        assert page.resolve() in readme_links, f"README does not link to {rel(page)}"


def _stale_seal(root: Path) -> str | None:
    """Why the clone's committed seal cannot run (tests/test_repo_seal.py fails too), or None."""
    doc = lock.read(root)
    names = sorted(load_config(root).data["suites"])
    now = lock.compute(root, {n: get_suite(n).rubric_inputs() for n in names})
    stale = [s for s in now["suites"] if now["suites"][s] != doc["suites"].get(s)]
    return f"rubric.lock is stale for {stale}: re-seal (tests/test_repo_seal.py)" if stale else None


def _pages_with_commands() -> list[object]:
    out: list[object] = []
    for p in PAGES:
        name = rel(p)
        if name in OWN_TEST or not marked_blocks(p):
            continue
        marks = [pytest.mark.slow] if name in SLOW else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("page", _pages_with_commands())
def test_marked_commands_run_as_written_in_a_fresh_clone(page: str, tmp_path: Path) -> None:
    blocks = marked_blocks(REPO / page)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    if any("../shared/" in b.code for b in blocks):  # third-party files beside the checkout
        if not SHARED_FIXTURES.is_dir():
            pytest.skip(f"{page} reads ../shared/fixtures: {SHARED_FIXTURES} is absent")
        (tmp_path / "shared").symlink_to(SHARED_FIXTURES.parent)
    needs_seal = any(w in b.code for b in blocks for w in ("snakemake ", "sealedeval run"))
    why = _stale_seal(clone) if needs_seal else None
    if why:
        pytest.skip(why)
    script = ["set -euo pipefail"]
    for i, b in enumerate(blocks):
        script += [f"echo '::block {i}::'", b.code]
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, (page, proc.stdout[-3000:], proc.stderr[-3000:])
    outputs = re.split(r"^::block \d+::$", proc.stdout, flags=re.M)[1:]
    assert len(outputs) == len(blocks)
    for b, out in zip(blocks, outputs, strict=True):
        if b.expect is not None:
            assert b.expect in out, f"{page}:{b.line}: output lacks {b.expect!r}:\n{out[-2000:]}"
