"""The design sealed with the rubric: per suite, which engines answer, what is compared, how much.

A pre-registration fixes more than the grading code. "Three repeats of golden on engines A and B,
A compared with B" is a promise the result must keep: leaving out the engine that did badly, or
the comparison that came out the wrong way, is selective reporting, and adding repeats until a
difference appears is optional stopping. So ``sealedeval seal`` also writes, into ``rubric.lock``,
the design the config describes (``designs``), keyed by the config files it was read from — one
design per profile (``config/config.yaml``, ``config/config.yaml + config/tiny.yaml``, ...).
Sealing another profile adds its design and keeps the others.

A suite's design (``suite_design``):

- ``engines``: name → identity (``kind``, ``model``, and ``variant`` where a kind has variants):
  what answers. Operational settings (concurrency, timeouts, retries, prices) are not design:
  they do not change what is measured.
- ``comparisons``: the engine pairs the config pre-registers (``compare: [a, b]``, or
  ``comparisons: [[a, b], ...]``; a suite may override with the ``design_comparisons`` hook, as
  the ``tasks`` kind does for ``analysis.comparisons: all``).
- ``parameters``: every other key of the suite's config section (counts, repeats, limits,
  cohorts, temperatures): the sizes of the study.
- ``shards`` (sharded suites only): the shard plan, the partition function's name and version
  and N per engine (``seal/shards.py``); a changed N is disclosed like a changed parameter.

The design does not enter the rubric's sha256 (item seeds derive from that, and re-sealing a
profile must not move them); it is committed in the same file, so the seal commit dates it.
What a result does against it (``compare``): an engine or comparison of the sealed design that the
result lacks, or a sealed engine answered by another model, is a deviation the audit FAILs; an
engine the design does not name is allowed and labelled "added after the seal"; a changed
parameter is disclosed with its old and new value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.plugins import get_suite, hook
from sealedeval.seal import lock, shards
from sealedeval.stats.comparisons import EXPLORATORY

DESIGN_FORMAT = "sealedeval.design/1"
ENGINE_IDENTITY_KEYS = ("kind", "model", "variant")
"""What identifies an engine as the thing measured; everything else of its config is operational."""
NON_PARAMETER_KEYS = frozenset({"engines", "compare", "comparisons", "enabled", "shards"})
"""Suite-section keys that are the design's engines and comparisons themselves (or, ``enabled``,
whether the suite runs at all, which the sealed suite list already says; ``shards``, sealed as
the shard plan: ``seal/shards.py``)."""


def profile_key(sources: Sequence[str]) -> str:
    """The key of a profile's design: the config files it was merged from, in order."""
    return " + ".join(sources)


def engine_identity(engine_cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: engine_cfg[k] for k in ENGINE_IDENTITY_KEYS if engine_cfg.get(k) not in (None, "")}


def _pairs(raw: Any, engines: Sequence[str]) -> list[list[str]]:
    """Engine pairs from a ``compare`` / ``comparisons`` value: ``[a, b]``, ``[[a, b], ...]`` or
    ``all`` (every pair of the suite's engines)."""
    if raw == "all":
        return [list(p) for p in combinations(sorted(engines), 2)]
    if not isinstance(raw, list) or not raw:
        return []
    if all(isinstance(x, str) for x in raw):
        return [[str(raw[0]), str(raw[1])]] if len(raw) == 2 else []
    return [[str(p[0]), str(p[1])] for p in raw if isinstance(p, list | tuple) and len(p) == 2]


def suite_comparisons(
    name: str, section: Mapping[str, Any], cfg: Config | None = None
) -> list[list[str]]:
    """The engine pairs a suite's config pre-registers (the suite's hook when it has one;
    ``cfg`` binds a suite configured from a kind)."""

    engines = [str(e) for e in section.get("engines") or []]
    try:
        fn = hook(get_suite(name, cfg), "design_comparisons")
    except Exception:  # a suite that is not installed here: the generic reading
        fn = None
    if fn is not None:
        pairs = [[str(a), str(b)] for a, b in fn(section)]
    else:
        pairs = _pairs(section.get("compare"), engines) or _pairs(
            section.get("comparisons"), engines
        )
        if engines:  # a pair naming an engine the profile does not run is not run by it either
            pairs = [p for p in pairs if p[0] in engines and p[1] in engines]
    return sorted(pairs)


def suite_design(cfg: Config, name: str) -> dict[str, Any]:
    section = dict(cfg.data.get("suites", {}).get(name) or {})
    engines = [str(e) for e in section.get("engines") or []]
    known = cfg.data.get("engines", {})
    plan = shards.shard_plan(section)
    return {
        "engines": {e: engine_identity(known.get(e) or {}) for e in sorted(engines)},
        "comparisons": suite_comparisons(name, section, cfg),
        "parameters": {k: v for k, v in sorted(section.items()) if k not in NON_PARAMETER_KEYS},
        **({"shards": plan} if plan is not None else {}),
    }


