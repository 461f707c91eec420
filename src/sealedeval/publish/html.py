"""results/report.html: one self-contained page — summary, suite sections, figures, every sample.

The page is what a reviewer opens first: a summary per suite (headline with its interval, seal
and audit status, completeness, pre-registered comparisons), then each suite's report section
(the same Markdown report.md gets from the suite's ``report_sections`` hook, converted here by a
small deterministic Markdown subset) with its figures inlined as SVG, then a sample browser over
every request: prompt, response, each grader's verdict and details, trajectory, error, latency
and cost, with filters, free-text search and a ``#sample=<key>`` link per sample (a suite of
more than ``SAMPLES_MAX`` requests shows that many, evenly spaced, and the page says so).

Why one file with everything inline: it must open from a deposit or an e-mail attachment with no
server and no network (a Content-Security-Policy of ``default-src 'none'`` makes the browser
refuse any fetch, so "self-contained" is enforced, not hoped for). Why compressed chunks: at
100k requests the prompts and answers are hundreds of MB of text; each chunk of samples is
canonical JSON, deflated and base64-encoded in its own inert ``<script>`` element, and only the
chunks a view needs are inflated (``DecompressionStream``), so the page paints before any sample
data is parsed (``benchmarks/html.py`` measures size and load times).

Determinism: no clock, canonical JSON, fixed zlib level, figures drawn by the same code (and
bytes) as ``results/figures``. Publish imports no suite: sections come through the registry's
presentation hooks.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.plugins import presentation_hook
from sealedeval.publish import figures, first_page, generic, summary
from sealedeval.publish.first_page import FOREST
from sealedeval.render.md import price_text
from sealedeval.render.metrics import added_engines, added_in_any, engine_label
from sealedeval.stages import artifacts
from sealedeval.stages.grade import BASE_COLUMNS, raw_positions
from sealedeval.stages.pipeline import load_items, rows_rubric
from sealedeval.store import buckets
from sealedeval.store.arrow import give_back_memory
from sealedeval.store.columns import Coded, HexKeys, KeyIndex, spelled_keys
from sealedeval.store.raw import LatestRows, latest_records, part_rows, raw_files, record_column

REPORT_HTML = Path("results/report.html")

CHUNK_SAMPLES = 400
"""Samples per compressed chunk: opening one sample inflates one chunk (~ms), while the per-chunk
overhead (a script element, a deflate stream restart) stays small at 100k samples (250 chunks)."""

SNIPPET_CHARS = 120
"""Characters of the answer (or error) shown in the sample list, before a sample is opened."""

SHARED_TEXT_CHARS = 200
"""Message contents this long are stored once per chunk and referenced (``chunk_doc``)."""

ZLIB_LEVEL = 6
"""Fixed compression level: the bytes of the page depend on it, so it is a constant. Level 9
took half as long again as 6 for 1.5% fewer bytes at 100k samples (benchmarks/html.py)."""

INDEX_DIGITS = 6
"""Significant digits of latency and cost in the index (the list shows 3, a sample 4)."""

_GRADED_BASE = (*BASE_COLUMNS, "suite", "suite_version")
"""The graded-row fields every grader writes (stages/grade.py); the rest are a suite's extras."""


# -- Markdown subset ---------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_SAFE_URL = re.compile(r"^(https?://|mailto:|#|[\w./-])", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_LIST = re.compile(r"^(\s*)([-*+]|\d+\.)\s+(.*)$")
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def _link(m: re.Match[str]) -> str:
    bang, text, url = m.groups()
    if not _SAFE_URL.match(html.unescape(url)) or url.lower().startswith("javascript"):
        return m.group(0)
    if bang:  # images are not fetched: the figures are inlined separately; name the file
        return f'<a href="{url}">{text or url}</a>'
    return f'<a href="{url}">{text}</a>'


