"""``sealedeval regrade SUITE --from PATH``: a recorded run graded again, as a new replay run.

Why a thin use of ``kind: replay`` and ``sealedeval run``: a regrade must be a run like any
other — checked against the *current* ``rubric.lock``, one raw row per planned request bound
to the current seal, a ledger entry — or the audit could not vouch for it. So this module only
writes what the hand-made route needs and then calls the runner:

1. an overlay config, ``config/regrade-<name>.yaml`` (atomically; the user commits it): the
   replay engine bound to the source, and the suite's section with the source engine renamed
   to the replay, so the replay is planned the requests the source engine was planned (its
   branches, judge and probe lists, comparisons, per-engine maps). The config *as built* is
   recorded in result.json and the audit re-derives with it, so the entry lives in a file the
   later commands take with ``-c``, not in hidden state;
2. when the source lies in ``results/raw/SUITE/`` under an earlier rubric hash, it is moved to
   ``archive/raw/SUITE/<engine>`` first: rows under two rubric hashes in one suite are reported
   as mixed, and parts of runs under an earlier seal may be absent (the audit says how many);
3. the run (``run_suite``), then a summary: requests the source had no answer for
   (``replay_missing`` error rows) and source rows no planned request asked for (item ids the
   suite no longer has, conditions or repeats it no longer plans) — counted and named, never
   silently dropped.

Bad input (PATH missing, not a raw store, rows of another suite, suite not configured, a name
already taken) is a one-line ``UserError`` before anything is written or moved.

The replay's ``fail_on_error`` is the number of requests it cannot answer (the source's gaps
and recorded errors, counted before the run): a later ``snakemake`` resume re-asks those keys,
gets the same error rows, and passes — while one error more fails loudly as for any engine.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sealedeval.config import Config, load_config
from sealedeval.engines.base import EngineError, capabilities
from sealedeval.engines.replay import ReplayEngine
from sealedeval.errors import UserError
from sealedeval.fsutil import write_text_atomic
from sealedeval.plugins import RequestContext, get_suite
from sealedeval.seal import lock
from sealedeval.stages.run import engine_rows, plan, print_stats, run_suite, suite_engine
from sealedeval.store.raw import latest_rows, raw_dir, raw_files, read_columns

ARCHIVE: Final = Path("archive/raw")
"""Where a source under an earlier seal is moved out of ``results/raw`` (docs/engines.md)."""

OVERLAY_DIR: Final = Path("config")
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""An engine name that is also a safe directory and file name (``results/raw/S/<name>``)."""

UNRENAMED: Final = frozenset({"engine_options"})
"""Suite keys naming engines that are *not* carried to the replay: ``engine_options`` are
options of the engine's server (context size, threads), which a replay does not take."""

MIRRORED_CAPS: Final = ("json_schema", "tool_protocol")
"""The replay options copied from the source engine's capabilities when it is configured, so
the suite plans the same kind of request (JSON-schema output, the tool protocol)."""


