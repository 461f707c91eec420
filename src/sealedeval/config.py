"""Load and validate the workflow configuration.

The loader sits above the engine kinds and the suites it checks the config against; the records
it returns (``config_types``) sit below them, so neither imports the loader back.

Config files are YAML, merged left to right (later files win key by key), then validated against
``sealedeval/workflow/config.schema.yaml`` (shipped in the package) — the same schema Snakemake
validates at parse time, so the CLI and the workflow can never disagree about what a valid config
is — then each engine against its kind's options schema (``engines.schemas``) and each suite's
section against the suite's own schema. Errors are one line naming the file and the key path.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sealedeval import yamlio
from sealedeval.config_types import Config, EngineConfig
from sealedeval.engines.schemas import check_engine
from sealedeval.errors import UserError
from sealedeval.plugins import bind, suite_config_schema
from sealedeval.validation import validate
from sealedeval.workflow import SCHEMA as SCHEMA_PATH

if TYPE_CHECKING:
    from sealedeval.plugins import BoundSuite

__all__ = ["DEFAULT_CONFIG", "Config", "EngineConfig", "load_config", "validate"]

DEFAULT_CONFIG = Path("config/config.yaml")


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(dict(out[k]), v)
        else:
            out[k] = v
    return out


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: config file not found") from None
    try:
        return yamlio.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise UserError(f"{where}: invalid YAML ({getattr(e, 'problem', e)})") from None


def _apply_defaults(schema: Mapping[str, Any], data: Any) -> Any:
    """Fill ``default`` values from the schema so code never guesses a default of its own."""
    if not isinstance(data, dict) or not isinstance(schema, Mapping):
        return data
    props = schema.get("properties", {})
    for key, sub in props.items():
        if key not in data and isinstance(sub, Mapping) and "default" in sub:
            data[key] = sub["default"]
        if key in data:
            data[key] = _apply_defaults(sub, data[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        for key in data:
            if key not in props:
                data[key] = _apply_defaults(extra, data[key])
    return data


def load_schema(root: Path | None = None) -> dict[str, Any]:
    """The central schema shipped with the package (``sealedeval/workflow``); ``root`` is kept
    for callers that name a project, whose files no longer carry a copy."""
    schema = _read_yaml(SCHEMA_PATH)
    if not isinstance(schema, dict):
        raise UserError(f"{SCHEMA_PATH}: schema is not a mapping")
    return schema


def _relative(root: Path, p: Path) -> Path:
    """Config sources are recorded relative to the project, so results do not name a machine."""
    if p.is_absolute():
        try:
            return p.resolve().relative_to(root)
        except ValueError:
            return p
    return p


COMMON_SUITE_KEYS = ("kind", "enabled", "engines", "shards")
"""Keys every suite section may have (the central schema checks them); a suite's own schema
need not repeat them."""


def _other_suite(name: str, merged: Mapping[str, Any]) -> str:
    """A hint for a suite section that names no known suite: a close name among the config's
    other sections (a misspelt ``tasks`` suite is not in the registry's list)."""

    others = [str(n) for n in merged.get("suites", {}) if n != name]
    close = difflib.get_close_matches(name, others, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _validate_suites(
    merged: dict[str, Any], where: str, root: Path | None = None
) -> dict[str, BoundSuite]:
    """Each suite's section against the suite's own schema (defaults applied from it); the
    suites configured from a kind, bound (``Config.bound``)."""

    bound: dict[str, BoundSuite] = {}

    for name, section in merged.get("suites", {}).items():
        kind = section.get("kind")
        try:
            schema = (
                suite_config_schema(str(kind), kind=True) if kind else suite_config_schema(name)
            )
        except UserError as e:
            hint = "" if "did you mean" in str(e) else _other_suite(name, merged)
            raise UserError(f"{where}: suites.{name}: {e}{hint}") from None
        if schema is not None:
            own = set(schema.get("properties", {}))
            common = {k: v for k, v in section.items() if k in COMMON_SUITE_KEYS and k not in own}
            body = {k: v for k, v in section.items() if k not in common}
            validate(body, schema, f"{where}: suites.{name}")
            section = merged["suites"][name] = _apply_defaults(schema, body) | common
        if kind:
            try:
                bound[name] = bind(name, section, root)
            except UserError as e:
                raise UserError(f"{where}: {e}") from None
    return bound


def validate_workflow_config(
    config: dict[str, Any],
    files: Sequence[Path | str],
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """For the Snakefile: ``load_config`` of the files Snakemake merged (in its order, with its
    ``--config`` overrides), put in place of Snakemake's merge. A bad config then stops the
    workflow at parse time with the CLI's very line (``UserError``: the same files, merged and
    checked in the same order, with its "did you mean"), not a schema dump or a traceback; a
    good one is exactly the config every job's CLI sees, defaults applied."""
    cfg = load_config(Path("."), files, overrides)
    config.clear()
    config.update(cfg.data)
    return cfg


def load_config(
    root: Path, files: Sequence[Path | str] = (), overrides: Mapping[str, Any] | None = None
) -> Config:
    """Merge, validate and default the config files (relative paths are under ``root``)."""
    root = root.resolve()
    # config/config.yaml is always the base and the given files merge on top, exactly as
    # Snakemake merges --configfile over the Snakefile's configfile: CLI and workflow agree.
    rel = [_relative(root, Path(f)) for f in files]
    paths = [DEFAULT_CONFIG] + [p for p in rel if p != DEFAULT_CONFIG]
    merged: dict[str, Any] = {}
    sources: list[str] = []
    for p in paths:
        full = p if p.is_absolute() else root / p
        doc = _read_yaml(full)
        if not isinstance(doc, dict):
            raise UserError(f"{p}: config must be a mapping at the top level")
        merged = _merge(merged, doc)
        sources.append(str(p))
    if overrides:
        merged = _merge(merged, overrides)
    where = " + ".join(sources)
    schema = load_schema(root)
    validate(merged, schema, where)
    merged = _apply_defaults(schema, merged)
    common = schema["properties"]["engines"]["additionalProperties"]["properties"]
    for name, section in merged["engines"].items():
        merged["engines"][name] = check_engine(name, section, where, common)
    bound = _validate_suites(merged, where, root)
    cfg = Config(root=root, data=merged, sources=tuple(sources), bound=bound)
    for suite in cfg.enabled_suites():
        for engine in cfg.suite(suite).get("engines", []):
            if engine not in merged["engines"]:
                raise UserError(f"{where}: suites.{suite}.engines: unknown engine {engine!r}")
    return cfg
