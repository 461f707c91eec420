"""report.html: the Markdown subset, inlined figures, the sample join, the packed data, the page's
self-containment and determinism, and ``sealedeval view``.

The pure parts run on the committed result.json fixture (a real run of every suite); the build
parts on a tiny project published by the real CLI (tests/publish/html_fixture.py). The page in a
real browser is tests/publish/test_html_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.publish.html_fixture import publish_again, tiny_report

from sealedeval.publish import first_page, summary
from sealedeval.publish import html as rh
from sealedeval.store.schema import raw_row

HERE = Path(__file__).parent
RESULT: dict[str, Any] = json.loads((HERE / "result_all.json").read_text())


# -- Markdown ----------------------------------------------------------------------------------


def test_markdown_subset_renders_our_sections_structures() -> None:
    md = "\n".join(
        [
            "## golden — our set",
            "",
            "Intro **bold** and *em* with `a|b <x>` and [docs](https://example.org/a?b=1&c=2).",
            "second line of the same paragraph.",
            "",
            "| engine | rate |",
            "|---|---|",
            "| ref | 6/6 = 100.0% |",
            "| a \\| b | *x* |",
            "",
            "- **reference g01** (4/4 passed) — question",
            "  - `A/main` run 0: answer",
            "  - `A/sample` run 0: answer",
            "- second top item",
            "",
            "#### Deep heading",
            "```",
            "<raw> code",
            "```",
        ]
    )
    out = rh.markdown_html(md)
    assert "<h2>golden — our set</h2>" in out and "<h4>Deep heading</h4>" in out
    assert (
        "<p>Intro <strong>bold</strong> and <em>em</em> with <code>a|b &lt;x&gt;</code> and "
        '<a href="https://example.org/a?b=1&amp;c=2">docs</a>. second line of the same '
        "paragraph.</p>"
    ) in out
    assert "<thead><tr><th>engine</th><th>rate</th></tr></thead>" in out
    assert "<td>a | b</td><td><em>x</em></td>" in out
    # one outer list of two items, the first holding a nested list of two
    assert out.count("<ul>") == 2 and out.count("<li>") == 4
    nested = out[out.index("<ul><li><strong>reference g01") :]
    assert nested.index("<ul><li><code>A/main</code>") < nested.index("second top item")
    assert "<pre><code>&lt;raw&gt; code</code></pre>" in out


def test_markdown_escapes_markup_and_refuses_script_links() -> None:
    out = rh.markdown_html("a <script>alert(1)</script> [x](javascript:alert(1)) *_ok_*")
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "href" not in out


def test_every_suite_section_converts_without_raw_markdown_left() -> None:
    for name, section in RESULT["suites"].items():
        out = rh.markdown_html(rh._section_markdown(name, section))
        assert "<h2>" in out, name
        # no table row, heading or bold marker survives as text
        text = re.sub(r"<code>.*?</code>", "", out)
        assert "|---" not in text and "\n#" not in text and "**" not in text, name


# -- figures -----------------------------------------------------------------------------------


def test_inline_svg_prefixes_every_id_and_reference() -> None:
    figs = rh.figure_svgs({**RESULT, "suites": {"golden": RESULT["suites"]["golden"]}})
    assert figs and all(f[0] == "golden" for f in figs)
    svg = figs[0][3]
    out = rh.inline_svg(svg, "f7")
    assert out.startswith("<svg") and "<?xml" not in out and "<metadata>" not in out
    ids = re.findall(r'\bid="([^"]+)"', out)
    assert ids and all(i.startswith("f7-") for i in ids)
    refs = re.findall(r'href="#([^"]+)"', out) + re.findall(r"url\(#([^)]+)\)", out)
    assert refs and all(r.startswith("f7-") and r in ids for r in refs)


# -- samples -----------------------------------------------------------------------------------


def _raw(key: str, **kw: Any) -> dict[str, Any]:
    base = {
        "request_key": key,
        "suite": "s",
        "item_id": "i1",
        "condition": "A",
        "repeat": 0,
        "seed": 1,
        "engine": "e",
        "engine_kind": "reference",
        "model": "m",
        "engine_identity": "{}",
        "params": '{"temperature":0}',
        "messages": '[{"role":"user","content":"Q?"}]',
        "started_at": "t0",
        "finished_at": "t1",
        "status": "ok",
        "rubric_sha256": "r",
        "seal_commit": "c",
        "sealed": True,
        "harness_version": "0",
    }
    return raw_row(**{**base, **kw})


def _graded(key: str, grader: str, passed: bool | None, **kw: Any) -> dict[str, Any]:
    return {
        "request_key": key,
        "engine": "e",
        "item_id": "i1",
        "condition": "A",
        "repeat": 0,
        "status": "ok",
        "grader": grader,
        "grader_version": "1",
        "score": None if passed is None else float(passed),
        "passed": passed,
        "category": "correct" if passed else "wrong",
        "details": '{"why":"x"}',
        "suite": "s",
        "suite_version": "0",
        **kw,
    }


def test_samples_join_every_grader_keep_orphans_and_order() -> None:
    raw = [
        _raw("k2", item_id="i2", output_text="A2", latency_s=0.5, cost_usd=0.01),
        _raw(
            "k1",
            output_text="A1",
            trajectory='[{"role":"tool","content":"x"}]',
            status="error",
            error_kind="timeout",
            error_message="read timed out",
        ),
    ]
    graded = [
        _graded("k1", "regex", True, composite=0.5),
        _graded("k1", "exact", False),
        _graded("k3", "regex", None, item_id="i0"),
    ]
    samples = rh.suite_samples("s", raw, graded)
    assert [s["key"] for s in samples] == ["k3", "k1", "k2"]  # by engine, item, condition, ...
    k3, k1, k2 = samples
    assert not k3["raw"] and "without a raw row" in k3["error_message"] and len(k3["grades"]) == 1
    assert [g["grader"] for g in k1["grades"]] == ["regex", "exact"]
    assert k1["grades"][0]["details"] == {"why": "x"} and k1["grades"][0]["extra"] == {
        "composite": 0.5
    }
    assert k1["trajectory"] == [{"role": "tool", "content": "x"}]
    assert k1["messages"] == [{"role": "user", "content": "Q?"}]
    assert (k1["status"], k1["error_kind"], k1["output"]) == ("error", "timeout", "A1")
    assert (k2["latency_s"], k2["cost_usd"], k2["grades"]) == (0.5, 0.01, [])
    assert rh.verdict_tokens(k1["grades"]) == [
        "category: correct",
        "category: wrong",
        "exact: fail",
        "regex: pass",
        "some grader fails",
    ]
    assert rh.verdict_tokens(k2["grades"]) == ["ungraded"]
    assert "regex: n/a" in rh.verdict_tokens(k3["grades"])


def test_equal_messages_are_parsed_once_and_text_that_is_not_json_is_kept() -> None:
    """An item's repeats send the same messages: their samples share one parsed value (the
    page's samples are read-only); a column that is not JSON is shown as its text."""
    raw = [
        _raw("k1", messages='[{"role":"user","content":"same"}]'),
        _raw("k2", messages='[{"role":"user","content":"same"}]'),
        _raw("k3", messages='[{"role":"user","content":"other"}]', trajectory="not json"),
    ]
    s1, s2, s3 = rh.suite_samples("s", raw, [])
    assert s1["messages"] == s2["messages"] == [{"role": "user", "content": "same"}]
    assert s1["messages"] is s2["messages"]
    assert s3["messages"] == [{"role": "user", "content": "other"}]
    assert s3["trajectory"] == "not json" and s1["trajectory"] == []


