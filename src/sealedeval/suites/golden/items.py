"""Golden tasks: hand-written data in ``data/golden/``, validated on load."""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from sealedeval import yamlio
from sealedeval.errors import UserError

TASKS = Path("data/golden/tasks.yaml")
FILES = Path("data/golden/files")
CATEGORIES = {"lookup", "count", "compare", "multi_fact", "abstain"}
_REQUIRED = ("id", "prompt", "answer", "must", "category")


@lru_cache(maxsize=64)
def _parse_cached(text: str) -> Any:
    return yamlio.safe_load(text)  # plain data only


def parse_yaml(text: str) -> Any:
    """Safe YAML (libyaml when present), parsed once per distinct text: build and audit load
    the same sealed files many times. A deep copy is returned, so callers may mutate it."""
    return copy.deepcopy(_parse_cached(text))


def load_tasks(root: Path, limit: int | None = None) -> list[dict[str, Any]]:
    path = root / TASKS
    try:
        doc = parse_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{TASKS}: golden tasks file not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"{TASKS}: invalid YAML ({e})") from None
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list) or not tasks:
        raise UserError(f"{TASKS}: expected a mapping with a non-empty 'tasks' list")
    seen: set[str] = set()
    out = []
    for i, t in enumerate(tasks):
        where = f"{TASKS}: tasks[{i}]"
        if not isinstance(t, dict):
            raise UserError(f"{where}: not a mapping")
        for key in _REQUIRED:
            if key not in t:
                raise UserError(f"{where}: missing {key!r}")
        if t["id"] in seen:
            raise UserError(f"{where}: duplicate id {t['id']!r}")
        if t["category"] not in CATEGORIES:
            raise UserError(f"{where}: unknown category {t['category']!r}")
        for key in ("must", "mustNot", "facts"):
            for pat in t.get(key) or []:
                try:
                    re.compile(pat)
                except re.error as e:
                    raise UserError(f"{where}.{key}: bad regex {pat!r} ({e})") from None
        seen.add(t["id"])
        out.append(
            {
                "id": str(t["id"]),
                "prompt": str(t["prompt"]),
                "answer": str(t["answer"]),
                "must": list(t.get("must") or []),
                "mustNot": list(t.get("mustNot") or []),
                "facts": list(t.get("facts") or []),
                "category": str(t["category"]),
                "files": list(t.get("files") or []),
            }
        )
    return out[:limit] if limit else out


def load_files(root: Path) -> dict[str, str]:
    """The five files, by name, in sorted order (the prompt lists them in this order)."""
    d = root / FILES
    if not d.is_dir():
        raise UserError(f"{FILES}: golden files directory not found")
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(d.iterdir()) if p.is_file()}


# -- judge, probe and label data (all hand-written, all sealed) ----------------------------------

HUMAN_LABELS = Path("data/golden/human_labels.yaml")
JUDGE_PROMPTS = Path("data/golden/judge_prompts.yaml")
JUDGE_PAIRS = Path("data/golden/judge_pairs.yaml")
INJECTION = Path("data/golden/injection.yaml")
ATTRIBUTE_SWAP = Path("data/golden/attribute_swap.yaml")
CONTAMINATION = Path("data/golden/contamination.yaml")
RETENTION = Path("data/golden/retention.yaml")
LABELS = ("PASS", "FAIL")


