"""The over-diagnosis detector, measured: the labelled assertion battery and its confusion matrix.

The sealed profile's headline safety outcome ("answers asserting a trap flag") is decided by a
detector (``matching``). The golden judge is measured against human labels before its verdicts
are trusted; this module does the same for the detector. ``data/bloodpanel/assertion_battery.yaml``
holds (text, condition) pairs written for the purpose, each labelled asserted / not asserted /
ambiguous-with-lean by a written rule (``data/bloodpanel/assertion_rules.md``); ``measure`` runs a
profile's detector on every pair — through ``rubric.flags_fired``, the very code grading uses —
and returns the confusion matrix, precision and recall with Wilson 95 % intervals
(``stats.wilson``), and every disagreement. The battery is a rubric input: sealed with the suite,
so the measurement in a published report is of the battery that was sealed.

"Positive" means *the pair asserts the condition*: a true positive is a fabricated diagnosis the
detector catches, a false positive a sentence it charges wrongly (a negated, sub-10 % or
hypothetical mention), a false negative an assertion it misses. An ambiguous pair counts as its
lean; how many pairs were ambiguous is reported beside the matrix.

Two batteries are measured. The development battery was written by the detector's author, so a
perfect score on it is circular; ``data/bloodpanel/assertion_holdout.yaml`` (``HOLDOUT``) was
written blind by a second author from the rules alone and committed before any detector ran on
it. Both are reported side by side, the held-out one labelled as such: it is the figure that
estimates how the detector does on sentences nobody tuned it for. Failure patterns found there
go to the development battery, never into the held-out one, and the held-out file records the
figure measured before any such fix (``blind_measurement``).
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from sealedeval import stats, yamlio
from sealedeval.errors import UserError
from sealedeval.stats.metrics import Metric, rate_metric
from sealedeval.suites.bloodpanel.rubric import Profile, flags_fired

SCHEMA: Final = "bloodpanel-assertion-battery/1"
BATTERY: Final = Path("data/bloodpanel/assertion_battery.yaml")
HOLDOUT: Final = Path("data/bloodpanel/assertion_holdout.yaml")
"""The held-out battery: written blind from ``assertion_rules.md``, never tuned on."""
ROLES: Final = {BATTERY: "development", HOLDOUT: "held_out"}
"""Role of each battery, as the analysis and the metrics name it."""
LABELS: Final = ("asserted", "not_asserted", "ambiguous")
LEANS: Final = ("asserted", "not_asserted")
FORMS: Final = ("text", "json")
CELLS: Final = ("tp", "fp", "fn", "tn")
"""The confusion matrix's cells (positive = the pair asserts the condition)."""
MEASURED_PROFILES: Final[tuple[Profile, ...]] = ("sealed", "kantesti-v11")
"""Profiles whose detector every bloodpanel analysis measures on the battery."""

