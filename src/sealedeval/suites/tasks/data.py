"""A ``tasks`` suite's data, read from the project and checked before anything is sent.

Every problem is one ``UserError`` naming the file and line (or the config key) and the item id:
an unreadable or empty items file, a missing or duplicate id, a template naming a column the
file does not have or an item leaves empty, a target missing where a grader needs one, an item a
grader cannot grade (a target that is not a number for ``numeric``), an unknown ``cluster_by``
column, a labels row naming no item, a ``files`` directory that is missing or empty.

``load`` is cached on the files' sizes and modification times, so seal, generate, run, grade and
analyze in one process read the data once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError
from sealedeval.graders.kinds import Configured
from sealedeval.suites.tasks import templates
from sealedeval.suites.tasks.spec import DEFAULT_PROMPT, Spec
from sealedeval.suites.tasks.tables import Table, read_table

PASS_WORDS = {"pass": "PASS", "true": "PASS", "yes": "PASS", "1": "PASS"}
FAIL_WORDS = {"fail": "FAIL", "false": "FAIL", "no": "FAIL", "0": "FAIL"}
_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class Label:
    id: str
    item: str
    answer: str
    label: str


@dataclass(frozen=True)
class Data:
    spec: Spec
    table: Table
    items: list[dict[str, Any]]
    """Item records in file order: every column, ``id`` as text."""
    where: dict[str, str]
    prompt: str
    system: str | None
    files: dict[str, str]
    graders: dict[str, Configured]
    labels: dict[str, list[Label]]
    files_block: str = ""
    """``{files}`` rendered once (every item's prompt shares it)."""

    def view(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """What graders see: the record with ``target`` = the target column's value."""
        out = dict(item)
        out["target"] = item.get(self.spec.target_column)
        return out

    def values(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """What templates see: the record, and ``files`` rendered when the suite has files."""
        out = dict(item)
        if self.spec.files is not None:
            out[templates.FILES] = self.files_block
        return out

    def user_prompt(self, item: Mapping[str, Any]) -> str:
        return templates.render(self.prompt, self.values(item))

    def system_prompt(self, item: Mapping[str, Any]) -> str | None:
        return None if self.system is None else templates.render(self.system, self.values(item))


def _stamp(root: Path, rels: list[str]) -> tuple[Any, ...]:
    out: list[Any] = []
    for rel in rels:
        p = root / rel
        try:
            if p.is_dir():
                for dirpath, _dirs, names in sorted(os.walk(p)):
                    for n in sorted(names):
                        st = os.stat(os.path.join(dirpath, n))
                        out.append((dirpath, n, st.st_size, st.st_mtime_ns))
            else:
                st = p.stat()
                out.append((rel, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((rel, None))
    return tuple(out)


def input_files(spec: Spec) -> list[str]:
    """Every project file or directory the suite reads (all sealed)."""
    out = [spec.items]
    for k in ("prompt_file", "system_file", "files"):
        if spec.get(k):
            out.append(str(spec.get(k)))
    for g in spec.graders:
        out += [f for f in g.kind.files(g.params) if f not in out]
    return out


_CACHE: dict[tuple[Any, ...], Data] = {}


def load(spec: Spec, root: Path) -> Data:
    """The suite's data, checked (see the module docstring)."""
    key = (id(spec), str(root), _stamp(root, input_files(spec)))
    hit = _CACHE.get(key)
    if hit is not None and hit.spec is spec:
        return hit
    data = _load(spec, root)
    if len(_CACHE) > 16:
        _CACHE.clear()
    _CACHE[key] = data
    return data


def _read_text(root: Path, rel: str, what: str) -> str:
    try:
        text = (root / rel).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{rel}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{rel}: cannot read the {what} file ({e.__class__.__name__})") from None
    if not text.strip():
        raise UserError(f"{rel}: the {what} file is empty")
    return text


def _build_graders(spec: Spec, root: Path) -> dict[str, Configured]:
    out = {}
    for g in spec.graders:
        try:
            out[g.id] = g.kind.build(g.params, root)
        except ValueError as e:
            raise UserError(f"{spec.key(f'graders[{g.index}]')}: {e}") from None
    return out


def _ids(spec: Spec, table: Table) -> tuple[list[dict[str, Any]], dict[str, str]]:
    col = spec.id_column
    if col not in table.columns:
        raise UserError(
            f"{table.path}: no {col!r} column for the item ids "
            f"(columns: {', '.join(table.columns)}; or set id_column)"
        )
    items: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    for row, w in zip(table.rows, table.where, strict=True):
        v = row.get(col)
        if isinstance(v, bool) or not isinstance(v, str | int | type(None)):
            raise UserError(f"{w}: the id must be text or an integer, got {v!r}")
        iid = "" if v is None else str(v).strip()
        if not iid:
            raise UserError(f"{w}: empty id (column {col!r})")
        if iid in where:
            raise UserError(f"{w}: duplicate id {iid!r} (first at {where[iid]})")
        where[iid] = w
        items.append(dict(row) | {"id": iid})
    return items, where


def _missing(v: Any, *, target: bool = False) -> bool:
    return v is None or (target and (v == "" or v == []))


def _check_templates(
    spec: Spec,
    data_cols: list[str],
    items: list[dict[str, Any]],
    where: dict[str, str],
    prompt: str,
    system: str | None,
    rel: str,
) -> None:
    sources = [(spec.get("prompt_file") or spec.key("prompt"), prompt)]
    if system is not None:
        sources.append((spec.get("system_file") or spec.key("system"), system))
    for src, text in sources:
        for name in templates.fields(text):
            if name == templates.FILES and spec.files is not None:
                continue
            if name not in data_cols:
                raise UserError(
                    f"{src}: names column {name!r}, which {rel} does not have "
                    f"(columns: {', '.join(data_cols)})"
                )
            for it in items:
                if it.get(name) is None:
                    raise UserError(
                        f"{where[it['id']]}: item {it['id']!r}: column {name!r} is empty "
                        "(the prompt names it)"
                    )


def _check_graders(
    spec: Spec,
    graders: Mapping[str, Configured],
    table: Table,
    items: list[dict[str, Any]],
    where: dict[str, str],
) -> None:
    tcol = spec.target_column
    for gid, g in graders.items():
        for f in g.fields:
            col = tcol if f == "target" else f
            if col not in table.columns:
                what = "a target" if f == "target" else f"column {col!r}"
                raise UserError(
                    f"{table.path}: grader {gid!r} needs {what}, but the file has no "
                    f"{col!r} column (columns: {', '.join(table.columns)})"
                )
        for col in g.columns:
            if col not in table.columns:
                raise UserError(
                    f"{table.path}: grader {gid!r} reads column {col!r}, which the file does "
                    f"not have (columns: {', '.join(table.columns)})"
                )
        for it in items:
            view = dict(it) | {"target": it.get(tcol)}
            for f in g.fields:
                if _missing(view.get(f), target=f == "target"):
                    if f == "target":
                        raise UserError(
                            f"{where[it['id']]}: item {it['id']!r} has no target "
                            f"(column {tcol!r}; grader {gid!r} needs one)"
                        )
                    raise UserError(
                        f"{where[it['id']]}: item {it['id']!r}: column {f!r} is empty "
                        f"(grader {gid!r} reads it)"
                    )
            if g.check_item is not None and (why := g.check_item(view)) is not None:
                raise UserError(f"{where[it['id']]}: item {it['id']!r}: {why} (grader {gid!r})")


def answerable(item: Mapping[str, Any]) -> bool:
    """The optional ``answerable`` column (default true): false = the right answer is an
    abstention, so an abstention there is graded by the graders, never set apart."""
    v = item.get("answerable", True)
    if isinstance(v, bool):
        return v
    if v is None:
        return True
    return _BOOL.get(str(v).strip().lower(), True)


def _check_columns(
    spec: Spec, table: Table, items: list[dict[str, Any]], where: dict[str, str]
) -> None:
    c = spec.cluster_by
    if c is not None:
        if c not in table.columns:
            raise UserError(
                f"{spec.key('cluster_by')}: {c!r} is not a column of {table.path} "
                f"(columns: {', '.join(table.columns)})"
            )
        for it in items:
            if it.get(c) is None or it.get(c) == "":
                raise UserError(
                    f"{where[it['id']]}: item {it['id']!r} has no {c!r} (cluster_by) value"
                )
    if "answerable" in table.columns:
        for it in items:
            v = it.get("answerable")
            if not (v is None or isinstance(v, bool) or str(v).strip().lower() in _BOOL):
                raise UserError(
                    f"{where[it['id']]}: item {it['id']!r}: answerable must be true or false, "
                    f"got {v!r}"
                )


def _files(spec: Spec, root: Path) -> dict[str, str]:
    rel = spec.files
    if rel is None:
        return {}
    base = root / rel
    if not base.is_dir():
        raise UserError(f"{rel}: files directory not found ({spec.key('files')})")
    out = {}
    for p in sorted(base.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        name = p.relative_to(base).as_posix()
        try:
            out[name] = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(
                f"{rel}/{name}: cannot read as UTF-8 text ({e.__class__.__name__})"
            ) from None
    if not out:
        raise UserError(f"{rel}: the files directory is empty ({spec.key('files')})")
    return dict(sorted(out.items()))


def _labels(spec: Spec, root: Path, where: Mapping[str, str]) -> dict[str, list[Label]]:
    out: dict[str, list[Label]] = {}
    for g in spec.judges():
        rel = g.params.get("labels")
        if not rel:
            continue
        table = read_table(root, str(rel), "labels")
        seen: dict[str, str] = {}
        labels = []
        for n, (row, w) in enumerate(zip(table.rows, table.where, strict=True), 1):
            item = row.get("item")
            if item is None or str(item).strip() == "":
                raise UserError(f"{w}: a label needs the 'item' it answers")
            item = str(item).strip()
            if item not in where:
                raise UserError(f"{w}: item {item!r} is not in {spec.items}")
            answer = row.get("answer")
            if answer is None:
                raise UserError(f"{w}: a label needs the 'answer' it judges")
            raw = str(row.get("label", "")).strip().lower()
            label = PASS_WORDS.get(raw) or FAIL_WORDS.get(raw)
            if label is None:
                raise UserError(f"{w}: label must be PASS or FAIL, got {row.get('label')!r}")
            lid = str(row.get("id") or f"{item}#{n}").strip()
            if lid in seen:
                raise UserError(f"{w}: duplicate label id {lid!r} (first at {seen[lid]})")
            seen[lid] = w
            labels.append(Label(lid, item, str(answer), label))
        out[g.id] = labels
    return out


@dataclass(frozen=True)
class AuditLabel:
    """One human label of the sealed audit subset: the answer of ``engine`` to ``item``
    (``repeat``, default 0) is ``label`` (PASS / FAIL); ``where`` is its file and line."""

    item: str
    engine: str
    repeat: int
    label: str
    where: str


def load_audit_labels(
    spec: Spec, root: Path, where: Mapping[str, str], audit: set[str]
) -> list[AuditLabel] | None:
    """The labels of ``analysis.human_audit`` (``item``, ``engine``, ``label``, optional
    ``repeat``), or None while the file does not exist (the labels come after the run). A row
    naming an item outside the items file or the sealed subset, an engine that does not answer,
    a malformed label or repeat, or the same answer twice is a one-line error naming file and
    line: a label the analysis silently dropped would bias the audit."""
    ha = spec.human_audit
    if ha is None or not (root / ha.labels).exists():
        return None
    table = read_table(root, ha.labels, "human-audit labels")
    seen: dict[tuple[str, str, int], str] = {}
    out = []
    for row, w in zip(table.rows, table.where, strict=True):
        item = str(row.get("item") or "").strip()
        if not item:
            raise UserError(f"{w}: a label needs the 'item' whose answer it labels")
        if item not in where:
            raise UserError(f"{w}: item {item!r} is not in {spec.items}")
        if item not in audit:
            raise UserError(f"{w}: item {item!r} is not in the sealed human-audit subset")
        engine = str(row.get("engine") or "").strip()
        if engine not in spec.answering:
            known = ", ".join(spec.answering)
            raise UserError(f"{w}: engine {engine!r} is not an answering engine ({known})")
        raw_rep = row.get("repeat", 0)
        try:
            rep = int(str(raw_rep if raw_rep not in (None, "") else 0).strip())
        except ValueError:
            raise UserError(f"{w}: repeat must be an integer, got {raw_rep!r}") from None
        if rep < 0:
            raise UserError(f"{w}: repeat must be >= 0, got {rep}")
        raw = str(row.get("label", "")).strip().lower()
        label = PASS_WORDS.get(raw) or FAIL_WORDS.get(raw)
        if label is None:
            raise UserError(f"{w}: label must be PASS or FAIL, got {row.get('label')!r}")
        k = (item, engine, rep)
        if k in seen:
            raise UserError(f"{w}: the answer {k} is labelled twice (first at {seen[k]})")
        seen[k] = w
        out.append(AuditLabel(item, engine, rep, label, w))
    return out


def _load(spec: Spec, root: Path) -> Data:
    graders = _build_graders(spec, root)
    table = read_table(root, spec.items, "items")
    items, where = _ids(spec, table)
    if spec.get("prompt_file"):
        prompt = _read_text(root, str(spec.get("prompt_file")), "prompt")
    else:
        prompt = str(spec.get("prompt") or DEFAULT_PROMPT)
    system: str | None = None
    if spec.get("system_file"):
        system = _read_text(root, str(spec.get("system_file")), "system prompt")
    elif spec.get("system"):
        system = str(spec.get("system"))
    _check_templates(spec, table.columns, items, where, prompt, system, table.path)
    _check_graders(spec, graders, table, items, where)
    _check_columns(spec, table, items, where)
    files = _files(spec, root)
    labels = _labels(spec, root, where)
    block = templates.render_files(files) if files else ""
    return Data(spec, table, items, where, prompt, system, files, graders, labels, block)
