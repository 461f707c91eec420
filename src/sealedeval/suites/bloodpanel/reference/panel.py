"""What every rule module shares: the ``Finding`` a rule returns and the ``Panel`` it reads.

A rule (``detect(panel) -> [Finding]``) reads values by canonical analyte code and the
laboratory's own high/low flags, and leaves facts for later rules in ``Panel.facts`` (glucose
status for the liver and lipid rules, kidney status for anaemia, alcohol for macrocytosis); the
order in which rules run is ``report.DETECTORS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sealedeval.suites.bloodpanel.cases import Case, PanelRow


@dataclass
class Finding:
    """One conclusion and everything the report says about it."""

    key: str
    name: str
    weight: float
    reason: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    implications: list[str] = field(default_factory=list)
    scores: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)
    severity: list[str] = field(default_factory=list)
    medical: list[str] = field(default_factory=list)
    lifestyle: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    referral: list[str] = field(default_factory=list)
    alternatives: list[tuple[str, float, str]] = field(default_factory=list)


def fmt(x: float) -> str:
    """A value as a laboratory prints it (no trailing zeros)."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


class Panel:
    """Read access to a case's panel by canonical code, plus facts derived along the way."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.age = case.age
        self.sex = case.sex
        self.facts: dict[str, Any] = {}
        self._rows: dict[str, PanelRow] = {}
        self._flags: dict[str, str] = {}
        for r in case.panel:
            if r.code not in self._rows:  # first row wins, as in Case.value
                self._rows[r.code] = r
                self._flags[r.code] = r.flag
        self._shown: dict[str, str] = {}

    def v(self, code: str) -> float | None:
        r = self._rows.get(code)
        return r.value if r is not None else None

    def row(self, code: str) -> PanelRow | None:
        return self._rows.get(code)

    def high(self, code: str) -> bool:
        return self._flags.get(code) == "high"

    def low(self, code: str) -> bool:
        return self._flags.get(code) == "low"

    def normal(self, code: str) -> bool:
        return self._flags.get(code) == "normal"

    def uln(self, code: str) -> float | None:
        r = self._rows.get(code)
        return r.high if r is not None else None

    def times_uln(self, code: str) -> float | None:
        value, top = self.v(code), self.uln(code)
        return value / top if value is not None and top else None

    def show(self, code: str) -> str:
        """``"ALT 96 U/L (reference <41)"`` (cached: reports quote a value several times)."""
        text = self._shown.get(code)
        if text is None:
            r = self._rows.get(code)
            if r is None:
                return code
            unit = f" {r.unit}" if r.unit else ""
            ref = f" (reference {r.ref})" if r.ref else ""
            text = f"{r.analyte} {fmt(r.value)}{unit}{ref}"
            self._shown[code] = text
        return text
