"""``ImportedSuite``: a suite whose rows come from another harness's logs (``kind: imported``).

Its items are the imported samples; its requests are the imported keys (so planned-vs-present
counts work); grading maps each row's harness scores to graded rows (one per scorer); the
analysis is ours — accuracy per engine with a Wilson interval over samples (epochs reduced per
sample), pass@k from epochs, the exact sign test of two engines on their shared samples — next
to the harness's own headline (Inspect's ``results.scores[].metrics.accuracy``), with a flag
where they differ.

Sealed (``rubric_inputs``): the project files named in ``sources`` (the task definition and its
data), the sealed part of the section (``.sealedeval/imported-<name>.json``) and the code that
turns scores into numbers (this module, ``scores.py``, the shared statistics).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from sealedeval import stats
from sealedeval.canonical import dumps
from sealedeval.config import Config
from sealedeval.engines.base import Request
from sealedeval.fsutil import write_text_atomic
from sealedeval.plugins import AnalyzeContext, GenerateContext, GradeContext, RequestContext
from sealedeval.stages.grade import graded_row
from sealedeval.stats.comparisons import (
    BINARY_TEST,
    ComparisonPlan,
    adjust_families,
    paired_comparison,
)
from sealedeval.stats.metrics import Metric, metric, point_metric, rate_metric, status_counts
from sealedeval.store.raw import RawRecord, latest_records, raw_files
from sealedeval.suites.imported import aggregations, present, scores
from sealedeval.suites.tasks.analysis import item_mean_comparison, rate, reduce_outcomes

Row = Mapping[str, Any]
SPEC_DIR = ".sealedeval"
SEALED_KEYS = (
    "harness",
    "sources",
    "scorer",
    "threshold",
    "reduce",
    "comparisons",
    "tolerance",
    "cluster_by",
)
SOURCES = (
    "pkg:sealedeval/suites/imported/suite.py",
    "pkg:sealedeval/suites/imported/scores.py",
    "pkg:sealedeval/suites/imported/aggregations.py",
    "pkg:sealedeval/suites/imported/config.schema.yaml",
)
GRADER_VERSION = "1"
#: A row's ``params.harness`` (each importer's ``HARNESS``) → the label reports and the
#: ``harness:`` config key use (the same table as ``ingest.HARNESS_LABELS``, kept here so this
#: sealed module depends on no unsealed one).
HARNESS_LABELS = {"inspect_ai": "inspect", "lm_eval": "lm-eval", "promptfoo": "promptfoo"}


def spec_relpath(name: str) -> str:
    return f"{SPEC_DIR}/imported-{name}.json"


def _response(row: Row) -> dict[str, Any]:
    try:
        doc = json.loads(str(row.get("response") or "{}"))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _params(row: Row) -> dict[str, Any]:
    try:
        doc = json.loads(str(row.get("params") or "{}"))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _scored_mean(rows: Sequence[Row], name: str) -> float | None:
    """Mean over samples of the epoch mean of scorer ``name``, over every row whose log holds
    a numeric score for it, whatever our status (the harness's own estimator)."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        sc = (_response(r).get("scores") or {}).get(name)
        num = scores.to_float(sc.get("value")) if isinstance(sc, Mapping) else None
        if num is not None and not math.isnan(num):
            values[str(r["item_id"])].append(num)
    means = [sum(v) / len(v) for v in values.values()]
    return sum(means) / len(means) if means else None


def _sample_means(rows: Sequence[Row], name: str) -> list[float]:
    """Per sample (sorted by id), the epoch mean of scorer ``name``'s numeric values: the
    values Inspect's metrics run over (its default epoch reducer is the mean)."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        sc = (_response(r).get("scores") or {}).get(name)
        num = scores.to_float(sc.get("value")) if isinstance(sc, Mapping) else None
        if num is not None and not math.isnan(num):
            values[str(r["item_id"])].append(num)
    return [sum(values[i]) / len(values[i]) for i in sorted(values)]


def _sample_values(rows: Sequence[Row], name: str) -> list[Any]:
    """Per sample (sorted by id), scorer ``name``'s raw value: what a corpus-level
    aggregation (lm-eval's f1, matthews_corrcoef, ...) runs over."""
    out: dict[str, Any] = {}
    for r in rows:
        sc = (_response(r).get("scores") or {}).get(name)
        if isinstance(sc, Mapping) and sc.get("value") is not None:
            out.setdefault(str(r["item_id"]), sc["value"])
    return [out[i] for i in sorted(out)]


def rederive(
    rows: Sequence[Row], name: str, metric_name: str, head: Mapping[str, Any]
) -> tuple[float | None, str]:
    """A harness metric recomputed from the samples, and how; (None, why) when it cannot be.
    lm-eval headlines name their aggregation; Inspect's metric is named by itself."""
    agg = head.get("aggregation")
    if agg is not None:
        if agg == "mean":
            return _scored_mean(rows, name), "mean over documents"
        fn = aggregations.LM_EVAL.get(str(agg))
        sacre = str(agg) in aggregations.SACREBLEU
        version = aggregations.sacrebleu_version() if sacre else None
        if sacre and version is None:
            return None, (
                f"reported by the harness, not re-derivable from the samples (aggregation {agg}"
                ", computed by sacrebleu): install sealedeval[imports] to re-derive it"
            )
        value = fn(_sample_values(rows, name)) if fn is not None else None
        if value is None:
            return None, (
                f"reported by the harness, not re-derivable from the samples (aggregation {agg})"
            )
        # sacrebleu's version is part of how: another release may tokenise differently
        using = f" with sacrebleu {version}" if version else ""
        return value, f"lm-eval aggregation {agg} over the documents' values{using}"
    ifn = aggregations.INSPECT.get(metric_name)
    value = ifn(_sample_means(rows, name)) if ifn is not None else None
    if value is None:
        return None, (
            "reported by the harness, not re-derivable from the samples "
            f"(aggregation {metric_name})"
        )
    return value, f"Inspect {metric_name} over the samples' values"


def _pre_registration(rows: Sequence[Row]) -> dict[str, Any]:
    """Whether the harness ran after the seal. At import, a sample of a sealed suite that
    started before the seal's commit (or its RFC 3161 time) keeps the seal's commit but is
    marked unsealed (``ingest.mark_predating``); the audit verifies the claim."""
    n = len(rows)
    sealed = sum(1 for r in rows if r["sealed"])
    predating = sum(1 for r in rows if not r["sealed"] and r["seal_commit"])
    if n and sealed == n:
        status = "pre-registered: every sample started after the seal"
    elif predating:
        status = "not pre-registered: samples predate the seal"
    else:
        status = "not pre-registered: imported into a project with no committed seal"
    starts = sorted(str(r["started_at"]) for r in rows)
    return {
        "status": status,
        "samples": n,
        "after_seal": sealed,
        "predating_seal": predating,
        "seal_commits": sorted({str(r["seal_commit"]) for r in rows} - {""}),
        "first_sample_at": starts[0] if starts else "",
        "last_sample_at": starts[-1] if starts else "",
    }


def _log_edits(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Every edit the logs record: score edits per (engine, sample, epoch, scorer) with their
    provenance, and log-level updates once per log. Inspect applies both in place, so these
    are the only trace that a number in the log is not the one its scorer produced."""
    out: list[dict[str, Any]] = []
    logs: set[tuple[str, str]] = set()
    for r in rows:
        for name, sc in sorted((_response(r).get("scores") or {}).items()):
            for e in (sc.get("edits") or []) if isinstance(sc, Mapping) else []:
                out.append(
                    {
                        "engine": str(r["engine"]),
                        "sample": str(r["item_id"]),
                        "epoch": int(r["repeat"]) + 1,
                        "scorer": str(name),
                        **{k: e.get(k) for k in ("from", "value", "author", "reason", "timestamp")},
                    }
                )
        p = _params(r)
        key = (str(r["engine"]), str(p.get("log_sha256", "")))
        if p.get("log_updates") and key not in logs:
            logs.add(key)
            for u in p["log_updates"]:
                out.append(
                    {
                        "engine": key[0],
                        "log": str(p.get("log", "")),
                        "update": ", ".join(u.get("edits") or []),
                        **{k: u.get(k) for k in ("author", "reason", "timestamp")},
                    }
                )
    return sorted(out, key=lambda d: json.dumps(d, sort_keys=True, default=str))


class ImportedSuite:
    """A suite of imported rows. ``root`` is the project root."""

    def __init__(self, name: str, section: Mapping[str, Any], root: Path | str | None = None):
        self.name = name
        self.section = dict(section)
        self.root = Path(root).resolve() if root is not None else Path.cwd().resolve()
        self.threshold = float(self.section.get("threshold", 0.5))
        self.reduce = str(self.section.get("reduce", "majority"))
        self.tolerance = float(self.section.get("tolerance", 1e-9))

    # -- the seal ---------------------------------------------------------------------------
    def sealed_document(self) -> str:
        return dumps({k: self.section.get(k) for k in SEALED_KEYS} | {"suite": self.name})

    def rubric_inputs(self) -> list[str]:
        path = self.root / spec_relpath(self.name)
        text = self.sealed_document()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
        out = [spec_relpath(self.name), *map(str, self.section.get("sources") or [])]
        out += list(SOURCES)
        out += ["pkg:sealedeval/suites/tasks/analysis.py", "pkg:sealedeval/stats/*.py"]
        return list(dict.fromkeys(out))

    # -- items and requests: what was imported ------------------------------------------------
    def _rows(self, cfg: Config) -> Sequence[RawRecord]:
        return latest_records(raw_files(cfg.root, self.name))

    def generate(self, ctx: GenerateContext) -> list[dict[str, Any]]:
        cfg = ctx.cfg
        items: dict[str, dict[str, Any]] = {}
        for r in self._rows(cfg):
            target = _response(r).get("target")
            cur = items.setdefault(str(r["item_id"]), {"id": str(r["item_id"]), "target": None})
            if cur["target"] is None and target is not None:
                cur["target"] = target
        return [items[k] for k in sorted(items)]

    def requests(self, ctx: RequestContext) -> list[Request]:
        cfg, engine = ctx.cfg, ctx.engine
        out = []
        for r in self._rows(cfg):
            if r["engine"] != engine.name:
                continue
            out.append(
                Request(
                    request_key=str(r["request_key"]),
                    suite=self.name,
                    item_id=str(r["item_id"]),
                    condition=str(r["condition"]),
                    repeat=int(r["repeat"]),
                    seed=int(r["seed"]),
                    messages=tuple(json.loads(str(r["messages"]) or "[]")),
                    params={},
                )
            )
        return out

    def reference_answer(self, request: Request) -> str:
        return ""

    # -- grading: the harness's scores, one graded row per scorer ----------------------------
    def scorers(self, rows: Sequence[Row]) -> list[str]:
        names = {n for r in rows for n in (_response(r).get("scores") or {})}
        return sorted(names)

    def primary(self, rows: Sequence[Row]) -> str:
        configured = self.section.get("scorer")
        if configured:
            return str(configured)
        names = self.scorers(rows)
        return names[0] if names else ""

    def grade(self, ctx: GradeContext) -> list[dict[str, Any]]:
        rows = ctx.rows
        names = self.scorers(rows) or [""]
        out = []
        for r in rows:
            doc = _response(r).get("scores") or {}
            for name in names:
                sc = doc.get(name) if r["status"] == "ok" else None
                value = sc.get("value") if isinstance(sc, Mapping) else None
                num = scores.to_float(value)
                verdict = scores.passed(value, self.threshold) if sc is not None else None
                status = str(r["status"]) if sc is not None or r["status"] != "ok" else "error"
                if isinstance(sc, Mapping):
                    shown = {
                        "value": value,
                        "answer": sc.get("answer"),
                        "edited": bool(sc.get("edited")),
                    }
                else:
                    shown = {"value": value, "answer": None, "edited": False}
                out.append(
                    graded_row(
                        r,
                        status=status,
                        grader=name,
                        grader_version=GRADER_VERSION,
                        # None, not NaN: a graded file read back must equal the re-derivation
                        # (NaN != NaN would fail the audit's comparison)
                        score=num,
                        passed=bool(verdict),
                        category=(
                            ("correct" if verdict else "wrong")
                            if verdict is not None
                            else str(r["error_kind"] or "unscored")
                        ),
                        details=json.dumps(shown, sort_keys=True),
                    )
                )
        return out

    # -- analysis ----------------------------------------------------------------------------
    def analyze(self, ctx: AnalyzeContext) -> dict[str, Any]:
        graded, rows = ctx.graded, ctx.rows
        primary = self.primary(rows)
        by_engine: dict[str, list[Row]] = defaultdict(list)
        for r in rows:
            by_engine[str(r["engine"])].append(r)
        harness = _headlines(rows)
        engines: dict[str, Any] = {}
        metrics: list[Metric] = []
        outcomes: dict[str, dict[str, list[bool]]] = {}
        for eng in sorted(by_engine):
            mine = [g for g in graded if g["engine"] == eng]
            entry, ms, outs = self._engine(eng, mine, by_engine[eng], harness.get(eng, []), primary)
            engines[eng] = entry
            metrics += ms
            outcomes[eng] = outs
        pairs = self.section.get("comparisons") or list(combinations(sorted(engines), 2))
        comparisons = []
        for a, b in pairs:
            if a in outcomes and b in outcomes:
                c = _paired(a, b, outcomes[a], outcomes[b], self.reduce)
                comparisons.append(c)
                # Holm over the family so far; after the last pair, over the whole family
                adjust_families([x["paired"] for x in comparisons])
                g = {"a": a, "b": b, "scorer": primary}
                n = int(c["n_items"])
                metrics.append(
                    metric(
                        "difference",
                        g,
                        c["difference"],
                        c["lo"],
                        c["hi"],
                        method="paired normal",
                        n_total=n,
                        n_ok=n,
                        n_error=0,
                        unit="sample",
                        se=c["se"],
                    )
                )
                metrics.append(
                    metric(
                        "sign_test_p",
                        g,
                        c["p"],
                        None,
                        None,
                        method="exact sign test",
                        n_total=n,
                        n_ok=n,
                        n_error=0,
                        unit="sample",
                    )
                )
        label = self.harness_label(rows)
        mismatches = [
            f"{eng}/{m['scorer']}"
            + (f" {m['metric']}" if m.get("metric", "accuracy") != "accuracy" else "")
            + f": ours {m['ours']} vs {label} {m['harness']} "
            f"(log {m['log'][:12]})"
            + _counts_note(m)
            + (f"; {m['trimmed']}" if m.get("trimmed") else "")
            for eng, e in engines.items()
            for m in e["headline"]
            if m["match"] is False
        ]
        return {
            "harness": label,
            "primary": primary,
            "threshold": self.threshold,
            "reduce": self.reduce,
            "engines": engines,
            "comparisons": comparisons,
            "headline_match": not mismatches,
            "headline_mismatches": mismatches,
            "pre_registration": _pre_registration(rows),
            "log_edits": _log_edits(rows),
            # the libraries a re-derived headline ran through (sacrebleu for BLEU/chrF/TER)
            "rederived_with": {
                lib: version
                for e in engines.values()
                for h in e["headline"]
                for lib, version in (h.get("rederived_with") or {}).items()
            },
            "metrics": metrics,
        }

    def harness_label(self, rows: Sequence[Row]) -> str:
        """The configured ``harness``, else the harness(es) the rows were imported from."""
        configured = self.section.get("harness")
        if configured:
            return str(configured)
        names = {str(_params(r).get("harness", "")) for r in rows} - {""}
        return "+".join(sorted(HARNESS_LABELS.get(n, n) for n in names)) or "inspect"

    # -- presentation (present.py is not sealed) --------------------------------------------
    def report_sections(self, section: Mapping[str, Any]) -> str:

        return present.render(self.name, section)

    def _engine(
        self,
        eng: str,
        graded: Sequence[Row],
        rows: Sequence[Row],
        harness: Sequence[Mapping[str, Any]],
        primary: str,
    ) -> tuple[dict[str, Any], list[Metric], dict[str, list[bool]]]:
        metrics: list[Metric] = []
        per_scorer: dict[str, Any] = {}
        headline = []
        outcomes: dict[str, list[bool]] = {}
        for name in sorted({str(g["grader"]) for g in graded}):
            mine = sorted(
                (g for g in graded if g["grader"] == name),
                key=lambda g: (g["item_id"], g["repeat"]),
            )
            ok = [g for g in mine if g["status"] == "ok" and _number(g["score"])]
            values: dict[str, list[float]] = defaultdict(list)
            verdicts: dict[str, list[bool]] = defaultdict(list)
            for g in ok:
                values[str(g["item_id"])].append(float(g["score"]))
                verdicts[str(g["item_id"])].append(bool(g["passed"]))
            errored = {str(g["item_id"]) for g in mine} - set(values)
            means = {i: sum(v) / len(v) for i, v in values.items()}
            ours = sum(means.values()) / len(means) if means else None
            reduced = {i: reduce_outcomes(v, self.reduce) for i, v in verdicts.items()}
            k, n = sum(reduced.values()), len(reduced)
            g0 = {"engine": eng, "scorer": name}
            # a corpus-level metric (lm-eval's f1, bleu, ...): every sample has a value, none
            # a number; its only number is the corpus one, compared below, never an error rate
            corpus = not ok and any(g["status"] == "ok" for g in mine)
            if not corpus:
                metrics.append(
                    rate_metric("accuracy", g0, k, n, n_error=len(errored), unit="sample")
                )
            metrics += (
                []
                if corpus
                else [
                    metric(
                        "mean_score",
                        g0,
                        ours,
                        None,
                        None,
                        method="none (harness's estimator: mean over samples of the epoch mean)",
                        n_total=n + len(errored),
                        n_ok=n,
                        n_error=len(errored),
                        unit="sample",
                    )
                ]
            )
            epochs = max((len(v) for v in verdicts.values()), default=0)
            passk = {}
            if epochs > 1 and all(len(v) == epochs for v in verdicts.values()):
                for kk in (1, epochs):
                    passk[f"pass_at_{kk}"] = stats.mean_pass_at_k(verdicts, kk)
                    passk[f"pass_hat_{kk}"] = stats.mean_pass_hat_k(verdicts, kk)
                for key, val in passk.items():
                    metrics.append(
                        metric(
                            key,
                            g0,
                            val,
                            None,
                            None,
                            method="unbiased estimator",
                            n_total=n,
                            n_ok=n,
                            n_error=0,
                            unit="sample",
                        )
                    )
            per_scorer[name] = {
                "corpus_level": corpus,
                "accuracy": None if corpus else rate(k, n),
                "mean_score": ours,
                "samples": n,
                "samples_error": len(errored),
                "epochs": epochs,
                "epoch_spread": _spread(values),
                **passk,
            }
            if name == primary:
                outcomes = dict(verdicts)
            for h in harness:
                head = h["headline"].get(name) or {}
                for mname, value in sorted((head.get("metrics") or {}).items()):
                    if mname == "accuracy" or value is None:
                        continue
                    _, entry_o, m_o = self._other_metric(
                        rows, name, mname, value, head, h["log_sha256"], g0
                    )
                    headline.append(entry_o)
                    metrics += m_o
                reported = head.get("metrics", {}).get("accuracy")
                if reported is None:
                    continue
                # recomputed the harness's way: every sample the log scored, including the
                # ones we keep as error rows (Inspect scores a token-limited sample I and
                # counts it); our own accuracy above leaves those out
                theirs_way = _scored_mean(rows, name)
                same = theirs_way is not None and abs(float(reported) - theirs_way) <= (
                    self.tolerance
                )
                entry_h = {
                    "scorer": name,
                    "metric": "accuracy",
                    "ours": theirs_way,
                    "harness": reported,
                    "match": same,
                    "log": h["log_sha256"],
                }
                if theirs_way != ours:
                    entry_h["ours_excluding_errors"] = ours
                scored = head.get("scored_samples")
                held = len({str(r["item_id"]) for r in rows})
                if isinstance(scored, int) and scored > held:
                    entry_h["trimmed"] = (
                        f"the log holds {held} of the {scored} samples its headline scored"
                    )
                if isinstance(head.get("counts"), Mapping):
                    # a harness that reports counts per run (promptfoo): its rate is pooled
                    # over the runs (repeats included), and passed / failed / errored runs
                    # must be ours too, so an error silently dropped or added is caught
                    won = sum(bool(g["passed"]) for g in ok)
                    mine_counts = {
                        "passed": won,
                        "failed": len(ok) - won,
                        "error": len(mine) - len(ok),
                    }
                    pooled = won / len(ok) if ok else None
                    same = pooled is not None and abs(float(reported) - pooled) <= self.tolerance
                    theirs = {c: head["counts"].get(c) for c in mine_counts}
                    entry_h |= {"ours": pooled, "counts": {"ours": mine_counts, "harness": theirs}}
                    entry_h["match"] = same and theirs == mine_counts
                headline.append(entry_h)
                metrics.append(
                    metric(
                        "harness_accuracy",
                        g0 | {"log": h["log_sha256"][:12]},
                        float(reported),
                        None,
                        None,
                        method="reported by the harness",
                        n_total=n + len(errored),
                        n_ok=n,
                        n_error=len(errored),
                        unit="sample",
                    )
                )
        graded_names = {str(g["grader"]) for g in graded}
        for h in harness:
            for name, head in sorted((h["headline"] or {}).items()):
                if name in graded_names:
                    continue
                # the log reports a scorer no sample of it holds (its scored samples were
                # trimmed away, or all errored): carried as reported, labelled so
                g_h = {"engine": eng, "scorer": name}
                for mname, value in sorted((head.get("metrics") or {}).items()):
                    if value is not None:
                        _, entry_o, m_o = self._other_metric(
                            rows, name, mname, value, head, h["log_sha256"], g_h
                        )
                        headline.append(entry_o)
                        metrics += m_o
        # per scorer, accuracy first, then its other metrics by name (stable: logs keep order)
        headline.sort(key=lambda e: (str(e["scorer"]), e.get("metric", "accuracy") != "accuracy"))
        g_primary = {"engine": eng, "scorer": primary}
        solved = {i: reduce_outcomes(v, self.reduce) for i, v in outcomes.items()}
        n_solved = sum(solved.values())
        # cost and latency per solved sample: everything the engine spent (errored and failed
        # samples included) over the samples it solved — what a correct answer costs
        cost = sum(float(r["cost_usd"] or 0.0) for r in rows)
        latency = sum(float(r["latency_s"] or 0.0) for r in rows)
        n_err = len({str(r["item_id"]) for r in rows} - set(solved))
        per_solved = {
            "solved": n_solved,
            "cost_usd": cost,
            "latency_s": latency,
            "cost_per_solved_usd": cost / n_solved if n_solved else None,
            "latency_per_solved_s": latency / n_solved if n_solved else None,
        }
        # a corpus-level primary scorer solves no single sample: no per-solved cost
        corpus_primary = bool((per_scorer.get(primary) or {}).get("corpus_level"))
        for key, unit in (
            (("cost_per_solved_usd", "USD"), ("latency_per_solved_s", "s"))
            if not corpus_primary
            else ()
        ):
            metrics.append(
                point_metric(
                    key.removesuffix("_usd").removesuffix("_s"),
                    g_primary | {"unit": unit},
                    per_solved[key],
                    len(solved),
                    n_err,
                    "sample",
                    method="total over all rows / samples solved",
                )
            )
        clustered = self._clustered(rows, solved)
        if clustered is not None:
            metrics.append(
                metric(
                    "accuracy_clustered",
                    g_primary | {"cluster_by": clustered["by"]},
                    clustered["rate"],
                    clustered["lo"],
                    clustered["hi"],
                    method=f"cluster-robust SE by {clustered['by']} ({clustered['clusters']} "
                    "clusters), normal interval",
                    n_total=len(solved) + n_err,
                    n_ok=len(solved),
                    n_error=n_err,
                    unit="sample",
                    se=clustered["se"],
                )
            )
        entry = {
            "model": str(rows[0]["model"]) if rows else "",
            "harness_version": sorted({str(r["harness_version"]) for r in rows}),
            "logs": [h["log_sha256"] for h in harness],
            # the harness's own run status (Inspect: success, cancelled, error, started) and
            # the samples that hit a limit: a cancelled run's missing samples are error rows
            "log_status": {
                h["log_sha256"]: h.get("status", "") for h in harness if h.get("status")
            },
            "limits_hit": sum(1 for r in rows if str(r["error_kind"]).startswith("limit")),
            "scorers": per_scorer,
            "headline": headline,
            "per_solved": per_solved,
            "clustered": clustered,
            **status_counts(rows),
        }
        return entry, metrics, outcomes

    def _other_metric(
        self,
        rows: Sequence[Row],
        name: str,
        mname: str,
        value: Any,
        head: Mapping[str, Any],
        log: str,
        g0: Mapping[str, Any],
    ) -> tuple[float | None, dict[str, Any], list[Metric]]:
        """A headline metric other than accuracy (Inspect's ``mean``/``stderr``/..., an
        lm-eval corpus aggregation): re-derived and compared where the samples allow, else
        carried as the harness reported it and labelled so — never an error."""
        reported = scores.to_float(value)
        ours, how = rederive(rows, name, mname, head)
        if not _sample_values(rows, name):
            ours, how = None, "reported by the harness; no sample in the log holds this score"
        same: bool | None = None
        if ours is not None and reported is not None:
            same = abs(reported - ours) <= self.tolerance * max(1.0, abs(reported))
        entry = {
            "scorer": name,
            "metric": mname,
            "ours": ours,
            "harness": reported if reported is not None else value,
            "match": same,
            "log": log,
            "how": how,
        }
        if ours is not None and str(head.get("aggregation")) in aggregations.SACREBLEU:
            # recorded so that a re-derivation elsewhere can say why a number differs
            entry["rederived_with"] = {"sacrebleu": aggregations.sacrebleu_version()}
        scored = head.get("scored_samples")
        held = len({str(r["item_id"]) for r in rows})
        if isinstance(scored, int) and scored > held:
            entry["trimmed"] = f"the log holds {held} of the {scored} samples its headline scored"
        out: list[Metric] = []
        n = len(_sample_values(rows, name))
        if reported is not None:
            out.append(
                metric(
                    f"harness_{mname}",
                    dict(g0) | {"log": log[:12]},
                    reported,
                    None,
                    None,
                    method="reported by the harness",
                    n_total=n,
                    n_ok=n,
                    n_error=0,
                    unit="sample",
                )
            )
        if ours is not None:
            out.append(
                metric(
                    mname,
                    dict(g0) | {"log": log[:12]},
                    ours,
                    None,
                    None,
                    method=f"re-derived: {how}",
                    n_total=n,
                    n_ok=n,
                    n_error=0,
                    unit="sample",
                )
            )
        return ours, entry, out

    def _clustered(self, rows: Sequence[Row], solved: Mapping[str, bool]) -> dict[str, Any] | None:
        """Accuracy with a cluster-robust interval by the sample field ``cluster_by`` names (a
        dotted path into the row's response: ``metadata.subject`` for Inspect, ``doc.category``
        for lm-eval, ``test.vars.topic`` for promptfoo). Samples sharing a cluster (questions
        on one passage, one subject) are not independent; the naive Wilson interval is too
        narrow then. A sample without the field is its own cluster, and said so."""
        by = self.section.get("cluster_by")
        if not by or not solved:
            return None
        of: dict[str, str] = {}
        for r in rows:
            item = str(r["item_id"])
            if item in of:
                continue
            value: Any = _response(r)
            for part in str(by).split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            of[item] = f"={value}" if value is not None else f"(own: {item})"
        items = sorted(solved)
        values = [1.0 if solved[i] else 0.0 for i in items]
        clusters = [of.get(i, f"(own: {i})") for i in items]
        rate_ = sum(values) / len(values)
        se = stats.clustered_se(values, clusters)
        return {
            "by": str(by),
            "rate": rate_,
            "se": se,
            "lo": max(0.0, rate_ - stats.Z_95 * se),
            "hi": min(1.0, rate_ + stats.Z_95 * se),
            "clusters": len(set(clusters)),
            "without_field": sum(1 for c in clusters if c.startswith("(own")),
        }


def _number(score: Any) -> bool:
    """A graded score that is a number (None: the harness gave none; NaN from older files)."""
    return isinstance(score, (int, float)) and not math.isnan(score)


def _counts_note(m: Mapping[str, Any]) -> str:
    """``; passed/failed/error ours 3/1/1 vs 3/1/0`` when the counts were compared and differ."""
    c = m.get("counts")
    if not c or c["ours"] == c["harness"]:
        return ""
    keys = list(c["ours"])
    return (
        f"; passed/failed/error ours {'/'.join(str(c['ours'][k]) for k in keys)} vs "
        f"{'/'.join(str(c['harness'][k]) for k in keys)}"
    )


def _spread(values: Mapping[str, Sequence[float]]) -> float | None:
    """Mean over samples of the standard deviation across epochs (None: one epoch)."""
    sds = []
    for v in values.values():
        if len(v) > 1:
            m = sum(v) / len(v)
            sds.append(math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)))
    return sum(sds) / len(sds) if sds else None


def _headlines(rows: Sequence[Row]) -> dict[str, list[dict[str, Any]]]:
    """engine → the headline of every distinct log its rows came from."""
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        p = _params(r)
        sha = str(p.get("log_sha256", ""))
        if sha and sha not in out[str(r["engine"])]:
            out[str(r["engine"])][sha] = {
                "log_sha256": sha,
                "headline": p.get("headline") or {},
                "status": str(p.get("log_status") or ""),
            }
    return {e: [v[k] for k in sorted(v)] for e, v in out.items()}


COMPARISON_PLAN = ComparisonPlan(
    families={"engines": "every pair of imported engines, on the samples both have"},
    # the samples' verdicts are 0/1: exact McNemar (sign test), mid-p beside (issue #30)
    tests={"engines": BINARY_TEST},
)
"""The imported suite's comparison plan (issue 15; sealed with this module): one family, the
defaults of ``stats.comparisons`` (δ = 0.05, α = 0.05, power 0.8, Holm)."""


def _paired(
    a: str, b: str, oa: Mapping[str, list[bool]], ob: Mapping[str, list[bool]], how: str
) -> dict[str, Any]:
    """The tasks suite's paired comparison on per-sample means of the verdicts, with this
    suite's comparison plan's record."""
    common = sorted(i for i in set(oa) & set(ob) if oa[i] and ob[i])
    return item_mean_comparison(a, b, oa, ob, how, unit="sample") | {
        "paired": paired_comparison(
            f"{a} vs {b}",
            "engines",
            a,
            b,
            {i: [float(x) for x in oa[i]] for i in common if oa[i]},
            {i: [float(x) for x in ob[i]] for i in common if ob[i]},
            COMPARISON_PLAN,
            unit="sample",
        ),
    }
