"""The held-out assertion battery: written blind, measured beside the development battery.

What must hold for the held-out figure to mean anything: the file is a different set of
sentences from the development battery (no shared id or text), it covers the languages, forms
and rule classes the issue lists, it is sealed with the rubric, every analysis measures it with
the same code path as the development battery, and the report tells the two apart — including
when the detector has changed since the blind measurement (the live figure is then no longer
blind, and the report must show the recorded one).
"""

from __future__ import annotations

import copy
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval import stats
from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.battery import (
    BATTERY,
    HOLDOUT,
    MEASURED_PROFILES,
    Pair,
    blind_measurement,
    detector_section,
    load_battery,
    measure,
)
from sealedeval.suites.bloodpanel.present import detector as detector_md
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def held() -> tuple[Pair, ...]:
    return load_battery(ROOT / HOLDOUT)


@pytest.fixture(scope="module")
def section() -> dict[str, Any]:
    return detector_section(ROOT)


def test_holdout_is_big_enough_in_every_language_and_form(held: tuple[Pair, ...]) -> None:
    assert len(held) >= 120
    by_lang = Counter(p.lang for p in held)
    assert set(by_lang) == {"en", "de", "es", "fr"}
    assert all(by_lang[lang] >= 20 for lang in ("de", "es", "fr")), by_lang
    for lang in by_lang:
        mine = [p for p in held if p.lang == lang]
        assert {p.form for p in mine} == {"text", "json"}, lang
        assert {p.positive for p in mine} == {True, False}, lang
    assert set(Counter(p.label for p in held)) == {"asserted", "not_asserted", "ambiguous"}
    # Every rule class of assertion_rules.md decides some pair (both hedges, both comparison
    # sides, checklists, probabilities, hypotheticals, test names, scope, vocabulary).
    rules = {p.rule for p in held}
    assert rules >= {"A1", "A2", "A3", "A4", "N1", "N2", "N3", "P1", "H1", "H2", "C1", "C2"}
    assert rules & {"S1", "S2"}


COINCIDENCES = {"diabetes: no"}
"""Texts both authors wrote independently (the shortest checklist line there is: ho-es-010, a
Spanish line, and en-chk-04), found after the blind commit; left in, as measured."""


def test_holdout_shares_no_pair_with_the_development_battery(held: tuple[Pair, ...]) -> None:
    dev = load_battery(ROOT / BATTERY)
    assert not {p.id for p in held} & {p.id for p in dev}
    norm = lambda t: " ".join(t.lower().split())  # noqa: E731
    shared = {norm(p.text) for p in held} & {norm(p.text) for p in dev}
    assert shared == COINCIDENCES


def test_holdout_is_sealed_beside_the_battery() -> None:
    inputs = BloodpanelSuite().rubric_inputs()
    assert str(HOLDOUT) in inputs
    assert inputs.index(str(HOLDOUT)) == inputs.index(str(BATTERY)) + 1


def test_analysis_measures_the_holdout_by_the_battery_code_path(
    held: tuple[Pair, ...], section: dict[str, Any]
) -> None:
    h = section["held_out"]
    assert h["role"] == "held_out" and section["role"] == "development"
    assert h["battery"] == str(HOLDOUT) and h["n"] == len(held)
    assert h["by_lang"] == dict(sorted(Counter(p.lang for p in held).items()))
    for prof in MEASURED_PROFILES:
        m = h["profiles"][prof]
        assert m == measure(held, prof)
        x = m["matrix"]
        assert sum(x.values()) == len(held)
        assert (x["tp"] + x["fn"]) == sum(1 for p in held if p.positive)
        assert (m["recall"]["lo"], m["recall"]["hi"]) == stats.wilson(x["tp"], x["tp"] + x["fn"])
        assert len(m["disagreements"]) == x["fp"] + x["fn"]
        assert {w["id"] for w in m["disagreements"]} <= {p.id for p in held}


def test_blind_record_counts_the_file_and_rates_follow_from_it(
    held: tuple[Pair, ...], section: dict[str, Any]
) -> None:
    blind = section["held_out"]["blind_measurement"]
    assert set(blind["profiles"]) == set(MEASURED_PROFILES)
    assert len(blind["detector_commit"]) == 40
    for m in blind["profiles"].values():
        x = m["matrix"]
        assert sum(x.values()) == len(held)
        assert x["tp"] + x["fn"] == sum(1 for p in held if p.positive)
        assert m["precision"]["rate"] == x["tp"] / (x["tp"] + x["fp"])
        assert (m["precision"]["lo"], m["precision"]["hi"]) == stats.wilson(
            x["tp"], x["tp"] + x["fp"]
        )