def test_equal_grades_are_one_dict_and_unequal_ones_stay_apart() -> None:
    """Grades of the same content are one (read-only) dict; a grade differing only in a
    value's type (1 vs True) or sign (-0.0 vs 0.0), or in its details, is its own."""
    raw = [_raw(f"k{i}") for i in range(6)]
    graded = [
        _graded("k0", "regex", True),
        _graded("k1", "regex", True),
        {**_graded("k2", "regex", True), "passed": 1},
        _graded("k3", "regex", False, score=-0.0),
        _graded("k4", "regex", False, score=0.0),
        _graded("k5", "regex", True, details='{"why":"y"}'),
    ]
    s = {x["key"]: x["grades"][0] for x in rh.suite_samples("s", raw, graded)}
    assert s["k0"] is s["k1"] and s["k0"] == rh._grade(graded[0])
    assert s["k2"] is not s["k0"] and s["k2"]["passed"] == 1 and s["k2"]["passed"] is not True
    assert repr(s["k3"]["score"]) == "-0.0" and repr(s["k4"]["score"]) == "0.0"
    assert s["k5"]["details"] == {"why": "y"} and s["k0"]["details"] == {"why": "x"}
    for key, g in zip(s, graded, strict=True):
        assert s[key] == rh._grade(g)


