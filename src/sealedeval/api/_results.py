"""Results as pandas DataFrames, read from a project or a deposit bundle.

Nothing here computes a number: the graded rows are read as the grade stage wrote them
(``stages.artifacts.read_graded``: JSON columns decoded, the column order kept), metrics and
comparisons as result.json holds them. So a DataFrame's numbers are the published ones, and a
notebook that filters or plots them cannot drift from the report.

- ``samples_df``: one row per graded row, every suite's rows one after the other (suites in
  file-name order, rows in the file's order); ``suite`` first, then the union of the suites'
  columns in their files' order.
- ``metrics_df``: one row per ``stats.metrics.Metric`` (every suite's ``analysis.metrics``):
  ``suite``, ``metric``, one column per group key (``engine``, ``branch``, ...: empty where a
  metric has no such group; a key that collides with a fixed column is prefixed ``group_``),
  then ``estimate``, ``lo``, ``hi`` (NaN where not estimable), ``method``, ``n_total``,
  ``n_ok``, ``n_error``, ``unit``, ``se`` (the standard error the analysis computed; NaN where
  it computed none, and in result.json files older than issue #27) and ``direction``
  (``higher`` / ``lower`` is better; empty where neither applies or not recorded).
- ``comparisons_df``: one row per ``stats.comparisons.Comparison`` record found anywhere in a
  suite's analysis (engine pairs, branch pairs, probe and condition comparisons): ``suite``,
  ``path`` (where in ``suites.<suite>.analysis`` it sits, e.g. ``comparisons[0].paired``), then
  the record's fields (``diff``, ``lo``, ``hi``, ``p``, ``p_adj``, ``mde``, ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import pandas as pd

from sealedeval.archive.bundle import flat_name
from sealedeval.errors import UserError
from sealedeval.publish.export import graded_files, published_metrics, samples_frame
from sealedeval.stages.artifacts import GRADED_DIR
from sealedeval.stats.comparisons import Comparison
from sealedeval.stats.metrics import METRIC_KEYS

RESULT: Final = Path("results/result.json")
SUMS: Final = "SHA256SUMS"
"""The checksum list every deposit bundle carries beside its flat-named files."""
_BUNDLE_GRADED: Final = flat_name(GRADED_DIR.as_posix()) + "__"
"""How a graded file is named in a bundle (``graded__<suite>.parquet``)."""
_FLOATS: Final = ("estimate", "lo", "hi", "se")
_INTS: Final = ("n_total", "n_ok", "n_error")
_COMPARISON_KEYS: Final = tuple(Comparison.__annotations__)
_COMPARISON_REQUIRED: Final = frozenset(Comparison.__required_keys__)


@dataclass(frozen=True)
class Source:
    """Where results are read from: a project directory or a deposit bundle directory."""

    kind: Literal["project", "bundle"]
    root: Path

    @property
    def result(self) -> Path:
        return self.root / (RESULT if self.kind == "project" else Path(RESULT.name))

    def graded(self) -> list[tuple[str, Path]]:
        """(suite, graded file) pairs, by suite name; a one-line error when there are none."""
        if self.kind == "project":
            return graded_files(self.root)
        files = sorted(self.root.glob(f"{_BUNDLE_GRADED}*.parquet"))
        if not files:
            raise UserError(
                f"{self.root}: this deposit bundle holds no graded rows "
                f"({_BUNDLE_GRADED}*.parquet); read the samples from the project that built it"
            )
        return [(f.name[len(_BUNDLE_GRADED) :].removesuffix(".parquet"), f) for f in files]


def source(path: str | os.PathLike[str]) -> Source:
    """A project (``results/result.json`` or ``results/graded/`` under it) or a deposit bundle
    (``result.json`` beside ``SHA256SUMS``); anything else is a one-line error."""
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory (give a project or a deposit bundle)")
    if (root / RESULT).is_file() or (root / GRADED_DIR).is_dir():
        return Source("project", root)
    if (root / RESULT.name).is_file() and (root / SUMS).is_file():
        return Source("bundle", root)
    raise UserError(
        f"{root}: neither a sealedeval project ({RESULT} or {GRADED_DIR}/) nor a deposit "
        f"bundle ({RESULT.name} beside {SUMS})"
    )


def _result_suites(src: Source) -> tuple[Path, dict[str, Any]]:
    path = src.result
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: missing; run `sealedeval publish` first") from None
    except ValueError as e:
        raise UserError(f"{path}: not valid JSON ({e})") from None
    suites = doc.get("suites") if isinstance(doc, dict) else None
    if not isinstance(suites, dict):
        raise UserError(f"{path}: not a result.json (no suites mapping)")
    return path, suites


def _analysis(path: Path, suite: str, section: Any) -> Mapping[str, Any]:
    a = section.get("analysis") if isinstance(section, Mapping) else None
    if not isinstance(a, Mapping):
        raise UserError(f"{path}: suites.{suite}.analysis: expected a mapping")
    return a


def samples_df(source_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Every graded row of a project (``results/graded/*.parquet``) or of a deposit bundle
    (``graded__*.parquet``), as the grade stage wrote it, with a ``suite`` column."""
    return samples_frame(source(source_dir).graded())


def _group_column(key: str) -> str:
    return f"group_{key}" if key in ("suite", *METRIC_KEYS, "se", "direction") else key


def metrics_df(source_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Every published metric (``suites.<s>.analysis.metrics`` of result.json), one row each."""
    path, suites = _result_suites(source(source_dir))
    records: list[dict[str, Any]] = []
    group_cols: dict[str, None] = {}
    for suite, section in suites.items():
        for m in published_metrics(path, suite, section):
            groups = {_group_column(str(k)): v for k, v in (m["groups"] or {}).items()}
            group_cols.update(dict.fromkeys(groups))
            records.append(
                {
                    "suite": suite,
                    **groups,
                    **{k: m[k] for k in METRIC_KEYS if k != "groups"},
                    "se": m.get("se"),
                    "direction": str(m.get("direction") or ""),
                }
            )
    ordered = sorted(group_cols, key=lambda c: (c != "engine", list(group_cols).index(c)))
    columns = ["suite", "metric", *ordered, *(k for k in METRIC_KEYS[2:]), "se", "direction"]
    df = pd.DataFrame.from_records(records, columns=columns)
    return df.astype({**dict.fromkeys(_FLOATS, "float64"), **dict.fromkeys(_INTS, "int64")})


def _comparisons(node: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every ``Comparison`` record under ``node`` with its path, in document order."""
    if isinstance(node, Mapping):
        if set(node) >= _COMPARISON_REQUIRED:
            yield where, node
            return
        for k, v in node.items():
            yield from _comparisons(v, f"{where}.{k}" if where else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _comparisons(v, f"{where}[{i}]")


def comparisons_df(source_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Every paired comparison record of result.json, one row each, with where it sits."""
    path, suites = _result_suites(source(source_dir))
    records = [
        {"suite": suite, "path": where, **{k: rec.get(k) for k in _COMPARISON_KEYS}}
        for suite, section in suites.items()
        for where, rec in _comparisons(_analysis(path, suite, section), "")
    ]
    return pd.DataFrame.from_records(records, columns=["suite", "path", *_COMPARISON_KEYS])