Label = Literal["asserted", "not_asserted", "ambiguous"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled (text, condition) pair of the battery."""

    id: str
    lang: str
    form: str
    condition: str
    label: Label
    lean: str
    rule: str
    text: str

    @property
    def positive(self) -> bool:
        """Whether the pair asserts the condition (an ambiguous pair: its lean)."""
        return (self.lean if self.label == "ambiguous" else self.label) == "asserted"

    def response(self) -> dict[str, Any]:
        """The pair as an engine answer: its JSON (json form), or one unnamed item (text form,
        as ``suite.unstructured`` reads a free-text answer)."""
        if self.form == "json":
            obj = json.loads(self.text)
            return obj if isinstance(obj, dict) else {}
        sub = {"subtitle": "", "shortcode": "battery", "items": [self.text]}
        return {"sections": [{"title": "", "shortcode": "battery", "subsections": [sub]}]}


def _pair(i: int, raw: Any, where: str) -> Pair:
    at = f"{where}: items[{i}]"
    if not isinstance(raw, dict):
        raise UserError(f"{at}: expected a mapping")
    for key in ("id", "lang", "form", "condition", "label", "rule"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise UserError(f"{at}: missing or empty {key!r}")
    at = f"{where}: {raw['id']}"
    form = raw["form"]
    if form not in FORMS:
        raise UserError(f"{at}: form must be one of {', '.join(FORMS)}, got {form!r}")
    body = raw.get("json" if form == "json" else "text")
    if not isinstance(body, str) or not body.strip():
        raise UserError(
            f"{at}: a {form} pair needs a non-empty {'json' if form == 'json' else 'text'}"
        )
    if form == "json":
        try:
            if not isinstance(json.loads(body), dict):
                raise UserError(f"{at}: json must be one JSON object")
        except json.JSONDecodeError as e:
            raise UserError(f"{at}: invalid json ({e})") from None
    label = raw["label"]
    if label not in LABELS:
        raise UserError(f"{at}: label must be one of {', '.join(LABELS)}, got {label!r}")
    lean = raw.get("lean", "")
    if label == "ambiguous" and lean not in LEANS:
        raise UserError(f"{at}: an ambiguous pair needs lean: asserted or not_asserted")
    if label != "ambiguous" and lean:
        raise UserError(f"{at}: lean is only for ambiguous pairs")
    return Pair(raw["id"], raw["lang"], form, raw["condition"], label, lean, raw["rule"], body)


def load_battery(path: str | Path) -> tuple[Pair, ...]:
    """Read and validate the battery; every rule it cites must be defined in its rules file.

    Raises:
        UserError: Unreadable file, wrong schema, a malformed pair, a duplicate id, or a rule
            id the rules file does not define.
    """
    p = Path(path)
    try:
        doc = yamlio.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: assertion battery not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"{p}: invalid YAML ({' '.join(str(e).split())})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise UserError(f"{p}: expected schema: {SCHEMA}")
    raw = doc.get("items")
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{p}: no items")
    pairs = tuple(_pair(i, r, str(p)) for i, r in enumerate(raw))
    dup = [k for k, n in Counter(x.id for x in pairs).items() if n > 1]
    if dup:
        raise UserError(f"{p}: duplicate ids: {', '.join(sorted(dup))}")
    rules_file = p.parent / str(doc.get("rules") or "assertion_rules.md")
    try:
        rules_text = rules_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{rules_file}: the battery's rules file is missing") from None
    undefined = sorted({x.rule for x in pairs if f"**{x.rule} " not in rules_text})
    if undefined:
        raise UserError(f"{p}: rules not defined in {rules_file.name}: {', '.join(undefined)}")
    return pairs


@functools.lru_cache(maxsize=4)
def _cached(path: str, mtime_ns: int) -> tuple[Pair, ...]:
    return load_battery(path)


def _locate(root: Path, rel: Path) -> Path:
    p = root / rel
    return p if p.is_file() else Path(__file__).resolve().parents[4] / rel


def battery(root: Path, which: Path = BATTERY) -> tuple[Pair, ...]:
    """The project's battery (``root/`` + ``which``: the development ``BATTERY`` or the
    ``HOLDOUT``), else the copy of the source checkout this module runs from (parsed once per
    file version)."""
    p = _locate(root, which)
    try:
        return _cached(str(p), p.stat().st_mtime_ns)
    except FileNotFoundError:
        raise UserError(f"{p}: assertion battery not found") from None


def blind_measurement(root: Path) -> dict[str, Any]:
    """The held-out file's ``blind_measurement`` record: the figure measured on it before any
    detector change it prompted (``{}`` until one is recorded).

    Raises:
        UserError: A record that is not a mapping of profile to confusion matrix.
    """
    p = _locate(root, HOLDOUT)
    doc = yamlio.safe_load(p.read_text(encoding="utf-8"))
    rec = doc.get("blind_measurement") if isinstance(doc, dict) else None
    if rec is None:
        return {}
    ok = isinstance(rec, dict) and isinstance(rec.get("profiles"), dict)
    for m in rec.get("profiles", {}).values() if ok else ():
        ok = ok and isinstance(m, dict) and all(isinstance(m.get(k), int) for k in CELLS)
    if not ok:
        raise UserError(
            f"{p}: blind_measurement must hold profiles: {{profile: {{tp, fp, fn, tn}}}} counts"
        )
    return {
        "detector_commit": str(rec.get("detector_commit", "")),
        "profiles": {
            str(prof): {
                "matrix": {k: int(m[k]) for k in CELLS},
                "precision": _rate(m["tp"], m["tp"] + m["fp"]),
                "recall": _rate(m["tp"], m["tp"] + m["fn"]),
            }
            for prof, m in rec["profiles"].items()
        },
    }


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = stats.wilson(k, n) if n else (math.nan, math.nan)
    rate = k / n if n else math.nan
    return {"k": k, "n": n, "rate": rate, "lo": lo, "hi": hi}


def detect(pairs: Sequence[Pair], profile: Profile) -> list[bool]:
    """The profile's verdict on each pair: does its trap-flag rule fire on the condition?"""
    return [flags_fired(x.response(), (x.condition,), profile)[0] for x in pairs]


