"""lm-evaluation-harness output (``results_<ts>.json`` + ``samples_<task>_<ts>.jsonl``) → raw rows.

``lm_eval ... --log_samples --output_path DIR`` writes, per run, one results file and one
samples file per task, side by side (``DIR/<model>/``). Both are plain JSON, so they are read
with the standard library: importing needs no lm-eval install.

One row per document (``doc_id``): lm-eval scores a document once, after its filter has reduced
the ``repeats`` answers, so every row is ``repeat`` 0 and the repeats' raw answers are kept in
``response.resps``. Each sample line is one (document, filter); its metrics become scorers
named as lm-eval names them in the results file, ``<metric>,<filter>`` (``exact_match,strict``),
so the headline ``results[task]["<metric>,<filter>"]`` sits beside our recomputation from the
samples. Every headline metric is carried with its aggregation (the task config's, else
lm-eval's registered default); the imported suite re-derives the ones ``aggregations.py``
knows (mean, f1, matthews_corrcoef, the perplexity family, ...) and labels the others
(corpus BLEU, a task's own function) as reported, not re-derivable. Files are recognised by
content (``sniff.py``): a renamed results file imports. Documents the results file counts
(``n-samples``) but the samples file lacks are ``error`` rows of kind ``missing``; documents
left out by ``--limit`` are ``error`` rows of kind ``limit``; a document a metric is listed
for without its value is ``unscored`` (a corpus metric's value is a (reference, prediction)
pair: the row is ``ok``).

The field map (mapped, ignored) is in docs/imports.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.errors import UserError
from sealedeval.imports import sniff
from sealedeval.stages.ingest import (
    Ingest,
    Seal,
    check_harness,
    engine_name,
    epoch_utc,
    redact,
    request_key,
    seal_state,
    suite_name,
)
from sealedeval.store.schema import raw_row
from sealedeval.suites.imported import aggregations
from sealedeval.suites.imported import scores as score_values

HARNESS = "lm_eval"
#: ``lm_eval_version`` major.minor whose results/samples layout this module reads: 0.4.x writes
#: ``results_<ts>.json`` with ``results``/``configs``/``n-samples`` and sample lines with
#: ``doc_id``, ``filter``, ``metrics`` (lm_eval/loggers/evaluation_tracker.py, 0.4.x).
SUPPORTED_VERSIONS = ("0.4",)
#: Keys of ``results[task]`` that are not ``<metric>,<filter>`` values.
_NOT_METRICS = frozenset({"name", "alias", "sample_len", " ", ""})
#: The run's time stamp at the end of a results file's name (``results_<ts>.json``, or a name
#: its author chose that kept the stamp); the samples files written with it carry the same one.
_STAMP = re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.json$")
#: The name lm-eval gives a results file: one that does not parse is reported, not skipped.
_RESULTS_NAME = re.compile(r"^results_.+\.json$")
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


@dataclass(frozen=True)
class Run:
    """One lm-eval results file and the samples files written with it (task → path)."""

    results: Path
    samples: dict[str, Path]


def _kind(p: Path) -> str | None:
    return sniff.kind_of(p)


def discover(paths: Sequence[Path]) -> list[Run]:
    """The runs under the given directories / files, recognised by content: a results file is
    any JSON file that is lm-eval results, whatever its name; its samples files are the
    ``samples_<task>_<ts>.jsonl`` beside it with its time stamp. A samples file whose results
    file is not beside it is an error: its headline, model and task config are in that file."""
    results: set[Path] = set()
    samples: set[Path] = set()
    for p in paths:
        if p.is_dir():
            for f in p.rglob("*.json"):
                kind = _kind(f)
                if kind is None and _RESULTS_NAME.match(f.name):
                    sniff.load_json(f, sniff.LM_EVAL_RESULTS)  # lm-eval's name, unreadable
                if kind == sniff.LM_EVAL_V0:
                    raise UserError(
                        f"{f}: pre-0.4 lm-eval results (no lm_eval_version, configs or "
                        "n-samples): this importer reads lm-eval 0.4.x output"
                    )
                if kind == sniff.LM_EVAL_RESULTS:
                    results.add(f)
            samples |= {f for f in p.rglob("samples_*.jsonl") if _SAMPLES.match(f.name)}
            continue
        kind = sniff.kind_of(p)
        if kind == sniff.LM_EVAL_RESULTS:
            results.add(p)
            samples |= {f for f in p.parent.glob("samples_*.jsonl") if _stamp(f) == _stamp(p)}
        elif kind == sniff.LM_EVAL_SAMPLES and _SAMPLES.match(p.name):
            samples.add(p)
            results |= {
                f
                for f in p.parent.glob("*.json")
                if _stamp(f) == _stamp(p) and _kind(f) == sniff.LM_EVAL_RESULTS
            }
        elif kind == sniff.LM_EVAL_SAMPLES:
            raise UserError(
                f"{p}: lm-eval samples renamed (expected samples_<task>_<time>.jsonl: the task "
                "and time in its name pair it with its results file)"
            )
        elif kind == sniff.LM_EVAL_V0:
            raise UserError(
                f"{p}: pre-0.4 lm-eval results (no lm_eval_version, configs or n-samples): "
                "this importer reads lm-eval 0.4.x output"
            )
        elif kind is not None:
            raise UserError(f"{p}: not lm-eval output: looks like {kind}")
        else:
            sniff.load_json(p, sniff.LM_EVAL_RESULTS)  # empty, a zip, not JSON: its own line
            raise UserError(
                f"{p}: not lm-eval output (neither a results file with 'results' and "
                "'configs' nor a samples_<task>_<time>.jsonl file)"
            )
    by_stamp: dict[tuple[Path, str], Path] = {}
    runs: dict[Path, Run] = {}
    for r in sorted(results):
        runs[r] = Run(r, {})
        by_stamp.setdefault((r.parent, _stamp(r)), r)
    for s in sorted(samples):
        r_found = by_stamp.get((s.parent, _stamp(s)))
        if r_found is None:
            raise UserError(
                f"{s}: samples file without its results file (no lm-eval results file with "
                f"time stamp {_stamp(s)} beside it)"
            )
        m = _SAMPLES.match(s.name)
        assert m is not None
        runs[r_found].samples[m.group("task")] = s
    if not runs:
        raise UserError(
            f"{', '.join(map(str, paths))}: no lm-eval results file found "
            "(lm_eval --output_path DIR --log_samples writes them)"
        )
    return list(runs.values())


def _stamp(p: Path) -> str:
    m = _SAMPLES.match(p.name) or _STAMP.search(p.name)
    return m.group("ts") if m else ""


def _version(path: Path, doc: Any) -> str:
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise UserError(f"{path}: not an lm-eval results file (no 'results' object)")
    version = doc.get("lm_eval_version")
    if not isinstance(version, str) or not version:
        raise UserError(
            f"{path}: lm-eval results without lm_eval_version (written by lm-eval older "
            "than 0.4.3, whose layout this importer does not read)"
        )
    if ".".join(version.split(".")[:2]) not in SUPPORTED_VERSIONS:
        raise UserError(
            f"{path}: lm_eval_version {version} is not a format this importer reads "
            f"(supported: {', '.join(v + '.x' for v in SUPPORTED_VERSIONS)})"
        )
    return version


def read_samples(path: Path) -> tuple[bytes, list[dict[str, Any]]]:
    """The sample lines, each checked; a bad line is an error naming the file and line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    lines: list[dict[str, Any]] = []
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError as e:
            msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
            raise UserError(f"{path}:{n}: not JSON ({msg})") from None
        if (
            not isinstance(line, dict)
            or not isinstance(line.get("doc_id"), int)
            or not isinstance(line.get("metrics"), list)
            or not isinstance(line.get("filter", "none"), str)
        ):
            raise UserError(f"{path}:{n}: not an lm-eval sample (needs doc_id, filter, metrics)")
        line["_line"] = n
        lines.append(line)
    return data, lines


