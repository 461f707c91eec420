"""Inspect AI logs (``.eval`` and ``.json``) → raw rows, through ``inspect_ai.log``'s reader.

Fields mapped, per (sample, epoch): the sample id and epoch (``item_id``, ``repeat`` = epoch−1),
the input messages, the completion (``output_text``) and stop reason, every scorer's
``value``/``answer``/``explanation`` (and whether the score was edited: ``history``) with the
target in ``response``, the model, usage tokens and cost, the sample's start/completion times
and total time. The log's task, task id, eval id, run id, status, generate config and headline
metrics (``results.scores[].metrics``) go into ``params`` (one value per log). A sample with an
``error``, a ``limit``, or no score is a row with status ``error`` and its kind
(``sample_error``, ``limit_<type>``, ``unscored``); a sample the dataset lists but the log does
not hold (a cancelled or errored run) is an ``error`` row of kind ``cancelled``/``missing``.
Ignored: events, transcripts beyond the input messages, attachments, store, sandbox.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.imports import sniff
from sealedeval.stages.ingest import (
    Ingest,
    Seal,
    engine_name,
    iso_utc,
    request_key,
    seal_state,
    suite_name,
)
from sealedeval.store.schema import raw_row

HARNESS = "inspect_ai"


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def read_log(path: Path) -> tuple[bytes, Any]:
    """The log's bytes and the ``EvalLog`` read from them; any failure is one line."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise UserError(
            "importing Inspect logs needs inspect_ai: pip install 'sealedeval[inspect]'"
        ) from None
    data = sniff.read_bytes(path)
    found = sniff.kind_of(path, data)
    sniff.refuse_other(path, sniff.INSPECT, found)
    if found is None:
        if data[:2] == b"PK":
            raise UserError(f"{path}: truncated or damaged zip archive (not a readable .eval log)")
        sniff.load_json(path, sniff.INSPECT)  # not JSON / truncated JSON: its own line
        raise UserError(f"{path}: JSON, but not {sniff.INSPECT} (no eval, version, status)")
    want = ".eval" if data[:2] == b"PK" else ".json"
    if path.suffix != want:
        raise UserError(f"{path}: {sniff.INSPECT} in {want} format must be named *{want}")
    try:
        log = read_eval_log(str(path))
    except Exception as e:  # a JSON log of an unknown version, a damaged zip member
        raise UserError(f"{path}: not a readable Inspect log ({_first_line(e)})") from None
    if log.eval is None or not getattr(log.eval, "task", None) or not log.eval.model:
        raise UserError(f"{path}: Inspect log without task or model")
    if not log.samples:
        raise UserError(
            f"{path}: holds no samples (a header-only log, or run with --no-log-samples): "
            "nothing to re-derive its headline from, so it is not imported"
        )
    return data, log


def _dump(obj: Any) -> Any:
    if obj is None:
        return None
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json", exclude_none=True)
    return obj


def _provenance(p: Any) -> dict[str, Any]:
    ts = getattr(p, "timestamp", None)
    return {
        "author": str(getattr(p, "author", "") or ""),
        "reason": str(getattr(p, "reason", "") or ""),
        "timestamp": iso_utc(ts.isoformat() if ts is not None else None, ""),
    }


def _score_edits(score: Any) -> list[dict[str, Any]]:
    """A score's edit history as Inspect records it (``Score.history``: each ``ScoreEdit`` with
    the new value and its provenance — who, why, when). Inspect applies edits in place, so the
    log alone shows only the final value; the history is the evidence, listed in the report."""
    out = []
    before: Any = None
    for e in getattr(score, "history", None) or []:
        value = _dump(getattr(e, "value", None))
        prov = getattr(e, "provenance", None)
        if prov is not None:  # the first entry (no provenance) is the scorer's own value
            out.append({"from": before, "value": value, **_provenance(prov)})
        before = value
    return out


def _log_updates(log: Any) -> list[dict[str, Any]]:
    """Log-level edits (``EvalLog.log_updates``: tags and metadata changed after the run)."""
    return [
        {
            "edits": [str(getattr(e, "type", "edit")) for e in (getattr(u, "edits", None) or [])],
            **_provenance(getattr(u, "provenance", None)),
        }
        for u in (getattr(log, "log_updates", None) or [])
    ]


