"""Exports of a published build for other tools: the Every Eval Ever schema and a tidy table.

- ``sealedeval export eee``: result.json's metrics as Every Eval Ever (EEE) aggregate records
  (evaleval/every_eval_ever, ``eval.schema.json`` v0.2.2, or v0.3.0 on request), one file per
  (suite, engine) under ``results/export/eee/<suite>/<engine>.json`` and an ``index.json``
  naming every file with its sha256 and every metric that was not exported, with why.
- ``sealedeval export samples``: every graded row of every suite as one table
  (``results/export/samples.parquet`` or ``.csv``), the rows and columns ``samples_df`` gives.

Both are pure functions of the files they read (result.json; the graded files): no clock, no
environment. The EEE timestamps come from the raw-part names result.json's manifest lists
(each part is named for the UTC time it was written, ``store.raw``), so the same result.json
exports the same bytes. docs/export.md has the field mapping and the choices behind it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pandas as pd

from sealedeval.canonical import compact, dumps
from sealedeval.errors import UserError
from sealedeval.fsutil import atomic_path, sha256_text, write_text_atomic
from sealedeval.publish.build import RESULT
from sealedeval.stages.artifacts import GRADED_DIR, read_graded
from sealedeval.stats import Z_95, wilson
from sealedeval.stats.metrics import HIGHER, LOWER, METRIC_KEYS

JsonObject = dict[str, Any]
"""A JSON object as the EEE schema describes it (the schema, not a Python type, is its
contract: tests/publish/test_export.py validates every file against it)."""

EEE_SCHEMA_VERSIONS: Final = ("0.2.2", "0.3.0")
"""The ``eval.schema.json`` versions the export writes: 0.2.2 (package every-eval-ever
0.2.3rc1, the default) and 0.3.0 (every-eval-ever 0.3.0)."""
RELATIONSHIPS: Final = ("first_party", "third_party", "collaborative", "other")
"""EEE ``source_metadata.evaluator_relationship``: the evaluator's relation to the model's
developer."""
DEFAULT_RELATIONSHIP: Final = "third_party"
"""A sealedeval project evaluates engines it calls; it is the model developer's own
(``first_party``) evaluation only when the user says so (``--relationship``)."""
EEE_DIR: Final = Path("results/export/eee")
EEE_INDEX: Final = "index.json"
EEE_INDEX_FORMAT: Final = "sealedeval.eee-export/1"
SAMPLES: Final = Path("results/export/samples")
"""The tidy export without its suffix (``.parquet`` or ``.csv``)."""
SAMPLE_FORMATS: Final = ("parquet", "csv")
CONFIDENCE_LEVEL: Final = 0.95
"""Every interval sealedeval publishes is two-sided 95%: Wilson and normal intervals use
``stats.Z_95`` (the 0.975 standard-normal quantile), the bootstraps the 2.5/97.5 percentiles."""
MATCH_TOLERANCE: Final = 1e-8
"""How close a recomputed interval must be to the published one to identify its denominator:
result.json rounds to ``canonical.FLOAT_DIGITS`` (10) significant digits, so a published bound
in [0, 1] is within 5e-11 of the computed one; a wrong denominator misses by far more."""
JUDGE_PREFIX: Final = "judge_"
"""Metrics named ``judge_*`` measure or use an LLM judge (golden: ``judge_pass``,
``judge_human_agreement``, ...). The judge is the engine in the metric's groups (golden's judges
run as ordinary requests in their own engine's runs), or ``groups.judge`` where a suite names
one apart."""
UNBOUNDED_0_2_2: Final = (
    "its range is not in the metric record, and schema 0.2.2 needs numeric min_score and "
    "max_score for every score (its score_type rule); --schema 0.3.0 exports it with null bounds"
)
"""Why schema 0.2.2 cannot hold a score of unknown range: its ``metric_config`` ``if`` has no
``required``, so a missing ``score_type`` demands ``level_names``; ``continuous`` demands
numeric bounds, and ``binary`` or ``levels`` would misdescribe a mean. 0.3.0 fixed both."""
_PART_TIME: Final = re.compile(r"(?:^|/)part-(\d{8}T\d{6})")
"""The UTC write time a raw part's name begins with (``store.raw``, ``part-20261201T222451...``;
newer names add microseconds, which the export does not need)."""
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A suite or engine name usable as a path component of the export."""


