"""Figures and report.pdf: from result.json's dict only, byte-identical across renders.

The fixture is a real result.json of a small run of every suite on the reference engines
(tiny profile + golden branches and judge, bloodpanel with 2 repeats, grounding with the naive
baseline); see ``make_fixture.py`` beside this file for how it is regenerated.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sealedeval.errors import UserError
from sealedeval.publish import figures
from sealedeval.publish.pdf import build_pdf, parse_markdown
from sealedeval.publish.report_md import render_report

HERE = Path(__file__).parent
RESULT: dict[str, Any] = json.loads((HERE / "result_all.json").read_text())

EXPECTED = {
    "golden": {"accuracy", "branches", "passk", "runs", "judge", "comparisons"},
    "bloodpanel": {"composite", "specialty", "labels", "repeats"},
    "grounding": {"track_a", "track_b", "comparisons"},
}
FORESTS = {"golden", "grounding"}
"""Suites whose pre-registered comparisons get a forest figure on the first page
(``publish.first_page``; bloodpanel's fixture has one engine, nothing to compare)."""


@pytest.fixture(scope="module")
def built() -> dict[str, bytes]:
    return figures.build_figures(RESULT)


def _suite(result: dict[str, Any], suite: str) -> dict[str, Any]:
    """``result`` cut to one suite: rendering is the slow part, so render only what changed."""
    return {**result, "suites": {suite: result["suites"][suite]}}


def _changed(built: dict[str, bytes], result: dict[str, Any], suite: str) -> set[str]:
    """Figures of ``suite`` whose SVG differs from the fixture's."""
    again = figures.build_figures(_suite(result, suite), formats=("svg",))
    assert set(again) == {k for k in built if k.startswith(f"{suite}_") and k.endswith(".svg")}
    return {k.rsplit(".", 1)[0] for k, v in again.items() if v != built[k]}


@pytest.mark.slow
def test_every_suite_has_its_figures_in_both_formats(built: dict[str, bytes]) -> None:
    want = {f"{s}_{n}.{x}" for s, names in EXPECTED.items() for n in names for x in ("png", "svg")}
    want |= {f"{s}_summary-comparisons.{x}" for s in FORESTS for x in ("png", "svg")}
    assert set(built) == want
    for name, data in built.items():
        assert data.startswith(b"\x89PNG" if name.endswith(".png") else b"<?xml"), name
    svg = built["grounding_track_a.svg"]
    assert b"<dc:date>" not in svg and b"Matplotlib v" not in svg


@pytest.mark.slow
def test_rebuild_in_a_fresh_process_with_two_workers_is_byte_identical(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    """``built`` is drawn in this process (1 job); the rebuild by 2 forked workers (what the
    publish rule runs) in another process: the bytes cannot depend on who drew what, or when."""
    code = (
        "import json, sys; from pathlib import Path; "
        "from sealedeval.publish.figures import write_figures; "
        "write_figures(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()), jobs=2)"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(HERE / "result_all.json")],
        check=True,
        timeout=600,
    )
    files = {p.name: p.read_bytes() for p in (tmp_path / "results/figures").iterdir()}
    assert files == built


def _savefig_laid_out(spec: Any) -> dict[str, bytes]:
    """What render_formats gave before it froze the layout itself: savefig lays the figure
    out for the SVG (and draws it once with drawing disabled), then "none" keeps the layout
    and the PNG's savefig draws the figure once more, disabled, before its render."""
    from sealedeval.render.figures import render_bytes

    fig = spec.draw()
    svg = render_bytes(fig, "svg")
    fig.set_layout_engine("none")
    return {"svg": svg, "png": render_bytes(fig, "png", dpi=figures.PNG_DPI)}


@pytest.mark.slow
def test_one_frozen_layout_gives_what_savefig_laid_out(built: dict[str, bytes]) -> None:
    """render_formats lays each figure out once and skips savefig's disabled draws: the bytes
    of every figure of every suite, in both formats, are what savefig's own layout gave."""
    plan = figures.specs(RESULT)
    assert len(plan) == len(built) // 2 > 10
    for suite, spec in plan:
        want = _savefig_laid_out(spec)
        name = figures.stem(suite, spec)
        assert built[f"{name}.svg"] == want["svg"], name
        assert built[f"{name}.png"] == want["png"], name


@pytest.mark.slow
def test_figures_follow_their_own_data_only(built: dict[str, bytes]) -> None:
    r = copy.deepcopy(RESULT)
    bp = r["suites"]["bloodpanel"]["analysis"]
    prof = bp["profile"]
    spec = bp["engines"]["reference"]["profiles"][prof]["by_specialty"]
    first = sorted(spec)[0]
    spec[first]["composite"].update(mean=0.2, lo=0.1, hi=0.3)
    assert _changed(built, r, "bloodpanel") == {"bloodpanel_specialty"}

    r = copy.deepcopy(RESULT)
    ga = r["suites"]["grounding"]["analysis"]["engines"]["reference"]["roles"]["primary"]
    ga["track_a"]["C"]["m1"].update(item_mean=0.1, clustered_lo=0.0, clustered_hi=0.3)
    assert _changed(built, r, "grounding") == {"grounding_track_a"}

    r = copy.deepcopy(RESULT)
    judge = r["suites"]["golden"]["analysis"]["engines"]["reference"]["judge"]
    judge["position"]["order_consistent"].update(k=1, rate=0.1, lo=0.0, hi=0.4)
    assert _changed(built, r, "golden") == {"golden_judge"}

    r = copy.deepcopy(RESULT)
    reps = r["suites"]["bloodpanel"]["analysis"]["engines"]["reference"]["repeats"]
    reps["per_run_composite"][0] = 0.5
    assert _changed(built, r, "bloodpanel") == {"bloodpanel_repeats"}


def test_optional_figures_appear_only_with_their_data() -> None:
    r = copy.deepcopy(RESULT)
    g = r["suites"]["golden"]["analysis"]["engines"]["reference"]
    del g["judge"]
    bp = r["suites"]["bloodpanel"]["analysis"]
    bp["engines"]["reference"]["repeats"]["n_runs"] = 1
    bp["comparisons"] = [
        {
            "a": "reference",
            "b": "other",
            "n_cases": 16,
            "mean_a": 0.9,
            "mean_b": 0.7,
            "mean_diff": 0.2,
            "paired_se": 0.05,
            "ci": {"lo": 0.1, "hi": 0.3},
            "a_better": 10,
            "b_better": 2,
            "ties": 4,
            "p": 0.039,
        },
    ]
    for role in r["suites"]["grounding"]["analysis"]["engines"]["reference"]["roles"].values():
        for t in ("b1", "b2", "b3", "b4"):
            role.pop(t, None)
    names = {(s, f.name) for s, f in figures.specs(r)}
    assert ("golden", "judge") not in names and ("bloodpanel", "repeats") not in names
    assert ("bloodpanel", "comparisons") in names
    # naive still has B tracks: the B figure stays, and draws
    assert ("grounding", "track_b") in names
    for role in r["suites"]["grounding"]["analysis"]["engines"]["naive"]["roles"].values():
        for t in ("b1", "b2", "b3", "b4"):
            role.pop(t, None)
    names = {(s, f.name) for s, f in figures.specs(r)}
    assert ("grounding", "track_b") not in names and ("grounding", "track_a") in names
    out = figures.build_figures(_suite(r, "bloodpanel"), formats=("svg",))
    assert set(out) == {  # with a comparison, the first page's forest of it too
        f"bloodpanel_{n}.svg"
        for n in ("summary-comparisons", "composite", "specialty", "labels", "comparisons")
    }


@pytest.mark.slow
def test_missing_estimates_draw_as_na_not_dropped(built: dict[str, bytes]) -> None:
    r = copy.deepcopy(RESULT)
    bp = r["suites"]["bloodpanel"]["analysis"]
    head = bp["engines"]["reference"]["profiles"][bp["profile"]]["headline"]
    head["composite"] = {"mean": None, "lo": None, "hi": None}
    assert _changed(built, r, "bloodpanel") == {"bloodpanel_composite"}


def test_write_figures_removes_stale_and_skips_unregistered(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    r = _suite(copy.deepcopy(RESULT), "grounding")
    r["suites"]["unregistered"] = {"analysis": {}}
    (tmp_path / "results/figures").mkdir(parents=True)
    (tmp_path / "results/figures/stale_old.png").write_bytes(b"x")
    out = figures.write_figures(tmp_path, r)
    assert [p.name for p in out] == [
        f"grounding_{n}.{x}"
        for n in ("comparisons", "summary-comparisons", "track_a", "track_b")
        for x in ("png", "svg")
    ]
    assert all(p.read_bytes() == built[p.name] for p in out)
    assert not (tmp_path / "results/figures/stale_old.png").exists()
    r["suites"] = {}
    assert figures.write_figures(tmp_path, r) == []
    assert not list((tmp_path / "results/figures").iterdir())


@pytest.mark.slow
def test_report_md_references_every_figure_once_with_its_caption(built: dict[str, bytes]) -> None:
    md = render_report(RESULT)
    refs = re.findall(r"^!\[Figure (\d+)\]\(figures/([\w-]+)\.svg\)$", md, re.M)
    assert sorted(f"{n}.svg" for _, n in refs) == sorted(k for k in built if k.endswith(".svg"))
    assert [int(i) for i, _ in refs] == list(range(1, len(refs) + 1))
    for i, _ in refs:
        assert re.search(rf"^\*Figure {i}\. \S.*\*$", md, re.M)
    # each suite's figures follow its own section
    marks = [
        "\n## bloodpanel",
        "figures/bloodpanel_composite.svg",
        "\n## golden",
        "figures/golden_accuracy.svg",
        "\n## grounding",
        "figures/grounding_track_a.svg",
        "\n## Engines",
    ]
    at = [md.index(m) for m in marks]
    assert at == sorted(at)
    images = [c for k, c in parse_markdown(md) if k == "image"]
    assert [n for n, _ in images] == [n for _, n in refs]
    assert all(cap.startswith("Figure ") for _, cap in images)


def _pngs(tmp_path: Path, built: dict[str, bytes]) -> list[Path]:
    out = []
    for name, data in sorted(built.items()):
        if name.endswith(".png"):
            (tmp_path / name).write_bytes(data)
            out.append(tmp_path / name)
    return out


@pytest.mark.slow
def test_pdf_places_every_figure_deterministically(tmp_path: Path, built: dict[str, bytes]) -> None:
    md = render_report(RESULT)
    pngs = _pngs(tmp_path, built)
    anchors = ["RFC 3161 token from Test TSA"]
    pdf = build_pdf(RESULT, md, pngs, anchors)
    assert pdf == build_pdf(RESULT, md, pngs, anchors)
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
    assert "Other figures" not in text  # every figure sits where report.md references it
    for m in RESULT["manifest"]:
        assert m["sha256"] in flat
    assert sum(len(p.images) for p in reader.pages) == len(pngs)
    for p in pngs:
        assert f"({p.stem})" in flat
    # figures sit inside their suite's part of the report
    page_of = {
        p.stem: i
        for i, page in enumerate(reader.pages)
        for p in pngs
        if f"({p.stem})" in "".join(page.extract_text().split())
    }
    grounding_start = min(
        i
        for i, page in enumerate(reader.pages)
        if "grounding—SemanticGrounding" in "".join(page.extract_text().split())
    )
    assert page_of["bloodpanel_labels"] <= grounding_start <= page_of["grounding_track_a"]

    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm missing: apt-get install -y poppler-utils")
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(path), str(tmp_path / "pg")], check=True)
    pages = sorted(tmp_path.glob("pg-*.png"))
    assert len(pages) == len(reader.pages) >= 3
    assert all(p.stat().st_size > 1000 for p in pages)


