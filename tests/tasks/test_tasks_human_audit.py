"""``analysis.human_audit``: a sealed random subset of items a person labels, and the judge's
rate corrected by prediction-powered inference (PPI++) on it, against the formula written out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.tasks._support import write_jsonl
from tests.tasks.test_tasks_analysis import _metric, _row, _suite

from sealedeval.errors import UserError
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext
from sealedeval.suites.tasks.plan import audit_items

JUDGE = {"name": "judge", "engine": "b", "rubric": "Right number."}
AUDIT = {"n": 6, "labels": "data/audit.jsonl"}


def _audited(root: Path, **over: Any) -> Any:
    return _suite(
        root,
        graders=[{"name": "exact"}, JUDGE],
        judge_only=["b"],
        analysis={"human_audit": AUDIT} | over,
    )


def _rows(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, bool]]:
    """Engine a answers the first 8 items right, the rest wrong; the judge b passes every
    right answer and also the wrong answers of items 9 and 10 (it over-passes)."""
    rows, truth, judged = [], {}, []
    for n, it in enumerate(items):
        right = n < 8
        truth[it["id"]] = right
        rows.append(_row("a", it["id"], 0, str(it["target"]) if right else "0"))
        says = "PASS" if right or n in (8, 9) else "FAIL"
        judged.append(
            _row(
                "b",
                it["id"],
                0,
                f'{{"verdict": "{says}"}}',
                condition="judge/judge/answers/a/candidate-last",
            )
        )
    return rows + judged, truth


def test_the_subset_is_a_seeded_draw_of_n_items(tmp_path: Path) -> None:
    suite, cfg, items = _audited(tmp_path)
    subset = audit_items(items, 6)
    assert len(subset) == 6 == len(set(subset)) and set(subset) <= {i["id"] for i in items}
    assert subset == audit_items(list(reversed(items)), 6)  # not the file order
    reseeded = suite.generate(
        GenerateContext(cfg=cfg, seed=6)
    )  # another rubric hash → other item seeds
    draws = {
        tuple(audit_items(suite.generate(GenerateContext(cfg=cfg, seed=s)), 6))
        for s in range(6, 12)
    }
    assert len(draws) > 1 and audit_items(reseeded, 6) == audit_items(reseeded, 6)


def test_awaiting_labels_reports_the_subset_and_no_correction(tmp_path: Path) -> None:
    suite, cfg, items = _audited(tmp_path)
    rows, _ = _rows(items)
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    ha = a["human_audit"]
    assert ha["status"] == "awaiting labels" and ha["items"] == audit_items(items, 6)
    assert "ppi" not in ha["engines"]["a"]
    assert not [m for m in a["metrics"] if m["metric"] == "judge_pass_ppi"]
    # no human_audit configured: no key at all (other suites' analysis files are unchanged)
    suite2, cfg2, items2 = _suite(tmp_path / "plain", graders=[{"name": "exact"}, JUDGE])
    graded2 = suite2.grade(GradeContext(cfg=cfg2, items=items2, rows=rows))
    a2 = suite2.analyze(AnalyzeContext(cfg=cfg2, items=items2, graded=graded2, rows=rows))
    assert "human_audit" not in a2


def test_ppi_on_the_labelled_subset_matches_the_formula(tmp_path: Path) -> None:
    suite, cfg, items = _audited(tmp_path)
    rows, truth = _rows(items)
    subset = audit_items(items, 6)
    write_jsonl(
        tmp_path / "data/audit.jsonl",
        [{"item": i, "engine": "a", "label": "PASS" if truth[i] else "FAIL"} for i in subset],
    )
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    a = suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    s = a["human_audit"]["engines"]["a"]
    judge = {it["id"]: (n < 10) for n, it in enumerate(items)}  # what b said
    y = np.array([float(truth[i]) for i in subset])
    f = np.array([float(judge[i]) for i in subset])
    fu = np.array([float(judge[i]) for i in sorted(judge) if i not in subset])
    p = s["ppi"]
    assert (s["n_labelled"], s["n_unlabelled"]) == (6, 6)
    assert s["judge_pass"]["rate"] == pytest.approx(10 / 12)
    assert p["classical"]["estimate"] == pytest.approx(y.mean())
    assert p["ppi"]["estimate"] == pytest.approx(fu.mean() - (f - y).mean())
    n, big_n = 6, 6
    pooled = np.concatenate([f, fu])
    lam = np.cov(y, f, ddof=1)[0, 1] / ((1 + n / big_n) * pooled.var(ddof=1)) if pooled.var() else 0
    lam = min(1.0, max(0.0, lam))
    assert p["lam"] == pytest.approx(lam)
    assert p["ppi_pp"]["estimate"] == pytest.approx(y.mean() + lam * (fu.mean() - f.mean()))
    m = _metric(a, "judge_pass_ppi", grader="judge", engine="a")
    assert (m["estimate"], m["method"], m["n_ok"], m["unit"]) == (
        pytest.approx(p["ppi_pp"]["estimate"]),
        "PPI++ normal",
        6,
        "answer",
    )
    assert _metric(a, "human_audit_pass", grader="judge", engine="a")["estimate"] == y.mean()


@pytest.mark.parametrize(
    ("row", "want"),
    [
        ({"item": "nope", "engine": "a", "label": "PASS"}, "item 'nope' is not in"),
        ({"item": "OUTSIDE", "engine": "a", "label": "PASS"}, "not in the sealed human-audit"),
        ({"item": "IN", "engine": "zz", "label": "PASS"}, "engine 'zz' is not an answering"),
        ({"item": "IN", "engine": "a", "label": "maybe"}, "label must be PASS or FAIL"),
        ({"item": "IN", "engine": "a", "label": "PASS", "repeat": "x"}, "repeat must be"),
    ],
)
def test_a_bad_label_is_one_line_naming_file_and_line(
    tmp_path: Path, row: dict[str, Any], want: str
) -> None:
    suite, cfg, items = _audited(tmp_path)
    rows, _ = _rows(items)
    subset = audit_items(items, 6)
    outside = next(i["id"] for i in items if i["id"] not in subset)
    row = {
        k: (subset[0] if v == "IN" else outside if v == "OUTSIDE" else v) for k, v in row.items()
    }
    good = {"item": subset[1], "engine": "a", "label": "PASS"}
    write_jsonl(tmp_path / "data/audit.jsonl", [good, row])
    graded = suite.grade(GradeContext(cfg=cfg, items=items, rows=rows))
    with pytest.raises(UserError) as e:
        suite.analyze(AnalyzeContext(cfg=cfg, items=items, graded=graded, rows=rows))
    msg = str(e.value)
    assert msg.startswith("data/audit.jsonl:2: ") and want in msg and "\n" not in msg


def test_config_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="human_audit: needs a judge grader"):
        _suite(tmp_path, analysis={"human_audit": AUDIT})
    with pytest.raises(UserError, match="'exact' is not a judge grader"):
        _audited(tmp_path, human_audit=AUDIT | {"grader": "exact"})