@dataclass(frozen=True)
class NotExported:
    """A published metric the EEE export leaves out, and why (listed in index.json)."""

    suite: str
    metric: str
    groups: dict[str, str]
    reason: str


@dataclass(frozen=True)
class EeeExport:
    """What ``eee_export`` derives from one result.json: file path (relative to the export
    directory) → canonical JSON text, and the metrics it could not export."""

    files: dict[str, str]
    not_exported: tuple[NotExported, ...]
    result_sha256: str
    schema_version: str

    def index(self) -> str:
        """index.json: the files with their sha256 and every metric left out, with why."""
        return dumps(
            {
                "format": EEE_INDEX_FORMAT,
                "schema": f"every_eval_ever eval.schema.json {self.schema_version}",
                "result_json_sha256": self.result_sha256,
                "files": {p: sha256_text(t) for p, t in sorted(self.files.items())},
                "not_exported": [
                    {"suite": n.suite, "metric": n.metric, "groups": n.groups, "reason": n.reason}
                    for n in self.not_exported
                ],
            }
        )


# -- reading result.json ----------------------------------------------------------------------


def _load(data: bytes, where: Path) -> JsonObject:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise UserError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("suites"), dict):
        raise UserError(f"{where}: not a result.json (no suites mapping)")
    if not isinstance(doc.get("engines", {}), dict):
        raise UserError(f"{where}: engines: expected a mapping")
    return doc


def published_metrics(where: Path, suite: str, section: Any) -> list[Mapping[str, Any]]:
    """The metric records of one suite's result.json section, each checked to carry the metric
    schema's keys (``stats.metrics.METRIC_KEYS``); one line naming the place otherwise. Shared
    with the Python API's ``metrics_df``."""
    analysis = section.get("analysis") if isinstance(section, Mapping) else None
    if not isinstance(analysis, Mapping):
        raise UserError(f"{where}: suites.{suite}.analysis: expected a mapping")
    metrics = analysis.get("metrics")
    if not isinstance(metrics, list):
        raise UserError(f"{where}: suites.{suite}.analysis.metrics: expected a list")
    for i, m in enumerate(metrics):
        if not (isinstance(m, Mapping) and set(METRIC_KEYS) <= set(m)):
            raise UserError(
                f"{where}: suites.{suite}.analysis.metrics[{i}]: not a metric "
                f"(needs {', '.join(METRIC_KEYS)})"
            )
    return metrics


def _name(where: Path, what: str, name: str) -> str:
    if not _NAME.fullmatch(name):
        raise UserError(f"{where}: {what} {name!r} cannot name an export file")
    return name


def _part_times(manifest: Any) -> dict[tuple[str, str], dt.datetime]:
    """(suite, engine) → the newest raw part's write time, from the manifest's part names."""
    out: dict[tuple[str, str], dt.datetime] = {}
    for entry in manifest if isinstance(manifest, list) else []:
        path = str(entry.get("path", "")) if isinstance(entry, Mapping) else ""
        m = _PART_TIME.search(path)
        parts = path.split("/")
        if not m or len(parts) < 5 or parts[:2] != ["results", "raw"]:
            continue
        t = dt.datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=dt.UTC)
        key = (parts[2], parts[3])
        out[key] = max(out.get(key, t), t)
    return out


def _mapping(x: Any) -> Mapping[str, Any]:
    """``x`` where it is a mapping, else empty (result.json's optional provenance blocks)."""
    return x if isinstance(x, Mapping) else {}


def _strings(d: Mapping[str, Any]) -> dict[str, str]:
    """EEE ``additional_details``: string values only, empty ones left out."""
    return {k: str(v) for k, v in d.items() if v is not None and str(v) != ""}


# -- one metric → one EEE evaluation result ---------------------------------------------------


