"""promptfoo results (``promptfoo eval -o results.json``) → raw rows, one ingest per provider.

The file is JSON (promptfoo's ``OutputFile``: ``evalId``, ``results``, ``config``,
``shareableUrl``); ``results`` is an ``EvaluateSummaryV3`` (``version: 3``: ``timestamp``,
``prompts``, ``results``, ``stats``), the only layout read here. It is read with the standard
library: importing needs no node.

One row per (provider, test, prompt, repeat): ``item_id`` is the test case's ordinal (its first
``testIdx``; ``--repeat N`` writes a test N times and those are its repeats), with the prompt's
ordinal appended when the file holds more than one prompt, so two providers answering the
same test are paired. The verdict is promptfoo's own: scorer ``pass`` (``success``) and
scorer ``score`` (its weighted assertion score); every assertion's result (type, value, pass,
score, reason) is kept in ``response.assertions``. A result promptfoo failed to get
(``failureReason`` 2: provider or API error) is an ``error`` row of kind ``provider_error``,
never a failed test. The headline compared is per provider, from ``results.prompts[].metrics``
(``testPassCount``/``testFailCount``/``testErrorCount``): the pass rate over the tests that ran
(passed / (passed + failed), pooled over runs) and the three counts, all recomputed from the
rows; promptfoo's printed "Pass Rate" (errors counted as not passed) is recorded beside it.

The field map (mapped, ignored) is in docs/imports.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
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
    iso_utc,
    redact,
    request_key,
    seal_state,
    suite_name,
)
from sealedeval.store.schema import raw_row

HARNESS = "promptfoo"
#: ``results.version`` this module reads: promptfoo's ``EvaluateSummaryV3``
#: (src/types/index.ts, ``version: 3``); version 2 was the table layout of older releases.
SUPPORTED_VERSIONS = (3,)
#: ``ResultFailureReason`` (src/types/index.ts): NONE 0, ASSERT 1, ERROR 2.
FAILURE_ERROR = 2


def _check(path: Path, doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise UserError(f"{path}: not a promptfoo export (no 'results' object)")
    summary: dict[str, Any] = doc["results"]
    version = summary.get("version")
    if version is None:
        raise UserError(f"{path}: not a promptfoo export ('results' has no version)")
    if version not in SUPPORTED_VERSIONS:
        raise UserError(
            f"{path}: promptfoo results version {version!r} is not a format this importer "
            f"reads (supported: {', '.join(map(str, SUPPORTED_VERSIONS))})"
        )
    if not isinstance(summary.get("results"), list) or not isinstance(summary.get("stats"), dict):
        raise UserError(f"{path}: promptfoo results without 'results' list or 'stats'")
    for i, r in enumerate(summary["results"]):
        if (
            not isinstance(r, dict)
            or not isinstance(r.get("testIdx"), int)
            or not isinstance((r.get("provider") or {}).get("id"), str)
            or not isinstance(r.get("success"), bool)
        ):
            raise UserError(
                f"{path}: results.results[{i}] is not a promptfoo result "
                "(needs testIdx, provider.id, success)"
            )
    return summary


def _version(doc: Mapping[str, Any]) -> str:
    """promptfoo's version when the file records it (``metadata.promptfooVersion``, newer
    releases), else the results format version."""
    meta = doc.get("metadata") or {}
    v = meta.get("promptfooVersion") if isinstance(meta, Mapping) else None
    return f"{HARNESS} {v}" if v else f"{HARNESS} (results v{doc['results']['version']})"


def _messages(raw: Any) -> list[dict[str, Any]]:
    """The rendered prompt: a chat array when the prompt was one (JSON), else one user turn."""
    if not isinstance(raw, str):
        return [{"role": "user", "content": compact(raw)}] if raw is not None else []
    try:
        msgs = json.loads(raw)
    except ValueError:
        msgs = None
    if isinstance(msgs, list) and msgs and all(isinstance(m, dict) and "role" in m for m in msgs):
        return [{"role": str(m["role"]), "content": m.get("content", "")} for m in msgs]
    return [{"role": "user", "content": raw}]


def _assertions(grading: Any) -> list[dict[str, Any]]:
    out = []
    for c in (grading or {}).get("componentResults") or []:
        if not isinstance(c, Mapping):
            continue
        a = c.get("assertion") or {}
        out.append(
            {
                "type": a.get("type"),
                "value": a.get("value"),
                "metric": a.get("metric"),
                "weight": a.get("weight"),
                "threshold": a.get("threshold"),
                "pass": c.get("pass"),
                "score": c.get("score"),
                "reason": c.get("reason"),
            }
        )
    return out


def _case_key(r: Mapping[str, Any]) -> str:
    t = r.get("testCase") or {}
    return compact(
        {"description": t.get("description"), "vars": r.get("vars"), "assert": t.get("assert")}
    )


def _test_cases(results: Any) -> dict[str, int]:
    """Each distinct test case → its ordinal by first ``testIdx``. ``--repeat N`` writes a test
    N times under N consecutive ``testIdx``: the same case, so one item with N repeats."""
    out: dict[str, int] = {}
    for r in sorted(results, key=lambda r: int(r["testIdx"])):
        out.setdefault(_case_key(r), len(out))
    return out


def headline(summary: Mapping[str, Any], provider: str, n_providers: int) -> dict[str, Any]:
    """The provider's counts as promptfoo reported them: ``prompts[].metrics`` summed over
    its prompts (else ``stats`` when the file has one provider)."""
    passed = failed = errors = 0
    found = False
    for p in summary.get("prompts") or []:
        if isinstance(p, Mapping) and p.get("provider") == provider and p.get("metrics"):
            m = p["metrics"]
            passed += int(m.get("testPassCount") or 0)
            failed += int(m.get("testFailCount") or 0)
            errors += int(m.get("testErrorCount") or 0)
            found = True
    if not found and n_providers == 1:
        s = summary["stats"]
        passed, failed, errors = (int(s.get(k) or 0) for k in ("successes", "failures", "errors"))
        found = True
    if not found:
        return {}
    ran = passed + failed
    total = ran + errors
    return {
        "pass": {
            "scorer": "pass",
            "metrics": {"accuracy": passed / ran} if ran else {},
            "counts": {"passed": passed, "failed": failed, "error": errors},
            "pass_rate_with_errors": passed / total if total else None,
        }
    }


def convert(
    path: Path,
    doc: Mapping[str, Any],
    summary: Mapping[str, Any],
    provider: str,
    digest: str,
    seal: Seal,
    suite: str,
    engine: str,
) -> list[dict[str, Any]]:
    config = doc.get("config") or {}
    task = str(config.get("description") or suite)
    started = iso_utc(summary.get("timestamp"), epoch_utc(0))
    t0 = dt.datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
    results = [r for r in summary["results"] if r["provider"]["id"] == provider]
    prompt_ids = list(
        dict.fromkeys(str(r.get("promptId") or r.get("promptIdx")) for r in summary["results"])
    )
    providers = {r["provider"]["id"] for r in summary["results"]}
    provider_cfg = next(
        (
            p
            for p in config.get("providers") or []
            if isinstance(p, Mapping) and p.get("id") == provider
        ),
        {},
    )
    params = compact(
        {
            "harness": HARNESS,
            "task": task,
            "eval_id": doc.get("evalId"),
            "log": path.name,
            "log_sha256": digest,
            "results_version": summary.get("version"),
            "timestamp": summary.get("timestamp"),
            "provider_config": redact(provider_cfg.get("config")),
            "stats": redact(summary.get("stats")),
            "default_test": redact(config.get("defaultTest")),
            "headline": headline(summary, provider, len(providers)),
        }
    )
    label = str(results[0]["provider"].get("label") or "") if results else ""
    identity = compact(redact({"harness": HARNESS, "provider": provider, "label": label}))
    common: dict[str, Any] = {
        "suite": suite,
        "condition": HARNESS,
        "seed": 0,
        "engine": engine,
        "engine_kind": f"promptfoo:{provider.split(':', 1)[0]}",
        "model": provider,
        "engine_identity": identity,
        "params": params,
        "engine_path": path.name,
        "rubric_sha256": seal.rubric_sha256,
        "seal_commit": seal.seal_commit,
        "sealed": seal.sealed,
        "harness_version": _version(doc),
    }
    rows = []
    cases = _test_cases(summary["results"])
    seen: dict[str, int] = {}
    for r in sorted(results, key=lambda r: (r["testIdx"], str(r.get("promptId")))):
        pid = str(r.get("promptId") or r.get("promptIdx"))
        item = str(cases[_case_key(r)])
        if len(prompt_ids) > 1:
            item += f"/prompt{prompt_ids.index(pid)}"
        repeat = seen.get(item, 0)  # the same test case again (--repeat): the next repeat
        seen[item] = repeat + 1
        response = r.get("response") or {}
        grading = r.get("gradingResult")
        output = response.get("output")
        text = output if isinstance(output, str) else ("" if output is None else compact(output))
        usage = response.get("tokenUsage") or {}
        latency = float(r.get("latencyMs") or 0.0) / 1000.0
        errored = r.get("failureReason") == FAILURE_ERROR or (
            grading is None and bool(response.get("error") or r.get("error"))
        )
        scored = grading is not None
        if errored:
            status, kind = "error", "provider_error"
            message = str(r.get("error") or response.get("error") or "").strip()
        elif not scored:
            status, kind, message = "error", "unscored", "no grading result"
        else:
            status, kind, message = "ok", "", ""
        reason = grading.get("reason") if isinstance(grading, Mapping) else None
        scores = (
            {
                "pass": {"value": r["success"], "answer": text, "explanation": reason},
                "score": {"value": r.get("score"), "answer": text, "explanation": reason},
            }
            if scored
            else {}
        )
        test = r.get("testCase") or {}
        rows.append(
            raw_row(
                **common,
                request_key=request_key(HARNESS, task, item, repeat + 1, provider),
                item_id=item,
                repeat=repeat,
                messages=compact(_messages((r.get("prompt") or {}).get("raw"))),
                response=compact(
                    {
                        "scores": scores,
                        "target": redact(test.get("assert")),
                        "assertions": _assertions(grading),
                        "named_scores": r.get("namedScores") or {},
                        "test": redact(
                            {
                                "description": test.get("description"),
                                "vars": r.get("vars"),
                                "metadata": test.get("metadata"),
                            }
                        ),
                        "prompt_label": (r.get("prompt") or {}).get("label"),
                        "prompt_id": pid,
                        "result_id": r.get("id"),
                        "failure_reason": r.get("failureReason"),
                        "cached": response.get("cached"),
                        "token_usage": usage,
                    }
                ),
                output_text=text,
                finish_reason=str(response.get("finishReason") or ""),
                tokens_in=int(usage.get("prompt") or 0),
                tokens_out=int(usage.get("completion") or 0),
                cost_usd=float(r.get("cost") or 0.0),
                latency_s=latency,
                started_at=started,
                finished_at=epoch_utc(t0 + latency),
                status=status,
                error_kind=kind,
                error_message=message.splitlines()[0] if message else "",
            )
        )
    return rows


def load(cfg: Config | None, path: Path, suite: str | None = None) -> list[Ingest]:
    """Read and convert one results file: one ingest per provider (nothing written)."""
    data, doc = sniff.load_json(path, sniff.PROMPTFOO)
    summary = _check(path, doc)
    digest = hashlib.sha256(data).hexdigest()
    config = doc.get("config") or {}
    description = config.get("description") if isinstance(config, Mapping) else None
    name = suite or suite_name(str(description) if description else path.stem)
    check_harness(cfg, name, HARNESS, path)
    seal = seal_state(cfg, name)
    providers = list(dict.fromkeys(r["provider"]["id"] for r in summary["results"]))
    out = []
    engines: dict[str, str] = {}
    for provider in providers:
        engine = engine_name(provider)
        if engine in engines:
            raise UserError(
                f"{path}: providers {engines[engine]!r} and {provider!r} give one engine name"
            )
        engines[engine] = provider
        rows = convert(path, doc, summary, provider, digest, seal, name, engine)
        out.append(
            Ingest(
                path=path,
                sha256=digest,
                harness=HARNESS,
                harness_version=_version(doc),
                suite=name,
                engine=engine,
                model=provider,
                rows=rows,
                source={
                    "format": "promptfoo json",
                    "log_version": summary.get("version"),
                    "eval_id": doc.get("evalId"),
                    "task": description,
                    "headline": headline(summary, provider, len(providers)),
                },
            )
        )
    return out
