"""Figures and report.pdf: from result.json's dict only, byte-identical across renders."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sealedeval.publish import figures
from sealedeval.publish.pdf import build_pdf

HERE = Path(__file__).parent
RESULT = json.loads((HERE / "result_golden.json").read_text())
REPORT = (HERE / "report_golden.md").read_text()


def test_figures_are_byte_identical_and_follow_the_data() -> None:
    a = figures.build_figures(RESULT)
    assert set(a) == {f"golden_{n}.{x}" for n in ("accuracy", "passk", "runs")
                      for x in ("png", "svg")}
    assert a == figures.build_figures(copy.deepcopy(RESULT))
    assert b"<dc:date>" not in a["golden_accuracy.svg"]
    changed = copy.deepcopy(RESULT)
    acc = changed["suites"]["golden"]["analysis"]["engines"]["reference"]["greedy"]["accuracy"]
    acc.update(rate=0.5, lo=0.2, hi=0.8)
    b = figures.build_figures(changed)
    assert b["golden_accuracy.png"] != a["golden_accuracy.png"]
    assert b["golden_passk.png"] == a["golden_passk.png"]


def test_suites_absent_or_unregistered_are_skipped(tmp_path: Path) -> None:
    r = copy.deepcopy(RESULT)
    r["suites"]["unregistered"] = {"analysis": {}}
    out = figures.write_figures(tmp_path, r)
    assert all(p.name.startswith("golden_") for p in out)
    (tmp_path / "results/figures/stale_old.png").write_bytes(b"x")
    del r["suites"]["golden"]
    assert figures.write_figures(tmp_path, r) == []
    assert not list((tmp_path / "results/figures").iterdir())


def test_pdf_deterministic_text_and_pages(tmp_path: Path) -> None:
    pngs = []
    for name, data in figures.build_figures(RESULT).items():
        if name.endswith(".png"):
            (tmp_path / name).write_bytes(data)
            pngs.append(tmp_path / name)
    pdf = build_pdf(RESULT, REPORT, sorted(pngs), ["RFC 3161 token from Test TSA"])
    assert pdf == build_pdf(RESULT, REPORT, sorted(pngs), ["RFC 3161 token from Test TSA"])
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)

    from pypdf import PdfReader

    reader = PdfReader(path)
    text = "\n".join(p.extract_text() for p in reader.pages)
    flat = "".join(text.split())
    assert RESULT["rubric_lock_sha256"] in flat
    commit = RESULT["suites"]["golden"]["seal"]["seal_commits"][0]
    assert commit in flat
    assert "RFC 3161 token from Test TSA" in text
    assert "Limitations and threats to validity" in text
    assert "Accuracy (greedy)" in text and "pass^k" in text
    for m in RESULT["manifest"]:
        assert m["sha256"] in flat
    assert sum(len(p.images) for p in reader.pages) == 3

    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm missing: apt-get install -y poppler-utils")
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(path), str(tmp_path / "pg")], check=True)
    pages = sorted(tmp_path.glob("pg-*.png"))
    assert len(pages) == len(reader.pages) >= 3
    assert all(p.stat().st_size > 1000 for p in pages)