def inline_md(text: str) -> str:
    """Escape ``text`` and apply the inline subset: `code`, **bold**, *emphasis*, [links](url)."""
    out = []
    for i, part in enumerate(_CODE_SPAN.split(text)):
        if i % 2:
            out.append(f"<code>{html.escape(part)}</code>")
            continue
        s = html.escape(part)
        s = _LINK.sub(_link, s)
        s = _BOLD.sub(r"<strong>\1</strong>", s)
        s = _EM.sub(r"<em>\1</em>", s)
        out.append(s)
    return "".join(out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines: Sequence[str]) -> str:
    rows = [_cells(x) for x in lines if not _TABLE_RULE.match(x.strip())]
    has_head = len(lines) > 1 and bool(_TABLE_RULE.match(lines[1].strip()))
    out = ['<div class="table-wrap"><table>']
    if has_head and rows:
        out.append("<thead><tr>" + "".join(f"<th>{inline_md(c)}</th>" for c in rows[0]))
        out.append("</tr></thead>")
        rows = rows[1:]
    out.append("<tbody>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{inline_md(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _list(lines: Sequence[str]) -> str:
    """Nested lists by indentation (two spaces or more per level, as our sections write them)."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, tag)
    for line in lines:
        m = _LIST.match(line)
        if m is None:  # a continuation line of the previous item
            out.append(" " + inline_md(line.strip()))
            continue
        indent, marker, body = len(m.group(1)), m.group(2), m.group(3)
        tag = "ol" if marker[0].isdigit() else "ul"
        if stack and indent > stack[-1][0]:
            stack.append((indent, tag))
            out.append(f"<{tag}><li>")
        else:
            while stack and indent < stack[-1][0]:
                out.append(f"</li></{stack.pop()[1]}>")
            if stack:
                out.append("</li><li>")
            else:
                stack.append((indent, tag))
                out.append(f"<{tag}><li>")
        out.append(inline_md(body))
    while stack:
        out.append(f"</li></{stack.pop()[1]}>")
    return "".join(out)


def markdown_html(text: str, *, heading_offset: int = 0) -> str:
    """HTML for the Markdown our report sections use: ATX headings, pipe tables, (nested) lists,
    fenced code, paragraphs and the inline subset. Deterministic and escaping every text: a
    prompt quoted in a section cannot inject markup."""
    lines = text.splitlines()
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + inline_md(" ".join(para)) + "</p>")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1 : j])) + "</code></pre>")
            i = j + 1
            continue
        h = _HEADING.match(line)
        if h:
            flush()
            level = min(6, len(h.group(1)) + heading_offset)
            out.append(f"<h{level}>{inline_md(h.group(2).strip())}</h{level}>")
        elif stripped.startswith("|"):
            flush()
            j = i
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        elif _LIST.match(line) and not (para and line.startswith(" ")):
            flush()
            j = i + 1
            while j < len(lines) and lines[j].strip() and not _HEADING.match(lines[j]):
                if not (_LIST.match(lines[j]) or lines[j].startswith(" ")):
                    break
                j += 1
            out.append(_list(lines[i:j]))
            i = j
            continue
        elif not stripped:
            flush()
        else:
            para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


# -- figures -----------------------------------------------------------------------------------

_SVG_START = re.compile(rb"<svg\b")
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_ID = re.compile(r'\bid="([^"]+)"')
_HREF = re.compile(r'((?:xlink:)?href)="#([^"]+)"')
_URL = re.compile(r"url\(#([^)]+)\)")


def inline_svg(data: bytes, prefix: str) -> str:
    """An SVG file as an element inside the page: the XML prolog, DOCTYPE and metadata dropped,
    every id (and each reference to one) prefixed, since matplotlib reuses ids such as
    ``figure_1`` and clip paths across files and one page holds every figure."""
    m = _SVG_START.search(data)
    if m is None:
        raise ValueError(f"figure {prefix}: not an SVG")
    text = data[m.start() :].decode("utf-8")
    text = _METADATA.sub("", text)
    text = _ID.sub(lambda x: f'id="{prefix}-{x.group(1)}"', text)
    text = _HREF.sub(lambda x: f'{x.group(1)}="#{prefix}-{x.group(2)}"', text)
    text = _URL.sub(lambda x: f"url(#{prefix}-{x.group(1)})", text)
    return text.strip()


def figure_svgs(
    result: Mapping[str, Any], drawn: Mapping[str, bytes] | None = None
) -> list[tuple[str, str, str, bytes]]:
    """``(suite, stem, caption, svg bytes)`` for every figure: from ``drawn`` (the files
    ``publish.figures.build_figures`` rendered for results/figures/, so the page embeds the
    very bytes written there), else drawn here."""

    if drawn is None:
        drawn = figures.build_figures(result, formats=("svg",))
    return [(s, stem, c, drawn[f"{stem}.svg"]) for s, stem, c in figure_slots(result)]


# -- samples -----------------------------------------------------------------------------------


def _json_field(text: Any, default: Any) -> Any:
    """A raw row's JSON-string column as a value (kept as text when it is not JSON: shown as is,
    never dropped)."""
    if text is None or text == "":
        return default
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _grade(g: Mapping[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in g.items() if k not in _GRADED_BASE and v is not None}
    return {
        "grader": g.get("grader"),
        "version": g.get("grader_version"),
        "score": g.get("score"),
        "passed": g.get("passed"),
        "category": g.get("category"),
        "details": _json_field(g.get("details"), {}),
        "extra": extra,
    }


_GRADE_FIELDS = frozenset({"grader", "grader_version", "score", "passed", "category", "details"})
"""The graded-row fields a sample's grade shows besides its suite's extras (``_grade``)."""


def _shared_grade(
    g: Mapping[str, Any], seen: dict[tuple[Any, ...], tuple[dict[str, Any], list[Any]]]
) -> dict[str, Any]:
    """``_grade(g)``, one dict per distinct grade (read-only): an item's repeats and most
    answers grade alike, and a dict per graded row was ~0.8 KB of every sample. A value that
    is not hashable (a parsed ``details``) counts by identity, and is kept alive with the
    grade so that identity is not reused."""
    held: list[Any] = []
    parts: list[Any] = []
    for k, v in g.items():
        if k in _GRADE_FIELDS or (k not in _GRADED_BASE and v is not None):
            if isinstance(v, float):  # by its bits: -0.0 shows as itself, not as 0.0
                parts += (k, float, v.hex())
            elif v is None or isinstance(v, str | int):
                parts += (k, type(v), v)
            else:
                held.append(v)
                parts += (k, "id", id(v))
    key = tuple(parts)
    found = seen.get(key)
    if found is None:
        found = seen[key] = (_grade(g), held)
    return found[0]


def _num(v: Any) -> float:
    try:
        return float(v or 0.0)
    except (TypeError, ValueError):
        return 0.0


TARGET_FIELDS = (
    "target",
    "expected",
    "expected_answer",
    "answer",
    "reference",
    "reference_answer",
    "reference_value",
    "gold",
    "solution",
)
"""Item fields that hold the expected answer, tried in this order when the suite does not name
its own (the ``tasks`` kind's default target column first, golden's ``answer``)."""


@dataclass(frozen=True)
class SampleView:
    """How one suite's samples answer "why was this wrong?": which grader's verdict is the
    suite's own (the one its headline counts), which item fields hold the expected answer, and
    whether the verdict is the grade's category (``"category"``: "correct", "abstained") or
    its pass / fail and score (``"passed"``: for suites that score rather than judge).
    ``None``: not named (the verdict is then the category every grader's row shares, or the
    only grader's; the target the first of ``TARGET_FIELDS`` the item has)."""

    primary_grader: str | None = None
    target_field: str | tuple[str, ...] | None = None
    verdict: str = "category"


VERDICT_BY = ("category", "passed")


def _find_key(doc: Any, key: str) -> Any:
    """The first value under ``key`` anywhere in a JSON document (depth first), or None."""
    if isinstance(doc, Mapping):
        if doc.get(key) is not None:
            return doc[key]
        for v in doc.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for v in doc:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def sample_view(name: str, section: Mapping[str, Any]) -> SampleView:
    """From the suite's summary hints (``samples``: ``primary_grader``, ``target_field`` (a
    field or a list of them), ``verdict``), else from result.json: the analysis design's
    ``primary`` grader (the ``tasks`` kind's) and the suite's configured ``target_column``
    (its design parameters)."""
    given = summary.hints(name, section).get("samples") or {}
    design = (section.get("analysis") or {}).get("design") or {}
    primary = given.get("primary_grader") or (
        design.get("primary") if isinstance(design, Mapping) else None
    )
    target = given.get("target_field") or _find_key(section.get("design"), "target_column")
    if isinstance(target, list):
        target = tuple(str(t) for t in target)
    by = str(given.get("verdict") or "category")
    if by not in VERDICT_BY:
        raise ValueError(f"suite {name}: summary hint samples.verdict {by!r} not in {VERDICT_BY}")
    return SampleView(
        primary_grader=str(primary) if isinstance(primary, str) and primary else None,
        target_field=target if isinstance(target, str | tuple) and target else None,
        verdict=by,
    )


def _present(v: Any) -> bool:
    return v is not None and v != "" and v != []


def expected_answer(item: Mapping[str, Any] | None, view: SampleView) -> dict[str, Any] | None:
    """``{"field": ..., "value": ...}``: the item's expected answer, or None when the item
    (or the field) is not there. A value is shown as stored (a list lists alternatives);
    several named fields give ``{field: value}``."""
    if not item:
        return None
    if isinstance(view.target_field, tuple):
        got = {f: _json_field(item.get(f), None) for f in view.target_field}
        got = {f: v for f, v in got.items() if _present(v)}
        return {"field": ", ".join(got), "value": got} if got else None
    fields = [view.target_field] if view.target_field else list(TARGET_FIELDS)
    for f in fields:
        v = item.get(f)
        if _present(v):
            return {"field": f, "value": _json_field(v, v)}
    return None


def _is(g: Mapping[str, Any], grader: str) -> bool:
    """Whether the grade ``g`` (``_grade``'s) is the grader ``grader``: by its id (the
    ``tasks`` kind's ``grader_id`` column, one kind may be configured twice) or its name."""
    extra = g.get("extra") or {}
    return grader in (str(extra.get("grader_id") or ""), str(g.get("grader") or ""))


def primary_verdict(
    grades: Sequence[Mapping[str, Any]], primary: str | None = None, by: str = "category"
) -> dict[str, Any]:
    """The sample's one verdict, the suite's own: ``{"word", "grader", "passed", "tone"}``.

    The primary grader's (``primary``, by its id or name) when it graded the sample, else the
    only grader's; its category names the verdict when it has one ("correct", "abstained")
    and ``by`` is "category", else pass / fail (with the score when it is not 0 or 1).
    Without either, the category every row shares (suites write the primary decision on
    every grader's row). Only when graders disagree and none is primary does it count them
    ("1/2 graders pass"). ``tone`` is pass / fail / "" (neither known)."""
    if not grades:
        return {"word": "ungraded", "grader": "", "passed": None, "tone": ""}
    chosen = next((g for g in grades if primary and _is(g, primary)), None)
    if chosen is None and len(grades) == 1:
        chosen = grades[0]
    if chosen is not None:
        p = chosen.get("passed")
        word = "n/a" if p is None else "pass" if p else "fail"
        score = chosen.get("score")
        if isinstance(score, int | float) and score not in (0, 1) and math.isfinite(score):
            word += f" (score {score:.3f})"
        if by == "category" and chosen.get("category"):
            word = str(chosen["category"])
        tone = "" if p is None else "pass" if p else "fail"
        return {"word": word, "grader": str(chosen.get("grader") or ""), "passed": p, "tone": tone}
    cats = {str(g.get("category") or "") for g in grades}
    if by == "category" and len(cats) == 1 and "" not in cats:
        return {"word": cats.pop(), "grader": "", "passed": None, "tone": ""}
    n_pass = sum(1 for g in grades if g.get("passed") is True)
    tone = "pass" if n_pass == len(grades) else "fail" if n_pass == 0 else ""
    word = f"{n_pass}/{len(grades)} graders pass"
    return {"word": word, "grader": "", "passed": None, "tone": tone}


def suite_samples(
    suite: str,
    raw: Iterable[Mapping[str, Any]],
    graded: Iterable[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Any]] | None = None,
    view: SampleView | None = None,
) -> list[dict[str, Any]]:
    """One sample per request of ``suite``: the latest raw row of its key joined with every graded
    row of that key (a suite may grade one answer with several graders). A graded key with no raw
    row still becomes a sample (marked so): nothing is silently dropped. Ordered by engine, item,
    condition, repeat and key, so the browser lists related requests together.

    Each sample carries its ``verdict`` (``primary_verdict``) and its ``target``: the expected
    answer from ``items`` (the items file, by item id) as ``view`` says where it lives."""
    view = view or SampleView()
    items = items or {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    grades: dict[tuple[Any, ...], tuple[dict[str, Any], list[Any]]] = {}
    for g in graded:
        by_key.setdefault(str(g.get("request_key")), []).append(_shared_grade(g, grades))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    # a request's messages are parsed once per distinct text and the value shared (read-only):
    # an item's repeats send the same messages, ~5 KB a sample once parsed
    parsed: dict[str, Any] = {}

    def shared(text: Any) -> Any:
        if not isinstance(text, str):
            return _json_field(text, [])
        value = parsed.get(text)
        if value is None:
            value = parsed[text] = _json_field(text, [])
        return value

    for r in raw:
        key = str(r["request_key"])
        seen.add(key)
        out.append(
            {
                "key": key,
                "suite": suite,
                "engine": str(r["engine"]),
                "condition": str(r["condition"]),
                "item": str(r["item_id"]),
                "repeat": int(r["repeat"] or 0),
                "status": str(r["status"]),
                "error_kind": str(r.get("error_kind") or ""),
                "error_message": str(r.get("error_message") or ""),
                "latency_s": _num(r.get("latency_s")),
                "cost_usd": _num(r.get("cost_usd")),
                "tokens_in": int(r.get("tokens_in") or 0),
                "tokens_out": int(r.get("tokens_out") or 0),
                "attempts": int(r.get("attempts") or 1),
                "finish_reason": str(r.get("finish_reason") or ""),
                "engine_path": str(r.get("engine_path") or ""),
                "model": str(r.get("model") or ""),
                "seed": int(r.get("seed") or 0),
                "params": _json_field(r.get("params"), {}),
                "messages": shared(r.get("messages")),
                "output": str(r.get("output_text") or ""),
                "trajectory": shared(r.get("trajectory")),
                "grades": by_key.get(key, []),
                "raw": True,
            }
        )
        out[-1]["verdict"] = primary_verdict(out[-1]["grades"], view.primary_grader, view.verdict)
        out[-1]["target"] = expected_answer(items.get(out[-1]["item"]), view)
    for key, gs in by_key.items():
        if key in seen:
            continue
        g0 = gs[0]
        out.append(
            {
                "key": key,
                "suite": suite,
                "engine": str(g0.get("engine") or ""),
                "condition": str(g0.get("condition") or ""),
                "item": str(g0.get("item_id") or ""),
                "repeat": int(g0.get("repeat") or 0),
                "status": str(g0.get("status") or ""),
                "error_kind": "",
                "error_message": "graded row without a raw row under results/raw",
                "latency_s": 0.0,
                "cost_usd": 0.0,
                "tokens_in": 0,
                "tokens_out": 0,
                "attempts": 0,
                "finish_reason": "",
                "engine_path": "",
                "model": "",
                "seed": 0,
                "params": {},
                "messages": [],
                "output": "",
                "trajectory": [],
                "grades": gs,
                "raw": False,
            }
        )
        out[-1]["verdict"] = primary_verdict(out[-1]["grades"], view.primary_grader, view.verdict)
        out[-1]["target"] = expected_answer(items.get(out[-1]["item"]), view)
    out.sort(key=lambda s: (s["engine"], s["item"], s["condition"], s["repeat"], s["key"]))
    return out


def read_samples(
    root: Path, result: Mapping[str, Any], cfg: Config | None = None
) -> list[dict[str, Any]]:
    """Every published suite's samples, from what publish already reads: the graded file the
    grade stage wrote and the latest raw row per key (the prompts and answers are only there),
    with each item's expected answer from the items file, or, when the workflow's generate
    step did not write one (``sealedeval run`` alone) and ``cfg`` is given, from the items the
    suite generates under the rows' rubric hash (what the analysis graded against)."""

    out: list[dict[str, Any]] = []
    for name, section in result.get("suites", {}).items():
        raw, graded = _sampled_rows(root, name)
        path = artifacts.items_path(root, name)
        items: list[dict[str, Any]] = []
        if path.exists():
            items = artifacts.read_items(path)
        elif cfg is not None and raw:
            items = load_items(cfg, name, rows_rubric(raw))
        by_id = {artifacts.item_id(i): i for i in items}
        samples = suite_samples(name, raw, graded, by_id, sample_view(name, section))
        added = added_engines(section)
        for s in samples:  # an engine added after the seal is labelled in the sample view too
            s["engine"] = engine_label(s["engine"], s["engine"] in added)
        out += samples
    return out


def _sampled_rows(
    root: Path, name: str
) -> tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]:
    """A suite's sampled latest raw rows and their graded rows (``SAMPLES_MAX``, ``_spread``).

    Past ``buckets.BUCKET_ROWS`` attempts the latest rows are chosen a key-prefix bucket at a
    time (``store.buckets``), the same rows in the same order: at ten million rows every
    attempt's key held at once was most of publish's peak, and it grew with the rows."""
    import numpy as np

    gpath = artifacts.graded_path(root, name)
    files = raw_files(root, name)
    if sum(part_rows(f) for f in files) > buckets.BUCKET_ROWS:
        with buckets.latest_buckets(files) as lb:
            if lb is not None:
                if len(lb) <= SAMPLES_MAX:
                    return lb.rows_at(np.arange(len(lb))), artifacts.read_graded(gpath)
                raw = lb.rows_at(_spread_at(len(lb), SAMPLES_MAX))
                keep = _spread_keys(record_column(raw, "request_key"), lb, gpath)
                give_back_memory()
                return raw, artifacts.read_graded(gpath, keep)
    graded: Sequence[Mapping[str, Any]] = artifacts.read_graded(gpath)
    latest: Sequence[Mapping[str, Any]] = latest_records(files)
    if len(latest) <= SAMPLES_MAX:
        return latest, graded
    at, keep = _spread(latest, graded, SAMPLES_MAX)
    latest = latest.subset(at) if isinstance(latest, LatestRows) else [latest[i] for i in at]
    del at
    give_back_memory()  # the keys of every row, read to choose: not the samples' peak
    return latest, artifacts.read_graded(gpath, keep)