def _messages(arguments: Any) -> list[dict[str, Any]]:
    """The prompt of the document's first request: chat messages when lm-eval applied a chat
    template to an API model (a JSON list), else the context string as one user message."""
    args = arguments if isinstance(arguments, Mapping) else {}
    first = args.get("gen_args_0") or {}
    ctx = first.get("arg_0") if isinstance(first, Mapping) else None
    if isinstance(ctx, list) and ctx:
        ctx = ctx[0]
    if isinstance(ctx, str):
        try:
            msgs = json.loads(ctx)
        except ValueError:
            msgs = None
        if isinstance(msgs, list) and all(isinstance(m, dict) and "role" in m for m in msgs):
            return [{"role": str(m["role"]), "content": m.get("content", "")} for m in msgs]
        return [{"role": "user", "content": ctx}]
    return []


def _text(resps: Any, arguments: Any = None) -> str:
    """The first answer of the first request (a ``generate_until`` reply); for a
    ``multiple_choice`` document the choice lm-eval's ``acc`` picks (``_chosen``); else the
    JSON of the responses."""
    if isinstance(resps, list) and resps:
        first = resps[0]
        if isinstance(first, list) and first and isinstance(first[0], str):
            return first[0]
        if isinstance(first, str):
            return first
    chosen = _chosen(resps, arguments)
    if chosen is not None:
        return chosen
    return compact(resps) if resps is not None else ""


