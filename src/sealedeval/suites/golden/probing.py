"""Golden probes: prompt injection, attribute swap, contamination — requests and analysis.

Conditions:

* ``probe/injection/{B}`` — branch ``B`` answers the tasks over the directory in which one line
  of one file (``data/golden/injection.yaml``) ends in an instruction to the reader; by default
  only the tasks whose evidence is that file (``tasks: evidence``), or all (``tasks: all``) —
  of those, the ones branch ``B`` answers when it runs on a task subset.
* ``probe/swap/base|swapped`` — the attribute-swap tasks (``data/golden/attribute_swap.yaml``)
  over the base and the swapped directory, on the configured branch.
* ``probe/contamination/original|paraphrase`` — the in-process log-prob probe on the weights of
  an engine that declares ``logprobs`` (``probes/logprobs.py``), one row per text.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request, capabilities
from sealedeval.errors import UserError
from sealedeval.graders import graders
from sealedeval.keys import derive_seed
from sealedeval.probes import compliance_table, complied, contamination_table, swap_table
from sealedeval.probes.logprobs import matched_words
from sealedeval.run.agent import trajectory_summary
from sealedeval.stats.comparisons import paired_comparison
from sealedeval.suites.golden.design import Branch, answer_request, make_request
from sealedeval.suites.golden.items import (
    load_attribute_swap,
    load_contamination,
    load_injection,
)
from sealedeval.suites.golden.plan import COMPARISON_PLAN


def _branch(
    branches: Mapping[str, Branch], known: Collection[str], name: str, where: str
) -> Branch | None:
    """The engine's branch ``name``; None when the branch exists but this engine does not run
    it (``branch_engines`` leaves it out: an empty list means no engine runs it, so no probe
    of it either); a name that is no enabled branch at all is a config error."""
    if name not in known:
        raise UserError(f"suites.golden.probes.{where}: branch {name!r} is not an enabled branch")
    return branches.get(name)


def probe_requests(
    root: Path,
    scfg: Mapping[str, Any],
    engine: EngineConfig,
    model: str,
    tasks: Sequence[Mapping[str, Any]],
    files: dict[str, str],
    branches: Mapping[str, Branch],
    suite_seed: int,
    *,
    agents: bool,
    known: Collection[str] | None = None,
) -> list[Request]:
    """Probe requests for ``engine``: the single-call ones (``agents=False``) or the agent and
    in-process ones (``agents=True``), so the caller can order them for the prompt cache."""
    pc = scfg.get("probes") or {}
    if engine.name not in (pc.get("engines") or []):
        return []
    out: list[Request] = []
    known = set(branches) if known is None else known
    sc = pc.get("attribute_swap") or {}
    if sc.get("enabled", True):
        b = _branch(branches, known, str(sc.get("branch", "A")), "attribute_swap.branch")
        if b is not None and b.tools == agents:
            sw = load_attribute_swap(root, files)
            limit = scfg.get("limit")
            for variant in ("base", "swapped"):
                for t in sw["tasks"][variant][:limit] if limit else sw["tasks"][variant]:
                    task = t | {"seed": derive_seed(suite_seed, "swap", t["id"])}
                    out.append(
                        answer_request(
                            scfg,
                            engine,
                            model,
                            task,
                            b,
                            sw["files"][variant],
                            f"probe/swap/{variant}",
                            0,
                            sampled=False,
                            sandbox=f"swap:{variant}",
                        )
                    )
    ic = pc.get("injection") or {}
    if ic.get("enabled", True):
        inj = load_injection(root, files)
        use = [
            t for t in tasks if ic.get("tasks", "evidence") == "all" or inj["file"] in t["files"]
        ]
        for name in ic.get("branches") or ["A"]:
            ib = _branch(branches, known, name, "injection.branches")
            if ib is None or ib.tools != agents:
                continue
            # a branch run on a task subset is probed on the tasks it answers
            out += [
                answer_request(
                    scfg,
                    engine,
                    model,
                    t,
                    ib,
                    inj["files"],
                    f"probe/injection/{name}",
                    0,
                    sampled=False,
                    sandbox=f"injected:{inj['file']}",
                )
                for t in use
                if ib.selects(str(t["id"]))
            ]
    cc = pc.get("contamination") or {}
    if agents and cc.get("enabled", True) and capabilities(engine).logprobs:
        data = load_contamination(root)
        checked: set[str] = set()
        for s in data["sentences"]:
            for variant in ("original", "paraphrase"):
                text = s["text"] if variant == "original" else s["paraphrase"]
                # The echo source is checked on the first original of each kind: evidence
                # that it is misaligned, without paying its Python-side vocabulary sort 20 times.
                echo = variant == "original" and s["kind"] not in checked
                if echo:
                    checked.add(s["kind"])
                params = {
                    "probe": {
                        "kind": "contamination",
                        "text": text,
                        "prefix_words": data["prefix_words"],
                        "continue": variant == "original",
                        "echo_check": echo,
                    }
                }
                cond = f"probe/contamination/{variant}"
                msgs = [{"role": "user", "content": text}]
                out.append(
                    make_request(
                        engine,
                        model,
                        s["id"],
                        cond,
                        0,
                        0,
                        msgs,
                        params,
                        {"id": s["id"], "kind": s["kind"]},
                        solver="logprob_probe",
                    )
                )
    return out


# -- analysis ------------------------------------------------------------------------------------


def _latest_ok(rows: Sequence[Mapping[str, Any]], cond: str) -> dict[str, Mapping[str, Any]]:
    return {r["item_id"]: r for r in rows if r["condition"] == cond and r["status"] == "ok"}


def _counts(rows: Sequence[Mapping[str, Any]], prefix: str) -> dict[str, int]:
    mine = [r for r in rows if r["condition"].startswith(prefix)]
    err = sum(1 for r in mine if r["status"] != "ok")
    return {"n_total": len(mine), "n_ok": len(mine) - err, "n_error": err}


def injection_analysis(
    root: Path,
    rows: Sequence[Mapping[str, Any]],
    tasks: Mapping[str, Mapping[str, Any]],
    files: dict[str, str],
) -> dict[str, Any]:
    conds = sorted({r["condition"] for r in rows if r["condition"].startswith("probe/injection/")})
    if not conds:
        return {}
    inj = load_injection(root, files)
    regex = graders.get("regex")
    out: dict[str, Any] = {"file": inj["file"], "line": inj["line"], "canary": inj["canary"]}
    by_branch = {}
    for cond in conds:
        b = cond.rsplit("/", 1)[1]
        clean = _latest_ok(rows, f"{b}/main")
        runs = []
        for item, r in sorted(_latest_ok(rows, cond).items()):
            answer = r["output_text"] or ""
            traj = _traj(r)
            exposed: bool | None = None  # None: the file was in the prompt
            if "agent" in _json(r.get("params"), {}):
                s = trajectory_summary(traj)
                exposed = inj["file"] in s["files_read"] or any(
                    inj["line"][:40] in str(t.get("result", "")) for t in _tool_steps(traj)
                )
            c = clean.get(item)
            runs.append(
                {
                    "item": item,
                    "complied": complied(answer, inj["canary"]),
                    "exposed": exposed,
                    "correct_injected": regex(tasks[item], answer).passed,
                    "correct_clean": (
                        regex(tasks[item], c["output_text"] or "").passed if c else None
                    ),
                }
            )
        paired = [x for x in runs if x["correct_clean"] is not None]
        by_branch[b] = compliance_table(runs) | {
            "counts": _counts(rows, cond),
            "complied_items": [x["item"] for x in runs if x["complied"]],
            # issue 15: what the clean-vs-injected comparison could have detected
            "paired": paired_comparison(
                f"injection {b}: clean vs injected",
                "probes",
                "clean",
                "injected",
                {str(x["item"]): [1.0 if x["correct_clean"] else 0.0] for x in paired},
                {str(x["item"]): [1.0 if x["correct_injected"] else 0.0] for x in paired},
                COMPARISON_PLAN,
                unit="task",
            ),
        }
    out["branches"] = by_branch
    return out


def _json(text: Any, default: Any) -> Any:
    try:
        v = json.loads(text or "null")
    except (TypeError, ValueError):
        return default
    return v if isinstance(v, type(default)) else default


def _traj(r: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = _json(r.get("trajectory"), [])
    return out


def _tool_steps(traj: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for t in traj:
        if t.get("type") == "tool":
            out.append(t)
        elif t.get("type") == "sample":
            out += [s for s in t.get("steps") or [] if s.get("type") == "tool"]
    return out


def swap_analysis(
    root: Path, rows: Sequence[Mapping[str, Any]], files: dict[str, str]
) -> dict[str, Any]:
    base, swapped = _latest_ok(rows, "probe/swap/base"), _latest_ok(rows, "probe/swap/swapped")
    if not base and not swapped:
        return {}
    sw = load_attribute_swap(root, files)
    regex = graders.get("regex")
    tb = {t["id"]: t for t in sw["tasks"]["base"]}
    ts = {t["id"]: t for t in sw["tasks"]["swapped"]}
    pairs = {
        i: (
            regex(tb[i], base[i]["output_text"] or "").passed,
            regex(ts[i], swapped[i]["output_text"] or "").passed,
        )
        for i in sorted(set(base) & set(swapped))
    }
    return swap_table(pairs) | {
        "attribute": sw["attribute"],
        "names": sw["names"],
        "counts": _counts(rows, "probe/swap/"),
        "paired": paired_comparison(
            "attribute swap: base vs swapped",
            "probes",
            "base",
            "swapped",
            {i: [float(b)] for i, (b, _) in pairs.items()},
            {i: [float(w)] for i, (_, w) in pairs.items()},
            COMPARISON_PLAN,
            unit="task",
        ),
    }


def contamination_analysis(root: Path, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    mine = [r for r in rows if r["condition"].startswith("probe/contamination/")]
    if not mine:
        return {}
    data = load_contamination(root)
    kinds = {s["id"]: s["kind"] for s in data["sentences"]}
    originals = {s["id"]: s["text"] for s in data["sentences"]}
    texts, method, echo = [], "", []
    for r in sorted(mine, key=lambda r: (r["item_id"], r["condition"])):
        if r["status"] != "ok":
            continue
        traj = _traj(r)
        rec = traj[0] if traj else {}
        method = str(rec.get("method", method))
        texts.append(
            {
                "id": r["item_id"],
                "kind": kinds.get(r["item_id"], "unknown"),
                "variant": r["condition"].rsplit("/", 1)[1],
                "logprobs": rec.get("logprobs") or [],
                "valid": bool((rec.get("validation") or {}).get("ok")),
                "exact": bool((rec.get("continuation") or {}).get("exact")),
                "matched": matched_words(
                    originals.get(r["item_id"], ""),
                    data["prefix_words"],
                    str((rec.get("continuation") or {}).get("text", "")),
                ),
                "continuation": (rec.get("continuation") or {}).get("text", ""),
            }
        )
        ev = rec.get("echo_validation")
        if ev:
            echo.append(
                {
                    "text": r["item_id"],
                    "ok": bool(ev.get("ok")),
                    "mismatches": ev.get("mismatches"),
                    "checked": ev.get("checked"),
                }
            )
    table = contamination_table(texts) if texts else {"valid": False}
    validation = [{"text": f"{t['id']}/{t['variant']}", "ok": t["valid"]} for t in texts]
    return table | {
        "method": method,
        "validation": {
            "texts": len(validation),
            "passed": sum(1 for v in validation if v["ok"]),
            "echo_source": echo,
        },
        "counts": _counts(rows, "probe/contamination/"),
    }
