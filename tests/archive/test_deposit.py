"""sealedeval deposit / cite against loopback fakes of Zenodo and Figshare."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from tests.archive.fake_repos import serve
from tests.conftest import sealedeval

TOKEN = "s3cr3t-token-value-123"


def _results(root: Path) -> None:
    (root / "results/raw/golden/reference").mkdir(parents=True)
    (root / "results/raw/golden/reference/part-1.parquet").write_bytes(b"PAR1 fake")
    (root / "results/raw/golden/local").mkdir(parents=True)
    (root / "results/raw/golden/local/part-1.parquet").write_bytes(b"PAR1 other")
    (root / "results/result.json").write_text('{"status": "pre-registered"}\n')
    (root / "results/report.md").write_text("# report\n")
    (root / "results/figures").mkdir()
    (root / "results/figures/golden_accuracy.png").write_bytes(b"\x89PNG fake")


def _run(root: Path, *args: str, env: dict[str, str]) -> tuple[int, str]:
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=os.environ | env,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def proj(project: Callable[..., Path]) -> Path:
    root = project()
    _results(root)
    return root


@pytest.mark.slow
def test_zenodo_draft_publish_and_new_version(proj: Path) -> None:
    with serve(TOKEN) as st:
        env = {"ZENODO_API_TOKEN": TOKEN, "SEALEDEVAL_ZENODO_URL": st.base}
        rc, out = _run(proj, "deposit", env=env)
        assert rc == 0, out
        rec = json.loads((proj / "results/deposit.json").read_text())["zenodo"]
        assert rec["published"] is False and rec["doi"].startswith("10.5072/")
        dep = st.deps[rec["id"]]
        files = st.buckets[dep["_bucket"]]
        # The bundle: flat names, raw parquet of two engines kept apart (compressed, with
        # their paths), SHA256SUMS checks out.
        assert {
            "result.json",
            "rubric.lock",
            "report.md",
            "CITATION.cff",
            "SHA256SUMS",
            "raw.tar.gz",
            "history.bundle",
            "figures__golden_accuracy.png",
        } <= set(files)
        with tarfile.open(fileobj=io.BytesIO(files["raw.tar.gz"])) as t:
            assert t.getnames() == [
                "results/raw/golden/local/part-1.parquet",
                "results/raw/golden/reference/part-1.parquet",
            ]
        for line in files["SHA256SUMS"].decode().splitlines():
            digest, name = line.split("  ")
            assert hashlib.sha256(files[name]).hexdigest() == digest
        assert dep["metadata"]["title"].startswith("sealedeval")
        assert not dep["submitted"]

        # Rerun with --publish: the draft is reused and published (no second concept).
        rc, out = _run(proj, "deposit", "--publish", env=env)
        assert rc == 0, out
        first = json.loads((proj / "results/deposit.json").read_text())["zenodo"]
        assert first["published"] and first["id"] == rec["id"] and first["conceptdoi"]

        # Again: a new version under the same concept DOI.
        (proj / "results/result.json").write_text('{"status": "changed"}\n')
        rc, out = _run(proj, "deposit", "--publish", env=env)
        assert rc == 0, out
        second = json.loads((proj / "results/deposit.json").read_text())["zenodo"]
        assert second["id"] != first["id"]
        assert second["conceptdoi"] == first["conceptdoi"]
        assert second["doi"] != first["doi"] and second["published"]
        assert st.buckets[st.deps[second["id"]]["_bucket"]]["result.json"] == (
            b'{"status": "changed"}\n'
        )

    cff = yaml.safe_load((proj / "CITATION.cff").read_text())
    assert cff["doi"] == first["conceptdoi"]
    assert cff["title"] and cff["authors"]
    # The DOI is never written into result.json; the token never into any file or output.
    assert "doi" not in (proj / "results/result.json").read_text()
    for f in proj.rglob("*"):
        if f.is_file() and ".git" not in f.parts:
            assert TOKEN.encode() not in f.read_bytes(), f
    assert TOKEN not in out


@pytest.mark.slow
def test_zenodo_errors_redact_the_token(proj: Path) -> None:
    with serve("another-token") as st:
        rc, out = _run(
            proj, "deposit", env={"ZENODO_API_TOKEN": TOKEN, "SEALEDEVAL_ZENODO_URL": st.base}
        )
    assert rc == 2 and "zenodo:" in out and "401" in out
    assert TOKEN not in out
    assert not (proj / "results/deposit.json").exists()


@pytest.mark.slow
def test_missing_token_is_one_line(proj: Path) -> None:
    rc, out = _run(proj, "deposit", "--sandbox", env={"ZENODO_SANDBOX_API_TOKEN": ""})
    assert rc == 2 and "ZENODO_SANDBOX_API_TOKEN" in out and len(out.strip().splitlines()) == 1


@pytest.mark.slow
def test_figshare_upload_parts_and_publish(proj: Path) -> None:
    with serve(TOKEN) as st:
        env = {"FIGSHARE_TOKEN": TOKEN, "SEALEDEVAL_FIGSHARE_URL": st.base + "/v2"}
        rc, out = _run(proj, "deposit", "--figshare", "--publish", env=env)
        assert rc == 0, out
        rec = json.loads((proj / "results/deposit.json").read_text())["figshare"]
        art = st.articles[rec["id"]]
        assert art["version"] == 1 and rec["doi"].startswith("10.6084/")
        names = {f["name"] for f in art["files"].values()}
        assert "result.json" in names and "SHA256SUMS" in names
        assert all(f["status"] == "available" for f in art["files"].values())
        # The token travels in a header only, never in a URL.
        assert not any(TOKEN in s for s in st.seen)
        rc, out = _run(proj, "deposit", "--figshare", "--publish", env=env)
        assert rc == 0, out
        assert st.articles[rec["id"]]["version"] == 2
        assert len(st.articles[rec["id"]]["files"]) == len(names)
    assert TOKEN not in out


@pytest.mark.slow
def test_cite_from_config(proj: Path) -> None:
    sealedeval(proj, "cite")
    cff = yaml.safe_load((proj / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"] == "sealedeval: sealed evaluation of the embedded engine"
    assert cff["authors"] == [{"name": "sealedeval contributors"}]
    assert "doi" not in cff
