"""Bloodpanel cases: one schema for the curated 15, the synthetic cohort and the SQL loader.

A case is immutable data. ``Case.to_record`` flattens it to a JSON-serialisable row that fits a
Parquet table (scalars, lists of strings, and the panel as one canonical JSON string — a nested
struct column would tie the raw store to this module's field list), and ``Case.from_record``
inverts it exactly, so a case read back from the raw store grades identically.

The curated cases live in ``data/bloodpanel/curated.yaml`` (tasks as data); ``load_curated``
validates every field and reports a bad one as a one-line ``UserError`` naming the case.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast

import yaml

from sealedeval import yamlio
from sealedeval.errors import UserError
from sealedeval.suites.bloodpanel.analytes import code_for

Sex = Literal["female", "male"]
Flag = Literal["low", "normal", "high"]

SPECIALTIES: Final = (
    "haematology",
    "endocrinology",
    "metabolic",
    "hepatology",
    "nephrology",
    "cardiology",
    "rheumatology",
    "internal_medicine",
)
"""The eight specialties of the spec; internal medicine holds every over-diagnosis trap."""

UNKNOWN_LABEL: Final = "ZZ"
"""Label of a case with no country: ``ZZ`` is ISO 3166's user-assigned "unknown" code."""

SCHEMA: Final = "bloodpanel-cases/1"

_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")
_BOUND = re.compile(r"^\s*([<>])\s*(?:1:)?(\d+(?:\.\d+)?)\s*$")


def parse_reference(text: str) -> tuple[float | None, float | None]:
    """``(low, high)`` of a printed reference range; None where the range is open.

    ``"12.0-16.0"`` → (12.0, 16.0); ``"<200"`` → (None, 200.0); ``">40"`` → (40.0, None);
    ``"<1:80"`` (a titre) → (None, 80.0); ``""`` → (None, None).

    Raises:
        ValueError: The text is none of these forms.
    """
    if not text.strip():
        return (None, None)
    m = _RANGE.match(text)
    if m:
        return (float(m.group(1)), float(m.group(2)))
    m = _BOUND.match(text)
    if m:
        bound = float(m.group(2))
        return (None, bound) if m.group(1) == "<" else (bound, None)
    raise ValueError(f"unreadable reference range {text!r}")


@dataclass(frozen=True, slots=True)
class PanelRow:
    """One printed result: analyte, value, unit and reference range.

    ``low``/``high`` are parsed from ``ref`` once. A one-sided bound is strict (``"<5.7"`` means
    5.7 is already high, as HbA1c 5.7 % is prediabetes); a two-sided range is inclusive (SHBG 18
    on 18-144 is in range).
    """

    analyte: str
    code: str
    value: float
    unit: str
    ref: str
    low: float | None = None
    high: float | None = None
    flag: Flag = field(init=False, compare=False)
    """Whether the value is below, inside or above the printed reference range (derived)."""

    def __post_init__(self) -> None:
        one_sided = self.ref.lstrip().startswith(("<", ">"))
        flag: Flag = "normal"
        if self.low is not None and (
            self.value <= self.low if one_sided else self.value < self.low
        ):
            flag = "low"
        elif self.high is not None and (
            self.value >= self.high if one_sided else self.value > self.high
        ):
            flag = "high"
        object.__setattr__(self, "flag", flag)

    def to_dict(self) -> dict[str, Any]:
        """Plain mapping in printed form (the parsed bounds are derived, not stored)."""
        return {"analyte": self.analyte, "value": self.value, "unit": self.unit, "ref": self.ref}


