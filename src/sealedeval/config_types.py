"""The configuration's records: what the loader (``sealedeval.config``) returns.

Engine kinds and the suite protocol read these records; the loader checks a config against the
kinds and suites. Keeping the records here, below both, is what lets the loader sit above them
without an import circle.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_text


@dataclass(frozen=True)
class EngineConfig:
    """One configured engine. Secrets are never stored here, only the env var naming them."""

    name: str
    kind: str
    model: str = ""
    base_url: str = ""
    api_key_env: str = ""
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    fail_on_error: float = 0.0
    """Errors (after retries) a run may end with and still succeed: 0 none, < 1 a share of the
    calls made, >= 1 a count (Inspect AI's ``fail_on_error``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def api_key(self) -> str | None:
        """The key from the environment; a configured but unset variable is a user error."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise UserError(
                f"engine {self.name!r}: environment variable {self.api_key_env} is not set"
            )
        return key

    def public(self) -> dict[str, Any]:
        """What may be written to raw rows and reports: no key, only the variable's name."""
        return {
            "name": self.name,
            "kind": self.kind,
            "model": self.model,
            "base_url": self.base_url,
            "price_in_per_mtok": self.price_in_per_mtok,
            "price_out_per_mtok": self.price_out_per_mtok,
        }


_ENGINE_FIELDS = {f for f in EngineConfig.__dataclass_fields__ if f not in ("name", "extra")}


@dataclass(frozen=True)
class Config:
    root: Path
    data: Mapping[str, Any]
    sources: tuple[str, ...]
    bound: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The suites this config binds from a kind (``suites.<name>.kind: tasks``), by name:
    ``plugins.BoundSuite`` records made by the loader. They belong to this config alone; the
    suite registry is never changed by loading a config (``plugins.get_suite(name, cfg)``)."""

    @property
    def seed(self) -> int:
        return int(self.data["project"]["seed"])

    @property
    def name(self) -> str:
        return str(self.data["project"]["name"])

    def engine(self, name: str) -> EngineConfig:
        engines = self.data["engines"]
        if name not in engines:
            known = ", ".join(sorted(engines))
            raise UserError(f"engine {name!r} is not configured in {self.where} (known: {known})")
        raw = dict(engines[name])
        known_fields = {k: raw.pop(k) for k in list(raw) if k in _ENGINE_FIELDS}
        return EngineConfig(name=name, extra=raw, **known_fields)

    def suite(self, name: str) -> dict[str, Any]:
        suites = self.data.get("suites", {})
        if name not in suites:
            raise UserError(f"suite {name!r} is not configured in {self.where}")
        return dict(suites[name])

    def enabled_suites(self) -> list[str]:
        return sorted(n for n, s in self.data.get("suites", {}).items() if s.get("enabled", True))

    @property
    def where(self) -> str:
        return " + ".join(self.sources)

    def sha256(self) -> str:
        return sha256_text(compact(self.data))
