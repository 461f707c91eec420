"""What ``sealedeval publish`` says never claims more than the audit would (issue 25, items 1-2).

A ``sealedeval init`` project with a ``tasks`` suite answered by two OpenAI-compatible engines
on the loopback fake server ("good" is right more often than "bad"), driven through the CLI:

- seal, run, publish, audit: ``pre-registered``, exit 0, and the audit passes;
- a target edited in the better engine's favour, re-sealed, the raw runs moved aside as the
  run's error says, run again: the report says ``amended`` and lists the earlier seal (commit,
  date, runs, the sealed file that changed; its rows are not present), and the audit passes;
- one engine's raw runs deleted: ``NOT AS SEALED`` in result.json and every report, exit 1
  (0 with ``--allow-incomplete``, still stated); the audit fails it too;
- a sealed input edited: publish stops with one line, exit 2, nothing written;
- an engine added after the seal: labelled wherever named, its pairs in an exploratory family,
  the pre-registered family still of 1.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fakes.openai_server import FakeOpenAI, last_user_content
from tests.tasks._support import cli, git, write_jsonl

ITEMS = [
    {"id": f"q{i:02d}", "input": f"{i} + {i + 3}", "target": 2 * i + 3, "topic": f"t{i % 3}"}
    for i in range(1, 13)
]
WRONG = {"good": {3, 7}, "bad": {2, 3, 5, 7, 9, 11}, "third": {1, 2}}
"""The items (first operand) each engine answers wrong: good 10/12, bad 6/12."""


def _responder(body: dict[str, Any]) -> str:
    m = re.search(r"(\d+) \+ (\d+)", last_user_content(body))
    assert m, body
    a, b = int(m.group(1)), int(m.group(2))
    return str(a + b + (1 if a in WRONG[str(body["model"])] else 0))


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=_responder, latency_s=0.0) as server:
        yield server


def _engine(fake: FakeOpenAI, model: str) -> dict[str, Any]:
    return {
        "kind": "openai_chat",
        "base_url": fake.base_url,
        "model": model,
        "concurrency": 4,
        "max_retries": 0,
        "timeout_s": 10,
    }


def _config(fake: FakeOpenAI, engines: list[str]) -> dict[str, Any]:
    return {
        "project": {"name": "truth", "seed": 3},
        "engines": {e: _engine(fake, e) for e in ("good", "bad", "third")},
        "suites": {
            "arith": {
                "kind": "tasks",
                "items": "data/arith/items.jsonl",
                "prompt": "What is {input}? Reply with the number only.",
                "graders": [{"name": "exact"}],
                "engines": engines,
                "analysis": {"comparisons": "all"},
            }
        },
    }


def _write_config(root: Path, cfg: dict[str, Any]) -> None:
    (root / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _project(tmp_path: Path, fake: FakeOpenAI) -> Path:
    root = tmp_path / "myeval"
    cli(tmp_path, "init", str(root))
    shutil.rmtree(root / "data/example")
    write_jsonl(root / "data/arith/items.jsonl", ITEMS)
    _write_config(root, _config(fake, ["good", "bad"]))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return root


def _seal(root: Path, message: str) -> None:
    cli(root, "seal")
    git(root, "add", "rubric.lock", ".sealedeval")
    git(root, "commit", "-qm", message)


def _run(root: Path, *engines: str) -> None:
    for e in engines:
        cli(root, "run", "arith", "--engine", e)


def _result(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "results/result.json").read_text(encoding="utf-8")))


def _summary(root: Path) -> str:
    """report.md's summary page (before the appendix)."""
    text = (root / "results/report.md").read_text(encoding="utf-8")
    return text.split("## Appendix")[0]


def _audit(root: Path) -> tuple[int, str]:
    proc = cli(root, "audit", check=False)
    return proc.returncode, proc.stdout + proc.stderr


def _sealed_project(tmp_path: Path, fake: FakeOpenAI) -> Path:
    root = _project(tmp_path, fake)
    _seal(root, "Seal the rubric")
    _run(root, "good", "bad")
    return root