def _standard_error(m: Mapping[str, Any]) -> tuple[float, str, int] | None:
    """(SE, how it was obtained, its n) where the published record determines it, else None.

    A record written since issue #27 carries the SE its analysis computed (``se``): that one is
    exported as it is. An older record carries the interval, not the SE. A normal interval (its
    method names ``normal``) symmetric about the estimate is estimate ± z·SE, so
    SE = (hi - lo) / (2 z). A Wilson interval is not symmetric, but it fixes its denominator:
    the one of n_ok, n_total whose Wilson interval at k = estimate · n reproduces the published
    bounds; the SE is then the analytic binomial sqrt(p (1 - p) / n). Bootstrap intervals,
    point metrics and anything unidentifiable get none (no SE is made up)."""
    est, lo, hi, method = m["estimate"], m["lo"], m["hi"], str(m["method"])
    recorded = m.get("se")
    if isinstance(recorded, int | float) and not isinstance(recorded, bool) and est is not None:
        how = f"computed by the analysis ({method}; stats.metrics record's se)"
        return float(recorded), how, int(m["n_ok"])
    if est is None or lo is None or hi is None:
        return None
    if "normal" in method and abs((lo + hi) / 2 - est) <= MATCH_TOLERANCE:
        return (hi - lo) / (2 * Z_95), f"{method}: (upper - lower) / (2 * {Z_95})", int(m["n_ok"])
    if method == "wilson":
        for n in sorted({int(m["n_ok"]), int(m["n_total"])}):
            k = round(est * n)
            if n <= 0 or abs(k / n - est) > MATCH_TOLERANCE:
                continue
            w_lo, w_hi = wilson(k, n)
            if abs(w_lo - lo) <= MATCH_TOLERANCE and abs(w_hi - hi) <= MATCH_TOLERANCE:
                se = math.sqrt(est * (1 - est) / n)
                return se, "analytic binomial: sqrt(p * (1 - p) / n), n = the Wilson denominator", n
    return None


def _uncertainty(m: Mapping[str, Any]) -> JsonObject:
    out: JsonObject = {"num_samples": int(m["n_ok"])}
    if m["lo"] is not None and m["hi"] is not None:
        out["confidence_interval"] = {
            "lower": m["lo"],
            "upper": m["hi"],
            "confidence_level": CONFIDENCE_LEVEL,
            "method": str(m["method"]),
        }
    se = _standard_error(m)
    if se is not None:
        value, method, n = se
        out["standard_error"] = {"value": value, "method": method}
        out["num_samples"] = n
    return out


def _bounded(m: Mapping[str, Any]) -> bool:
    """Whether the record fixes the score's range: a Wilson interval is for a proportion."""
    return bool(m["method"] == "wilson")


def _score_range(m: Mapping[str, Any]) -> JsonObject:
    """A Wilson metric is a proportion in [0, 1]. Any other metric's range is not in its
    record: 0.3.0 takes null bounds as "not provided" (0.2.2 has no way to say it:
    ``eee_export`` leaves such a metric out there, naming the reason)."""
    if _bounded(m):
        return {"score_type": "continuous", "min_score": 0, "max_score": 1}
    return {"score_type": "continuous", "min_score": None, "max_score": None}


def _model_info(where: Path, engines: Mapping[str, Any], engine: str) -> JsonObject:
    e = engines.get(engine)
    if e is not None and not isinstance(e, Mapping):
        raise UserError(f"{where}: engines.{engine}: expected a mapping")
    e = e or {}
    return {
        "name": engine,
        "id": str(e.get("model") or engine),
        **({"inference_platform": str(e["kind"])} if e.get("kind") else {}),
        "additional_details": {
            # what result.json does not record (EEE 0.3.0 requires both)
            "deployment_type": "unknown",
            "model_availability": "unknown",
            **_strings(
                {
                    "sealedeval_engine": engine,
                    "engine_kind": e.get("kind"),
                    "base_url": e.get("base_url"),
                    "model_recorded": "yes" if e.get("model") else "no",
                }
            ),
        },
    }