def _messages(sample_input: Any) -> list[dict[str, Any]]:
    if isinstance(sample_input, str):
        return [{"role": "user", "content": sample_input}]
    return [
        {"role": str(getattr(m, "role", "user")), "content": getattr(m, "text", str(m))}
        for m in sample_input
    ]


def headline(log: Any) -> dict[str, dict[str, Any]]:
    """``results.scores[]``: scorer name → its metrics and scored/unscored counts."""
    out: dict[str, dict[str, Any]] = {}
    results = getattr(log, "results", None)
    # older logs (0.3.100) leave scored_samples unset; the run's completed count stands in, so a
    # log whose samples were trimmed after the run says so beside its headline. That count is
    # of (sample, epoch) pairs, scored_samples of samples (epochs reduced): divided by the
    # epochs, else a clean 2-epoch log would read as "holds 5 of the 10 samples it scored"
    completed = getattr(results, "completed_samples", None)
    epochs = int(getattr(getattr(log.eval, "config", None), "epochs", None) or 1)
    if isinstance(completed, int) and epochs > 1:
        completed = completed // epochs if completed % epochs == 0 else completed
    for s in getattr(results, "scores", None) or []:
        out[str(s.name)] = {
            "scorer": str(s.scorer),
            "reducer": s.reducer,
            "scored_samples": s.scored_samples if s.scored_samples is not None else completed,
            "unscored_samples": s.unscored_samples,
            "metrics": {str(k): m.value for k, m in (s.metrics or {}).items()},
        }
    return out


def _usage(sample: Any, model: str) -> tuple[int, int, float]:
    usage = (getattr(sample, "model_usage", None) or {}).values()
    if not usage and sample.output is not None and sample.output.usage is not None:
        usage = [sample.output.usage]
    t_in = sum(int(u.input_tokens or 0) for u in usage)
    t_out = sum(int(u.output_tokens or 0) for u in usage)
    cost = sum(float(u.total_cost or 0.0) for u in usage)
    return t_in, t_out, cost


def _iso(value: Any) -> str | None:
    """A log time (a datetime, or ISO text as older readers give it) as ISO text, or None."""
    if value is None or value == "":
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _sample_times(sample: Any) -> tuple[str | None, str | None]:
    """When the sample started and completed. Releases before ``EvalSample.started_at`` /
    ``completed_at`` existed (0.3.100, a format-2 log like today's) record the times only on
    the sample's events: the first event's time is its start, the last one's its end. Without
    either, the log's own start / end stand in (the caller's fallback): every sample of an old
    log would then share one start, and the seal check (a sample started after the seal) could
    not tell its samples apart."""
    start, end = (
        _iso(getattr(sample, "started_at", None)),
        _iso(getattr(sample, "completed_at", None)),
    )
    if start is not None and end is not None:
        return start, end
    times = sorted(
        t
        for e in (getattr(sample, "events", None) or [])
        if (t := _iso(getattr(e, "timestamp", None)))
    )
    if not times:
        return start, end
    return start or times[0], end or times[-1]


def _status(sample: Any, scores: dict[str, Any]) -> tuple[str, str, str]:
    if sample.error is not None:
        return "error", "sample_error", str(getattr(sample.error, "message", sample.error))
    if sample.limit is not None:
        kind = str(getattr(sample.limit, "type", "limit"))
        return "error", f"limit_{kind}", f"{kind} limit {getattr(sample.limit, 'limit', '')}"
    if not scores:
        return "error", "unscored", "the log holds no score for this sample"
    return "ok", "", ""