def _loglikelihood(value: Any) -> float | None:
    """A log-likelihood as lm-eval writes it (a number, or its string); -inf is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        f = float(value)
    except ValueError:
        return None
    return None if math.isnan(f) else f


def _chosen(resps: Any, arguments: Any) -> str | None:
    """The continuation with the highest log-likelihood, as given to the model (the target
    delimiter included), the first on ties as lm-eval's ``numpy.argmax`` has it: the answer of
    a ``multiple_choice`` document, whose requests are (context, continuation) pairs
    ``gen_args_<i>`` of one context, at least two, each answered with one (log-likelihood,
    is_greedy) pair. None for any other shape: a ``loglikelihood`` task's one continuation is
    the target, not a choice, and ``acc_mutual_info`` adds requests of another context."""
    if not isinstance(resps, list) or len(resps) < 2 or not isinstance(arguments, Mapping):
        return None
    if len(arguments) != len(resps):
        return None
    contexts = {
        compact(a.get("arg_0")) if isinstance(a, Mapping) else None for a in arguments.values()
    }
    if len(contexts) != 1:
        return None
    lls: list[float] = []
    continuations: list[str] = []
    for i, resp in enumerate(resps):
        request = arguments.get(f"gen_args_{i}")
        pair = resp[0] if isinstance(resp, list) and len(resp) == 1 else None
        if not isinstance(request, Mapping) or not isinstance(pair, list) or len(pair) != 2:
            return None
        ll, continuation = _loglikelihood(pair[0]), request.get("arg_1")
        if ll is None or not isinstance(continuation, str):
            return None
        lls.append(ll)
        continuations.append(continuation)
    return continuations[lls.index(max(lls))]


def _aggregations(config: Mapping[str, Any]) -> dict[str, str]:
    """metric → its aggregation from the task config (lm-eval's registered default for a
    built-in metric the config names without one)."""
    out: dict[str, str] = {}
    for m in config.get("metric_list") or []:
        if isinstance(m, Mapping) and isinstance(m.get("metric"), str):
            name = m["metric"]
            agg = m.get("aggregation")
            out[name] = (
                aggregations.aggregation_name(agg)
                if agg is not None
                else aggregations.LM_EVAL_DEFAULT_AGGREGATION.get(name, "unknown")
            )
    return out


def headline(results: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``results[task]``: ``<metric>,<filter>`` → the reported value (as ``accuracy`` when the
    aggregation is a mean of per-document values, the one we recompute), stderr, aggregation."""
    aggs = _aggregations(config)
    out: dict[str, dict[str, Any]] = {}
    for key, value in results.items():
        if key in _NOT_METRICS or "," not in key or "_stderr," in key:
            continue
        metric, filt = key.split(",", 1)
        agg = aggs.get(metric) or aggregations.LM_EVAL_DEFAULT_AGGREGATION.get(metric, "mean")
        num = score_values.to_float(value)
        reported = {"accuracy": num} if agg == "mean" and num is not None else {metric: value}
        out[key] = {
            "scorer": metric,
            "reducer": filt,
            "aggregation": agg,
            "stderr": results.get(f"{metric}_stderr,{filt}"),
            "sample_len": results.get("sample_len"),
            "metrics": reported,
        }
    return out


def _tasks(doc: Mapping[str, Any]) -> list[str]:
    """The tasks with their own samples: entries of ``results`` that are not groups."""
    groups = {g for g, subs in (doc.get("group_subtasks") or {}).items() if subs}
    configs = doc.get("configs") or {}
    return sorted(t for t in doc["results"] if t not in groups and t in configs)