def _spread_keys(chosen: Sequence[str], lb: buckets.LatestBuckets, gpath: Path) -> Any:
    """``_spread``'s graded positions when the latest rows were chosen by bucket: the graded
    rows of the ``chosen`` keys and every graded row whose key no latest row has, the graded
    file read a row group at a time and its keys looked up in the buckets' sorted keys."""
    import numpy as np

    index = KeyIndex(chosen) if isinstance(chosen, HexKeys) else None
    mine = set(chosen) if index is None else set()
    keep: list[Any] = []
    start = 0
    for piece in artifacts.read_graded(gpath).parts():
        col = artifacts.graded_column(piece, "request_key")
        values, codes = (col.values, col.code_view()) if isinstance(col, Coded) else (col, None)
        if isinstance(values, HexKeys):
            present = lb.contains(values.packed)
        else:
            present = _latest_has(lb, values)
        if index is not None:
            hit = (index.find(values) >= 0) | ~present
        else:
            hit = np.fromiter((v in mine for v in values), dtype=bool, count=len(values))
            hit |= ~present
        if codes is not None:
            hit = hit[codes]
        keep.append(np.flatnonzero(hit) + start)
        start += len(piece)
    return np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)


def _latest_has(lb: buckets.LatestBuckets, values: Sequence[Any]) -> Any:
    """Which keys (strings) are latest rows' keys: those that spell a key of the buckets'
    width, by their bytes; no other key is any latest row's."""
    import numpy as np

    out = np.zeros(len(values), dtype=bool)
    at, packed = spelled_keys(values, lb.width)
    if len(at):
        out[at] = lb.contains(packed)
    return out


