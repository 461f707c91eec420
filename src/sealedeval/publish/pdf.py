"""results/report.pdf (reportlab): the summary page, then the appendix — the seal, methods,
every table and figure, limitations, the manifest with full sha256.

Built from result.json's dict, report.md's text (its summary and tables are parsed, so every
suite section another module adds to report.md reaches the PDF without code here) and the PNG
figures. Nothing reads a clock: reportlab's ``invariant=1`` fixes the document id and dates, so
two builds from the same inputs are byte-identical.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError
from sealedeval.publish.figures import FIGURES_DIR
from sealedeval.publish.report_md import APPENDIX
from sealedeval.render.figures import Raster, raster_from_png

REPORT_PDF = Path("results/report.pdf")

LIMITATIONS = [
    "Git commit dates are set by the client: without an external anchor (an RFC 3161 token or "
    "a deposit made before the first call) the order seal → runs rests on trust in the evaluator.",
    "Small item sets give wide intervals; a non-significant paired test is not evidence that two "
    "engines are equal.",
    "Sampled answers depend on the engine's sampler and seed handling; a hosted model may change "
    "behind a stable name, so engine identities are recorded but cannot be enforced.",
    "Graders are instruments with their own error: regex and exact match can miss paraphrases or "
    "reward formatting; the reference engine only shows that full marks are reachable.",
    "Infrastructure errors are never graded as model failures; rates are reported over completed "
    "requests and, beside them, with errors counted as failures (a lower bound).",
    "Items written by the evaluators may overlap with model training data (contamination), and "
    "hand-written tasks reflect their authors' choices.",
]

_INLINE = [
    (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"),
    (re.compile(r"`([^`]+)`"), r'<font face="Courier">\1</font>'),
]


def _inline(text: str) -> str:
    from xml.sax.saxutils import escape

    out = escape(text)
    for pat, rep in _INLINE:
        out = pat.sub(rep, out)
    return out


def _cells(line: str) -> list[str]:
    body = line.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def parse_markdown(text: str) -> list[tuple[str, Any]]:
    """Blocks of report.md: ("h1".."h3", text), ("p", text), ("li", text) for a "- " list
    item (indented continuation lines joined), ("table", rows) and ("image", (file stem,
    caption)) for a figure line, whose caption is the italic line below it (else the alt
    text)."""
    blocks: list[tuple[str, Any]] = []
    lines = text.splitlines()
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(("p", " ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        m = _IMAGE.fullmatch(line.strip())
        if m:
            flush()
            caption = m.group(1)
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if len(nxt) > 2 and nxt.startswith("*") and nxt.endswith("*"):
                caption = nxt.strip("*")
                i += 1
            blocks.append(("image", (Path(m.group(2)).stem, caption)))
        elif line.startswith("#"):
            flush()
            level = len(line) - len(line.lstrip("#"))
            blocks.append((f"h{min(level, 3)}", line.lstrip("#").strip()))
        elif line.startswith("- "):
            flush()
            item = [line[2:].strip()]
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and lines[i + 1].strip():
                i += 1
                item.append(lines[i].strip())
            blocks.append(("li", " ".join(item)))
        elif line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i].strip()):
                    rows.append(_cells(lines[i]))
                i += 1
            blocks.append(("table", rows))
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return blocks


def seal_lines(result: Mapping[str, Any], anchors: Sequence[str]) -> list[str]:
    commits = sorted(
        {c for s in result["suites"].values() for c in s["seal"].get("seal_commits", [])}
    )
    out = [
        f"Status: <b>{result['status']}</b>",
        f"Rubric lock sha256: <font face='Courier'>{result['rubric_lock_sha256']}</font>",
    ]
    for name, s in sorted(result["suites"].items()):
        out.append(
            f"Suite {_inline(name)} rubric sha256: "
            f"<font face='Courier'>{s['seal']['rubric_sha256']}</font>"
        )
    out.append(
        "Seal commit(s): "
        + (", ".join(f"<font face='Courier'>{c}</font>" for c in commits) or "none")
    )
    out.append(
        f"Config sha256: <font face='Courier'>{result['config']['sha256']}</font> "
        f"({_inline(', '.join(result['config']['sources']))})"
    )
    out.append(
        "External anchors: "
        + (
            "; ".join(_inline(a) for a in anchors)
            if anchors
            else "none — only git dates exist, and a git date is set by the client"
        )
    )
    return out


MANIFEST_HEADER = ["file", "rows", "sha256"]
"""report.md's manifest table (shortened hashes); the PDF prints the full sha256 in its place."""

