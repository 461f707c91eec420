"""The laboratory-report PDF an engine with ``input_pdf`` is sent instead of the chat prompt.

Part of what the engine is asked, so sealed with the suite (``rubric_inputs``) like the prompts.
``requests`` attaches it (``Request.attachments``) only for engines whose capabilities say
``input_pdf``: a run on any other engine renders nothing.

What the PDF holds: the opaque request id (the case's hashed ``case_uid``), age, sex and the
results table — never the case id, title, label, specialty, archetype or the word "trap" (the
published harness printed ``Case ID: BT-011-SLE`` and ``Panel type: Trap``); the tests run every
chat prompt's leak check over its text. It is rendered with reportlab's invariant mode, so the
same case gives the same bytes, which is why the PDF need not be part of the request key.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any, Final

from sealedeval.engines.base import Attachment
from sealedeval.suites.bloodpanel import locales
from sealedeval.suites.bloodpanel.cases import UNKNOWN_LABEL, make_row

MEDIA_TYPE: Final = "application/pdf"


def render_pdf(item: Mapping[str, Any]) -> bytes:
    """A laboratory-report PDF of a bloodpanel item (``Case.to_record`` fields).

    Reads only ``case_uid``, ``age``, ``sex``, ``label`` and ``panel_json`` — nothing of the
    answer key.
    Deterministic (reportlab invariant mode: no timestamps, fixed document id).
    """
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.lib.units import cm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    uid = str(item["case_uid"])
    panel = json.loads(str(item["panel_json"]))
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=A4,
        leftMargin=1.8 * cm,
        rightMargin=1.8 * cm,
        topMargin=1.5 * cm,
        bottomMargin=1.5 * cm,
        title=f"Laboratory report {uid}",
        author="sealedeval",
        subject="",
        creator="sealedeval",
        invariant=1,
    )
    base = getSampleStyleSheet()
    h1 = ParagraphStyle("H1", parent=base["Heading1"], fontSize=14, spaceAfter=6)
    meta = ParagraphStyle("Meta", parent=base["Normal"], fontSize=9)
    story: list[Any] = [
        Paragraph("CLINICAL LABORATORY REPORT", h1),
        Paragraph("Laboratory results for interpretation", meta),
        Spacer(1, 6),
    ]
    info = Table(
        [
            ["Request:", uid, "Sample type:", "Serum / Plasma"],
            ["Age:", f"{item['age']} years", "Status:", "Final"],
            ["Sex:", str(item["sex"]).capitalize(), "", ""],
        ],
        colWidths=[2.4 * cm, 5.5 * cm, 2.6 * cm, 5.5 * cm],
    )
    info.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, -1), "Helvetica"),
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("FONTNAME", (0, 0), (0, -1), "Helvetica-Bold"),
                ("FONTNAME", (2, 0), (2, -1), "Helvetica-Bold"),
                ("BOX", (0, 0), (-1, -1), 0.4, colors.grey),
            ]
        )
    )
    story += [info, Spacer(1, 12), Paragraph("TEST RESULTS", h1)]
    rows = [["Test Parameter", "Result", "Unit", "Reference Range"]]
    # Values, decimal symbol and units as the chat prompt prints them for the label (locales);
    # the words stay English: the PDF's Helvetica has no Arabic or CJK glyphs, and the kantesti
    # engine's own ``language`` option sets the answer's language.
    loc = locales.locale_of(str(item.get("label") or UNKNOWN_LABEL))
    for r in panel:
        pr = locales.render_row(make_row(r["analyte"], r["value"], r["unit"], r["ref"]), loc)
        rows.append([pr.analyte, pr.value, pr.unit, pr.ref])
    results = Table(rows, colWidths=[7.5 * cm, 2.8 * cm, 2.4 * cm, 3.5 * cm], repeatRows=1)
    results.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("FONTNAME", (0, 1), (-1, -1), "Helvetica"),
                ("FONTSIZE", (0, 0), (-1, -1), 9),
                ("BOX", (0, 0), (-1, -1), 0.4, colors.grey),
                ("LINEBELOW", (0, 0), (-1, 0), 0.4, colors.grey),
                ("ALIGN", (1, 0), (1, -1), "RIGHT"),
            ]
        )
    )
    story.append(results)
    doc.build(story)
    return buf.getvalue()


def attachment(item: Mapping[str, Any]) -> Attachment:
    """The item's PDF as a request attachment, named ``{case_uid}.pdf`` (as the published harness
    uploaded it)."""
    return Attachment(f"{item['case_uid']}.pdf", MEDIA_TYPE, render_pdf(item))