def convert(
    path: Path, data: bytes, log: Any, seal: Seal, suite: str, engine: str
) -> list[dict[str, Any]]:
    """One raw row per (sample, epoch) of the log, and one per planned sample it lacks."""
    ev = log.eval
    model = str(ev.model)
    task = str(ev.task)
    sha = hashlib.sha256(data).hexdigest()
    version = f"{HARNESS} {(ev.packages or {}).get(HARNESS, 'unknown')}"
    stats = log.stats
    log_start = iso_utc(getattr(stats, "started_at", None) or ev.created, iso_utc(ev.created, ""))
    log_end = iso_utc(getattr(stats, "completed_at", None), log_start)
    cfg_dump = _dump(getattr(log, "plan", None) and log.plan.config) or {}
    params = compact(
        {
            "harness": HARNESS,
            "task": task,
            "task_id": ev.task_id,
            "eval_id": getattr(ev, "eval_id", ""),
            "run_id": ev.run_id,
            "log": path.name,
            "log_sha256": sha,
            "log_status": log.status,
            "log_version": log.version,
            "generate_config": cfg_dump,
            "headline": headline(log),
            "log_updates": _log_updates(log),
        }
    )
    identity = compact({"harness": HARNESS, "model": model, "model_base_url": ev.model_base_url})
    seed = int(getattr(ev.config, "seed", None) or 0)
    common: dict[str, Any] = {
        "suite": suite,
        "condition": "inspect",
        "seed": seed,
        "engine": engine,
        "engine_kind": "inspect",
        "model": model,
        "engine_identity": identity,
        "params": params,
        "engine_path": path.name,
        "rubric_sha256": seal.rubric_sha256,
        "seal_commit": seal.seal_commit,
        "sealed": seal.sealed,
        "harness_version": version,
    }
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for s in log.samples or []:
        sid, epoch = str(s.id), int(s.epoch)
        if (sid, epoch) in seen:
            raise UserError(f"{path}: sample {sid} epoch {epoch} appears twice")
        seen.add((sid, epoch))
        scores = {
            str(name): {
                "value": _dump(sc.value),
                "answer": sc.answer,
                "explanation": sc.explanation,
                "edited": bool(getattr(sc, "history", None)),
                "edits": _score_edits(sc),
            }
            for name, sc in (s.scores or {}).items()
        }
        status, kind, message = _status(s, scores)
        t_in, t_out, cost = _usage(s, model)
        started, completed = _sample_times(s)
        out = s.output
        choice = out.choices[0] if out is not None and out.choices else None
        rows.append(
            raw_row(
                **common,
                request_key=request_key(HARNESS, task, sid, epoch, model),
                item_id=sid,
                repeat=epoch - 1,
                messages=compact(_messages(s.input)),
                response=compact(
                    {
                        "scores": scores,
                        "target": _dump(s.target),
                        "sample_uuid": getattr(s, "uuid", None),
                        "metadata": _dump(s.metadata) or {},
                    }
                ),
                output_text=(out.completion if out is not None else "") or "",
                finish_reason=str(choice.stop_reason) if choice is not None else "",
                tokens_in=t_in,
                tokens_out=t_out,
                cost_usd=cost,
                latency_s=float(getattr(s, "total_time", None) or 0.0),
                started_at=iso_utc(started, log_start),
                finished_at=iso_utc(completed, log_end),
                status=status,
                error_kind=kind,
                error_message=message,
            )
        )
    epochs = int(getattr(ev.config, "epochs", None) or 1)
    missing_kind = "cancelled" if log.status == "cancelled" else "missing"
    for sid_raw in ev.dataset.sample_ids or []:
        sid = str(sid_raw)
        for epoch in range(1, epochs + 1):
            if (sid, epoch) in seen:
                continue
            rows.append(
                raw_row(
                    **common,
                    request_key=request_key(HARNESS, task, sid, epoch, model),
                    item_id=sid,
                    repeat=epoch - 1,
                    messages="[]",
                    response=compact({"scores": {}, "target": None}),
                    started_at=log_start,
                    finished_at=log_end,
                    status="error",
                    error_kind=missing_kind,
                    error_message=f"log status {log.status}: sample not in the log",
                )
            )
    return rows


def load(cfg: Config | None, path: Path, suite: str | None = None) -> Ingest:
    """Read and convert one log (nothing written)."""
    data, log = read_log(path)
    ev = log.eval
    name = suite or suite_name(str(ev.task))
    engine = engine_name(str(ev.model))
    seal = seal_state(cfg, name)
    rows = convert(path, data, log, seal, name, engine)
    version = rows[0]["harness_version"] if rows else f"{HARNESS} unknown"
    return Ingest(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        harness=HARNESS,
        harness_version=version,
        suite=name,
        engine=engine,
        model=str(ev.model),
        rows=rows,
        source={
            "format": path.suffix.lstrip("."),
            "log_version": log.version,
            "task": str(ev.task),
            "eval_id": getattr(ev, "eval_id", ""),
            "status": log.status,
            "headline": headline(log),
        },
    )
