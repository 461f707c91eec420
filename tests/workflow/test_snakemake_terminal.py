"""What a user of `snakemake` sees in the terminal: every sealedeval error as its one line.

One project made by `sealedeval init` (its `tasks` suite, answered by the reference engine), built
once for the module; each test then plays one way a build goes wrong and asserts what reaches
Snakemake's stdout/stderr (and the exit status), not what lands in `logs/`.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.conftest import git
from tests.projects import sealedeval, snakemake

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="snakemake missing"),
]

ITEMS = "data/example/items.jsonl"
OURS = "sealedeval: error:"


def terminal(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return sealedeval(root, *args, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """An init project, sealed and committed, with one successful build (and its terminal)."""
    root = tmp_path_factory.mktemp("smk") / "myeval"
    assert cli(root.parent, "init", str(root)).returncode == 0
    cfg_path = root / "config/config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["engines"] = {"reference": {"kind": "reference", "concurrency": 4}}
    cfg["suites"]["example"]["engines"] = ["reference"]
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    assert cli(root, "seal").returncode == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "sealed project")
    proc = snakemake(root)
    assert proc.returncode == 0, terminal(proc)[-3000:]
    yield root, terminal(proc)


def test_successful_build_ends_with_seal_status_headline_and_report(
    built: tuple[Path, str],
) -> None:
    root, out = built
    tail = out[out.index("engine runs since") :]
    assert "example: seal pre-registered" in tail
    # the headline per engine with its interval, as result.json states it
    headline = [line.strip() for line in tail.splitlines() if ": reference " in line]
    assert headline and "[" in headline[0] and "ok /" in headline[0], tail
    assert f"report: {(root / 'results/report.html').resolve()}" in tail


def test_sealed_data_edited_after_the_seal_stops_the_next_build(
    built: tuple[Path, str],
) -> None:
    root, _ = built
    items = root / ITEMS
    before = items.read_bytes()
    try:
        items.write_bytes(before.replace(b'"target": 42', b'"target": 43', 1))
        proc = snakemake(root)
    finally:
        items.write_bytes(before)
    out = terminal(proc)
    assert proc.returncode != 0
    assert "Nothing to be done" not in out
    ours = [line for line in out.splitlines() if line.startswith(OURS)]
    assert len(ours) == 1 and f"{ITEMS} changed after the seal (suite example)" in ours[0], out


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("suites:\n  example:\n    temperture: 0.5\n", "did you mean 'temperature'"),
        ("engines:\n  reference:\n    concurency: 2\n", "did you mean 'concurrency'"),
        ("suites:\n  exmaple:\n    engines: [reference]\n", "did you mean 'example'"),
    ],
)
def test_config_typo_is_the_cli_line_with_did_you_mean(
    built: tuple[Path, str], typo: str, hint: str
) -> None:
    root, _ = built
    (root / "config/typo.yaml").write_text(typo)
    proc = snakemake(root, "--configfile", "config/typo.yaml", "-n")
    out = terminal(proc)
    assert proc.returncode != 0
    ours = [line for line in out.splitlines() if line.startswith(OURS)]
    assert len(ours) == 1 and hint in ours[0], out
    assert "config/config.yaml + config/typo.yaml" in ours[0]
    assert len(out.strip().splitlines()) < 5, out
    assert "jsonschema" not in out.lower() and "Traceback" not in out
    # the very line the CLI gives for the same files
    same = cli(root, "generate", "example", "-c", "config/typo.yaml")
    assert same.returncode == 2 and same.stderr.strip() == ours[0]


def test_no_rubric_lock_says_run_seal(built: tuple[Path, str]) -> None:
    root, _ = built
    lock = root / "rubric.lock"
    aside = root / "rubric.lock.aside"
    lock.rename(aside)
    try:
        runs = [snakemake(root), snakemake(root, "-n")]
    finally:
        aside.rename(lock)
    for proc in runs:
        out = terminal(proc)
        assert proc.returncode != 0
        assert "sealedeval: error: rubric.lock: not found; run `sealedeval seal`" in out, out
        assert "MissingInputException" not in out and "Traceback" not in out


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_failed_run_speaks_in_the_terminal_and_the_closing_table(
    built: tuple[Path, str],
) -> None:
    root, _ = built
    (root / "config/closed.yaml").write_text(
        yaml.safe_dump(
            {
                "engines": {
                    "remote": {
                        "kind": "openai_chat",
                        "base_url": f"http://127.0.0.1:{_closed_port()}/v1",
                        "model": "m",
                        "max_retries": 0,
                        "timeout_s": 5,
                    }
                },
                "suites": {"example": {"engines": ["reference", "remote"]}},
            }
        )
    )
    proc = snakemake(root, "--configfile", "config/closed.yaml")
    out = terminal(proc)
    assert proc.returncode != 0
    log = "(logs/run/example.remote.log)"
    said = [
        line
        for line in out.splitlines()
        if line.startswith(f"run example/remote: {OURS} example/remote: ") and line.endswith(log)
    ]
    # said once as the job failed; the closing list repeats it, indented
    assert len(said) == 1 and "engine unreachable: connection refused" in said[0], out
    closing = out[out.index("failed jobs (1):") :]
    assert f"  {said[0]}" in closing.splitlines()
    table = out[out.index("engine runs since") : out.index("failed jobs (1):")]
    remote = [line for line in table.splitlines() if line.startswith("example  remote")]
    assert remote and remote[0].endswith("failed: unreachable: connection refused"), table
    assert " done" not in remote[0], table
    # the full log stays in the log file
    assert OURS in (root / "logs/run/example.remote.log").read_text()