def design_sha256(suites: Mapping[str, Any]) -> str:
    return hashlib.sha256(compact(dict(suites)).encode()).hexdigest()


def profile_design(cfg: Config, names: Sequence[str]) -> dict[str, Any]:
    """The sealed entry of one profile: its sources and every named suite's design."""
    suites = {n: suite_design(cfg, n) for n in sorted(names)}
    return {
        "format": DESIGN_FORMAT,
        "sources": list(cfg.sources),
        "suites": suites,
        "sha256": design_sha256(suites),
    }


def sealed_design(lock_doc: Mapping[str, Any], sources: Sequence[str]) -> dict[str, Any] | None:
    """The design the lock holds for this profile, or None when that profile was never sealed."""
    entry = (lock_doc.get("designs") or {}).get(profile_key(sources))
    return dict(entry) if entry else None


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k in sorted(value):
            _flatten(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    else:
        out[prefix] = value


def parameter_changes(sealed: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """``key: old → new`` for every parameter that differs (dotted paths into nested keys)."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten("", dict(sealed), a)
    _flatten("", dict(now), b)

    def show(d: Mapping[str, Any], k: str) -> str:
        return compact(d[k]) if k in d else "∅"

    return [
        f"{k}: {show(a, k)} → {show(b, k)}"
        for k in sorted(set(a) | set(b))
        if show(a, k) != show(b, k)
    ]


def engine_status(
    sealed_suite: Mapping[str, Any] | None, engine: str, identity: Mapping[str, Any]
) -> str:
    """How one (suite, engine) stands to the sealed design: ``sealed``, ``added after the seal``,
    ``changed after the seal`` (same name, another model) or ``design not sealed``."""
    if sealed_suite is None:
        return "design not sealed"
    engines = sealed_suite.get("engines") or {}
    if engine not in engines:
        return "added after the seal"
    return "sealed" if dict(engines[engine]) == dict(identity) else "changed after the seal"


def compare(
    sealed_suite: Mapping[str, Any] | None,
    now_suite: Mapping[str, Any],
    *,
    engines_present: Mapping[str, Mapping[str, Any]],
    comparisons_present: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """A result's suite against its sealed design.

    ``engines_present``: engine → identity of the engines the result has rows for;
    ``comparisons_present``: the (a, b) pairs its analysis reports. ``missing`` (engines or
    comparisons the seal promised) and ``changed`` (a sealed engine answered by another model)
    are what the audit fails; ``added`` and ``parameters`` are disclosed.
    """
    if sealed_suite is None:
        return {
            "status": "design not sealed",
            "added_after_seal": sorted(engines_present),
            "missing_engines": [],
            "changed_engines": [],
            "missing_comparisons": [],
            "parameter_changes": [],
        }
    sealed_engines = sealed_suite.get("engines") or {}
    status = {e: engine_status(sealed_suite, e, ident) for e, ident in engines_present.items()}
    present = {tuple(sorted((str(a), str(b)))) for a, b in comparisons_present}
    missing_cmp = [
        f"{a} vs {b}"
        for a, b in sealed_suite.get("comparisons") or []
        if tuple(sorted((a, b))) not in present
    ]
    missing_eng = sorted(e for e in sealed_engines if e not in engines_present)
    changed = sorted(e for e, s in status.items() if s == "changed after the seal")
    sealed_params = {k: v for k, v in (sealed_suite.get("parameters") or {}).items()}
    sealed_params.pop("shards", None)  # a design sealed before the plan: compared as a plan
    params = parameter_changes(sealed_params, now_suite.get("parameters") or {})
    params += shards.plan_changes(shards.legacy_plan(sealed_suite), now_suite.get("shards"))
    bad = missing_eng or changed or missing_cmp
    return {
        "status": "deviates from the sealed design"
        if bad
        else ("sealed, parameters changed" if params else "as sealed"),
        "added_after_seal": sorted(e for e, s in status.items() if s == "added after the seal"),
        "missing_engines": missing_eng,
        "changed_engines": changed,
        "missing_comparisons": missing_cmp,
        "parameter_changes": params,
    }


def kept_designs(root: Path) -> dict[str, Any]:
    """The designs of the current lock whose config files all still exist: re-sealing one
    profile keeps the others; a profile whose file was deleted is dropped with it."""

    if not (root / lock.LOCK_NAME).exists():
        return {}
    try:
        doc = lock.read(root)
    except UserError:
        return {}
    return {
        k: v
        for k, v in (doc.get("designs") or {}).items()
        if all((root / s).is_file() for s in v.get("sources") or [])
    }


def describe(entry: Mapping[str, Any]) -> str:
    """One line per profile for ``sealedeval seal``: suite → engines and comparisons."""
    parts = []
    for name, d in sorted((entry.get("suites") or {}).items()):
        cmp = ", ".join(f"{a} vs {b}" for a, b in d.get("comparisons") or [])
        parts.append(f"{name} [{', '.join(d.get('engines') or {})}]" + (f" ({cmp})" if cmp else ""))
    return "; ".join(parts)


EXPLORATORY_FAMILY = EXPLORATORY
"""The comparison family of every pair the sealed design does not hold (a pair with an engine
added after the seal): Benjamini–Hochberg-adjusted on its own (``stats.comparisons``: a family
named ``exploratory…`` is exploratory), so the pre-registered family keeps the size it was
sealed with."""


def sealed_suite_design(cfg: Config, suite: str) -> dict[str, Any] | None:
    """The suite's design as sealed for this profile, or None (no lock, or none sealed)."""

    if not (cfg.root / lock.LOCK_NAME).exists():
        return None
    entry = sealed_design(lock.read(cfg.root), cfg.sources)
    found = (entry or {}).get("suites", {}).get(suite) if entry else None
    return dict(found) if found is not None else None


def sealed_pairs(cfg: Config, suite: str) -> frozenset[tuple[str, str]] | None:
    """The engine pairs (each sorted) the suite's sealed design pre-registers: the
    confirmatory family. None when no design is sealed for this profile (then no pair is)."""
    d = sealed_suite_design(cfg, suite)
    if d is None:
        return None
    return frozenset(
        (min(str(a), str(b)), max(str(a), str(b))) for a, b in d.get("comparisons") or []
    )


def added_engines(cfg: Config, suite: str, engines: Iterable[str]) -> frozenset[str]:
    """Which of ``engines`` the suite's sealed design does not name: added after the seal
    (none when no design is sealed for this profile: then no engine is sealed)."""
    d = sealed_suite_design(cfg, suite)
    if d is None:
        return frozenset()
    sealed = set(d.get("engines") or {})
    return frozenset(str(e) for e in engines if str(e) not in sealed)


def to_exploratory(records: Iterable[MutableMapping[str, Any]]) -> None:
    """Move comparison records (``stats.comparisons.Comparison``) that involve an engine added
    after the seal out of their declared family into ``exploratory: <family>``, before the
    suite's adjustment (``adjust_families``): each declared family keeps the size it was
    sealed with (Holm), and the added engine's comparisons are adjusted among themselves
    (Benjamini–Hochberg) and labelled exploratory."""
    for rec in records:
        if not str(rec["family"]).startswith(EXPLORATORY_FAMILY):
            rec["family"] = f"{EXPLORATORY_FAMILY}: {rec['family']}"
            rec["role"] = EXPLORATORY


def run_status(cfg: Config, suite: str, engine: str) -> str:
    """How a run about to start stands to the sealed design (recorded in its ledger entry, and
    said on the terminal when it is anything but ``sealed``)."""

    if not (cfg.root / lock.LOCK_NAME).exists():
        return "design not sealed"
    entry = sealed_design(lock.read(cfg.root), cfg.sources)
    sealed_suite = (entry or {}).get("suites", {}).get(suite) if entry else None
    identity = engine_identity(cfg.data.get("engines", {}).get(engine) or {})
    return engine_status(sealed_suite, engine, identity)


def result_design(
    cfg: Config, lock_doc: Mapping[str, Any], name: str, doc: Mapping[str, Any]
) -> dict[str, Any]:
    """What result.json says of one suite's design (``publish`` writes it; the audit re-derives
    and checks it): the sealed design of this profile against the engines the suite's rows
    name and the comparisons its analysis reports."""
    entry = sealed_design(lock_doc, cfg.sources)
    sealed_suite = (entry or {}).get("suites", {}).get(name) if entry else None
    engines_present = {
        e: engine_identity(cfg.data.get("engines", {}).get(e) or {})
        for e in (doc.get("seal") or {}).get("counts") or {}
    }
    comps = (doc.get("analysis") or {}).get("comparisons") or []
    pairs = [
        (str(c["a"]), str(c["b"]))
        for c in comps
        if isinstance(c, Mapping) and "a" in c and "b" in c
    ]
    out = compare(
        sealed_suite,
        suite_design(cfg, name),
        engines_present=engines_present,
        comparisons_present=pairs,
    )
    out["profile"] = profile_key(cfg.sources)
    out["design_sha256"] = (entry or {}).get("sha256", "")
    return out
