"""Reference interpreter: near-perfect under the sealed rubric, derived from values, no traps."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jsonschema
import pytest

from sealedeval.suites.bloodpanel.cases import Case, load_curated, make_row
from sealedeval.suites.bloodpanel.layout import SUBSECTION_CODES
from sealedeval.suites.bloodpanel.matching import Document, Polarity
from sealedeval.suites.bloodpanel.prompts import REPORT_JSON_SCHEMA
from sealedeval.suites.bloodpanel.reference import reference_report
from sealedeval.suites.bloodpanel.rubric import grade_case, normalize_response

ROOT = Path(__file__).resolve().parents[2]
CURATED = ROOT / "data" / "bloodpanel" / "curated.yaml"


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {c.case_id: c for c in load_curated(CURATED)}


def diff(report: dict[str, object]) -> dict[str, int]:
    return {d["condition"]: d["probability"] for d in report["differential"]}  # type: ignore[attr-defined]


def with_value(case: Case, analyte: str, value: float, unit: str, ref: str) -> Case:
    new = make_row(analyte, value, unit, ref)
    rows = [new if r.code == new.code else r for r in case.panel]
    if new.code not in {r.code for r in case.panel}:
        rows.append(new)
    return dataclasses.replace(case, panel=tuple(rows))


def test_scores_at_least_098_on_curated(cases: dict[str, Case]) -> None:
    scores = {cid: grade_case(c, reference_report(c), 0.0, "sealed") for cid, c in cases.items()}
    assert all(s.composite >= 0.98 for s in scores.values()), {
        k: (s.composite, s.details) for k, s in scores.items() if s.composite < 0.98
    }
    assert sum(s.composite for s in scores.values()) / len(scores) >= 0.98
    assert all(s.structural == 1.0 and s.prob_valid for s in scores.values())


@pytest.mark.parametrize("cid", ["BT-014-GILBERT", "BT-015-HEALTHY"])
def test_never_fires_a_trap_flag(cases: dict[str, Case], cid: str) -> None:
    case = cases[cid]
    report = reference_report(case)
    score = grade_case(case, report, 0.0, "sealed")
    assert score.trap_flags_hit == () and score.trap_penalty == 0.0
    r = normalize_response(report)
    doc = Document(
        [it for s in r.sections for sub in s.subsections for it in sub.items], r.differential
    )
    for flag in case.trap_flags:
        assert all(m.polarity is not Polarity.AFFIRMED for m in doc.mentions(flag)), flag


def test_shape_matches_schema_and_differential_sums_to_100(cases: dict[str, Case]) -> None:
    for case in cases.values():
        report = reference_report(case)
        jsonschema.validate(report, REPORT_JSON_SCHEMA)
        subs = [sub for code, body in report.items() if code != "differential" for sub in body]
        assert subs == list(SUBSECTION_CODES)
        probs = list(diff(report).values())
        assert sum(probs) == 100 and all(isinstance(p, int) and p > 0 for p in probs)


def test_answer_key_is_not_read(cases: dict[str, Case]) -> None:
    for case in cases.values():
        blind = dataclasses.replace(
            case,
            case_id="X",
            case_uid="x",
            title="",
            notes="",
            archetype="unknown",
            expected_keywords=(),
            expected_scoring_systems=(),
            trap_flags=(),
            is_trap=False,
            specialty="internal_medicine",
            v11_category="",
        )
        assert reference_report(blind) == reference_report(case)


def test_mentzer_decides_between_iron_deficiency_and_thalassaemia(cases: dict[str, Case]) -> None:
    ida = cases["BT-001-IDA"]
    as_given = diff(reference_report(ida))
    assert as_given["Iron deficiency anaemia"] >= 60
    assert as_given["Thalassaemia trait (coexisting)"] < 10  # Mentzer 17.7 > 13
    high_rbc = diff(reference_report(with_value(ida, "RBC Count", 6.0, "10^12/L", "4.0-5.2")))
    assert high_rbc["Thalassaemia trait (coexisting)"] >= 10  # Mentzer 12.1 < 13: considered
    text = str(reference_report(with_value(ida, "RBC Count", 6.0, "10^12/L", "4.0-5.2")))
    assert "Mentzer index (MCV/RBC) = 12.1" in text and "electrophoresis" in text


def test_conclusions_follow_the_values(cases: dict[str, Case]) -> None:
    thal = cases["BT-007-THAL"]
    assert max(diff(reference_report(thal)), key=diff(reference_report(thal)).get) == (  # type: ignore[arg-type]
        "Beta-thalassaemia trait (minor)"
    )
    # Remove the HbA2 rise and deplete iron: iron deficiency takes over.
    swapped = with_value(
        with_value(thal, "HbA2", 2.8, "%", "2.0-3.5"), "Ferritin", 8, "ng/mL", "24-336"
    )
    top = max(diff(reference_report(swapped)).items(), key=lambda kv: kv[1])[0]
    assert top.startswith("Iron deficiency")
    # A healthy panel with a diabetic HbA1c is no longer healthy.
    healthy = cases["BT-015-HEALTHY"]
    sick = with_value(healthy, "HbA1c", 7.4, "%", "<5.7")
    assert "Type 2 diabetes mellitus" in diff(reference_report(sick))
    assert not any("Healthy" in k for k in diff(reference_report(sick)))
    # Gilbert's pattern disappears when the transaminases are high.
    gil = with_value(cases["BT-014-GILBERT"], "ALT", 600, "U/L", "<41")
    assert "Gilbert's syndrome" not in diff(reference_report(gil))
    # CKD stage follows creatinine (the reported eGFR removed, so CKD-EPI 2021 is used).
    ckd = cases["BT-005-CKD"]
    no_egfr = dataclasses.replace(ckd, panel=tuple(r for r in ckd.panel if r.code != "egfr"))
    worse = with_value(no_egfr, "Creatinine", 3.4, "mg/dL", "0.7-1.3")
    assert any("G4" in k for k in diff(reference_report(worse)))
    assert any("G3b" in k for k in diff(reference_report(no_egfr)))


def test_reports_are_byte_identical_to_the_single_module_interpreter() -> None:
    """The split by organ system (``reference/``) changed no byte: the sha256 of every report
    (curated 15 + 300 synthetic cases) is the one the pre-redesign single ``reference.py``
    gave (``fixtures/pre_redesign.json``, from ``fixtures/make_present_fixtures.py``)."""
    import hashlib
    import json

    from sealedeval.suites.bloodpanel.synthetic import synthetic_cases

    expected = json.loads(
        (Path(__file__).resolve().parent / "fixtures/pre_redesign.json").read_text("utf-8")
    )["reference_report"]
    cases = [*load_curated(CURATED), *synthetic_cases(300, 20260426)]
    h = hashlib.sha256()
    for c in cases:
        h.update(json.dumps(reference_report(c), ensure_ascii=False).encode() + b"\n")
    assert (len(cases), h.hexdigest()) == (expected["n_cases"], expected["sha256"])


def test_thresholds_are_named_constants_with_a_source() -> None:
    """Every rule module states its thresholds as ``Final`` constants, each under a comment
    that names where it comes from (or that the code and spec give no source)."""
    import ast

    pkg = ROOT / "src/sealedeval/suites/bloodpanel/reference"
    found = 0
    for path in sorted(pkg.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.parse("\n".join(lines)).body:
            if isinstance(node, ast.AnnAssign) and "Final" in ast.unparse(node.annotation):
                found += 1
                # Skip the constants of the same group; the line above them is the comment.
                above = [ln for ln in lines[: node.lineno - 1] if ": Final" not in ln]
                assert above[-1].startswith("# "), f"{path.name}:{node.lineno}: no comment"
    assert found >= 40