def convert_task(
    run: Run,
    doc: Mapping[str, Any],
    task: str,
    lines: Sequence[Mapping[str, Any]],
    digest: str,
    seal: Seal,
    suite: str,
    engine: str,
    model: str,
) -> list[dict[str, Any]]:
    """One raw row per document of ``task``, plus one per counted document the file lacks."""
    spath = run.samples[task]
    version = f"{HARNESS} {doc['lm_eval_version']}"
    config = doc.get("configs", {}).get(task) or {}
    run_cfg = doc.get("config") or {}
    start = float(doc.get("date") or 0.0)
    total = _seconds(doc.get("total_evaluation_time_seconds"))
    started, finished = epoch_utc(start), epoch_utc(start + total)
    counts = (doc.get("n-samples") or {}).get(task) or {}
    params = compact(
        {
            "harness": HARNESS,
            "task": task,
            "task_version": (doc.get("versions") or {}).get(task),
            "task_hash": (doc.get("task_hashes") or {}).get(task),
            "task_config": redact(config),
            "n_shot": (doc.get("n-shot") or {}).get(task),
            "n_samples": counts,
            "limit": run_cfg.get("limit"),
            "model_source": doc.get("model_source") or run_cfg.get("model"),
            "model_args": redact(run_cfg.get("model_args")),
            "gen_kwargs": redact(run_cfg.get("gen_kwargs")),
            "seeds": {k: run_cfg.get(k) for k in ("random_seed", "numpy_seed", "fewshot_seed")},
            "chat_template_sha": doc.get("chat_template_sha"),
            "system_instruction_sha": doc.get("system_instruction_sha"),
            "fewshot_as_multiturn": doc.get("fewshot_as_multiturn"),
            "git_hash": doc.get("git_hash"),
            "log": run.results.name,
            "samples_log": spath.name,
            "log_sha256": digest,
            "headline": headline(doc["results"][task], config),
        }
    )
    model_args = run_cfg.get("model_args")
    base_url = model_args.get("base_url") if isinstance(model_args, Mapping) else None
    identity = compact(
        redact(
            {
                "harness": HARNESS,
                "model": model,
                "model_source": doc.get("model_source") or run_cfg.get("model"),
                "base_url": base_url,
            }
        )
    )
    common: dict[str, Any] = {
        "suite": suite,
        "condition": "lm_eval",
        "seed": int(run_cfg.get("random_seed") or 0),
        "engine": engine,
        "engine_kind": f"lm_eval:{doc.get('model_source') or run_cfg.get('model') or ''}",
        "model": model,
        "engine_identity": identity,
        "params": params,
        "engine_path": spath.name,
        "rubric_sha256": seal.rubric_sha256,
        "seal_commit": seal.seal_commit,
        "sealed": seal.sealed,
        "harness_version": version,
        "started_at": started,
        "finished_at": finished,
    }
    by_doc: dict[int, list[Mapping[str, Any]]] = {}
    for line in lines:
        by_doc.setdefault(int(line["doc_id"]), []).append(line)
    rows = []
    for doc_id in sorted(by_doc):
        rows.append(_row(spath, task, model, doc_id, by_doc[doc_id], common))
    original = _int(counts.get("original"))
    effective = _int(counts.get("effective"))
    present = set(by_doc)
    if effective is not None and original is not None and present <= set(range(original)):
        limited = effective < original
        for doc_id in sorted(set(range(original)) - present):
            kind = "limit" if limited and doc_id >= effective else "missing"
            message = (
                f"left out by --limit {run_cfg.get('limit')}: lm-eval scored {effective} "
                f"of {original} documents"
                if kind == "limit"
                else f"counted by {run.results.name} (n-samples) but not in {spath.name}"
            )
            rows.append(
                raw_row(
                    **common,
                    request_key=request_key(HARNESS, task, str(doc_id), 1, model),
                    item_id=str(doc_id),
                    repeat=0,
                    messages="[]",
                    response=compact({"scores": {}, "target": None}),
                    status="error",
                    error_kind=kind,
                    error_message=message,
                )
            )
    return rows


