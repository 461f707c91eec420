"""The assertion battery and the detector measured on it (issue 16)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from sealedeval import stats
from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.battery import (
    BATTERY,
    MEASURED_PROFILES,
    Pair,
    detect,
    detector_section,
    load_battery,
    measure,
    metrics,
)
from sealedeval.suites.bloodpanel.present import detector as detector_md
from sealedeval.suites.bloodpanel.suite import BloodpanelSuite

ROOT = Path(__file__).resolve().parents[2]
TARGET = 0.95
"""Issue 16: precision and recall of the sealed detector on the battery, each at least this."""


@pytest.fixture(scope="module")
def pairs() -> tuple[Pair, ...]:
    return load_battery(ROOT / BATTERY)


def test_battery_covers_every_class_the_issue_lists(pairs: tuple[Pair, ...]) -> None:
    assert len(pairs) >= 200
    assert {p.lang for p in pairs} >= {"en", "de", "es", "fr"}
    assert {p.form for p in pairs} == {"text", "json"}
    assert Counter(p.label for p in pairs).keys() == {"asserted", "not_asserted", "ambiguous"}
    assert all(p.lean in ("asserted", "not_asserted") for p in pairs if p.label == "ambiguous")
    texts = " ".join(p.text for p in pairs).lower()
    for needle in (
        ": not present",
        "— absent",
        ": negative",
        "<5%",
        "1-3%",
        "5 percent",
        "low probability",
        "much less likely than",
        "nothing in this panel would suggest",
        "surface antigen",
        "pointing to",
        "hbv",
        "hcv",
        "nash",
        "ida",
        "dm2",
        "ckd",
        '"probability": "high"',
        "cannot be excluded",
        "not inconsistent with",
    ):
        assert needle in texts, needle
    # Several diagnoses with probabilities on one line, labelled one condition at a time.
    multi = [p for p in pairs if p.rule == "C2"]
    assert len({p.text for p in multi}) < len(multi)
    for lang in ("de", "es", "fr"):
        mine = [p for p in pairs if p.lang == lang]
        assert {p.positive for p in mine} == {True, False}, lang


def test_sealed_detector_meets_the_target_and_kantesti_v11_is_measured(
    pairs: tuple[Pair, ...],
) -> None:
    sealed = measure(pairs, "sealed")
    assert sealed["precision"]["rate"] >= TARGET and sealed["recall"]["rate"] >= TARGET
    v11 = measure(pairs, "kantesti-v11")
    assert v11["precision"]["rate"] < sealed["precision"]["rate"]
    assert v11["recall"]["rate"] < sealed["recall"]["rate"]
    for m in (sealed, v11):
        x = m["matrix"]
        assert sum(x.values()) == len(pairs) == m["n"]
        assert m["n_ambiguous"] == sum(1 for p in pairs if p.label == "ambiguous")
        assert len(m["disagreements"]) == x["fp"] + x["fn"]
        k, n = x["tp"], x["tp"] + x["fp"]
        assert (m["precision"]["k"], m["precision"]["n"]) == (k, n)
        assert (m["precision"]["lo"], m["precision"]["hi"]) == stats.wilson(k, n)
        assert sum(sum(c.values()) for c in m["by_lang"].values()) == len(pairs)


def test_kantesti_v11_detector_is_the_published_substring_rule(pairs: tuple[Pair, ...]) -> None:
    text_pairs = [p for p in pairs if p.form == "text"]
    assert detect(text_pairs, "kantesti-v11") == [
        p.condition.lower() in p.text.lower() for p in text_pairs
    ]


def test_disagreements_name_the_pair(pairs: tuple[Pair, ...]) -> None:
    m = measure(pairs, "kantesti-v11")
    by_id = {p.id: p for p in pairs}
    for w in m["disagreements"]:
        p = by_id[w["id"]]
        assert w["kind"] == ("fp" if w["detected"] else "fn")
        assert w["detected"] != p.positive and w["text"] == p.text


def _write(tmp: Path, items: list[dict[str, str]], rules: str = "- **N1 — x.**\n") -> Path:
    (tmp / "assertion_rules.md").write_text(rules, encoding="utf-8")
    f = tmp / "b.yaml"
    f.write_text(
        yaml.safe_dump({"schema": "bloodpanel-assertion-battery/1", "items": items}),
        encoding="utf-8",
    )
    return f


GOOD = {
    "id": "x-1",
    "lang": "en",
    "form": "text",
    "condition": "hepatitis",
    "label": "not_asserted",
    "rule": "N1",
    "text": "No hepatitis.",
}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([GOOD, GOOD], "duplicate ids: x-1"),
        ([GOOD | {"rule": "Z9"}], "rules not defined in assertion_rules.md: Z9"),
        ([GOOD | {"label": "ambiguous"}], "needs lean"),
        ([GOOD | {"lean": "asserted"}], "lean is only for ambiguous"),
        ([GOOD | {"form": "json", "json": "[1]"}], "one JSON object"),
        ([GOOD | {"label": "maybe"}], "label must be one of"),
    ],
)
def test_a_bad_battery_is_one_line_naming_the_pair(
    tmp_path: Path, items: list[dict[str, str]], message: str
) -> None:
    with pytest.raises(UserError, match=message) as e:
        load_battery(_write(tmp_path, items))
    assert "\n" not in str(e.value) and str(tmp_path) in str(e.value)


def test_the_analysis_carries_the_measurement_as_metrics_and_renders_it() -> None:
    section = detector_section(ROOT)
    assert set(section["profiles"]) == set(MEASURED_PROFILES)
    ms = metrics(section)
    assert sorted((m["metric"], m["groups"]["battery"], m["groups"]["profile"]) for m in ms) == (
        sorted(
            (f"detector_{k}", b, p)
            for k in ("precision", "recall")
            for b in ("development", "held_out")
            for p in MEASURED_PROFILES
        )
    )
    for m in ms:
        block = section if m["groups"]["battery"] == "development" else section["held_out"]
        r = block["profiles"][m["groups"]["profile"]][m["metric"].split("_")[1]]
        assert m["estimate"] == r["rate"] and m["method"] == "wilson" and m["unit"] == "pair"
    md = "\n".join(detector_md.render({"detector": section}))
    v11 = section["profiles"]["kantesti-v11"]
    assert (
        "| kantesti-v11 | " + " | ".join(str(v11["matrix"][k]) for k in ("tp", "fp", "fn", "tn"))
        in md
    )
    first = v11["disagreements"][0]
    assert f"| {first['id']} |" in md
    n_wrong = len(v11["disagreements"])
    assert f"Disagreements with the labels, kantesti-v11 (development): {n_wrong}" in md
    assert detector_md.render({}) == []  # an analysis from before the measurement
    # The battery and its rules are sealed with the suite.
    inputs = BloodpanelSuite().rubric_inputs()
    assert str(BATTERY) in inputs and "data/bloodpanel/assertion_rules.md" in inputs