SAMPLES_MAX = 100_000
"""Requests of one suite the page holds at most: ``benchmarks/html.py`` measures the page at
100k samples (hundreds of MB of text before compression); ten million were ~100 GB of sample
dicts before a byte was written. Beyond it, an evenly spaced selection (``_spread``)."""


def _spread(
    raw: Sequence[Mapping[str, Any]], graded: Sequence[Mapping[str, Any]], n: int
) -> tuple[Any, Any]:
    """Positions of ``n`` of the latest rows evenly spaced in their canonical order (engine,
    request key: every engine in proportion, keys in hash order within one), and of their
    graded rows with every graded row that has no raw row (those are always shown: nothing
    silently dropped); both ascending numpy integers. Only the request keys are read here:
    the caller reads the chosen rows' other columns from those rows alone. Deterministic:
    the same rows give the same selection.

    Hex request keys (every key sealedeval makes) are looked up by their bytes, the graded
    file's keys a row group at a time (``GradedRows.parts``): its whole key column and every
    graded row's raw position were ~0.6 GB of publish's peak at ten million rows."""
    import numpy as np

    total = len(raw)
    at = _spread_at(total, n)
    chosen = np.zeros(total, dtype=bool)
    chosen[at] = True
    keys = record_column(raw, "request_key")
    keep: list[Any] = []
    start = 0
    if isinstance(keys, HexKeys):
        index = KeyIndex(keys)
        pieces = graded.parts() if isinstance(graded, artifacts.GradedRows) else [graded]
        for piece in pieces:
            col = artifacts.graded_column(piece, "request_key")
            if isinstance(col, Coded):
                p = index.find(col.values)[col.code_view()]
            else:
                p = index.find(col)
            hit = (p < 0) | chosen[np.maximum(p, 0)]
            keep.append(np.flatnonzero(hit) + start)
            start += len(piece)
    else:
        positions = raw_positions(graded, raw)
        for start in range(0, len(graded), _SPREAD_STEP):
            p = np.asarray(positions[start : start + _SPREAD_STEP], dtype=np.int64)
            hit = (p < 0) | chosen[np.maximum(p, 0)]
            keep.append(np.flatnonzero(hit) + start)
    return at, np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)