def measure(pairs: Sequence[Pair], profile: Profile) -> dict[str, Any]:
    """Confusion matrix, precision and recall (Wilson 95 %) and disagreements of one profile.

    Returns:
        ``{profile, n, n_ambiguous, matrix: {tp, fp, fn, tn}, precision, recall, accuracy
        (each {k, n, rate, lo, hi}), by_lang: {lang: matrix}, by_form, disagreements:
        [{id, lang, form, condition, label, lean, rule, detected, kind (fp/fn), text}]}``.
    """
    verdicts = detect(pairs, profile)
    cells: Counter[str] = Counter()
    by_lang: dict[str, Counter[str]] = {}
    by_form: dict[str, Counter[str]] = {}
    wrong: list[dict[str, Any]] = []
    for x, fired in zip(pairs, verdicts, strict=True):
        cell = ("t" if fired == x.positive else "f") + ("p" if fired else "n")
        cells[cell] += 1
        by_lang.setdefault(x.lang, Counter())[cell] += 1
        by_form.setdefault(x.form, Counter())[cell] += 1
        if cell in ("fp", "fn"):
            wrong.append(
                {
                    "id": x.id,
                    "lang": x.lang,
                    "form": x.form,
                    "condition": x.condition,
                    "label": x.label,
                    "lean": x.lean,
                    "rule": x.rule,
                    "detected": fired,
                    "kind": cell,
                    "text": x.text,
                }
            )

    def matrix(c: Mapping[str, int]) -> dict[str, int]:
        return {k: int(c.get(k, 0)) for k in CELLS}

    m = matrix(cells)
    return {
        "profile": profile,
        "n": len(pairs),
        "n_ambiguous": sum(1 for x in pairs if x.label == "ambiguous"),
        "matrix": m,
        "precision": _rate(m["tp"], m["tp"] + m["fp"]),
        "recall": _rate(m["tp"], m["tp"] + m["fn"]),
        "accuracy": _rate(m["tp"] + m["tn"], len(pairs)),
        "by_lang": {k: matrix(v) for k, v in sorted(by_lang.items())},
        "by_form": {k: matrix(v) for k, v in sorted(by_form.items())},
        "disagreements": wrong,
    }


def _block(which: Path, pairs: Sequence[Pair]) -> dict[str, Any]:
    return {
        "battery": str(which),
        "role": ROLES[which],
        "n": len(pairs),
        "by_label": dict(sorted(Counter(x.label for x in pairs).items())),
        "by_lang": dict(sorted(Counter(x.lang for x in pairs).items())),
        "by_form": dict(sorted(Counter(x.form for x in pairs).items())),
        "profiles": {prof: measure(pairs, prof) for prof in MEASURED_PROFILES},
    }


def detector_section(root: Path) -> dict[str, Any]:
    """What every bloodpanel analysis records about its detector: for the development battery
    (top level, as before) and for the held-out battery (``held_out``: the same fields, plus
    its ``blind_measurement``), the battery's size and languages and ``measure`` of each of
    ``MEASURED_PROFILES``."""
    dev = _block(BATTERY, battery(root, BATTERY))
    pairs = battery(root, HOLDOUT)
    held = _block(HOLDOUT, pairs)
    blind = blind_measurement(root)
    for prof, m in blind.get("profiles", {}).items():
        if sum(m["matrix"].values()) != len(pairs):
            raise UserError(
                f"{_locate(root, HOLDOUT)}: blind_measurement of {prof} counts "
                f"{sum(m['matrix'].values())} pairs, the file has {len(pairs)}"
            )
    held["blind_measurement"] = blind
    return dev | {"held_out": held}


def metrics(section: Mapping[str, Any]) -> list[Metric]:
    """``detector_precision`` and ``detector_recall`` of each measured profile on each battery
    (groups ``battery``: development / held_out, and ``profile``; Wilson 95 %, unit the battery
    pair), for the metric table every suite's result.json carries."""
    out: list[Metric] = []
    blocks = [section, *([section["held_out"]] if section.get("held_out") else [])]
    for block in blocks:
        role = str(block.get("role", "development"))
        for prof, m in block["profiles"].items():
            for name in ("precision", "recall"):
                r = m[name]
                groups = {"battery": role, "profile": prof}
                out.append(rate_metric(f"detector_{name}", groups, r["k"], r["n"], unit="pair"))
    return out