def _doc(root: Path, rel: Path) -> dict[str, Any]:
    try:
        doc = parse_yaml((root / rel).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{rel}: file not found") from None
    except yaml.YAMLError as e:
        raise UserError(f"{rel}: invalid YAML ({e})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{rel}: expected a mapping at the top level")
    return doc


def _need(rel: Path, where: str, d: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise UserError(f"{rel}: {where}: not a mapping")
    for k in keys:
        if k not in d or d[k] in (None, ""):
            raise UserError(f"{rel}: {where}: missing {k!r}")
    return d


def _regexes(rel: Path, where: str, pats: Any) -> list[str]:
    out = [str(p) for p in (pats or [])]
    for p in out:
        try:
            re.compile(p)
        except re.error as e:
            raise UserError(f"{rel}: {where}: bad regex {p!r} ({e})") from None
    return out


def load_human_labels(root: Path, task_ids: set[str]) -> dict[str, Any]:
    """60 answers labelled PASS/FAIL by a person under the written rule (``rule``)."""
    doc = _doc(root, HUMAN_LABELS)
    _need(HUMAN_LABELS, "top level", doc, ("rule", "answers"))
    out, seen = [], set()
    for i, a in enumerate(doc["answers"] or []):
        where = f"answers[{i}]"
        _need(HUMAN_LABELS, where, a, ("id", "task", "answer", "human"))
        if a["id"] in seen:
            raise UserError(f"{HUMAN_LABELS}: {where}: duplicate id {a['id']!r}")
        if a["task"] not in task_ids:
            raise UserError(f"{HUMAN_LABELS}: {where}: unknown task {a['task']!r}")
        if a["human"] not in LABELS:
            raise UserError(f"{HUMAN_LABELS}: {where}: human must be PASS or FAIL")
        seen.add(a["id"])
        out.append(
            {k: str(a[k]) for k in ("id", "task", "answer", "human")}
            | {
                "source": str(a.get("source", "")),
                "why": str(a.get("why", "")),
            }
        )
    return {"rule": " ".join(str(doc["rule"]).split()), "answers": out}


def load_judge_prompts(root: Path) -> dict[str, Any]:
    doc = _doc(root, JUDGE_PROMPTS)
    _need(JUDGE_PROMPTS, "top level", doc, ("pointwise", "pairwise", "pad", "transcript_variant"))
    variants = doc["pointwise"]
    if not isinstance(variants, dict) or not variants:
        raise UserError(f"{JUDGE_PROMPTS}: pointwise: expected a mapping of variants")
    for a, b in doc.get("label_order_pairs") or []:
        if a not in variants or b not in variants:
            raise UserError(f"{JUDGE_PROMPTS}: label_order_pairs: unknown variant {a!r}/{b!r}")
    if doc["transcript_variant"] not in variants:
        raise UserError(f"{JUDGE_PROMPTS}: transcript_variant: unknown variant")
    return {
        "pointwise": {str(k): " ".join(str(v).split()) for k, v in variants.items()},
        "label_order_pairs": [list(p) for p in doc.get("label_order_pairs") or []],
        "transcript_variant": str(doc["transcript_variant"]),
        "pairwise": " ".join(str(doc["pairwise"]).split()),
        "pad": " ".join(str(doc["pad"]).split()),
    }


def load_judge_pairs(root: Path, task_ids: set[str]) -> list[dict[str, str]]:
    doc = _doc(root, JUDGE_PAIRS)
    out = []
    for i, p in enumerate(doc.get("pairs") or []):
        _need(JUDGE_PAIRS, f"pairs[{i}]", p, ("task", "right", "wrong"))
        if p["task"] not in task_ids:
            raise UserError(f"{JUDGE_PAIRS}: pairs[{i}]: unknown task {p['task']!r}")
        out.append({"id": f"p{i + 1:02d}", **{k: str(p[k]) for k in ("task", "right", "wrong")}})
    if not out:
        raise UserError(f"{JUDGE_PAIRS}: no pairs")
    return out


def load_injection(root: Path, files: dict[str, str]) -> dict[str, Any]:
    doc = _doc(root, INJECTION)
    _need(INJECTION, "top level", doc, ("file", "replace", "with", "canary"))
    name = str(doc["file"])
    if name not in files:
        raise UserError(f"{INJECTION}: file {name!r} is not one of the golden files")
    old, new = " ".join(str(doc["replace"]).split()), " ".join(str(doc["with"]).split())
    lines = files[name].splitlines()
    if lines.count(old) != 1:
        raise UserError(f"{INJECTION}: 'replace' must be exactly one line of {name}")
    variant = "\n".join(new if line == old else line for line in lines) + "\n"
    _regexes(INJECTION, "canary", [doc["canary"]])
    return {
        "file": name,
        "line": new,
        "canary": str(doc["canary"]),
        "files": files | {name: variant},
    }


def load_attribute_swap(root: Path, files: dict[str, str]) -> dict[str, Any]:
    """The swap tasks rendered for both variants, and the swapped files."""
    doc = _doc(root, ATTRIBUTE_SWAP)
    _need(ATTRIBUTE_SWAP, "top level", doc, ("attribute", "names", "tasks"))
    names = [
        _need(ATTRIBUTE_SWAP, f"names[{i}]", n, ("key", "base", "swapped"))
        for i, n in enumerate(doc["names"])
    ]
    swapped_files = dict(files)
    for n in names:
        if not any(n["base"] in t for t in files.values()):
            raise UserError(f"{ATTRIBUTE_SWAP}: base name {n['base']!r} is in no golden file")
        swapped_files = {k: v.replace(n["base"], n["swapped"]) for k, v in swapped_files.items()}

    def render(text: str, variant: str, regex: bool) -> str:
        for n in names:
            value = str(n[variant])
            sub = rf"\b{re.escape(value.split()[0])}\b" if regex else value
            text = text.replace(f"<{n['key']}>", sub)
        return text

    tasks: dict[str, list[dict[str, Any]]] = {"base": [], "swapped": []}
    for i, t in enumerate(doc["tasks"] or []):
        where = f"tasks[{i}]"
        _need(ATTRIBUTE_SWAP, where, t, ("id", "prompt", "answer", "must"))
        for variant in tasks:
            task = {
                "id": str(t["id"]),
                "prompt": render(str(t["prompt"]), variant, False),
                "answer": render(str(t["answer"]), variant, False),
                "must": _regexes(
                    ATTRIBUTE_SWAP, where, [render(p, variant, True) for p in t["must"]]
                ),
                "mustNot": _regexes(
                    ATTRIBUTE_SWAP,
                    where,
                    [render(p, variant, True) for p in t.get("mustNot") or []],
                ),
                "category": "lookup",
                "files": ["orders.csv"],
            }
            task["facts"] = list(task["must"])
            tasks[variant].append(task)
    return {
        "attribute": str(doc["attribute"]),
        "names": [{k: str(n[k]) for k in ("key", "base", "swapped")} for n in names],
        "tasks": tasks,
        "files": {"base": dict(files), "swapped": swapped_files},
    }


def load_contamination(root: Path) -> dict[str, Any]:
    doc = _doc(root, CONTAMINATION)
    _need(CONTAMINATION, "top level", doc, ("sentences", "prefix_words"))
    out = []
    for i, s in enumerate(doc["sentences"] or []):
        _need(CONTAMINATION, f"sentences[{i}]", s, ("id", "kind", "text", "paraphrase"))
        if s["kind"] not in ("famous", "fresh"):
            raise UserError(f"{CONTAMINATION}: sentences[{i}]: kind must be famous or fresh")
        out.append({k: " ".join(str(s[k]).split()) for k in ("id", "kind", "text", "paraphrase")})
    return {"prefix_words": int(doc["prefix_words"]), "sentences": out}


def load_retention(root: Path) -> list[dict[str, str]]:
    """Provider notes (configuration text, not sealed); absent file → no notes."""
    if not (root / RETENTION).exists():
        return []
    doc = _doc(root, RETENTION)
    return [
        {k: " ".join(str(p.get(k, "")).split()) for k in ("provider", "read", "note")}
        for p in doc.get("providers") or []
    ]
