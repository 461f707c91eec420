"""Regrading published Kantesti runs: the second-update format, answer keys, unknown and
duplicate ids, the kantesti-su profile (issue 16)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import shared_fixture

from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.cases import load_curated
from sealedeval.suites.bloodpanel.layout import SUBSECTION_CODES
from sealedeval.suites.bloodpanel.rubric import (
    SU_SUBSECTION_CODES,
    grade_case,
    load_key,
    names_conditions,
    regrade_kantesti,
)

ROOT = Path(__file__).resolve().parents[2]
KEY = Path(__file__).resolve().parent / "fixtures/kantesti_su_answer_key.yaml"
SU_SAMPLE = "kantesti_100k_sample201_full.json.gz"
V11 = "responses_v11_full.json"


@pytest.fixture(scope="module")
def su(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second update's published run as these tests read it: the 201-case sample's
    top-level fields and the seven cases our answer key covers, verbatim and in the file's
    order (third-party data, read from ../shared, never committed here)."""
    src = shared_fixture("kantesti-su-201", SU_SAMPLE) / SU_SAMPLE
    doc = json.loads(gzip.decompress(src.read_bytes()))
    keyed = set(load_key(KEY))
    doc["cases"] = [c for c in doc["cases"] if c["summary"]["case_id"] in keyed]
    assert len(doc["cases"]) == len(keyed) == 7
    out = tmp_path_factory.mktemp("kantesti-su") / "responses_su_excerpt.json"
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sealedeval.cli", "regrade", "bloodpanel", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _json(*args: str) -> dict[str, Any]:
    proc = _cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.mark.parametrize("profile", ["kantesti-v11", "sealed", "kantesti-su"])
def test_every_profile_regrades_a_second_update_file_with_a_key(profile: str, su: Path) -> None:
    doc = _json("--profile", profile, "--format", "kantesti", str(su), "--key", str(KEY))
    assert doc["format"] == "kantesti-su" and doc["sampled"] and doc["cases_total"] == 100000
    assert doc["aggregate"]["n"] == doc["aggregate"]["n_ok"] == 7 and not doc["unknown_ids"]
    assert doc["cases"][0]["case_id"] == "KT-0000000-KR"
    # The file printed 1.0 for every case; none of the three rules gives that for all seven.
    assert doc["published"]["composite"] == 1.0 and doc["published"]["n_differ"] > 0
    assert all(c["published_composite"] == 1.0 for c in doc["cases"])


def test_kantesti_su_is_the_second_updates_own_scorer(su: Path) -> None:
    res = regrade_kantesti(su, "kantesti-su", key=load_key(KEY))
    # Its subsection list is not V11's: the responses (V11 shortcodes) hit 3 of its 16.
    assert len(SU_SUBSECTION_CODES) == 16 and set(SU_SUBSECTION_CODES) != set(SUBSECTION_CODES)
    for c in res["cases"]:
        assert (c["sections_hit"], c["subsections_hit"]) == (7, 3)
        assert c["structural"] == round(0.4 + 0.6 * 3 / 16, 4)
        # No item carries a numeric "probability" field: sum 0, which that scorer calls valid.
        assert c["prob_sum"] == 0.0 and c["prob_valid"]
        assert c["composite"] == round(c["composite"], 4)
    v11 = regrade_kantesti(su, "kantesti-v11", key=load_key(KEY))
    assert all(c["prob_sum"] == 100.0 and c["prob_valid"] for c in v11["cases"])


def test_sealed_charges_a_differential_that_names_no_condition(su: Path) -> None:
    res = regrade_kantesti(su, "sealed", key=load_key(KEY))
    for c in res["cases"]:
        details = json.loads(c["details"])
        assert c["prob_sum"] == 100.0 and not c["prob_valid"] and details["prob_named"] is False
    assert not names_conditions([("hematology ; primary signal", 76.0), ("other factors", 24.0)])
    assert names_conditions([("NAFLD", 70.0), ("Other", 30.0)])
    assert not names_conditions([("Other", 70.0), ("NAFLD", 30.0)])