def _spread_at(total: int, n: int) -> Any:
    """``n`` positions evenly spaced among ``total`` (ascending numpy int64; ``n <= total``)."""
    import numpy as np

    return np.arange(n, dtype=np.int64) * total // n


_SPREAD_STEP = 1 << 20
"""Graded rows per step of ``_spread``."""


def verdict_tokens(grades: Sequence[Mapping[str, Any]], verdict: str | None = None) -> list[str]:
    """What the verdict filter matches on: the sample's own verdict (``verdict: <word>``, from
    ``primary_verdict``), ``<grader>: pass|fail|n/a`` per grader, each category
    (``category: <c>``), ``all graders pass`` / ``some grader fails``, or ``ungraded``.
    Per grader, because graders mean different things (golden's abstention grader "passes" an
    abstention), so one pooled verdict per sample would mislead."""
    if not grades:
        return ["ungraded"]
    out: list[str] = [f"verdict: {verdict}"] if verdict else []
    for g in grades:
        p = g.get("passed")
        out.append(f"{g.get('grader')}: {'n/a' if p is None else 'pass' if p else 'fail'}")
        if g.get("category"):
            out.append(f"category: {g.get('category')}")
    passed = [g.get("passed") for g in grades]
    if all(p is True for p in passed):
        out.append("all graders pass")
    if any(p is False for p in passed):
        out.append("some grader fails")
    return sorted(set(out))