@pytest.mark.slow
def test_sealed_run_is_pre_registered_and_audits_clean(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = _sealed_project(tmp_path, fake)
    proc = cli(root, "publish", "--jobs", "1")
    assert proc.returncode == 0
    assert "arith: seal pre-registered" in proc.stdout
    res = _result(root)
    assert res["status"] == "pre-registered"
    assert res["as_sealed"] == {"ok": True, "deviations": []}
    sec = res["suites"]["arith"]
    assert sec["seal_history"] == {"status": "pre-registered", "earlier": []}
    summary = _summary(root)
    assert "Seal: **pre-registered**" in summary
    assert "NOT AS SEALED" not in summary and "amended" not in summary
    rc, out = _audit(root)
    assert rc == 0, out


def _amend(root: Path) -> str:
    """Edit item q03's target to the good engine's wrong answer, re-seal, move the raw runs
    aside as the run's error says, run again; the first seal's commit."""
    first = git(root, "log", "-1", "--format=%H", "--", "rubric.lock")
    items = [dict(i) for i in ITEMS]
    items[2]["target"] = 2 * 3 + 3 + 1  # what "good" answers on q03
    write_jsonl(root / "data/arith/items.jsonl", items)
    git(root, "commit", "-qam", "fix a target")
    _seal(root, "Re-seal")
    err = cli(root, "run", "arith", "--engine", "good", check=False)
    assert err.returncode == 2 and "move them aside" in err.stderr, err.stderr
    (root / "aside").mkdir()
    shutil.move(root / "results/raw/arith", root / "aside/arith")
    _run(root, "good", "bad")
    return first


@pytest.mark.slow
def test_reseal_after_looking_is_amended_with_its_history(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = _sealed_project(tmp_path, fake)
    cli(root, "publish", "--jobs", "1")
    before = _result(root)["suites"]["arith"]["analysis"]["engines"]["good"]["accuracy"]["rate"]
    first = _amend(root)
    proc = cli(root, "publish", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    assert "arith: seal amended" in proc.stdout
    res = _result(root)
    assert res["status"] == "amended"
    sec = res["suites"]["arith"]
    assert sec["seal"]["status"] == "amended"
    after = sec["analysis"]["engines"]["good"]["accuracy"]["rate"]
    assert after > before  # the edit favoured "good": exactly what the history must expose
    [earlier] = sec["seal_history"]["earlier"]
    assert earlier["commit"] == first
    assert earlier["runs"] == 2 and earlier["engines"] == ["bad", "good"]
    assert earlier["calls"] == 2 * len(ITEMS)
    assert "data/arith/items.jsonl" in earlier["changed"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", earlier["date"])
    assert earlier["rows_present"] is False and earlier["headline"] is None
    summary = _summary(root)
    assert "Seal: **amended**" in summary and "pre-registered**" not in summary
    assert f"seal `{first[:12]}` ({earlier['date']}): 2 runs (bad, good)" in summary
    assert "`data/arith/items.jsonl`" in summary and "rows not present" in summary
    html = (root / "results/report.html").read_text(encoding="utf-8")
    assert "<strong>amended</strong>" in html
    rc, out = _audit(root)
    assert rc == 0, out  # an honest amended report still audits clean


@pytest.mark.slow
def test_earlier_seal_headline_when_its_rows_are_present(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A re-seal that changed only the design (an engine added, then sealed into it): the
    earlier runs' rows are the ones present, so their headline is given."""
    root = _sealed_project(tmp_path, fake)
    first = git(root, "log", "-1", "--format=%H", "--", "rubric.lock")
    _write_config(root, _config(fake, ["good", "bad", "third"]))
    git(root, "commit", "-qam", "a third engine")
    _seal(root, "Re-seal with the third engine")
    _run(root, "third")
    proc = cli(root, "publish", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    sec = _result(root)["suites"]["arith"]
    assert sec["seal"]["status"] == "amended"
    [earlier] = sec["seal_history"]["earlier"]
    assert earlier["commit"] == first and earlier["rows_present"] is True
    assert earlier["changed"] == ["(design: engines or comparisons)"]
    heads = {m["groups"]["engine"]: m["estimate"] for m in earlier["headline"]}
    assert heads == pytest.approx({"good": 10 / 12, "bad": 6 / 12})
    assert "headline then: bad 0.500 [0.254, 0.746]" in _summary(root)
    assert "; good 0.833 [0.552, 0.953]" in _summary(root)


@pytest.mark.slow
def test_missing_engine_is_not_as_sealed_and_exits_1(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = _sealed_project(tmp_path, fake)
    cli(root, "publish", "--jobs", "1")
    shutil.rmtree(root / "results/raw/arith/bad")
    proc = cli(root, "publish", "--jobs", "1", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "NOT AS SEALED" in proc.stderr and "--allow-incomplete" in proc.stderr
    res = _result(root)  # the honest report is written
    assert res["as_sealed"]["ok"] is False
    devs = res["as_sealed"]["deviations"]
    assert "arith/bad: sealed engine has no rows" in devs
    assert "arith: sealed comparison good vs bad missing" in devs
    assert any(d.startswith("arith/bad: ") and "ledgered raw part" in d for d in devs)
    assert res["status"].startswith("NOT AS SEALED: ")
    summary = _summary(root)
    assert "Status: **NOT AS SEALED: " in summary
    lines = [x for x in summary.split("### arith")[1].splitlines() if x.strip()]
    assert lines[0].startswith("**NOT AS SEALED**: arith/bad: sealed engine has no rows")
    # Table 1 names the sealed engine without rows, and good's own run is complete ...
    assert "| bad | n/a | - | no rows: sealed engine missing (NOT AS SEALED) |" in summary
    assert "| complete |" in summary
    assert "Status: **pre-registered**" not in summary  # ... but the result is not
    assert "Seal: **NOT AS SEALED** (its runs: pre-registered)" in summary
    assert "pre-registered**" not in summary
    assert "arith: seal pre-registered; NOT AS SEALED" in proc.stdout
    assert res["suites"]["arith"]["as_sealed"]["deviations"] == devs
    html = (root / "results/report.html").read_text(encoding="utf-8")
    assert "NOT AS SEALED" in html
    from pypdf import PdfReader

    pdf = PdfReader(root / "results/report.pdf")
    assert "NOT AS SEALED" in " ".join(p.extract_text() for p in pdf.pages[:2])
    ok = cli(root, "publish", "--jobs", "1", "--allow-incomplete", check=False)
    assert ok.returncode == 0 and "NOT AS SEALED" in ok.stderr
    assert _result(root)["status"].startswith("NOT AS SEALED: ")
    rc, out = _audit(root)
    assert rc != 0, out  # the audit fails what the report states


@pytest.mark.slow
def test_changed_sealed_input_stops_publish(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = _sealed_project(tmp_path, fake)
    items = [dict(i) for i in ITEMS]
    items[0]["target"] = 0
    write_jsonl(root / "data/arith/items.jsonl", items)
    proc = cli(root, "publish", "--jobs", "1", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "sealedeval: error: rubric.lock: data/arith/items.jsonl changed after the seal (suite "
        "arith); nothing published: restore it, or re-seal, commit and run again"
    ]
    assert not (root / "results/result.json").exists()
    assert not (root / "results/report.md").exists()


@pytest.mark.slow
def test_engine_added_after_the_seal_is_labelled_and_exploratory(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    root = _sealed_project(tmp_path, fake)
    _write_config(root, _config(fake, ["good", "bad", "third"]))
    git(root, "commit", "-qam", "a third engine, after the seal")
    _run(root, "third")
    proc = cli(root, "publish", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    res = _result(root)
    sec = res["suites"]["arith"]
    assert res["status"] == "pre-registered"
    assert sec["design"]["added_after_seal"] == ["third"]
    families = {c["paired"]["name"]: c["paired"] for c in sec["analysis"]["comparisons"]}
    assert families["good vs bad"]["family"] == "engines"
    confirm = [c for c in families.values() if c["family"] == "engines"]
    explore = [c for c in families.values() if c["family"] == "exploratory"]
    assert [c["family_size"] for c in confirm] == [1]  # as sealed: of 1, not of 3
    assert len(explore) == 2 and {c["family_size"] for c in explore} == {2}
    assert all("third" in (c["a"], c["b"]) for c in explore)
    report = (root / "results/report.md").read_text(encoding="utf-8")
    assert "(Holm, of 1)" in report and "(BH, of 2)" in report and "of 3)" not in report
    summary = _summary(root)
    assert "third (added after the seal)" in summary
    assert "Engines added after the seal: third" in summary
    verdicts = [x for x in summary.splitlines() if x.startswith("- ")]  # the sealed family's
    assert any("good vs bad" in x for x in verdicts) and not any("third" in x for x in verdicts)
    assert "Exploratory comparisons" in summary
    appendix = report.split("## Appendix")[1]
    rows = [x for x in appendix.splitlines() if x.startswith("|")]
    named = [x for x in rows if re.search(r"(\| |engine=)third\b", x)]
    assert len(named) >= 5  # completeness (twice), headline, metrics, items, engines
    unlabelled = [x for x in named if not re.search(r"(\| |engine=)third \(added after", x)]
    assert unlabelled == []
    html = (root / "results/report.html").read_text(encoding="utf-8")
    assert "third (added after the seal)" in html
    rc, out = _audit(root)
    assert rc == 0, out
    assert "added after the seal" in out