@pytest.mark.slow
def test_unknown_ids_are_all_named_at_once_and_partial_needs_the_flag(
    tmp_path: Path, su: Path
) -> None:
    proc = _cli("--profile", "sealed", "--format", "kantesti", str(su))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    for cid in ("KT-0000000-KR", "KT-0000004-SE", "KT-0000015-ES"):
        assert cid in proc.stderr
    assert "7 of 7 case ids" in proc.stderr and "--key" in proc.stderr
    short = tmp_path / "key.yaml"
    lines = KEY.read_text(encoding="utf-8").split("  KT-0000004-SE:")[0]
    short.write_text(lines, encoding="utf-8")  # KT-0000000 … KT-0000003 only
    proc = _cli("--profile", "sealed", "--format", "kantesti", str(su), "--key", str(short))
    assert proc.returncode == 2 and "3 of 7 case ids not in the answer key" in proc.stderr
    doc = _json(
        "--profile", "sealed", "--format", "kantesti", str(su), "--key", str(short), "--partial"
    )
    assert doc["partial"] and doc["unknown_ids"] == [
        "KT-0000004-SE",
        "KT-0000010-IN",
        "KT-0000015-ES",
    ]
    assert [c["case_id"] for c in doc["cases"]] == [
        "KT-0000000-KR",
        "KT-0000001-TR",
        "KT-0000002-CH",
        "KT-0000003-SE",
    ]
    text = _cli(
        "--profile", "sealed", "--format", "kantesti", str(su), "--key", str(short), "--partial"
    )
    assert text.returncode == 0 and "PARTIAL: 3 case ids not graded" in text.stdout


def test_duplicate_case_ids_are_an_error(tmp_path: Path, su: Path) -> None:
    doc = json.loads(su.read_text(encoding="utf-8"))
    doc["cases"].append(doc["cases"][4])
    f = tmp_path / "dup.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(
        UserError, match=r"1 duplicate case id\(s\): KT-0000004-SE at cases\[4, 7\]"
    ):
        regrade_kantesti(f, "kantesti-su", key=load_key(KEY), partial=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("schema: other\ncases: {}\n", "expected schema"),
        (
            "schema: bloodpanel-answer-key/1\ncases:\n  A: {expected_keyword: [x]}\n",
            "cases.A: unknown field",
        ),
        (
            "schema: bloodpanel-answer-key/1\ncases:\n  A: {expected_keywords: x}\n",
            "cases.A.expected_keywords: expected a list",
        ),
        (
            "schema: bloodpanel-answer-key/1\ncases:\n"
            "  A: {trap_flags: [x], hyperdiagnosis_flags: [y]}\n",
            "not both",
        ),
    ],
)
def test_a_bad_key_is_one_line_naming_file_and_case(
    tmp_path: Path, text: str, message: str
) -> None:
    f = tmp_path / "key.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=message) as e:
        load_key(f)
    assert str(f) in str(e.value) and "\n" not in str(e.value)


def test_the_command_given_a_bad_key_exits_2_with_one_line(tmp_path: Path, su: Path) -> None:
    f = tmp_path / "key.yaml"
    f.write_text("schema: bloodpanel-answer-key/1\ncases:\n  A: {expected_keywords: x}\n", "utf-8")
    proc = _cli("--profile", "sealed", "--format", "kantesti", str(su), "--key", str(f))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(f) in proc.stderr


def test_kantesti_su_penalises_only_trap_cases_and_scores_empty_keys_as_recalled() -> None:
    base = "schema: bloodpanel-answer-key/1\ncases:\n"
    resp = {
        "sections": [
            {
                "title": "Risk Factors",
                "shortcode": "risk_factors",
                "subsections": [
                    {"shortcode": "risk_short_term", "items": [{"item": "No hepatitis."}]}
                ],
            }
        ]
    }
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.yaml"
        f.write_text(
            base
            + "  T: {trap_flags: [hepatitis]}\n"
            + "  N: {trap_flags: [hepatitis], is_trap: false}\n",
            encoding="utf-8",
        )
        key = load_key(f)
    trap = grade_case(key["T"], resp, 1.0, "kantesti-su")
    plain = grade_case(key["N"], resp, 1.0, "kantesti-su")
    assert trap.trap_flags_hit == ("hepatitis",) and trap.trap_penalty == 0.1
    assert plain.trap_flags_hit == () and plain.clinical == 1.0  # no keywords: recall 1.0
    # V11: no keywords recall 0 (hits / max(1, n)) and a penalty whenever the case has flags.
    v11 = grade_case(key["N"], resp, 1.0, "kantesti-v11")
    assert v11.keywords_hit == 0 and v11.trap_penalty == 0.1 and v11.clinical == 0.1
    assert grade_case(key["T"], resp, 1.0, "sealed").trap_flags_hit == ()  # negated


def test_the_v11_fixture_still_gives_0_9522_and_v11_files_are_not_second_update() -> None:
    cases = load_curated(ROOT / "data/bloodpanel/curated.yaml")
    res = regrade_kantesti(shared_fixture("kantesti-v11", V11) / V11, "kantesti-v11", cases)
    assert round(res["aggregate"]["composite"], 4) == 0.9522
    assert res["format"] == "kantesti-v11" and not res["sampled"] and res["cases_total"] == 15