def make_row(analyte: str, value: float, unit: str, ref: str, where: str = "panel") -> PanelRow:
    """Build a validated row: known analyte, finite value, readable reference range.

    Raises:
        UserError: Any of the three is wrong; the message starts with ``where``.
    """
    code = code_for(analyte, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{where}: value of {analyte!r} must be a finite number, got {value!r}")
    try:
        low, high = parse_reference(ref)
    except ValueError as e:
        raise UserError(f"{where}: {analyte}: {e}") from None
    return PanelRow(analyte, code, float(value), unit, ref, low, high)


@dataclass(frozen=True, slots=True)
class Case:
    """A blood panel to interpret, with its pre-registered answer key.

    Attributes:
        case_uid: Opaque stable id (a hash); the only id an engine may see.
        case_id: Human id (``BT-011-SLE``, ``S-<uid>``); may carry the diagnosis, never sent.
        label: ISO 3166-1 alpha-2 country label of a generated case (``ZZ`` when none).
        specialty: One of ``SPECIALTIES``.
        age: Age in years.
        sex: ``"female"`` or ``"male"``.
        panel: The printed results, in report order.
        expected_keywords: Diagnostic keywords whose recall is 70 % of the clinical score.
        expected_scoring_systems: Scoring systems whose recall is 20 % of the clinical score.
        trap_flags: Over-diagnosis flags; each fabricated one costs 0.10 of the clinical score.
        is_trap: Whether the case is an over-diagnosis trap.
        archetype: Clinical pattern the case is an instance of (``ida``, ``gilbert`` …).
        title: Human title (never sent to an engine).
        notes: Clinical notes of the curator.
        v11_category: Category the published V11 harness reported the case under.
        source: ``"curated"`` or the generator name and version.
    """

    case_uid: str
    case_id: str
    label: str
    specialty: str
    age: int
    sex: Sex
    panel: tuple[PanelRow, ...]
    expected_keywords: tuple[str, ...]
    expected_scoring_systems: tuple[str, ...]
    trap_flags: tuple[str, ...]
    is_trap: bool
    archetype: str
    title: str = ""
    notes: str = ""
    v11_category: str = ""
    source: str = "curated"
    _values: Mapping[str, float] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        # First row wins if an analyte is printed twice; lookups are by canonical code.
        values: dict[str, float] = {}
        for row in self.panel:
            values.setdefault(row.code, row.value)
        object.__setattr__(self, "_values", values)

    def value(self, code: str) -> float | None:
        """Value of the analyte with canonical ``code``, or None when the panel lacks it."""
        return self._values.get(code)

    def row(self, code: str) -> PanelRow | None:
        """The row of the analyte with canonical ``code``, or None."""
        for r in self.panel:
            if r.code == code:
                return r
        return None

    def to_record(self) -> dict[str, Any]:
        """Flat JSON-serialisable row (the panel as a canonical JSON string)."""
        return {
            "case_uid": self.case_uid,
            "case_id": self.case_id,
            "label": self.label,
            "specialty": self.specialty,
            "age": self.age,
            "sex": self.sex,
            "panel_json": json.dumps(
                [r.to_dict() for r in self.panel], ensure_ascii=False, separators=(",", ":")
            ),
            "expected_keywords": list(self.expected_keywords),
            "expected_scoring_systems": list(self.expected_scoring_systems),
            "trap_flags": list(self.trap_flags),
            "is_trap": self.is_trap,
            "archetype": self.archetype,
            "title": self.title,
            "notes": self.notes,
            "v11_category": self.v11_category,
            "source": self.source,
        }

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Case:
        """Inverse of ``to_record`` (also accepts a row read back from Parquet).

        Raises:
            UserError: A field is missing or malformed; the message names the case.
        """
        where = f"case {rec.get('case_id', rec.get('case_uid', '?'))}"
        try:
            rows = json.loads(rec["panel_json"])
            panel = tuple(
                make_row(r["analyte"], r["value"], r["unit"], r["ref"], f"{where}: panel")
                for r in rows
            )
            return cls(
                case_uid=str(rec["case_uid"]),
                case_id=str(rec["case_id"]),
                label=str(rec["label"]),
                specialty=_check_specialty(str(rec["specialty"]), where),
                age=int(rec["age"]),
                sex=_check_sex(str(rec["sex"]), where),
                panel=panel,
                expected_keywords=tuple(str(k) for k in rec["expected_keywords"]),
                expected_scoring_systems=tuple(str(k) for k in rec["expected_scoring_systems"]),
                trap_flags=tuple(str(k) for k in rec["trap_flags"]),
                is_trap=bool(rec["is_trap"]),
                archetype=str(rec["archetype"]),
                title=str(rec.get("title") or ""),
                notes=str(rec.get("notes") or ""),
                v11_category=str(rec.get("v11_category") or ""),
                source=str(rec.get("source") or "curated"),
            )
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
            raise UserError(f"{where}: malformed case record ({type(e).__name__}: {e})") from None


def curated_uid(case_id: str) -> str:
    """Opaque uid of a curated case: a hash, so it carries no trace of the diagnosis."""
    return "bp-" + hashlib.sha256(f"bloodpanel/curated/{case_id}".encode()).hexdigest()[:16]


def _check_sex(sex: str, where: str) -> Sex:
    if sex not in ("female", "male"):
        raise UserError(f"{where}: sex must be 'female' or 'male', got {sex!r}")
    return cast(Sex, sex)


def _check_specialty(specialty: str, where: str) -> str:
    if specialty not in SPECIALTIES:
        known = ", ".join(SPECIALTIES)
        raise UserError(f"{where}: unknown specialty {specialty!r} (known: {known})")
    return specialty


def _str_list(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserError(f"{where}: {key!r} must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _case_from_yaml(doc: Any, where: str) -> Case:
    if not isinstance(doc, dict):
        raise UserError(f"{where}: not a mapping")
    for key in (
        "id",
        "title",
        "specialty",
        "archetype",
        "age",
        "sex",
        "panel",
        "expected_keywords",
    ):
        if key not in doc:
            raise UserError(f"{where}: missing {key!r}")
    case_id = str(doc["id"])
    where = f"{where} ({case_id})"
    age = doc["age"]
    if isinstance(age, bool) or not isinstance(age, int) or not 0 < age < 120:
        raise UserError(f"{where}: age must be an integer in 1..119, got {age!r}")
    panel_doc = doc["panel"]
    if not isinstance(panel_doc, list) or not panel_doc:
        raise UserError(f"{where}: 'panel' must be a non-empty list")
    rows: list[PanelRow] = []
    for j, r in enumerate(panel_doc):
        rwhere = f"{where}: panel[{j}]"
        if not isinstance(r, dict) or not {"analyte", "value", "unit", "ref"} <= set(r):
            raise UserError(f"{rwhere}: needs analyte, value, unit and ref")
        rows.append(
            make_row(
                str(r["analyte"]), r["value"], str(r["unit"] or ""), str(r["ref"] or ""), rwhere
            )
        )
    flags = _str_list(doc, "hyperdiagnosis_flags", where)
    is_trap = bool(doc.get("trap", False))
    if flags and not is_trap:
        raise UserError(f"{where}: hyperdiagnosis_flags given but 'trap' is not true")
    return Case(
        case_uid=curated_uid(case_id),
        case_id=case_id,
        label=str(doc.get("label") or UNKNOWN_LABEL),
        specialty=_check_specialty(str(doc["specialty"]), where),
        age=age,
        sex=_check_sex(str(doc["sex"]), where),
        panel=tuple(rows),
        expected_keywords=_str_list(doc, "expected_keywords", where),
        expected_scoring_systems=_str_list(doc, "expected_scoring_systems", where),
        trap_flags=flags,
        is_trap=is_trap,
        archetype=str(doc["archetype"]),
        title=str(doc["title"]),
        notes=" ".join(str(doc.get("clinical_notes") or "").split()),
        v11_category=str(doc.get("v11_category") or ""),
        source="curated",
    )


def load_curated(path: str | Path) -> list[Case]:
    """Load and validate the curated cases, in file order.

    Raises:
        UserError: Missing file, bad YAML, wrong schema, duplicate id, or a malformed case.
    """
    p = Path(path)
    try:
        doc = yamlio.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: curated cases file not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"{p}: invalid YAML ({' '.join(str(e).split())})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise UserError(f"{p}: expected a mapping with schema: {SCHEMA}")
    items = doc.get("cases")
    if not isinstance(items, list) or not items:
        raise UserError(f"{p}: expected a non-empty 'cases' list")
    out: list[Case] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        case = _case_from_yaml(item, f"{p}: cases[{i}]")
        if case.case_id in seen:
            raise UserError(f"{p}: cases[{i}]: duplicate id {case.case_id!r}")
        seen.add(case.case_id)
        out.append(case)
    return out


def cases_by_id(cases: Sequence[Case]) -> dict[str, Case]:
    """``case_id`` → case."""
    return {c.case_id: c for c in cases}