def _ids(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each sample's link id: its request key, prefixed by its suite only where two suites share
    a key (keys hash the suite's request, so this does not happen in practice; kept unique)."""
    counts: dict[str, int] = {}
    for s in samples:
        counts[s["key"]] = counts.get(s["key"], 0) + 1
    return [s["key"] if counts[s["key"]] == 1 else f"{s['suite']}:{s['key']}" for s in samples]


class _Dict:
    """Values → small integer codes (first-seen order), so the index stores ints, not strings."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._code: dict[str, int] = {}

    def code(self, v: str) -> int:
        c = self._code.get(v)
        if c is None:
            c = self._code[v] = len(self.values)
            self.values.append(v)
        return c


def _snippet(s: Mapping[str, Any]) -> str:
    text = s["output"] or s["error_message"] or ""
    text = " ".join(str(text).split())
    return text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")


def _round(x: float) -> float:
    return float(f"{x:.{INDEX_DIGITS}g}") if math.isfinite(x) else 0.0


def sample_index(
    samples: Sequence[Mapping[str, Any]], unpriced: Collection[str] = ()
) -> dict[str, Any]:
    """The columns the list, the filters and the links need, one array per field: loaded at
    start-up, so it holds no prompt or full answer (those stay in the chunks). ``primary`` is
    the sample's own verdict (``primary_verdict``: a word, coded, and its tone);
    ``labels.unpriced`` says per engine code whether the engine has no price (its cost reads
    "not priced", not $0)."""
    dicts = {k: _Dict() for k in ("suite", "engine", "condition", "status", "error_kind")}
    primary = _Dict()
    verdicts = _Dict()
    memo: dict[tuple[tuple[Any, ...], ...], list[int]] = {}  # graders' outcomes → token codes
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "id",
            "suite",
            "engine",
            "condition",
            "status",
            "error_kind",
            "item",
            "repeat",
            "latency_s",
            "cost_usd",
            "verdicts",
            "n_pass",
            "n_graded",
            "primary",
            "tone",
            "snippet",
        )
    }
    for sid, s in zip(_ids(samples), samples, strict=True):
        cols["id"].append(sid)
        for k, d in dicts.items():
            cols[k].append(d.code(str(s[k])))
        cols["item"].append(s["item"])
        cols["repeat"].append(s["repeat"])
        cols["latency_s"].append(_round(s["latency_s"]))
        cols["cost_usd"].append(_round(s["cost_usd"]))
        word = str(s["verdict"]["word"]) if s.get("verdict") else ""
        sig = (
            (word,),
            *((g.get("grader"), g.get("passed"), g.get("category")) for g in s["grades"]),
        )
        if sig not in memo:
            memo[sig] = [verdicts.code(v) for v in verdict_tokens(s["grades"], word)]
        cols["verdicts"].append(memo[sig])
        cols["n_pass"].append(sum(1 for g in s["grades"] if g.get("passed") is True))
        cols["n_graded"].append(len(s["grades"]))
        cols["primary"].append(primary.code(word or "ungraded"))
        cols["tone"].append(str(s["verdict"]["tone"]) if s.get("verdict") else "")
        cols["snippet"].append(_snippet(s))
    labels: dict[str, list[Any]] = {k: d.values for k, d in dicts.items()}
    labels["verdict"] = verdicts.values
    labels["primary"] = primary.values
    labels["unpriced"] = [e in unpriced for e in dicts["engine"].values]
    return {"n": len(samples), "chunk": CHUNK_SAMPLES, "labels": labels, "cols": cols}


def _detail(s: Mapping[str, Any]) -> dict[str, Any]:
    keep = (
        "error_message",
        "tokens_in",
        "tokens_out",
        "attempts",
        "finish_reason",
        "engine_path",
        "model",
        "seed",
        "params",
        "messages",
        "output",
        "trajectory",
        "grades",
        "raw",
    )
    out = {k: s[k] for k in keep}
    out["verdict"] = s.get("verdict") or primary_verdict(s["grades"])
    out["target"] = s.get("target")
    return out


def pack(obj: Any) -> str:
    """Canonical JSON → deflate (zlib stream) → base64: what the page inflates with
    ``DecompressionStream('deflate')``. base64 keeps the element inert and free of ``</script>``."""
    data = zlib.compress(compact(obj).encode("utf-8"), ZLIB_LEVEL)
    return base64.b64encode(data).decode("ascii")


def unpack(text: str) -> Any:
    """``pack``'s inverse (tests and the benchmark read the page's data back with it)."""
    return json.loads(zlib.decompress(base64.b64decode(text)).decode("utf-8"))


def chunk_doc(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One chunk's document: ``{"texts": [...], "samples": [...]}``. A message content of
    SHARED_TEXT_CHARS or more is stored once per chunk in ``texts`` and referenced by number
    (``{"role": ..., "ref": n}``): system prompts and files repeat across every request of a
    suite, and written out per sample they were most of the page's bytes, its build time and
    its search time."""
    texts: list[str] = []
    code: dict[str, int] = {}
    out = []
    for s in samples:
        d = _detail(s)
        msgs = d["messages"] if isinstance(d["messages"], list) else [d["messages"]]
        refd = []
        for m in msgs:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str) and len(c) >= SHARED_TEXT_CHARS:
                n = code.get(c)
                if n is None:
                    n = code[c] = len(texts)
                    texts.append(c)
                m = {k: v for k, v in m.items() if k != "content"} | {"ref": n}
            refd.append(m)
        d["messages"] = refd
        out.append(d)
    return {"texts": texts, "samples": out}