def _synthetic(n: int) -> list[dict[str, Any]]:
    raw = [
        _raw(
            f"k{i:05d}",
            item_id=f"i{i % 7}",
            condition=f"C{i % 3}",
            engine=f"e{i % 2}",
            output_text=f"answer {i} </script><script>alert(1)</script>",
            status="ok" if i % 5 else "error",
            error_kind="" if i % 5 else "server",
        )
        for i in range(n)
    ]
    graded = [_graded(f"k{i:05d}", "regex", i % 3 == 0) for i in range(n)]
    return rh.suite_samples("s", raw, graded)


def test_packed_index_and_chunks_hold_every_sample_exactly() -> None:
    samples = _synthetic(rh.CHUNK_SAMPLES * 2 + 17)
    index = rh.unpack(rh.pack(rh.sample_index(samples)))
    assert index["n"] == len(samples) and index["chunk"] == rh.CHUNK_SAMPLES
    cols = index["cols"]
    assert cols["id"] == [s["key"] for s in samples]
    labels = index["labels"]
    assert [labels["engine"][c] for c in cols["engine"]] == [s["engine"] for s in samples]
    assert [labels["status"][c] for c in cols["status"]] == [s["status"] for s in samples]
    assert [sorted(labels["verdict"][c] for c in v) for v in cols["verdicts"]] == [
        rh.verdict_tokens(s["grades"], s["verdict"]["word"]) for s in samples
    ]
    assert [labels["primary"][c] for c in cols["primary"]] == [
        s["verdict"]["word"] for s in samples
    ]
    chunks = rh.sample_chunks(samples)
    assert len(chunks) == 3
    back = [d for c in chunks for d in rh.chunk_samples(rh.unpack(c))]
    assert [d["output"] for d in back] == [s["output"] for s in samples]
    assert [d["messages"] for d in back] == [s["messages"] for s in samples]
    assert [d["grades"] for d in back] == [json.loads(json.dumps(s["grades"])) for s in samples]


def test_long_prompt_texts_are_stored_once_per_chunk() -> None:
    system = "You read the files below.\n" + "x" * rh.SHARED_TEXT_CHARS
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": "short?"}]
    samples = rh.suite_samples(
        "s", [_raw(f"k{i}", messages=json.dumps(msgs)) for i in range(5)], []
    )
    doc = rh.chunk_doc(samples)
    assert doc["texts"] == [system]
    assert all(d["messages"] == [{"role": "system", "ref": 0}, msgs[1]] for d in doc["samples"])
    assert [d["messages"] for d in rh.chunk_samples(doc)] == [msgs] * 5


def test_duplicate_keys_across_suites_get_distinct_links() -> None:
    a = rh.suite_samples("a", [_raw("k")], [])
    b = rh.suite_samples("b", [_raw("k", suite="b")], [])
    assert rh.sample_index(a + b)["cols"]["id"] == ["a:k", "b:k"]


# -- the page ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page() -> str:
    return rh.render_html(RESULT, _synthetic(900), rh.figure_svgs(RESULT))


@pytest.mark.slow
def test_page_is_self_contained_and_its_csp_allows_only_its_script(page: str) -> None:
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None and "default-src 'none'" in csp.group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp.group(1)
    # nothing the browser would fetch: no src/srcset, stylesheet link, CSS import or remote url()
    assert not re.search(r"\s(src|srcset)=", page)
    assert "<link" not in page and "@import" not in page
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page)
    assert not re.search(r'href="\s*javascript:', page, re.IGNORECASE)
    # sample text (here with a closing script tag) only travels packed
    assert "alert(1)" not in page


@pytest.mark.slow
def test_page_order_summary_sections_figures_samples(page: str) -> None:
    marks = ('id="summary"', "summary-comparisons", 'id="suite-', "<figure", 'id="samples"')
    pos = [page.index(x) for x in marks]
    assert pos[:3] == sorted(pos[:3]) and pos[2] < page.index("<figure", pos[2]) < pos[4]
    for s in summary.suite_summaries(RESULT):
        card = page[page.index(f'data-suite="{s.suite}"') :]
        card = card[: card.index('<ul class="verdicts">')]
        for row in first_page.headline_rows(s):
            assert "".join(f"<td>{rh.inline_md(c)}</td>" for c in row) in card
        assert rh.inline_md(first_page.prose_lines(s)[0]) in card  # the seal line
    assert page.count("<figure") == len(rh.figure_svgs(RESULT))