def _llm_scoring(suite: str, m: Mapping[str, Any], judge: JsonObject, rubric: str) -> JsonObject:
    variant = m["groups"].get("variant")
    prompt = f"the judge prompt of suite {suite}" + (f", variant {variant}" if variant else "")
    return {
        "judges": [{"model_info": judge}],
        "input_prompt": f"{prompt} (a rubric input sealed in rubric.lock; suite rubric sha256 "
        f"{rubric or 'not recorded'})",
        "additional_details": _strings({"judge_engine": judge["name"]}),
    }


def _result(
    suite: str,
    m: Mapping[str, Any],
    source_data: JsonObject,
    judge: JsonObject | None,
    rubric: str,
) -> JsonObject:
    groups: dict[str, str] = {str(k): str(v) for k, v in (m["groups"] or {}).items()}
    params = {k: v for k, v in sorted(groups.items()) if k != "engine"}
    cell = ",".join(f"{k}={v}" for k, v in params.items())
    config: JsonObject = {
        "evaluation_description": (
            f"{m['metric']} of suite {suite} per {m['unit']}"
            + (f" ({cell})" if cell else "")
            + f": {m['n_ok']} of {m['n_total']} completed, {m['n_error']} errored"
        ),
        "metric_id": f"sealedeval.{suite}.{m['metric']}",
        "metric_name": str(m["metric"]),
        "metric_parameters": params,
        # the record's direction where it declares one; else (a p-value, a difference, a
        # record older than issue #27) the schema still requires one (docs/export.md)
        "lower_is_better": m.get("direction") == LOWER,
        **_score_range(m),
        "additional_details": {
            "direction_declared": "yes" if m.get("direction") in (HIGHER, LOWER) else "no",
            "unit": str(m["unit"]),
            "interval_method": str(m["method"]),
        },
    }
    if m["method"] == "wilson":
        config["metric_unit"] = "proportion"
    if judge is not None:
        config["llm_scoring"] = _llm_scoring(suite, m, judge, rubric)
    return {
        "evaluation_result_id": f"{suite}/{m['metric']}" + (f"[{cell}]" if cell else ""),
        "evaluation_name": f"{suite} {m['metric']}",
        "source_data": source_data,
        "metric_config": config,
        "score_details": {
            "score": m["estimate"],
            "details": _strings(
                {
                    "n_total": m["n_total"],
                    "n_ok": m["n_ok"],
                    "n_error": m["n_error"],
                    "unit": m["unit"],
                }
            ),
            "uncertainty": _uncertainty(m),
        },
    }


# -- result.json → EEE records ----------------------------------------------------------------