def test_report_labels_the_holdout_and_lists_its_disagreements(section: dict[str, Any]) -> None:
    md = "\n".join(detector_md.render({"detector": section}))
    dev_at = md.index("#### Development battery")
    held_at = md.index("#### Held-out battery (written blind")
    assert dev_at < held_at
    held_md = md[held_at:]
    h = section["held_out"]
    for prof in MEASURED_PROFILES:
        x = h["profiles"][prof]["matrix"]
        row = f"| {prof} | " + " | ".join(str(x[k]) for k in ("tp", "fp", "fn", "tn")) + " |"
        assert row in held_md
        wrong = h["profiles"][prof]["disagreements"]
        assert f"Disagreements with the labels, {prof} (held_out): {len(wrong)}" in held_md
        for w in wrong[: detector_md.MAX_LISTED]:
            assert f"| {w['id']} |" in held_md
    # An analysis without a held-out block (recorded before it existed) still renders.
    old = {k: v for k, v in section.items() if k != "held_out"}
    assert "#### Held-out" not in "\n".join(detector_md.render({"detector": old}))


def test_report_shows_the_blind_figure_when_the_detector_changed_since(
    section: dict[str, Any],
) -> None:
    h = section["held_out"]
    md = "\n".join(detector_md.render({"detector": section}))
    live_equals_blind = all(
        h["profiles"][p]["matrix"] == m["matrix"]
        for p, m in h["blind_measurement"]["profiles"].items()
    )
    assert ("figure above is still blind" in md) == live_equals_blind
    # A detector that now scores differently: the recorded blind table must be shown too.
    changed = copy.deepcopy(section)
    live = changed["held_out"]["profiles"]["sealed"]
    live["matrix"] = {"tp": 93, "fp": 0, "fn": 0, "tn": len(live["disagreements"]) + 105}
    md = "\n".join(detector_md.render({"detector": changed}))
    held_md = md[md.index("#### Held-out") :]
    assert "only this one is blind" in held_md
    x = h["blind_measurement"]["profiles"]["sealed"]["matrix"]
    assert "| sealed | " + " | ".join(str(x[k]) for k in ("tp", "fp", "fn", "tn")) in held_md


def _project(tmp: Path, blind: Any) -> Path:
    d = tmp / "data" / "bloodpanel"
    d.mkdir(parents=True)
    for name in ("assertion_battery.yaml", "assertion_rules.md"):
        shutil.copy(ROOT / "data" / "bloodpanel" / name, d / name)
    doc = yaml.safe_load((ROOT / HOLDOUT).read_text(encoding="utf-8"))
    if blind is None:
        doc.pop("blind_measurement", None)
    else:
        doc["blind_measurement"] = blind
    (d / "assertion_holdout.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return tmp


def test_a_project_holdout_without_a_record_measures_live_only(tmp_path: Path) -> None:
    root = _project(tmp_path, None)
    assert blind_measurement(root) == {}
    s = detector_section(root)
    assert s["held_out"]["blind_measurement"] == {}
    md = "\n".join(detector_md.render({"detector": s}))
    assert "#### Held-out" in md and "First measurement" not in md


@pytest.mark.parametrize(
    ("blind", "message"),
    [
        ({"profiles": {"sealed": {"tp": 1, "fp": 0, "fn": 0}}}, "blind_measurement must hold"),
        ({"profiles": ["sealed"]}, "blind_measurement must hold"),
        (
            {"profiles": {"sealed": {"tp": 1, "fp": 0, "fn": 0, "tn": 0}}},
            "blind_measurement of sealed counts 1 pairs, the file has",
        ),
    ],
)
def test_a_bad_blind_record_is_one_line_naming_the_file(
    tmp_path: Path, blind: Any, message: str
) -> None:
    root = _project(tmp_path, blind)
    with pytest.raises(UserError, match=message) as e:
        detector_section(root)
    assert "\n" not in str(e.value) and "assertion_holdout.yaml" in str(e.value)
