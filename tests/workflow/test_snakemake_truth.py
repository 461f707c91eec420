"""What `snakemake` tells a user about a result's standing to its seal (issue #25's scenarios).

One `sealedeval init` project whose `tasks` suite is answered by two deterministic engines
(`reference`, `ref2`), sealed and committed, then played through the main command as a user
would: a clean build says `pre-registered`; an engine added after the seal is labelled and leaves
the pre-registered family at its size; a sealed engine dropped from the config makes the build
end with `NOT AS SEALED` (exit 1) and reports that say so; a target edited, re-sealed and run
again (raw runs moved aside as the error says) says `amended` and names the earlier seal. The
terminal lines and the report's words are asserted, never our logs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from tests.conftest import git
from tests.workflow.test_snakemake_terminal import cli, terminal
from tests.workflow.test_snakemake_terminal import snakemake as terminal_snakemake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing"),
]

ITEMS = "data/example/items.jsonl"


def snakemake(root: Path) -> tuple[int, str]:
    proc = terminal_snakemake(root)
    return proc.returncode, terminal(proc)


def set_engines(root: Path, engines: list[str]) -> None:
    path = root / "config/config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["engines"] = {e: {"kind": "reference", "concurrency": 4} for e in engines}
    cfg["suites"]["example"]["engines"] = engines
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def seal_and_commit(root: Path, message: str) -> None:
    assert cli(root, "seal").returncode == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def report(root: Path) -> str:
    return (root / "results/report.md").read_text()


def result(root: Path) -> dict[str, object]:
    return json.loads((root / "results/result.json").read_text())  # type: ignore[no-any-return]


def engine_family_sizes(root: Path) -> dict[str, set[int]]:
    """Comparison family -> the sizes its members record (one size per family)."""
    suites = result(root)["suites"]
    assert isinstance(suites, dict)
    out: dict[str, set[int]] = {}
    for c in suites["example"]["analysis"]["comparisons"]:
        rec = c["paired"]
        out.setdefault(str(rec["family"]), set()).add(int(rec["family_size"]))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project sealed, committed and built once (each test used to build the same one)."""
    root = tmp_path_factory.mktemp("truth") / "myeval"
    assert cli(root.parent, "init", str(root)).returncode == 0
    set_engines(root, ["reference", "ref2"])
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    seal_and_commit(root, "sealed project")
    rc, out = snakemake(root)
    assert rc == 0, out[-3000:]
    assert "example: seal pre-registered" in out
    assert "Seal: **pre-registered**" in report(root)
    return root


@pytest.fixture()
def project(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built project (``.git`` and ``.snakemake`` too, times kept, so
    Snakemake finds it up to date) for one test to change."""
    root = tmp_path / "myeval"
    shutil.copytree(built, root, symlinks=True)
    return root


def test_added_engine_is_labelled_and_the_sealed_family_keeps_its_size(project: Path) -> None:
    sealed_sizes = engine_family_sizes(project)
    set_engines(project, ["reference", "ref2", "ref3"])  # not re-sealed: added after the seal
    git(project, "commit", "-qam", "a third engine")
    rc, out = snakemake(project)
    assert rc == 0, out[-3000:]
    text = report(project)
    assert "ref3 (added after the seal)" in text
    named = [r for r in text.splitlines() if r.startswith("|") and "| ref3" in r]
    assert len(named) >= 3 and all("| ref3 (added after the seal)" in r for r in named), named
    sizes = engine_family_sizes(project)
    confirmatory = {f: s for f, s in sizes.items() if not f.startswith("exploratory")}
    assert confirmatory == sealed_sizes  # the pre-registered family: same families, same sizes
    assert any(f.startswith("exploratory") for f in sizes), sizes
    assert "Exploratory comparisons" in text


def test_sealed_engine_dropped_ends_the_build_not_as_sealed(project: Path) -> None:
    set_engines(project, ["reference"])
    git(project, "commit", "-qam", "drop ref2")
    rc, out = snakemake(project)
    assert rc == 1
    last = [line for line in out.splitlines() if line.startswith("sealedeval: error:")]
    assert last and last[-1].startswith("sealedeval: error: NOT AS SEALED: "), out[-2000:]
    assert "reference vs ref2 missing" in last[-1]
    assert "example: seal pre-registered; NOT AS SEALED:" in out  # the closing summary
    text = report(project)
    assert "Status: **NOT AS SEALED:" in text and "**NOT AS SEALED**:" in text
    assert "Seal: **pre-registered**" not in text
    assert cli(project, "audit").returncode == 1  # the audit agrees with what the report says


def test_re_seal_after_looking_is_amended_and_names_the_earlier_seal(project: Path) -> None:
    first = git(project, "rev-parse", "HEAD").strip()
    items = project / ITEMS
    items.write_text(items.read_text().replace('"target": 42', '"target": 43', 1))
    seal_and_commit(project, "re-seal after looking")
    rc, out = snakemake(project)
    assert rc != 0
    assert "holds rows under another rubric hash" in out  # the run job's one line
    shutil.move(str(project / "results/raw"), str(project.parent / "raw-first-seal"))
    rc, out = snakemake(project)
    assert rc == 0, out[-3000:]
    assert "example: seal amended" in out
    text = report(project)
    assert "Seal: **amended**" in text and "Seal: **pre-registered**" not in text
    history = next(line for line in text.splitlines() if "Seal history" in line)
    assert f"`{first[:12]}`" in history and ITEMS in history, history
    assert "rows not present" in history