def eee_export(
    data: bytes,
    where: Path,
    *,
    schema_version: str = EEE_SCHEMA_VERSIONS[0],
    relationship: str = DEFAULT_RELATIONSHIP,
    organization: str | None = None,
) -> EeeExport:
    """The EEE records of result.json's bytes ``data`` (read from ``where``, named in errors):
    one per (suite, engine), holding every metric whose groups name that engine."""
    if schema_version not in EEE_SCHEMA_VERSIONS:
        raise UserError(
            f"export eee --schema {schema_version}: unknown version "
            f"({' or '.join(EEE_SCHEMA_VERSIONS)})"
        )
    if relationship not in RELATIONSHIPS:
        raise UserError(
            f"export eee --relationship {relationship}: unknown ({', '.join(RELATIONSHIPS)})"
        )
    doc = _load(data, where)
    result_sha = hashlib.sha256(data).hexdigest()
    times = _part_times(doc.get("manifest"))
    if not times:
        raise UserError(f"{where}: manifest lists no raw part; nothing was run to export")
    retrieved = str(int(max(times.values()).timestamp()))
    project = str(doc.get("project") or "sealedeval")
    engines = _mapping(doc.get("engines"))
    versions = _mapping(doc.get("versions"))
    config = _mapping(doc.get("config"))
    sources = _mapping(doc.get("suite_sources"))
    files: dict[str, str] = {}
    skipped: list[NotExported] = []
    for suite in sorted(doc["suites"]):
        section = doc["suites"][suite]
        by_engine: dict[str, list[Mapping[str, Any]]] = {}
        for m in published_metrics(where, suite, section):
            groups = {str(k): str(v) for k, v in (m["groups"] or {}).items()}
            engine = groups.get("engine")
            if not engine:
                reason = "its groups name no engine: not one model's score"
            elif m["estimate"] is None:
                reason = "no estimate (not estimable); EEE requires a score"
            elif schema_version == "0.2.2" and not _bounded(m):
                reason = UNBOUNDED_0_2_2
            else:
                by_engine.setdefault(engine, []).append(m)
                continue
            skipped.append(NotExported(suite, str(m["metric"]), groups, reason))
        seal = _mapping(section.get("seal"))
        rubric = str(seal.get("rubric_sha256") or "")
        src = _mapping(sources.get(suite))
        source_data: JsonObject = {
            "dataset_name": suite,
            "source_type": "other",
            "additional_details": _strings(
                {
                    "suite_source": src.get("source"),
                    "suite_version": src.get("version"),
                    "suite_rubric_sha256": rubric,
                }
            ),
        }
        for engine in sorted(by_engine):
            info = _model_info(where, engines, engine)
            results = []
            for m in by_engine[engine]:
                judge = None
                if str(m["metric"]).startswith(JUDGE_PREFIX):
                    j = str(m["groups"].get("judge") or engine)
                    judge = info if j == engine else _model_info(where, engines, j)
                results.append(_result(suite, m, source_data, judge, rubric))
            when = times.get((suite, engine))
            record: JsonObject = {
                "schema_version": schema_version,
                "evaluation_id": f"{suite}/{engine}/{retrieved}",
                **({"evaluation_timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")} if when else {}),
                "retrieved_timestamp": retrieved,
                "source_metadata": {
                    "source_name": f"sealedeval project {project}",
                    "source_type": "evaluation_run",
                    "source_organization_name": organization or project,
                    "evaluator_relationship": relationship,
                    "additional_details": _strings(
                        {
                            "result_json_sha256": result_sha,
                            "rubric_lock_sha256": doc.get("rubric_lock_sha256"),
                            "suite_rubric_sha256": rubric,
                            "config_sha256": config.get("sha256"),
                            "seal_commits": ",".join(map(str, seal.get("seal_commits") or [])),
                            "status": doc.get("status"),
                            "suite_status": seal.get("status"),
                            "result_format": doc.get("format"),
                        }
                    ),
                },
                "model_info": info,
                "eval_library": {
                    "name": "sealedeval",
                    "version": str(versions.get("sealedeval") or "unknown"),
                    "additional_details": _strings(
                        {k: v for k, v in sorted(versions.items()) if k != "sealedeval"}
                    ),
                },
                "evaluation_results": results,
            }
            rel = f"{_name(where, 'suite', suite)}/{_name(where, 'engine', engine)}.json"
            files[rel] = dumps(record)
    if not files:
        raise UserError(f"{where}: no metric names an engine with an estimate; nothing to export")
    return EeeExport(files, tuple(skipped), result_sha, schema_version)


def _previous(dest: Path) -> list[str]:
    """The files an earlier export listed in ``dest``'s index (removed if no longer written);
    a non-empty directory without an index is someone else's and is refused."""
    if not dest.exists():
        return []
    if not dest.is_dir():
        raise UserError(f"{dest}: exists and is not a directory")
    index = dest / EEE_INDEX
    if not index.is_file():
        if any(dest.iterdir()):
            raise UserError(
                f"{dest}: not empty and holds no {EEE_INDEX} of an earlier export; "
                "give a new or empty directory"
            )
        return []
    try:
        old = json.loads(index.read_text(encoding="utf-8"))
        files = old["files"] if old.get("format") == EEE_INDEX_FORMAT else None
    except (ValueError, AttributeError, KeyError):
        files = None
    if not isinstance(files, dict):
        raise UserError(f"{index}: not the index of an EEE export")
    return [str(p) for p in files]