def test_pdf_unreferenced_figures_go_last_and_missing_ones_fail(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    pngs = _pngs(tmp_path, built)
    md = render_report(RESULT)
    lone = tmp_path / "extra_plot.png"
    shutil.copy(pngs[0], lone)
    from pypdf import PdfReader

    path = tmp_path / "r.pdf"
    path.write_bytes(build_pdf(RESULT, md, [*pngs, lone]))
    text = "".join("".join(p.extract_text().split()) for p in PdfReader(path).pages)
    assert "Otherfigures" in text and "extra_plot.png" in text
    with pytest.raises(UserError, match="grounding_track_b"):
        build_pdf(RESULT, md, [p for p in pngs if p.stem != "grounding_track_b"])


def test_pdf_opens_with_the_summary_page_then_the_appendix(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    """The first pages are report.md's summary (every suite, its headline table, the forest of
    its pre-registered comparisons), nothing of the appendix; the appendix starts on a page
    of its own with the seal. Page 1 opens with the first suite's table."""
    from pypdf import PdfReader

    from sealedeval.publish.summary import suite_summaries

    md = render_report(RESULT)
    path = tmp_path / "report.pdf"
    path.write_bytes(build_pdf(RESULT, md, _pngs(tmp_path, built)))
    pages = ["".join(p.extract_text().split()) for p in PdfReader(path).pages]
    at = next(i for i, p in enumerate(pages) if p.startswith("Appendix"))
    summary_pages = "".join(pages[:at])
    assert "Summary" in pages[0] and "ok/planned" in pages[0]
    assert "Appendix" not in summary_pages and "Sealandcompleteness" not in summary_pages
    for s in suite_summaries(RESULT):
        assert "".join(s.label.split()) in summary_pages, s.suite
        assert all(f"{h.estimate:.3f}" in summary_pages for h in s.headline if h.estimate)
    assert "Rubriclocksha256" in pages[at]
    on_summary = {p.stem for p in tmp_path.glob("*.png") if f"({p.stem})" in summary_pages}
    assert on_summary == {f"{s}_summary-comparisons" for s in FORESTS}


@pytest.mark.slow
def test_pdf_from_the_figure_workers_equals_pdf_from_the_png_files(
    tmp_path: Path, built: dict[str, bytes]
) -> None:
    """publish hands report.pdf the pixels its workers still hold; ``sealedeval pdf`` reads
    the PNG files. Both must give the same bytes, and each image in the PDF must be exactly
    its PNG's pixels (a stream written wrongly would still be a valid-looking PDF)."""
    import io

    import numpy as np
    from PIL import Image
    from pypdf import PdfReader

    md = render_report(RESULT)
    with figures.FigureJob(jobs=1, raster=True) as job:
        job.submit(json.dumps(RESULT))
        from_workers = build_pdf(RESULT, md, job.images())
        assert job.result() == built
    pngs = _pngs(tmp_path, built)
    assert from_workers == build_pdf(RESULT, md, pngs)
    reader = PdfReader(io.BytesIO(from_workers))
    got = [np.asarray(i.image.convert("RGB")) for page in reader.pages for i in page.images]
    want = [np.asarray(Image.open(p).convert("RGB")) for p in pngs]
    # the PDF places them in report.md's order; compare as a multiset of exact pixel arrays
    key = sorted
    assert key(g.tobytes() for g in got) == key(w.tobytes() for w in want)


def test_plain_table_cells_wrap_to_their_column() -> None:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    from sealedeval.publish.pdf import _wrap_plain

    text = "results/raw/golden/local/part-1.parquet 3 " + "ab12" * 16 + " done"
    for avail in (40.0, 90.0, 400.0):
        lines = _wrap_plain(text, avail, "Helvetica", 7).split("\n")
        assert all(stringWidth(x, "Helvetica", 7) <= avail for x in lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost
    assert _wrap_plain(text, 1000.0, "Helvetica", 7) == text
    assert _wrap_plain("", 50.0, "Helvetica", 7) == ""
    # one character wider than the column still goes on a line of its own (no endless loop)
    assert _wrap_plain("W W", 1.0, "Helvetica", 7) == "W\nW"