@dataclass
class Prepared:
    """Everything checked and decided before anything is written."""

    suite: str
    name: str
    source_engine: str
    source: Path
    parts: int
    source_rows: list[dict[str, Any]]
    rubric_sha256: str
    source_hashes: list[str]
    move_to: Path | None
    overlay_path: Path
    overlay: dict[str, Any]
    predicted_errors: int
    stale: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What the regrade did, for the CLI's lines (and ``--json``)."""

    suite: str
    engine: str
    source: str
    source_sha256: str
    source_ledger: list[str]
    moved_from: str
    overlay: str
    rubric_sha256: str
    requested: int
    ok: int
    error: int
    errors_by_kind: dict[str, int]
    missing_items: list[str]
    not_replayed: int
    unknown_item_ids: list[str]
    not_planned: int
    stale: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _rel(root: Path, path: Path) -> str:
    """``path`` as the config names it: relative to the project when inside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _source_rows(source: Path, label: str) -> tuple[list[Path], list[dict[str, Any]]]:
    """The parts of a raw-store directory and its latest row per key (the columns needed)."""

    if not source.is_dir():
        raise UserError(f"--from {label}: no such directory")
    parts = sorted(p for p in source.glob("part-*.parquet") if not p.name.startswith("."))
    if not parts:
        subdirs = sorted(
            d.name for d in source.iterdir() if d.is_dir() and any(d.glob("part-*.parquet"))
        )
        hint = f" (it holds engine directories: {', '.join(subdirs)}; give one)" if subdirs else ""
        raise UserError(f"--from {label}: not a raw store (no part-*.parquet in it){hint}")
    cols = [
        "request_key",
        "suite",
        "engine",
        "item_id",
        "condition",
        "repeat",
        "status",
        "finished_at",
        "rubric_sha256",
    ]
    table = read_columns(parts, cols)
    rows = list(latest_rows(table.to_pylist()).values())
    if not rows:
        raise UserError(f"--from {label}: not a raw store (its parts hold no rows)")
    return parts, rows


def _renamed(value: Any, old: str, new: str, *, keep: bool) -> Any:
    """``value`` with engine ``old`` renamed ``new``: in lists (an element equal to ``old``)
    and as a mapping key (a copy under ``new``; the merge keeps ``old``'s entry). With
    ``keep`` the ``engines`` list keeps ``old`` too (its rows stay in the suite)."""
    if isinstance(value, list):
        out = []
        for v in value:
            if v == old:
                out += [old, new] if keep else [new]
            else:
                out.append(_renamed(v, old, new, keep=False))
        return out
    if isinstance(value, Mapping):
        d = {k: _renamed(v, old, new, keep=False) for k, v in value.items()}
        if old in d and new not in d:
            d[new] = d[old]
        return d
    return value


def suite_overlay(section: Mapping[str, Any], old: str, new: str, *, keep: bool) -> dict[str, Any]:
    """The suite keys that change when ``new`` takes ``old``'s place (only those: the overlay
    merges over the user's config), ``new`` always in ``engines``."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        if key in UNRENAMED:
            continue
        if key == "engines":
            value = _renamed(list(value), old, new, keep=keep)
            if new not in value:
                value.append(new)
        else:
            value = _renamed(value, old, new, keep=False)
        if value != section[key]:
            out[key] = _changed(section[key], value)
    return out


def _changed(before: Any, after: Any) -> Any:
    """What the overlay must say to turn ``before`` into ``after`` when merged over it: in a
    mapping only the entries that changed (the merge keeps the rest); anything else whole
    (a list replaces a list)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        return {
            k: _changed(before.get(k), v)
            for k, v in after.items()
            if k not in before or before[k] != v
        }
    return after


def _other_hashes(files: Sequence[Path], current: str) -> list[str]:

    if not files:
        return []
    t = read_columns(list(files), ["rubric_sha256"])
    return sorted(set(t.column("rubric_sha256").to_pylist()) - {current})


def prepare(
    cfg: Config, suite_name: str, source: Path, name: str | None, *, label: str
) -> Prepared:
    """Check the input and decide every file and move; writes nothing (``UserError`` on bad
    input)."""

    root = cfg.root
    section = cfg.suite(suite_name)  # "suite 'x' is not configured in ..."
    source = source.resolve()
    if not source.is_dir():
        archived = root / ARCHIVE / suite_name / source.name
        if source.parent == raw_dir(root, suite_name).resolve() and archived.is_dir():
            raise UserError(
                f"--from {label}: no such directory (an earlier regrade moved it to "
                f"{_rel(root, archived)}; its replay is in config/regrade-*.yaml)"
            )
    parts, rows = _source_rows(source, label)
    suites = sorted({str(r["suite"]) for r in rows})
    if suites != [suite_name]:
        raise UserError(f"--from {label}: rows of suite {', '.join(suites)}, not {suite_name}")
    engines = sorted({str(r["engine"]) for r in rows})
    source_engine = source.name if source.name in engines or len(engines) != 1 else engines[0]
    name = name or f"{source_engine}-replay"
    if not NAME_RE.match(name):
        raise UserError(f"--as {name}: an engine name of letters, digits, '_', '.', '-'")
    target = raw_dir(root, suite_name, name).resolve()
    if target == source:
        raise UserError(f"--as {name}: the replay would write into its own source ({label})")
    seal = lock.check(root, suite_name, get_suite(suite_name, cfg).rubric_inputs())
    hashes = sorted({str(r["rubric_sha256"]) for r in rows})
    in_suite_raw = source.parent == raw_dir(root, suite_name).resolve()
    move_to = None
    if in_suite_raw and set(hashes) - {seal.rubric_sha256}:
        move_to = root / ARCHIVE / suite_name / source.name
        if move_to.exists():
            raise UserError(
                f"--from {label}: its rows are under an earlier seal and must leave results/raw, "
                f"but {_rel(root, move_to)} exists already; move it aside yourself and pass "
                "its new place"
            )
    target_files = [f for f in raw_files(root, suite_name) if f.parent.resolve() == target]
    other = _other_hashes(target_files, seal.rubric_sha256)
    if other:
        raise UserError(
            f"{_rel(root, target)}: holds rows under another rubric hash ({other[0][:12]}…); "
            "choose another name with --as"
        )
    if name in cfg.data["engines"]:
        have = cfg.data["engines"][name]
        raise UserError(
            f"engines.{name}: already configured in {cfg.where} (kind {have.get('kind')}); "
            "choose another name with --as"
        )
    engine: dict[str, Any] = {
        "kind": "replay",
        "source": _rel(root, move_to or source),
    }
    if source_engine in cfg.data["engines"]:
        caps = capabilities(cfg.engine(source_engine))
        engine |= {k: getattr(caps, k) for k in MIRRORED_CAPS}
    # The source engine stays in the suite's engines while its own rows stay in results/raw
    # (not moved): they are still graded and reported beside the replay's.
    keep = move_to is None and raw_dir(root, suite_name, source_engine).is_dir()
    overlay: dict[str, Any] = {
        "engines": {name: engine},
        "suites": {suite_name: suite_overlay(section, source_engine, name, keep=keep)},
    }
    overlay_path = root / OVERLAY_DIR / f"regrade-{name}.yaml"
    predicted = _predicted_errors(cfg, suite_name, name, overlay, source)
    if predicted:
        overlay["engines"][name]["fail_on_error"] = predicted
    if overlay_path.exists() and overlay_path.read_text(encoding="utf-8") != render_overlay(
        overlay, suite_name, label, seal.rubric_sha256
    ):
        raise UserError(
            f"{_rel(root, overlay_path)}: exists (another regrade's); choose another name with "
            "--as, or remove it"
        )
    stale = []
    for d in sorted({f.parent for f in raw_files(root, suite_name)}):
        if d.resolve() in (source, target):
            continue
        if _other_hashes(
            [f for f in raw_files(root, suite_name) if f.parent == d], seal.rubric_sha256
        ):
            stale.append(_rel(root, d))
    return Prepared(
        suite=suite_name,
        name=name,
        source_engine=source_engine,
        source=source,
        parts=len(parts),
        source_rows=rows,
        rubric_sha256=seal.rubric_sha256,
        source_hashes=hashes,
        move_to=move_to,
        overlay_path=overlay_path,
        overlay=overlay,
        predicted_errors=predicted,
        stale=stale,
    )


def _predicted_errors(
    cfg: Config, suite_name: str, name: str, overlay: Mapping[str, Any], source: Path
) -> int:
    """How many of the replay's planned (phase-1) requests end as error rows: no recorded row,
    two of them, or a recorded error. The config as the overlay makes it, the source where it
    is now (before any move)."""

    over = {
        "engines": {name: dict(overlay["engines"][name]) | {"source": source.as_posix()}},
        "suites": overlay["suites"],
    }
    merged = load_config(cfg.root, list(cfg.sources), overrides=over)
    p = plan(merged, suite_name)
    ecfg = suite_engine(merged, suite_name, name)
    engine = ReplayEngine(ecfg, root=merged.root)
    n = 0
    ctx = RequestContext(cfg=merged, items=p.items, engine=ecfg, model=engine.model, seed=p.seed)
    for req in p.suite.requests(ctx):
        try:
            n += engine.lookup(req)["status"] != "ok"
        except EngineError:
            n += 1
    return n


def render_overlay(overlay: Mapping[str, Any], suite: str, label: str, rubric: str) -> str:
    """The overlay file's text: a header saying what wrote it and why, then the YAML."""
    import yaml

    head = (
        f"# Written by `sealedeval regrade {suite} --from {label}`: the recorded run replayed\n"
        f"# under the seal of rubric {rubric[:12]} (a new run, bound to it). Commit this file:\n"
        "# result.json records the config it was built with and the audit re-derives with it.\n"
    )
    return head + yaml.safe_dump(dict(overlay), sort_keys=False, default_flow_style=False)


def regrade(
    root: Path,
    config_files: Sequence[str],
    suite_name: str,
    source: Path,
    name: str | None = None,
    *,
    label: str | None = None,
    progress: bool = False,
) -> Outcome:
    """Prepare (nothing written on bad input), write the overlay, move the source out of
    ``results/raw`` when it is under an earlier seal, run the replay, summarise."""

    label = label or str(source)
    cfg = load_config(root, list(config_files))
    prep = prepare(cfg, suite_name, source, name, label=label)
    text = render_overlay(prep.overlay, suite_name, label, prep.rubric_sha256)
    write_text_atomic(prep.overlay_path, text)
    if prep.move_to is not None:
        try:
            prep.move_to.parent.mkdir(parents=True, exist_ok=True)
            os.rename(prep.source, prep.move_to)
        except OSError as e:
            prep.overlay_path.unlink(missing_ok=True)
            raise UserError(f"--from {label}: cannot move to {prep.move_to} ({e.strerror})") from e
    overlay_rel = _rel(cfg.root, prep.overlay_path)
    run_cfg = load_config(root, [*config_files, overlay_rel])
    stats = run_suite(run_cfg, suite_name, prep.name, progress=progress, allow_errors=True)
    print_stats(stats, suite_name, prep.name)
    new = engine_rows(run_cfg.root, suite_name, prep.name)
    keys = {str(r["request_key"]) for r in new}
    triples = {(str(r["item_id"]), str(r["condition"]), int(r["repeat"])) for r in new}
    asked_ids = {str(r["item_id"]) for r in new}
    unused = [
        r
        for r in prep.source_rows
        if str(r["request_key"]) not in keys
        and (str(r["item_id"]), str(r["condition"]), int(r["repeat"])) not in triples
    ]
    unknown = sorted({str(r["item_id"]) for r in unused} - asked_ids)
    errors = [r for r in new if r["status"] != "ok"]
    ident = _identity(new)
    return Outcome(
        suite=suite_name,
        engine=prep.name,
        source=str(prep.overlay["engines"][prep.name]["source"]),
        source_sha256=str(ident.get("source_sha256", "")),
        source_ledger=[str(h) for h in ident.get("source_ledger", [])],
        moved_from=_rel(cfg.root, prep.source) if prep.move_to is not None else "",
        overlay=overlay_rel,
        rubric_sha256=prep.rubric_sha256,
        requested=len(new),
        ok=len(new) - len(errors),
        error=len(errors),
        errors_by_kind=dict(sorted(Counter(str(r["error_kind"]) for r in errors).items())),
        missing_items=sorted(
            {str(r["item_id"]) for r in errors if r["error_kind"] == "replay_missing"}
        ),
        not_replayed=len(unused),
        unknown_item_ids=unknown,
        not_planned=sum(1 for r in unused if str(r["item_id"]) not in unknown),
        stale=prep.stale,
    )


def _identity(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:

    for r in rows:
        doc = json.loads(str(r["engine_identity"]) or "{}")
        if isinstance(doc, dict):
            return doc
    return {}


def report_lines(out: Outcome, config_files: Sequence[str], root_arg: str) -> list[str]:
    """What the CLI prints: what was replayed, what was not and why, and the next commands."""
    lines = []
    if out.moved_from:
        lines.append(
            f"moved {out.moved_from} → {out.source} (rows of an earlier seal, out of results/raw)"
        )
    lines.append(f"wrote {out.overlay} (engine {out.engine}: kind replay, source {out.source})")
    lines.append(
        f"{out.suite}/{out.engine}: {out.requested} requests under rubric "
        f"{out.rubric_sha256[:12]}: ok {out.ok}, error {out.error}"
        + (
            " (" + ", ".join(f"{k} {v}" for k, v in out.errors_by_kind.items()) + ")"
            if out.errors_by_kind
            else ""
        )
        + f"; source {out.source_sha256[:12]}"
        + (
            f", ledger entries {', '.join(h[:12] for h in out.source_ledger)}"
            if out.source_ledger
            else ""
        )
    )
    if out.missing_items:
        lines.append(
            f"  no recorded answer (replay_missing error rows) for items: "
            f"{', '.join(out.missing_items)}"
        )
    if out.not_replayed:
        what = []
        if out.unknown_item_ids:
            what.append(f"unknown item ids: {', '.join(out.unknown_item_ids)}")
        if out.not_planned:
            what.append(f"{out.not_planned} of known items that the current plan does not ask")
        lines.append(f"  {out.not_replayed} recorded rows not replayed ({'; '.join(what)})")
    cfgs = " ".join(f"-c {c}" for c in [*config_files, out.overlay])
    root = f" --root {root_arg}" if root_arg not in ("", ".") else ""
    lines.append("next:")
    if out.stale:
        lines.append(
            f"  {', '.join(out.stale)}: rows under an earlier seal; regrade "
            + ("them" if len(out.stale) > 1 else "it")
            + f" too (sealedeval regrade {out.suite} --from DIR{root} {cfgs}) or move "
            "aside before grading"
        )
    lines.append(
        f"  git add {out.overlay} ledger.jsonl && git commit -m 'Regrade {out.suite} as "
        f"{out.engine}'"
    )
    if Path(out.source).is_absolute():
        lines.append(
            f"  (the source {out.source} is outside the project: copy it under archive/raw/ "
            "and edit the overlay's source for a config that travels)"
        )
    else:
        lines.append(f"  (keep {out.source}, the replay's source, as you keep results/raw)")
    lines.append(f"  sealedeval analyze {out.suite} --grade{root} {cfgs}")
    lines.append(f"  sealedeval publish{root} {cfgs} && sealedeval audit{root}")
    files = " ".join([*config_files, out.overlay])
    lines.append(f"  or: snakemake --cores 2 --configfile {files}")
    return lines