@pytest.mark.slow
def test_page_is_a_pure_function_of_its_inputs(page: str) -> None:
    again = rh.render_html(RESULT, _synthetic(900), rh.figure_svgs(RESULT))
    assert again == page
    other = rh.render_html(RESULT, _synthetic(901), rh.figure_svgs(RESULT))
    assert other != page


# -- a published project ---------------------------------------------------------------------


@pytest.mark.slow
def test_publish_writes_every_request_and_rebuilds_byte_identical() -> None:
    root = tiny_report()
    path = root / rh.REPORT_HTML
    publish_again(root)  # both builds from this test's code (not the session build's)
    first = path.read_bytes()
    result = json.loads((root / "results/result.json").read_text())
    text = first.decode()
    index = rh.unpack(re.search(r'id="se-index">([^<]+)<', text).group(1))  # type: ignore[union-attr]
    requests = sum(
        c["requests"] for s in result["suites"].values() for c in s["seal"]["counts"].values()
    )
    assert index["n"] == requests
    labels = index["labels"]
    assert set(labels["suite"]) == set(result["suites"])
    assert {"ok", "error"} <= set(labels["status"]) and "connection" in labels["error_kind"]
    chunks = re.findall(r'id="se-c\d+">([^<]+)<', text)
    assert sum(len(rh.unpack(c)["samples"]) for c in chunks) == requests
    path.unlink()
    publish_again(root)
    assert path.read_bytes() == first


# -- sealedeval view ---------------------------------------------------------------------------


@pytest.mark.slow
def test_view_serves_the_report_on_loopback_and_stops_on_ctrl_c() -> None:
    results = tiny_report() / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealedeval.cli", "view", "--results", str(results), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a test run started in the background (`pytest &`) ignores SIGINT,
        # the child would inherit that, and Python then installs no KeyboardInterrupt handler
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/report\.html)", line)
        assert m, line
        with urllib.request.urlopen(m.group(1), timeout=10) as r:
            assert r.read() == (results / "report.html").read_bytes()
            assert r.headers["Content-Type"].startswith("text/html")
        base = m.group(1).rsplit("/", 1)[0]
        with urllib.request.urlopen(f"{base}/result.json", timeout=10) as r:
            assert json.loads(r.read())["suites"]
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # say what it was doing (one CI run timed out at 10 s)
            proc.kill()
            out, err = proc.communicate(timeout=10)
            raise AssertionError(f"view still running 30 s after Ctrl-C:\n{out}\n{err}") from None
        assert rc == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_view_without_a_report_is_a_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sealedeval.cli",
            "view",
            "--results",
            str(tmp_path),
            "--no-browser",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"sealedeval: error: {tmp_path / 'report.html'}: missing; run `sealedeval publish` first"
    )


