"""The kantesti engine against a loopback fake of its API: PDF content, phases, secrets.

The PDF is the bloodpanel suite's (``suites.bloodpanel.pdf``), attached by its ``requests`` to
engines with ``input_pdf``; the engine only posts the attachment it is given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from pypdf import PdfReader
from tests.bloodpanel.kantesti_fake import ENDPOINT, FakeKantesti
from tests.conftest import make_project

from sealedeval.config import EngineConfig, load_config
from sealedeval.engines.base import Attachment, EngineError, Request
from sealedeval.engines.kantesti import KantestiEngine
from sealedeval.errors import UserError
from sealedeval.plugins import GenerateContext, RequestContext
from sealedeval.suites.bloodpanel.cases import Case, load_curated
from sealedeval.suites.bloodpanel.locales import render_rows
from sealedeval.suites.bloodpanel.pdf import attachment, render_pdf
from sealedeval.suites.bloodpanel.prompts import leak_check, parse_report
from sealedeval.suites.bloodpanel.rubric import grade_case
from sealedeval.suites.bloodpanel.synthetic import synthetic_cases

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "kt-user-7731", "kt-pass-s3cr3t-9931"


@pytest.fixture(scope="module")
def curated() -> list[Case]:
    return load_curated(ROOT / "data" / "bloodpanel" / "curated.yaml")


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KANTESTI_USERNAME", USER)
    monkeypatch.setenv("KANTESTI_PASSWORD", PASSWORD)
    yield


def pdf_text(data: bytes) -> str:
    return "\n".join(p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages)


def _word(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def test_pdf_carries_the_panel_and_nothing_of_the_answer_key(curated: list[Case]) -> None:
    cases = curated + list(synthetic_cases(40, 11))
    for case in cases:
        data = render_pdf(case.to_record())
        assert data.startswith(b"%PDF")
        text = pdf_text(data)
        assert case.case_uid in text
        assert f"{case.age} years" in text
        # Values, units and ranges as printed for the case's label (locales), as in the prompt.
        for row in render_rows(case):
            assert row.analyte in text, (case.case_id, row.analyte)
            value = rf"(?<![\d.,]){re.escape(row.value)}(?![\d.,])"
            assert re.search(value, text), (case.case_id, row.analyte, row.value)
            assert row.unit in text and row.ref in text, (case.case_id, row.analyte)
        # The same leak check every chat prompt passes: ids, title, "trap", keywords, flags,
        # scoring systems, archetype and specialty may not appear beyond the table's own cells.
        leak_check(case, [{"role": "user", "content": text}])
        assert case.case_id not in text
        assert not re.search(r"trap", text, re.IGNORECASE)
        assert not _word(text, case.label), (case.case_id, case.label)
        # (The archetype may equal an analyte's name, "B12": leak_check judges it above.)
        for hidden in (case.title, case.specialty.replace("_", " "), case.v11_category):
            if hidden:
                assert not _word(text.lower(), hidden.lower()), (case.case_id, hidden)


def test_pdf_bytes_are_deterministic(curated: list[Case]) -> None:
    rec = curated[13].to_record()
    assert render_pdf(rec) == render_pdf(rec)


def _engine(base_url: str, **extra: Any) -> KantestiEngine:
    x = {"primary_timeout_s": 0.5, "fallback_timeout_s": 5.0, "phase_backoff_s": 0.01} | extra
    return KantestiEngine(
        EngineConfig(
            name="kt",
            kind="kantesti",
            base_url=base_url,
            model="kantesti-v11",
            max_retries=0,
            extra=x,
        )
    )


def _request(case: Case, attachments: tuple[Attachment, ...] | None = None) -> Request:
    rec = case.to_record()
    files = (attachment(rec),) if attachments is None else attachments
    return Request(
        "k" * 32, "bloodpanel", case.case_uid, "report", 0, 1, (), {}, item=rec, attachments=files
    )


def _complete(engine: KantestiEngine, req: Request) -> Any:
    async def go() -> Any:
        await engine.start()
        try:
            return await engine.complete(req)
        finally:
            await engine.close()

    return asyncio.run(go())


def test_primary_path_posts_multipart_with_credentials_from_env(
    curated: list[Case], creds: None
) -> None:
    case = curated[0]
    with FakeKantesti(password=PASSWORD) as fake:
        comp = _complete(_engine(fake.base_url, language="tr"), _request(case))
    assert comp.engine_path == "primary"
    [seen] = fake.seen
    assert seen.path == ENDPOINT
    assert seen.fields == {"username": USER, "password": PASSWORD, "language": "tr"}
    assert seen.file_type == "application/pdf" and seen.file_name == f"{case.case_uid}.pdf"
    assert seen.pdf == render_pdf(case.to_record())
    report = parse_report(comp.output_text)
    assert report is not None and report["sections"][0]["shortcode"] == "introduction"
    score = grade_case(case, report, 1.0, "kantesti-v11")
    assert score.status == "ok" and score.sections_hit == 7
    assert [p["outcome"] for p in comp.response["phases"]] == ["ok"]


@pytest.mark.parametrize(
    ("faults", "path", "calls", "outcomes"),
    [
        (["503", "ok"], "primary", 2, ["server", "ok"]),
        (["slow", "slow", "ok"], "fallback", 3, ["timeout", "timeout", "ok"]),
        (["429", "429", "ok"], "fallback", 3, ["rate_limit", "rate_limit", "ok"]),
        (["malformed", "ok"], "fallback", 2, ["malformed", "ok"]),
        (["nonsuccess", "ok"], "fallback", 2, ["malformed", "ok"]),
    ],
)
def test_primary_tries_then_one_fallback(
    curated: list[Case],
    creds: None,
    faults: list[str],
    path: str,
    calls: int,
    outcomes: list[str],
) -> None:
    with FakeKantesti(faults, slow_s=1.5) as fake:
        comp = _complete(_engine(fake.base_url), _request(curated[1]))
    assert comp.engine_path == path
    assert len(fake.seen) == calls
    assert [p["outcome"] for p in comp.response["phases"]] == outcomes
    assert [p["phase"] for p in comp.response["phases"]][-1] == path


def test_both_phases_failing_raises_the_classified_error(curated: list[Case], creds: None) -> None:
    with FakeKantesti(["503", "503", "503"]) as fake, pytest.raises(EngineError) as e:
        _complete(_engine(fake.base_url), _request(curated[2]))
    assert e.value.kind == "server" and e.value.retryable
    assert len(fake.seen) == 3
    assert [p["phase"] for p in e.value.response["phases"]] == ["primary", "primary", "fallback"]


def test_bad_credentials_are_refused_without_a_fallback(curated: list[Case], creds: None) -> None:
    with FakeKantesti(["401", "ok"]) as fake, pytest.raises(EngineError) as e:
        _complete(_engine(fake.base_url), _request(curated[2]))
    assert e.value.kind == "refused" and not e.value.retryable
    assert len(fake.seen) == 1


@pytest.mark.parametrize(
    "files",
    [(), (Attachment("x.txt", "text/plain", b"not a pdf"),)],
    ids=["none", "not-a-pdf"],
)
def test_a_request_without_a_pdf_is_refused_before_any_call(
    curated: list[Case], creds: None, files: tuple[Attachment, ...]
) -> None:
    with FakeKantesti() as fake, pytest.raises(EngineError) as e:
        _complete(_engine(fake.base_url), _request(curated[0], files))
    assert e.value.kind == "refused" and not e.value.retryable
    assert "attachment" in str(e.value)
    assert fake.seen == []


def test_the_suite_attaches_the_pdf_only_for_engines_that_take_one() -> None:
    """Requests are planned from capabilities: the kantesti kind (input_pdf) gets the PDF, the
    others get nothing rendered; request keys do not depend on the attachment."""
    from sealedeval.suites.bloodpanel.suite import BloodpanelSuite

    engines = {
        "kt": {"kind": "kantesti", "base_url": "http://127.0.0.1:9", "model": "kantesti-v11"},
        "ref": {"kind": "reference", "model": "reference"},
    }
    cfg = load_config(
        ROOT,
        [],
        overrides={
            "engines": engines,
            "suites": {"bloodpanel": {"engines": ["kt", "ref"], "synthetic_n": 3, "repeats": 2}},
        },
    )
    suite = BloodpanelSuite()
    items = suite.generate(GenerateContext(cfg=cfg, seed=7))
    kt = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("kt"), model="kantesti-v11", seed=7)
    )
    ref = suite.requests(
        RequestContext(cfg=cfg, items=items, engine=cfg.engine("ref"), model="reference", seed=7)
    )
    assert len(kt) == len(ref) == 2 * 18
    assert all(r.attachments == () for r in ref)
    for r in kt:
        [pdf] = r.attachments
        assert pdf.media_type == "application/pdf" and pdf.filename == f"{r.item_id}.pdf"
        assert pdf.data == render_pdf(r.item)
        assert "response_format" not in r.params  # no chat parameters for a PDF upload
    # Repeats of a case share one rendering.
    assert kt[0].attachments[0] is kt[1].attachments[0]
    # The key is computed without the attachment: the same request without it has the same key
    # and compares equal.
    bare = [dataclasses.replace(r, attachments=()) for r in kt]
    assert bare == kt and [r.request_key for r in bare] == [r.request_key for r in kt]


def test_missing_credentials_are_a_user_error(
    curated: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KANTESTI_USERNAME", raising=False)
    monkeypatch.setenv("KT_PW", PASSWORD)
    with FakeKantesti() as fake, pytest.raises(UserError, match="KANTESTI_USERNAME"):
        _complete(_engine(fake.base_url, password_env="KT_PW"), _request(curated[0]))


def test_echoed_credentials_are_scrubbed(curated: list[Case], creds: None) -> None:
    with FakeKantesti(["echo"]) as fake:
        comp = _complete(_engine(fake.base_url), _request(curated[0]))
    dumped = json.dumps(comp.response)
    assert PASSWORD not in dumped and USER not in dumped and "***" in dumped


@pytest.mark.slow
def test_run_through_the_cli_records_paths_and_no_secrets(tmp_path: Path) -> None:
    """Three curated cases, one request at a time: primary, fallback (two timeouts), primary."""
    root = make_project(tmp_path / "proj")
    with FakeKantesti(["echo", "slow", "slow", "ok", "ok"], slow_s=1.5, password=PASSWORD) as fake:
        cfg = {
            "engines": {
                "kt": {
                    "kind": "kantesti",
                    "base_url": fake.base_url,
                    "model": "kantesti-v11",
                    "concurrency": 1,
                    "max_retries": 0,
                    "primary_timeout_s": 0.5,
                    "fallback_timeout_s": 5,
                    "phase_backoff_s": 0.01,
                    "username_env": "KT_USER",
                    "password_env": "KT_PASS",
                }
            },
            "suites": {
                "golden": {"enabled": False},
                "bloodpanel": {
                    "engines": ["kt"],
                    "cohorts": {"kt": "curated"},
                    "limit": 3,
                    "synthetic_n": 0,
                    "n_boot": 50,
                },
            },
        }
        (root / "config/kt.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        env = os.environ | {"KT_USER": USER, "KT_PASS": PASSWORD}
        for args in (["run", "bloodpanel", "--no-progress"], ["publish"]):
            proc = subprocess.run(
                [sys.executable, "-m", "sealedeval.cli", *args, "-c", "config/kt.yaml"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr
    assert len(fake.seen) == 5
    parts = sorted((root / "results/raw/bloodpanel/kt").glob("part-*.parquet"))
    rows = [r for p in parts for r in pq.read_table(p).to_pylist()]
    assert len(rows) == 3 and all(r["status"] == "ok" for r in rows)
    assert sorted(r["engine_path"] for r in rows) == ["fallback", "primary", "primary"]
    blob = json.dumps(rows, default=str)
    assert PASSWORD not in blob and USER not in blob
    assert "KT_PASS" in blob  # the variable's name is identity, its value is not
    for path in (root / "results").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert PASSWORD.encode() not in data and USER.encode() not in data, path
    card = (root / "results/scorecards/bloodpanel-kt.csv").read_text().splitlines()
    head = card[0].split(",")
    paths = sorted(line.split(",")[head.index("engine_path")] for line in card[1:])
    assert paths == ["fallback", "primary", "primary"]
    result = json.loads((root / "results/result.json").read_text())
    h = result["suites"]["bloodpanel"]["analysis"]["engines"]["kt"]["profiles"]["sealed"]
    assert h["headline"]["engine_path"] == {"fallback": 1, "primary": 2}