def sample_chunks(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        pack(chunk_doc(samples[i : i + CHUNK_SAMPLES]))
        for i in range(0, len(samples), CHUNK_SAMPLES)
    ]


def chunk_samples(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``chunk_doc``'s inverse: the samples' details with every referenced text put back."""
    texts = doc["texts"]
    out = []
    for d in doc["samples"]:
        msgs = [
            {k: v for k, v in m.items() if k != "ref"} | {"content": texts[m["ref"]]}
            if isinstance(m, dict) and "ref" in m
            else m
            for m in d["messages"]
        ]
        out.append({**d, "messages": msgs})
    return out


# -- page --------------------------------------------------------------------------------------


def _asset(name: str) -> str:
    return (resources.files("sealedeval.publish") / "html_assets" / name).read_text("utf-8")


def _section_markdown(
    name: str,
    section: Mapping[str, Any],
    engines: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    render = presentation_hook(name, "report_sections")
    if render is not None:
        return str(render(section))
    return generic.report_section(name, section, engines)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _e(x: Any) -> str:
    return html.escape(str(x))


def _summary_html(
    result: Mapping[str, Any], forests: Mapping[str, tuple[str, str]], first_number: int = 1
) -> list[str | FigureSlot]:
    """The first page report.md and the PDF open with (``publish.first_page``), as one card
    per suite: the lines a table cannot say, the headline table, the forest figure of the
    pre-registered comparisons (``forests``: suite → its stem and caption, numbered from
    ``first_number``) and the verdicts — the same records and sentences, so the three reports
    cannot disagree."""

    out: list[str | FigureSlot] = ['<section id="summary"><h2>Summary</h2>']
    out.append(
        f'<p class="status">Status: <strong>{_e(result.get("status", ""))}</strong>. '
        f"Rubric lock sha256 <code>{_e(result.get('rubric_lock_sha256', ''))}</code>. "
        f"Config {_e(', '.join(result.get('config', {}).get('sources', [])))} "
        f"(sha256 <code>{_e(str(result.get('config', {}).get('sha256', ''))[:16])}</code>). "
        "Every line below is taken from result.json; the tables behind it follow.</p>"
    )
    out.append('<div class="cards">')
    number = first_number
    for s in summary.suite_summaries(result):
        cls = "card" if s.complete else "card incomplete"
        out.append(f'<div class="{cls}" data-suite="{_e(s.suite)}">')
        out.append(f'<h3><a href="#suite-{_slug(s.suite)}">{_e(s.suite)}</a></h3>')
        out += [f'<p class="prose">{inline_md(x)}</p>' for x in first_page.prose_lines(s)]
        out.append(markdown_html(first_page.headline_table(s)))
        note = first_page.interval_note(s)
        if note:
            out.append(f'<p class="hint">{inline_md(note)}</p>')
        if s.suite in forests:
            stem, caption = forests[s.suite]
            out.append(FigureSlot(stem, number, inline_md(caption)))
            number += 1
        out.append(
            '<ul class="verdicts">'
            + "".join(f"<li>{inline_md(x)}</li>" for x in first_page.verdict_lines(s))
            + "</ul></div>"
        )
    out.append("</div></section>")
    return out


def _engines_html(result: Mapping[str, Any]) -> list[str]:
    late = added_in_any(result)
    rows = "".join(
        f"<tr><td>{_e(engine_label(k, k in late))}</td><td>{_e(e.get('kind', ''))}</td>"
        f"<td>{_e(e.get('model', ''))}</td><td>{_e(price_text(e))}</td>"
        "</tr>"
        for k, e in result.get("engines", {}).items()
    )
    manifest = result.get("manifest", [])
    n_rows = sum(int(m.get("rows", 0)) for m in manifest)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(result.get("versions", {}).items()))
    return [
        '<section id="engines"><h2>Engines and provenance</h2>',
        '<div class="table-wrap"><table><thead><tr><th>engine</th><th>kind</th><th>model</th>'
        f"<th>price in/out per Mtok</th></tr></thead><tbody>{rows}</tbody></table></div>",
        f"<p>{len(manifest)} raw parts, {n_rows} rows (each with its sha256 in "
        f"<code>result.json</code>'s manifest). Versions: {_e(versions)}.</p></section>",
    ]


def _browser_html(shown: int, total: int) -> str:
    which = "Every request of every suite"
    if shown < total:
        which = (
            f"{shown:,} of the {total:,} requests (a suite of more than {SAMPLES_MAX:,} shows "
            f"{SAMPLES_MAX:,}, evenly spaced in its order by engine and request key; every "
            "request is in <code>results/raw</code>, and the numbers above count them all)"
        )
    return (
        '<section id="samples"><h2>Samples</h2>\n<p class="hint">'
        + which
        + ": filter, search the prompts and answers, open a sample\n"
        + "(its link is <code>#sample=&lt;request key&gt;</code>).</p>"
        + _BROWSER
    )


_BROWSER = """
<div class="filters">
<label>suite <select id="f-suite"></select></label>
<label>engine <select id="f-engine"></select></label>
<label>condition <select id="f-condition"></select></label>
<label>status <select id="f-status"></select></label>
<label>verdict <select id="f-verdict"></select></label>
<label class="grow">search <input id="f-search" type="search"
 placeholder="text in prompt, answer, error, grader details"></label>
</div>
<p id="sample-count" class="count">loading samples…</p>
<div class="table-wrap"><table id="sample-table"><thead><tr><th>sample</th><th>suite</th>
<th>engine</th><th>condition</th><th>item</th><th>repeat</th><th>status</th><th>verdict</th>
<th>latency s</th><th>cost $</th><th>answer</th></tr></thead><tbody id="sample-rows"></tbody>
</table></div>
<div class="pager"><button id="page-prev" type="button">&larr; previous</button>
<span id="page-info"></span><button id="page-next" type="button">next &rarr;</button></div>
<div id="sample-detail" hidden></div>
</section>"""


@dataclass(frozen=True)
class FigureSlot:
    """Where a figure goes in the page: its SVG is inlined by ``assemble`` (publish lays out
    everything else while the figure workers draw)."""

    stem: str
    number: int
    caption_html: str


def figure_slots(result: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(suite, stem, caption)`` for every figure of ``result``, in report order (nothing
    is drawn)."""

    return [(s, figures.stem(s, spec), spec.caption) for s, spec in figures.specs(result)]


def _requests(result: Mapping[str, Any]) -> int:
    """Every published suite's latest raw rows, as the seal summary counts them."""
    return sum(
        int(c.get("requests", 0))
        for sec in (result.get("suites") or {}).values()
        for c in ((sec.get("seal") or {}).get("counts") or {}).values()
    )


def page_parts(
    result: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    figures: Sequence[tuple[str, str, str]],
) -> list[str | FigureSlot]:
    """The page as text pieces and ``FigureSlot``s, from result.json's dict, the samples and
    the figures' ``(suite, stem, caption)``; ``assemble`` puts the SVGs in."""
    script = _asset("report.js")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{script_hash}'"
    )
    title = f"{result.get('project', '')} — evaluation report"
    suites = list(result.get("suites", {}))
    out: list[str | FigureSlot] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        '<nav><a href="#summary">Summary</a>',
        *(f'<a href="#suite-{_slug(n)}">{_e(n)}</a>' for n in suites),
        '<a href="#samples">Samples</a><a href="#engines">Engines</a></nav><main>',
        f"<h1>{_e(title)}</h1>",
    ]
    forests = {suite: (stem, c) for suite, stem, c in figures if stem == f"{suite}_{FOREST}"}
    out += _summary_html(result, forests)
    number = len(forests)
    for name, section in result.get("suites", {}).items():
        out.append(f'<section class="suite" id="suite-{_slug(name)}">')
        out.append(markdown_html(_section_markdown(name, section, result.get("engines"))))
        figs = [f for f in figures if f[0] == name and f[1] != f"{name}_{FOREST}"]
        if figs:
            out.append(f"<h3>{_e(name)}: figures</h3>")
        for _, stem, caption in figs:
            number += 1
            out.append(FigureSlot(stem, number, inline_md(caption)))
        out.append("</section>")
    out.append(_browser_html(sum(1 for s in samples if s.get("raw")), _requests(result)))
    out += _engines_html(result)
    out.append("</main>")
    index = sample_index(samples, generic.unpriced_engines(result.get("engines")))
    out.append(f'<script type="application/octet-stream" id="se-index">{pack(index)}</script>')
    for i, chunk in enumerate(sample_chunks(samples)):
        out.append(f'<script type="application/octet-stream" id="se-c{i}">{chunk}</script>')
    out.append(f"<script>{script}</script></body></html>")
    return out


def assemble(parts: Sequence[str | FigureSlot], svgs: Mapping[str, bytes]) -> str:
    """The page's text: ``parts`` with each slot's SVG (``svgs[stem]``) inlined."""
    out = []
    for part in parts:
        if isinstance(part, FigureSlot):
            n = part.number
            part = (
                f'<figure id="fig-{_e(part.stem)}">{inline_svg(svgs[part.stem], f"f{n}")}'
                f"<figcaption>Figure {n}. {part.caption_html}</figcaption></figure>"
            )
        out.append(part)
    return "\n".join(out) + "\n"


def render_html(
    result: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    figures: Sequence[tuple[str, str, str, bytes]],
) -> str:
    """The page's text from result.json's dict, the samples and the drawn figures: a pure
    function (two builds from the same inputs are byte-identical)."""
    parts = page_parts(result, samples, [(s, stem, c) for s, stem, c, _ in figures])
    return assemble(parts, {stem: svg for _, stem, _, svg in figures})