def _row(
    spath: Path,
    task: str,
    model: str,
    doc_id: int,
    lines: Sequence[Mapping[str, Any]],
    common: Mapping[str, Any],
) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    filtered: dict[str, Any] = {}
    for line in lines:
        filt = str(line.get("filter", "none"))
        if filt in filtered:
            raise UserError(
                f"{spath}:{line['_line']}: document {doc_id} filter {filt} appears twice"
            )
        out = line.get("filtered_resps")
        filtered[filt] = out
        answer = out[0] if isinstance(out, list) and len(out) == 1 else out
        for m in line["metrics"]:
            scores[f"{m},{filt}"] = {
                "value": line.get(str(m)),
                "answer": answer if isinstance(answer, str) else compact(answer),
                "explanation": None,
                "edited": False,
            }
    first = lines[0]
    # a corpus-level metric's per-sample value is a (reference, prediction) pair, not a
    # number: a document is scored when every metric lm-eval listed for it has its value
    numeric = bool(scores) and all(s["value"] is not None for s in scores.values())
    return raw_row(
        **common,
        request_key=request_key(HARNESS, task, str(doc_id), 1, model),
        item_id=str(doc_id),
        repeat=0,
        messages=compact(_messages(first.get("arguments"))),
        response=compact(
            {
                "scores": scores,
                "target": first.get("target"),
                "doc": first.get("doc"),
                "doc_hash": first.get("doc_hash"),
                "prompt_hash": first.get("prompt_hash"),
                "target_hash": first.get("target_hash"),
                "arguments": first.get("arguments"),
                "resps": first.get("resps"),
                "filtered_resps": filtered,
            }
        ),
        output_text=_text(first.get("resps"), first.get("arguments")),
        status="ok" if numeric else "error",
        error_kind="" if numeric else "unscored",
        error_message="" if numeric else "a metric listed without its value in the sample lines",
    )


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _seconds(v: Any) -> float:
    try:
        return max(float(v), 0.0)
    except (TypeError, ValueError):
        return 0.0


def pair_sha256(results_sha: str, samples_sha: str) -> str:
    """The digest of one import: the results file's and the samples file's sha256 together
    (either file changed is a new ingest)."""
    return hashlib.sha256(
        compact({"results": results_sha, "samples": samples_sha}).encode()
    ).hexdigest()


def load(
    cfg: Config | None, paths: Sequence[Path], suite: str | None = None, tasks: Iterable[str] = ()
) -> list[Ingest]:
    """Read and convert every (results file, task) under ``paths`` (nothing written)."""
    wanted = set(tasks)
    found: set[str] = set()
    out: list[Ingest] = []
    for run in discover(paths):
        rdata, doc = sniff.load_json(run.results, sniff.LM_EVAL_RESULTS)
        version = _version(run.results, doc)
        names = [t for t in _tasks(doc) if not wanted or t in wanted]
        if suite and len(names) > 1:
            raise UserError(
                f"{run.results}: holds tasks {', '.join(names)}; --suite names one suite, "
                "so pick the task with --task"
            )
        model = str(
            doc.get("model_name")
            or ((doc.get("config") or {}).get("model_args") or {}).get("model")
            or (doc.get("config") or {}).get("model")
            or ""
        )
        if not model:
            raise UserError(f"{run.results}: names no model (model_name, config.model)")
        engine = engine_name(model)
        rsha = hashlib.sha256(rdata).hexdigest()
        for task in names:
            spath = run.samples.get(task)
            if spath is None:
                raise UserError(
                    f"{run.results}: task {task} has no per-sample records (no "
                    f"samples_{task}_{_stamp(run.results)}.jsonl beside it; lm_eval "
                    "--log_samples writes them): its headline cannot be re-derived, so it is "
                    "not imported (pick the tasks that have samples with --task)"
                )
            sdata, lines = read_samples(spath)
            ssha = hashlib.sha256(sdata).hexdigest()
            digest = pair_sha256(rsha, ssha)
            name = suite or suite_name(task)
            check_harness(cfg, name, HARNESS, run.results)
            rows = convert_task(
                run, doc, task, lines, digest, seal_state(cfg, name), name, engine, model
            )
            out.append(
                Ingest(
                    path=spath,
                    sha256=digest,
                    harness=HARNESS,
                    harness_version=f"{HARNESS} {version}",
                    suite=name,
                    engine=engine,
                    model=model,
                    rows=rows,
                    source={
                        "format": "lm_eval results+samples",
                        "log_version": version,
                        "task": task,
                        "files": [
                            {"path": run.results.as_posix(), "sha256": rsha},
                            {"path": spath.as_posix(), "sha256": ssha},
                        ],
                        "headline": headline(doc["results"][task], doc["configs"][task]),
                    },
                )
            )
        found |= set(names)
    if wanted - found:
        raise UserError(
            f"{', '.join(map(str, paths))}: no task {', '.join(sorted(wanted - found))}"
        )
    return out
