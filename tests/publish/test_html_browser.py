"""report.html in a real browser: Debian's chromium driven by Playwright (no browser download).

On the tiny published project (tests/publish/html_fixture.py: every suite on the reference
engine, golden also on an engine whose server is down): the page loads with no console error
and fetches nothing but itself, the filters and the search change the rows to exactly the
samples the data says they should, a sample opens from its row and from its ``#sample=`` link,
and a screenshot is not blank. Expected values come from the data the page was built from
(``publish.html.read_samples``), never from the page itself.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.publish.html_fixture import CHROMIUM, browser, tiny_report

from sealedeval.publish import html as rh
from sealedeval.publish.view import make_server

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (envs/apt-packages.txt)"),
]

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def root() -> Path:
    return tiny_report()


@pytest.fixture(scope="module")
def samples(root: Path) -> list[dict[str, Any]]:
    result = json.loads((root / "results/result.json").read_text())
    return rh.read_samples(root, result)


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    with browser() as c:
        yield c


@pytest.fixture
def page(ctx: Any, root: Path) -> Iterator[Any]:
    """The report from disk, loaded; console errors and uncaught exceptions fail the test."""
    p = ctx.new_page()
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.goto((root / rh.REPORT_HTML).as_uri())
    p.wait_for_selector("body[data-ready]", state="attached", timeout=TIMEOUT_MS)
    yield p
    p.close()
    assert errors == []


def _rows(page: Any) -> list[dict[str, str]]:
    """The visible sample rows as {column header: cell text}."""
    heads = [h.inner_text().strip() for h in page.query_selector_all("#sample-table thead th")]
    out = []
    for tr in page.query_selector_all("#sample-rows tr"):
        cells = [td.inner_text().strip() for td in tr.query_selector_all("td")]
        out.append({**dict(zip(heads, cells, strict=True)), "id": tr.get_attribute("data-sample")})
    return out


def _shown(page: Any) -> int:
    return int(page.get_attribute("body", "data-shown"))


def _select(page: Any, name: str, label: str, query: str = "") -> None:
    page.select_option(f"#f-{name}", label=label)
    page.wait_for_selector(f'body[data-query="{query}"]', state="attached", timeout=TIMEOUT_MS)


def _search(page: Any, text: str) -> None:
    page.fill("#f-search", text)
    sel = "body[data-query=" + json.dumps(text) + "][data-searching='0']"
    page.wait_for_selector(sel, state="attached", timeout=TIMEOUT_MS)


def test_page_loads_clean_and_fetches_nothing_but_itself(ctx: Any, root: Path) -> None:
    """Served over loopback so every request passes the route handler; anything other than the
    page itself is recorded and aborted (the CSP would block it too, as a console error)."""
    server = make_server(root / "results")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/report.html"
    seen: list[str] = []

    def route(r: Any) -> None:
        seen.append(r.request.url)
        r.continue_() if r.request.url == url else r.abort()

    p = ctx.new_page()
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.route("**/*", route)
    try:
        p.goto(url)
        p.wait_for_selector("body[data-ready]", state="attached", timeout=TIMEOUT_MS)
        p.click("#sample-rows tr:first-child a")  # opening a sample fetches nothing either
        p.wait_for_selector("#sample-detail:not([hidden])", timeout=TIMEOUT_MS)
        p.wait_for_load_state("networkidle")
        result = json.loads((root / "results/result.json").read_text())
        cards = p.query_selector_all("#summary .card")
        assert [c.get_attribute("data-suite") for c in cards] == list(result["suites"])
        assert p.query_selector_all("figure svg")
    finally:
        p.close()
        server.shutdown()
        server.server_close()
    assert seen == [url]
    assert errors == []


def test_filters_change_the_rows_to_what_the_data_says(page: Any, samples: list[Any]) -> None:
    n = len(samples)
    assert _shown(page) == n and len(_rows(page)) == min(n, 50)
    assert f"of {n:,} samples" in page.inner_text("#sample-count")

    _select(page, "suite", "golden")
    golden = [s for s in samples if s["suite"] == "golden"]
    assert 0 < _shown(page) == len(golden) < n
    assert {r["suite"] for r in _rows(page)} == {"golden"}

    _select(page, "status", "error")
    errors = [s for s in golden if s["status"] == "error"]
    assert 0 < _shown(page) == len(errors) < len(golden)
    rows = _rows(page)
    assert {r["engine"] for r in rows} == {"down"} and all(
        "connection" in r["status"] for r in rows
    )
    assert {r["id"] for r in rows} == {s["key"] for s in errors[:50]}

    _select(page, "status", "all (2)")
    _select(page, "engine", "reference")
    _select(page, "verdict", "abstention: fail")
    want = [
        s
        for s in golden
        if s["engine"] == "reference"
        and any(g["grader"] == "abstention" and g["passed"] is False for g in s["grades"])
    ]
    assert 0 < _shown(page) == len(want)

    _select(page, "suite", "all (3)")
    _select(page, "engine", "all (2)")
    _select(
        page, "verdict", "all (" + str(len(page.query_selector_all("#f-verdict option")) - 1) + ")"
    )
    _select(page, "condition", "report")
    assert _shown(page) == sum(1 for s in samples if s["condition"] == "report")


def test_pages_through_every_sample(page: Any, samples: list[Any]) -> None:
    seen: list[str] = []
    while True:
        seen += [r["id"] for r in _rows(page)]
        if page.is_disabled("#page-next"):
            break
        page.click("#page-next")
    assert seen == [s["key"] for s in samples]


def test_search_finds_phrases_words_and_keys(page: Any, samples: list[Any]) -> None:
    # g01's question is in its prompt only: a phrase search finds its requests on both engines
    phrase = "Did deploy 19 succeed?"
    want = {
        s["key"]
        for s in samples
        if any(phrase in str(m.get("content")) for m in s["messages"] if isinstance(m, dict))
    }
    assert len(want) >= 2
    _search(page, f'"{phrase.lower()}"')
    assert {r["id"] for r in _rows(page)} == want

    key = samples[-1]["key"]
    _search(page, key[:20])
    assert [r["id"] for r in _rows(page)] == [key]

    _search(page, "zzqx-not-in-any-sample")
    assert _shown(page) == 0 and "no sample matches" in page.inner_text("#sample-count")

    _search(page, "")
    assert _shown(page) == len(samples)


def test_a_sample_opens_from_its_row_and_from_its_link(
    ctx: Any, root: Path, page: Any, samples: list[Any]
) -> None:
    first = samples[0]
    page.click("#sample-rows tr:first-child a")
    page.wait_for_selector(f'body[data-sample="{first["key"]}"]', state="attached")
    box = page.inner_text("#sample-detail")
    assert first["key"] in box and first["output"].splitlines()[0][:60] in box
    assert len(page.query_selector_all("#sample-detail table.grades tbody tr")) == len(
        first["grades"]
    )
    assert page.url.endswith(f"#sample={first['key']}")

    err = next(s for s in samples if s["status"] == "error")
    p = ctx.new_page()
    try:
        p.goto(f"{(root / rh.REPORT_HTML).as_uri()}#sample={err['key']}")
        p.wait_for_selector(f'body[data-sample="{err["key"]}"]', state="attached")
        box = p.inner_text("#sample-detail")
        assert f"Sample {err['key']}" in box and "error kind: connection" in box
        assert err["error_message"][:40] in box
        assert str(err["messages"][-1]["content"])[:40] in box  # the prompt of a failed call
        assert p.is_visible("#sample-detail")
        p.click("#sample-close")
        assert p.is_hidden("#sample-detail") and "#sample=" not in p.url
    finally:
        p.close()


def _variance(png: bytes) -> float:
    from PIL import Image, ImageStat

    return float(sum(ImageStat.Stat(Image.open(io.BytesIO(png)).convert("L")).var))


def test_screenshots_are_not_blank(page: Any, samples: list[Any]) -> None:
    summary = page.screenshot()
    assert _variance(summary) > 100.0
    page.click("#sample-rows tr:first-child a")
    page.wait_for_selector("#sample-detail:not([hidden])")
    detail = page.locator("#sample-detail").screenshot()
    assert _variance(detail) > 100.0
    # a blank page of the same size has no variance: the measure can tell
    page.set_content("<html><body style='background:#fff'></body></html>")
    assert _variance(page.screenshot()) < 1.0
    assert re.match(rb"\x89PNG", summary)


def test_a_sample_answers_why_it_was_wrong_verdict_answer_prompt_graders(
    ctx: Any, root: Path
) -> None:
    """The opened sample shows its own verdict first, the item's expected answer, the
    response, the prompt and then the graders; the list shows the primary verdict (not a
    count of graders) and an unpriced engine's cost as "not priced"."""
    from sealedeval.config import load_config

    result = json.loads((root / "results/result.json").read_text())
    cfg = load_config(root, ["config/tiny.yaml", "config/html.yaml"])
    full = rh.read_samples(root, result, cfg)
    golden = next(s for s in full if s["suite"] == "golden" and s["status"] == "ok")
    assert golden["target"]["field"] == "answer" and golden["verdict"]["word"] == "correct"
    p = ctx.new_page()
    try:
        p.goto(f"{(root / rh.REPORT_HTML).as_uri()}#sample={golden['key']}")
        p.wait_for_selector(f'body[data-sample="{golden["key"]}"]', state="attached")
        text = p.inner_text("#sample-detail")
        marks = [
            "Verdict: correct (grader regex: pass)",
            "Expected answer (item field “answer”)",
            golden["target"]["value"][:40],
            "Response",
            "Prompt",
            "Graders (",
            "Request",
        ]
        at = [text.index(m) for m in marks]
        assert at == sorted(at), marks
        assert p.get_attribute("#sample-verdict", "class") == "verdict-box pass"
        assert "cost $: not priced" in text
        row = _rows(p)[0]
        first = full[0]
        assert row["verdict"] == first["verdict"]["word"] and row["cost $"] == "not priced"
        assert "graders pass" not in row["verdict"] or first["verdict"]["grader"] == ""
    finally:
        p.close()