def write_eee(
    root: Path,
    out: Path | None = None,
    *,
    schema_version: str = EEE_SCHEMA_VERSIONS[0],
    relationship: str = DEFAULT_RELATIONSHIP,
    organization: str | None = None,
) -> tuple[Path, EeeExport]:
    """``sealedeval export eee``: every record derived in memory first, then each file written
    atomically, the index last; files an earlier export listed and this one does not write
    are removed (nothing else in the directory is touched)."""
    path = root / RESULT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{RESULT}: missing; run `sealedeval publish` first") from None
    exp = eee_export(
        data,
        RESULT,
        schema_version=schema_version,
        relationship=relationship,
        organization=organization,
    )
    dest = out if out is not None else root / EEE_DIR
    stale = [p for p in _previous(dest) if p not in exp.files]
    for rel, text in sorted(exp.files.items()):
        write_text_atomic(dest / rel, text)
    write_text_atomic(dest / EEE_INDEX, exp.index())
    for rel in stale:
        target = (dest / rel).resolve()
        if target.is_relative_to(dest.resolve()) and target.suffix == ".json":
            target.unlink(missing_ok=True)
    return dest, exp


# -- the tidy per-sample table ----------------------------------------------------------------


def graded_files(root: Path) -> list[tuple[str, Path]]:
    """(suite, graded file) pairs of a project, by suite name; a one-line error if none."""
    where = root / GRADED_DIR
    files = sorted(where.glob("*.parquet")) if where.is_dir() else []
    out = [(f.stem, f) for f in files if not f.name.startswith(".")]
    if not out:
        raise UserError(f"{where}: no graded files; run `sealedeval publish` (it grades first)")
    return out


def samples_frame(files: Sequence[tuple[str, Path]]) -> pd.DataFrame:
    """Every graded row of ``files`` as the grade stage wrote it (JSON columns decoded), with a
    ``suite`` column first: suites in the order given, rows in each file's order, columns the
    union of the files' columns in their order (``sealedeval.samples_df``)."""
    frames = []
    for suite, path in files:
        rows = read_graded(path)
        df = pd.DataFrame(dict(zip(rows.names, rows.columns, strict=True)), columns=rows.names)
        if "suite" in df.columns:
            df = df[["suite", *(c for c in rows.names if c != "suite")]]
        else:
            df.insert(0, "suite", suite)
        frames.append(df)
    return pd.concat(frames, ignore_index=True, sort=False)


def _cell_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return "string" if isinstance(v, str) else "json"


def json_text_columns(df: pd.DataFrame) -> list[str]:
    """Columns a flat file cannot hold as they are: nested values (lists, mappings) or values
    of more than one kind (a column one suite fills with numbers, another with text)."""
    out = []
    for c in df.columns:
        if df[c].dtype != object:
            continue
        kinds = {_cell_kind(v) for v in df[c] if v is not None and not _is_nan(v)}
        if "json" in kinds or len(kinds) > 1:
            out.append(str(c))
    return out


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def tidy_samples(df: pd.DataFrame) -> pd.DataFrame:
    """``samples_frame`` as flat columns: each ``json_text_columns`` value as compact
    canonical JSON text (missing values stay missing); every other column as it is."""
    out = df.copy()
    for c in json_text_columns(df):
        out[c] = pd.Series(
            [None if v is None or _is_nan(v) else compact(v) for v in df[c]],
            index=df.index,
            dtype=object,
        )
    return out


def write_samples(root: Path, fmt: str, out: Path | None = None) -> tuple[Path, int]:
    """``sealedeval export samples``: the tidy table of every graded row, written atomically."""
    if fmt not in SAMPLE_FORMATS:
        raise UserError(f"export samples --format {fmt}: unknown format (parquet or csv)")
    df = tidy_samples(samples_frame(graded_files(root)))
    dest = out if out is not None else root / SAMPLES.with_suffix(f".{fmt}")
    if dest.is_dir():
        raise UserError(f"{dest}: is a directory; give a file name")
    with atomic_path(dest) as tmp:
        if fmt == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, lineterminator="\n")
    return dest, len(df)