CELL_PT = 3.6
"""Approximate width in points of one character of the 7-point table font (Helvetica averages
about half an em), used to size table columns to their content."""

CELL_CAP = 48
"""A cell longer than this many characters wraps: it asks for no more width than this."""

FIGURE_MARGIN = 7
"""Centimetres of page height a figure leaves free (caption, header); a taller one is scaled."""


CELL_PADDING_PT = 6
"""reportlab's default left and right padding of a table cell, in points."""


def _wrap_plain(text: str, avail: float, font: str, size: float) -> str:
    """``text`` broken into lines no wider than ``avail`` points: greedy, at spaces, and a word
    wider than a line cut where it fills one (a sha256 in a narrow column), as Paragraph does."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    def width(s: str) -> float:
        w: float = stringWidth(s, font, size)
        return w

    lines: list[str] = []
    cur = ""
    for word in text.split():
        while width(word) > avail and len(word) > 1:
            if cur:
                lines.append(cur)
                cur = ""
            cut, used = 0, 0.0
            for ch in word:
                used += width(ch)
                if used > avail and cut:
                    break
                cut += 1
            lines.append(word[:cut])
            word = word[cut:]
        trial = f"{cur} {word}" if cur else word
        if not cur or width(trial) <= avail:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return "\n".join(lines)


def _cell(text: str, width: float, paragraph: Any, style: Any) -> Any:
    """A table cell: the text itself, broken into lines that fit its column, when it has no
    markup; else a wrapping Paragraph. A Paragraph is parsed, and laid out again each time
    the table is measured or split across pages: plain cells made report.pdf's long tables
    (the raw-run manifest, grounding's track A) several times faster to build, drawn in the
    same font, size and leading."""
    if "\n" in text or "`" in text or "**" in text:
        return paragraph(_inline(text), style)
    return _wrap_plain(text, width - 2 * CELL_PADDING_PT, style.fontName, style.fontSize)


def column_widths(rows: Sequence[Sequence[str]], width: float) -> list[float]:
    """Column widths in points summing to ``width``: each column asks for its longest cell (up
    to ``CELL_CAP`` characters) and never less than its longest word, so narrow columns (counts,
    ids) stop wasting the width that long text needs. Equal widths made wide tables two to
    three times taller than their content."""
    ncol = max(len(r) for r in rows)
    want, least = [0.0] * ncol, [0.0] * ncol
    for r in rows:
        for j, c in enumerate(r):
            text = re.sub(r"[*`]", "", c)
            longest_word = max((len(w) for w in text.split()), default=0)
            want[j] = max(want[j], min(len(text), CELL_CAP) * CELL_PT + 6)
            least[j] = max(least[j], min(longest_word, CELL_CAP) * CELL_PT + 6)
    want = [max(w, 18.0) for w in want]
    least = [min(max(x, 18.0), w) for x, w in zip(least, want, strict=True)]
    if sum(want) <= width:
        return [w * width / sum(want) for w in want]
    if sum(least) >= width:
        return [x * width / sum(least) for x in least]
    k = (width - sum(least)) / (sum(want) - sum(least))
    return [x + (w - x) * k for x, w in zip(least, want, strict=True)]


ImageSource = Callable[[], "bytes | Raster"]
"""A figure's PNG bytes, or its pixels (publish's figure workers hand those over), asked for
only when the layout reaches the figure."""


def _raster_xobject(raster: Raster) -> Any:
    """A PDF image XObject whose stream is the raster's zlib bytes as they are (FlateDecode),
    in place of reportlab's own, which decodes a PNG, compresses the pixels again and
    ASCII85-encodes them."""
    from reportlab.pdfbase.pdfdoc import (
        PDFArray,
        PDFDictionary,
        PDFImageXObject,
        PDFName,
        PDFStream,
    )

    class RasterXObject(PDFImageXObject):  # type: ignore[misc]
        def __init__(self, name: str) -> None:
            self.name = name
            self.width, self.height = raster.width, raster.height
            self.mask = None

        def format(self, document: Any) -> bytes:
            d = PDFDictionary(
                {
                    "Type": PDFName("XObject"),
                    "Subtype": PDFName("Image"),
                    "Width": raster.width,
                    "Height": raster.height,
                    "BitsPerComponent": 8,
                    "ColorSpace": PDFName("DeviceRGB"),
                    "Filter": PDFArray([PDFName("FlateDecode")]),
                }
            )
            out: bytes = PDFStream(d, raster.flate_rgb).format(document)
            return out

    return RasterXObject("raster" + hashlib.sha256(raster.flate_rgb).hexdigest()[:32])


def _draw_raster(canv: Any, raster: Raster, width: float, height: float) -> None:
    """Place ``raster`` at (0, 0) scaled to ``width`` × ``height``, registered once per
    document the way ``canvas.drawImage`` registers an image."""
    xobj = _raster_xobject(raster)
    reg = canv._doc.getXObjectName(xobj.name)
    if reg not in canv._doc.idToObject:
        canv._setXObjects(xobj)
        canv._doc.Reference(xobj, reg)
        canv._doc.addForm(xobj.name, xobj)
    canv._currentPageHasImages = 1
    canv.saveState()
    canv.scale(width, height)
    canv._code.append(f"/{reg} Do")
    canv.restoreState()
    canv._formsinuse.append(xobj.name)


def _file_image(path: Path) -> bytes | Raster:
    """A PNG file as the figure workers would have handed it over (its pixels when opaque)."""
    data = path.read_bytes()
    return raster_from_png(data) or data


def _lazy_image(load: ImageSource, width: float, max_height: float) -> Any:
    """A flowable that loads its figure when the layout first measures it: publish builds the
    PDF while its workers are still drawing the later figures, so the text before a figure is
    laid out meanwhile. Scaled to the text width (small figures up: a figure drawn in a
    4-inch box was printed at 4 inches, its labels at 7 points), its height capped."""
    from reportlab.platypus import Flowable, Image

    class LazyImage(Flowable):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.hAlign = "CENTER"
            self._img: Any = None
            self._raster: Raster | None = None

        def _load(self) -> None:
            if self._img is not None or self._raster is not None:
                return
            data = load()
            if isinstance(data, Raster):
                self._raster = data
                w, h = float(data.width), float(data.height)
            else:
                self._img = Image(io.BytesIO(data))
                w, h = self._img.imageWidth, self._img.imageHeight
            scale = min(width / w, max_height / h)
            self.width, self.height = w * scale, h * scale
            if self._img is not None:
                self._img.drawWidth, self._img.drawHeight = self.width, self.height

        def wrap(self, aw: float, ah: float) -> tuple[float, float]:
            self._load()
            return self.width, self.height

        def draw(self) -> None:
            if self._raster is not None:
                _draw_raster(self.canv, self._raster, self.width, self.height)
            else:
                self._img.drawOn(self.canv, 0, 0)

    return LazyImage()


def build_pdf(
    result: Mapping[str, Any],
    report_md: str,
    figures: Sequence[Path] | Mapping[str, ImageSource] = (),
    anchors: Sequence[str] = (),
) -> bytes:
    """The PDF bytes: the summary page of report.md first, then the appendix (the seal and its
    anchors, methods, every table and figure of report.md, limitations; the raw-run manifest
    with full sha256).

    ``figures`` are PNG paths, or PNG sources by figure stem (publish passes its figure job's,
    so layout starts before every figure is drawn): each is placed where report.md references
    it (by stem), at the full text width; any that report.md does not reference follow under
    "Other figures", in the order given, so no figure is left out. A reference to a figure
    missing from ``figures`` is an error (the figures were not rebuilt with report.md)."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import cm
    from reportlab.platypus import (
        KeepTogether,
        LongTable,
        PageBreak,
        Paragraph,
        SimpleDocTemplate,
        Spacer,
        TableStyle,
    )

    ss = getSampleStyleSheet()
    body, small = ss["BodyText"], ss["BodyText"].clone("small", fontSize=7, leading=8.5)
    item = ss["BodyText"].clone(
        "item", fontSize=8.5, leading=10.5, leftIndent=10, bulletIndent=0, spaceBefore=1
    )
    width = A4[0] - 3 * cm
    style = {"h1": ss["Heading1"], "h2": ss["Heading1"], "h3": ss["Heading2"]}
    story: list[Any] = [Paragraph(_inline(f"{result['project']} — evaluation report"), ss["Title"])]

    def add_table(rows: list[list[str]]) -> None:
        if not rows:
            return
        if rows[0] == MANIFEST_HEADER:
            rows = [MANIFEST_HEADER] + [
                [m["path"], str(m["rows"]), m["sha256"]] for m in result["manifest"]
            ]
        ncol = max(len(r) for r in rows)
        rows = [r + [""] * (ncol - len(r)) for r in rows]
        widths = column_widths(rows, width)
        data = [
            [_cell(c, w, Paragraph, small) for c, w in zip(r, widths, strict=True)] for r in rows
        ]
        t = LongTable(data, colWidths=widths, repeatRows=1)
        t.setStyle(
            TableStyle(
                [
                    # plain-text cells (``_cell``) in the paragraphs' font, size and leading
                    ("FONT", (0, 0), (-1, -1), small.fontName, small.fontSize, small.leading),
                    ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                    ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eeeeee")),
                    ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ("TOPPADDING", (0, 0), (-1, -1), 1.5),
                    ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
                ]
            )
        )
        story.extend([t, Spacer(1, 0.2 * cm)])

    if isinstance(figures, Mapping):
        pngs: dict[str, ImageSource] = dict(figures)
    else:
        pngs = {f.stem: partial(_file_image, f) for f in figures}
    placed: set[str] = set()

    def add_figure(load: ImageSource, caption: str) -> None:
        img = _lazy_image(load, width, A4[1] - FIGURE_MARGIN * cm)
        story.append(KeepTogether([img, Paragraph(_inline(caption), small), Spacer(1, 8)]))

    def add_blocks(blocks: Sequence[tuple[str, Any]]) -> None:
        for kind, content in blocks:
            if kind == "image":
                name, caption = content
                if name not in pngs:
                    raise UserError(
                        f"report.md references figure {name} but {FIGURES_DIR}/{name}.png is "
                        "missing; run `sealedeval figures` first"
                    )
                add_figure(pngs[name], f"{caption} ({name})")
                placed.add(name)
            elif kind == "table":
                add_table(content)
            elif kind == "li":
                story.append(Paragraph(_inline(content), item, bulletText="•"))
            elif kind == "p":
                story.append(Paragraph(_inline(content), body))
            else:
                story.append(Paragraph(_inline(content), style[kind]))

    blocks = parse_markdown(report_md)[1:]  # [0] is report.md's own title
    cut = APPENDIX.lstrip("#").strip()
    at = next((i for i, (k, c) in enumerate(blocks) if k == "h2" and c == cut), 0)
    add_blocks(blocks[:at])  # the summary page
    if at:
        story.append(PageBreak())
    story += [
        Paragraph(_inline(cut if at else "Appendix"), ss["Title"]),
        Paragraph("Seal", ss["Heading1"]),
    ]
    story += [Paragraph(s, body) for s in seal_lines(result, anchors)]
    story += [
        Spacer(1, 0.3 * cm),
        Paragraph(
            "Every number in this report is rebuilt from the raw runs listed in the manifest; "
            "<font face='Courier'>sealedeval audit</font> re-derives result.json byte for byte.",
            body,
        ),
        Paragraph("Methods", ss["Heading1"]),
    ]
    methods = sorted({s["analysis"].get("methods", "") for s in result["suites"].values()} - {""})
    story += [Paragraph(_inline(m), body) for m in methods] or [Paragraph("See below.", body)]
    add_blocks(blocks[at + 1 if at else 0 :])

    rest = [name for name in pngs if name not in placed]
    if rest:
        story += [PageBreak(), Paragraph("Other figures", ss["Heading1"])]
        for name in rest:
            add_figure(pngs[name], f"Figure: {name}.png")

    story += [Paragraph("Limitations and threats to validity", ss["Heading1"])]
    story += [Paragraph("• " + _inline(x), body) for x in LIMITATIONS]

    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=A4,
        invariant=1,
        title=f"{result['project']} — evaluation report",
        author="sealedeval",
        creator="sealedeval",
        producer="sealedeval",
        subject=f"rubric lock {result['rubric_lock_sha256']}",
        leftMargin=1.5 * cm,
        rightMargin=1.5 * cm,
        topMargin=1.5 * cm,
        bottomMargin=1.5 * cm,
    )
    doc.build(story)
    return buf.getvalue()


def figure_pngs(root: Path) -> list[Path]:
    d = root / FIGURES_DIR
    return sorted(d.glob("*.png")) if d.is_dir() else []