@pytest.mark.slow
def test_a_suite_over_the_cap_shows_evenly_spaced_samples_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``SAMPLES_MAX`` requests a suite's samples are that many, evenly spaced in the
    latest rows' order, each with every graded row it has (as without the cap); the page says
    how many of how many it shows."""
    from sealedeval.store.raw import latest_records, raw_files

    root = tiny_report()
    result = json.loads((root / "results/result.json").read_text())
    every = {(s["suite"], s["key"]): s for s in rh.read_samples(root, result)}
    cap = 7
    monkeypatch.setattr(rh, "SAMPLES_MAX", cap)
    capped = rh.read_samples(root, result)
    for suite in result["suites"]:
        keys = [r["request_key"] for r in latest_records(raw_files(root, suite))]
        assert len(keys) > cap
        want = {keys[i * len(keys) // cap] for i in range(cap)}
        mine = [s for s in capped if s["suite"] == suite]
        assert {s["key"] for s in mine} == want and all(s["raw"] for s in mine)
        for s in mine:
            assert s == every[(suite, s["key"])]
    total = sum(
        c["requests"] for s in result["suites"].values() for c in s["seal"]["counts"].values()
    )
    text = "".join(p for p in rh.page_parts(result, capped, []) if isinstance(p, str))
    assert f"{len(capped):,} of the {total:,} requests" in text
    full = "".join(p for p in rh.page_parts(result, list(every.values()), []) if isinstance(p, str))
    assert "Every request of every suite: filter" in full and "evenly spaced" not in full


def test_the_spread_of_samples_reads_graded_keys_a_row_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a graded file of several row groups and hex request keys (looked up by their
    bytes, a row group at a time) the chosen graded rows are those of the chosen raw rows
    plus every graded row without a raw row, as a dict of the keys would pick them."""
    from sealedeval.stages import artifacts
    from sealedeval.store import raw as store
    from sealedeval.store.columns import HexKeys

    keys = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(40)]
    writer = store.RawWriter(store.raw_dir(tmp_path, "s", "e"), flush_rows=7)
    for k in keys[:30]:
        writer.append(_raw(k, engine="e", status="ok"))
    writer.close()
    raw = store.latest_records(store.raw_files(tmp_path, "s"))
    assert isinstance(raw, store.LatestRows)
    assert isinstance(store.record_column(raw, "request_key"), HexKeys)  # looked up by bytes
    graded = [  # two graders a key, and keys 30..39 graded without a raw row
        {"request_key": k, "grader": g, "passed": True} for k in keys for g in ("a", "b")
    ]
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 9)
    path = artifacts.graded_path(tmp_path, "s")
    artifacts.write_graded(path, graded)
    at, keep = rh._spread(raw, artifacts.read_graded(path), 4)
    order = [r["request_key"] for r in raw]
    chosen = {order[i] for i in at.tolist()}
    assert len(chosen) == 4
    want = [
        j
        for j, g in enumerate(graded)
        if g["request_key"] in chosen or g["request_key"] in keys[30:]
    ]
    assert keep.tolist() == want
    plain = [dict(r) for r in raw]  # the same rows as dicts: keys are looked up another way
    at2, keep2 = rh._spread(plain, graded, 4)
    assert at2.tolist() == at.tolist() and keep2.tolist() == want


@pytest.mark.parametrize("cap", [5, 1000], ids=["spread", "every-row"])
def test_samples_chosen_by_key_bucket_are_the_samples_chosen_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    """Past ``BUCKET_ROWS`` attempts the latest rows are chosen a key-prefix bucket at a time
    (``store.buckets``): the same sampled raw rows, in the same order, with the same graded
    rows (those of graded keys no raw row has too, hex or not) as the choice made in memory."""
    from sealedeval.stages import artifacts
    from sealedeval.store import buckets
    from sealedeval.store import raw as store

    keys = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(60)]
    for engine in ("b", "a"):
        writer = store.RawWriter(store.raw_dir(tmp_path, "s", engine), flush_rows=7)
        for i, k in enumerate(keys[:50]):  # retries: an error before the ok of every third
            if i % 3 == 0:
                writer.append(_raw(f"{engine}{k[1:]}", engine=engine, status="error"))
            writer.append(_raw(f"{engine}{k[1:]}", engine=engine, status="ok", repeat=i))
        writer.close()
    graded = [
        _graded(f"{e}{k[1:]}", g, True)
        for e in ("a", "b")
        for k in keys
        for g in ("x", "y")  # keys 50..59 graded without a raw row
    ] + [_graded("not-a-hex-key", "x", False)]
    monkeypatch.setattr(artifacts, "_WRITE_ROWS", 11)
    artifacts.write_graded(artifacts.graded_path(tmp_path, "s"), graded)
    monkeypatch.setattr(rh, "SAMPLES_MAX", cap)
    seen: list[int] = []
    split = buckets._split_and_choose
    monkeypatch.setattr(
        buckets,
        "_split_and_choose",
        lambda p, w, n, c=(), d=(): seen.append(n) or split(p, w, n, c, d),
    )
    monkeypatch.setattr(buckets, "BUCKET_ROWS", 10**9)
    raw_mem, graded_mem = rh._sampled_rows(tmp_path, "s")
    monkeypatch.setattr(buckets, "BUCKET_ROWS", 8)  # 150 attempts: 32 buckets
    raw_b, graded_b = rh._sampled_rows(tmp_path, "s")
    assert seen == [8]  # the second read chose by bucket, the first did not
    assert [dict(r) for r in raw_b] == [dict(r) for r in raw_mem]
    assert len(raw_b) == min(cap, 100)
    assert [dict(g) for g in graded_b] == [dict(g) for g in graded_mem]
    absent = {g["request_key"] for g in graded_b} - {r["request_key"] for r in raw_b}
    assert len(absent) == 21  # 20 hex keys without a raw row, and the other one
