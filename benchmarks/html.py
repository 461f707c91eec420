"""report.html at scale: file size, build time and load times in a real browser.

Not a test: it measures. For N synthetic requests (default 1,000 and 100,000) it builds the page
from the committed result.json fixture (every suite's sections and figures) plus N samples made
like real rows (a shared system prompt, a question, an answer of a few hundred characters, two
graders, one error in twenty, seeded), then opens it in Debian's chromium through Playwright and
reads the browser's own clocks (``performance``, relative to navigation start):

* first contentful paint (the summary at the top of the page);
* samples ready (the index inflated, the first page of the list drawn);
* sample #N-1 open: a fresh load of ``report.html#sample=<key of the last sample>`` until its
  detail is drawn (the ``sample-shown`` mark);
* a full-text search over every sample: the first one inflates every chunk and caches its
  search text, the second reuses it.

    python benchmarks/html.py [--n 1000 100000] [--keep DIR]
    python benchmarks/html.py screenshots [--out docs/img]

``screenshots`` builds the tiny project (tests/publish/html_fixture.py: reference engine, no
model) and saves docs/img/report-summary.png and docs/img/report-sample.png.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name shadows the standard
# library's ``html`` (which publish/html.py imports): the repository root replaces it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
sys.path.insert(0, str(REPO))

from tests.publish.html_fixture import browser  # noqa: E402

from sealedeval.publish import html as rh  # noqa: E402
from sealedeval.store.schema import raw_row  # noqa: E402

SEED = 20261201
SEARCH_DEBOUNCE_MS = 250  # report.js waits this long after the last keystroke
_VOCABULARY = (
    "deploy rollback health check status latency cache region customer invoice ledger "
    "panel glucose ferritin definition version record schema answer because therefore "
    "however the a of to in is was were with without under over before after during "
    "report item case value"
)
WORDS = tuple(_VOCABULARY.split())
SYSTEM = "You answer questions using only the material below.\n\n" + "\n".join(
    f"=== file{i}.md ===\n" + " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(60))
    for i in range(6)
)


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def synthetic_samples(n: int) -> list[dict[str, Any]]:
    """``n`` samples through the real join (``suite_samples``), over 3 suites and 4 engines."""
    rng = random.Random(SEED)
    out: list[dict[str, Any]] = []
    per_suite = {"golden": n - 2 * (n // 3), "bloodpanel": n // 3, "grounding": n // 3}
    k = 0
    for suite, m in per_suite.items():
        raw, graded = [], []
        for j in range(m):
            key = f"{k:032x}"
            k += 1
            err = rng.random() < 0.05
            question = f"Question {j % 500}: " + _text(rng, 12) + "?"
            raw.append(
                raw_row(
                    request_key=key,
                    suite=suite,
                    item_id=f"{suite[:2]}{j % 500:03d}",
                    condition=f"C{j % 6}",
                    repeat=j % 3,
                    seed=rng.randrange(2**31),
                    engine=f"engine-{j % 4}",
                    engine_kind="openai_chat",
                    model=f"model-{j % 4}",
                    engine_identity="{}",
                    params='{"max_tokens":256,"temperature":0.7}',
                    messages=json.dumps(
                        [
                            {"role": "system", "content": SYSTEM},
                            {"role": "user", "content": question},
                        ]
                    ),
                    output_text="" if err else _text(rng, rng.randrange(20, 120)),
                    latency_s=rng.random() * 3,
                    cost_usd=rng.random() / 1000,
                    tokens_in=600,
                    tokens_out=rng.randrange(20, 200),
                    started_at="2026-12-01T00:00:00Z",
                    finished_at="2026-12-01T00:00:01Z",
                    status="error" if err else "ok",
                    error_kind="server" if err else "",
                    error_message="HTTP 503 from the server" if err else "",
                    rubric_sha256="0" * 64,
                    seal_commit="0" * 40,
                    sealed=True,
                    harness_version="0",
                )
            )
            if not err:
                for grader in ("regex", "judge"):
                    ok = rng.random() < 0.7
                    graded.append(
                        {
                            "request_key": key,
                            "grader": grader,
                            "grader_version": "1",
                            "score": float(ok),
                            "passed": ok,
                            "category": "correct" if ok else "wrong",
                            "details": json.dumps({"matched": ok, "rule": grader}),
                        }
                    )
        out += rh.suite_samples(suite, raw, graded)
    return out


def _ms(page: Any, name: str) -> float:
    v = page.evaluate(f"(performance.getEntriesByName({json.dumps(name)})[0] || {{}}).startTime")
    return float(v) if v is not None else float("nan")


def measure(path: Path, last_key: str, ctx: Any) -> dict[str, float]:
    url = path.as_uri()
    p = ctx.new_page()
    p.goto(url, timeout=600_000)
    p.wait_for_selector("body[data-ready]", state="attached", timeout=600_000)
    fcp = _ms(p, "first-contentful-paint")
    ready = _ms(p, "samples-ready")
    search = []
    for q in ("zzqx-nowhere", "zzqx-elsewhere"):  # the first inflates every chunk, then cached
        t0 = time.perf_counter()
        p.fill("#f-search", q)
        p.wait_for_selector(
            f"body[data-query='{q}'][data-searching='0']", state="attached", timeout=600_000
        )
        search.append((time.perf_counter() - t0) * 1000 - SEARCH_DEBOUNCE_MS)
    p.close()
    p = ctx.new_page()
    p.goto(f"{url}#sample={last_key}", timeout=600_000)
    p.wait_for_selector(f'body[data-sample="{last_key}"]', state="attached", timeout=600_000)
    shown = _ms(p, "sample-shown")
    p.close()
    return {"fcp": fcp, "ready": ready, "open_last": shown, "search": search[0], "again": search[1]}


def run(ns: list[int], keep: Path | None) -> None:
    result = json.loads((REPO / "tests/publish/result_all.json").read_text())
    t0 = time.perf_counter()
    figs = rh.figure_svgs(result)
    print(f"figures drawn in {time.perf_counter() - t0:.1f} s ({len(figs)} SVGs)")
    out_dir = keep or Path(tempfile.mkdtemp(prefix="sealedeval-html-bench-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with browser() as ctx:
        for n in ns:
            samples = synthetic_samples(n)
            t0 = time.perf_counter()
            text = rh.render_html(result, samples, figs)
            build_s = time.perf_counter() - t0
            path = out_dir / f"report-{n}.html"
            path.write_text(text, encoding="utf-8")
            raw_mb = sum(len(json.dumps(s)) for s in samples) / 1e6
            m = measure(path, samples[-1]["key"], ctx)
            rows.append((n, path.stat().st_size / 1e6, raw_mb, build_s, m))
    print(
        f"{'requests':>9} {'file MB':>8} {'JSON MB':>8} {'render s':>8} {'FCP ms':>7} "
        f"{'ready ms':>8} {'open #n-1 ms':>12} {'search ms':>9} {'again ms':>8}"
    )
    for n, mb, raw_mb, build_s, m in rows:
        print(
            f"{n:>9,} {mb:>8.1f} {raw_mb:>8.1f} {build_s:>8.2f} {m['fcp']:>7.0f} "
            f"{m['ready']:>8.0f} {m['open_last']:>12.0f} {m['search']:>9.0f} {m['again']:>8.0f}"
        )
    print(f"pages under {out_dir}")


def screenshots(out: Path) -> None:
    from tests.publish.html_fixture import build

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, browser() as ctx:
        root = build(Path(tmp) / "proj")
        result = json.loads((root / "results/result.json").read_text())
        samples = rh.read_samples(root, result)
        # a failed verdict with its grader's details: what a reviewer opens a sample for
        pick = next(
            s
            for s in samples
            if s["suite"] == "grounding" and any(g["passed"] is False for g in s["grades"])
        )
        url = (root / rh.REPORT_HTML).as_uri()
        p = ctx.new_page()
        p.goto(url)
        p.wait_for_selector("body[data-ready]", state="attached")
        p.screenshot(path=str(out / "report-summary.png"))
        p.goto(f"{url}#sample={pick['key']}")
        p.reload()
        p.wait_for_selector(f'body[data-sample="{pick["key"]}"]', state="attached")
        p.screenshot(path=str(out / "report-sample.png"))
        p.close()
    print(f"wrote {out / 'report-summary.png'} and {out / 'report-sample.png'}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["screenshots"]:
        ap = argparse.ArgumentParser(prog="benchmarks/html.py screenshots")
        ap.add_argument("--out", type=Path, default=REPO / "docs/img")
        screenshots(ap.parse_args(args[1:]).out)
        return 0
    ap = argparse.ArgumentParser(prog="benchmarks/html.py")
    ap.add_argument("--n", type=int, nargs="+", default=[1_000, 100_000])
    ap.add_argument("--keep", type=Path, help="write the pages here (default: a temp dir)")
    ns = ap.parse_args(args)
    run(ns.n, ns.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
