"""The package's dependency rules, checked on its import statements.

Folders are stages and dependencies point one way: stats/store/render at the bottom, suites in
the middle, publish above them importing no suite, the audit on top. These tests read every
module's imports (including imports inside functions), so a shortcut that breaks a rule fails
here, whatever the code path that would have exercised it.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "sealedeval"


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _tree(path: Path) -> ast.Module:
    """Each file parsed once for every rule here."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> set[str]:
    tree = _tree(path)
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return {i for i in out if i.startswith("sealedeval")}


MODULES = {_module(p): _imports(p) for p in SRC.rglob("*.py")}


def _under(mod: str, *prefixes: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{m} imports {i}"
        for m, imps in MODULES.items()
        if _under(m, *importers)
        for i in imps
        if _under(i, *forbidden)
    )


def test_publish_imports_no_suite() -> None:
    assert _violations(("sealedeval.publish",), ("sealedeval.suites",)) == []


def test_nothing_but_the_audit_and_cli_imports_publish_or_archive() -> None:
    below = tuple(
        p
        for p in {m.split(".")[1] for m in MODULES if "." in m}
        if p not in {"publish", "archive", "audit", "cli", "api"}  # api: the Python API, on top
    )
    bad = _violations(
        tuple(f"sealedeval.{p}" for p in below),
        ("sealedeval.publish", "sealedeval.archive", "sealedeval.audit"),
    )
    assert bad == []


def test_lower_layers_import_no_stage_above_them() -> None:
    bottom = (
        "sealedeval.stats",
        "sealedeval.store",
        "sealedeval.render",
        "sealedeval.keys",
        "sealedeval.registry",
        "sealedeval.canonical",
        "sealedeval.config",
    )
    above = (
        "sealedeval.suites",
        "sealedeval.run",
        "sealedeval.stages",
        "sealedeval.publish",
        "sealedeval.graders",
        "sealedeval.seal",
        "sealedeval.audit",
    )
    bad = [
        v
        for v in _violations(bottom, above)
        # config looks up a suite's schema through the registry, never a suite module
        if v != "sealedeval.config imports sealedeval.plugins.suite_config_schema"
        and v != "sealedeval.config imports sealedeval.plugins"
    ]
    assert bad == []


def test_seal_run_graders_import_no_suite() -> None:
    bad = _violations(
        (
            "sealedeval.seal",
            "sealedeval.run",
            "sealedeval.graders",
            "sealedeval.engines",
            "sealedeval.stages",
            "sealedeval.probes",
        ),
        ("sealedeval.suites",),
    )
    assert bad == []


def test_no_suite_compares_engine_kind_names() -> None:
    pattern = re.compile(r"\.kind\s*(==|!=|\bin\b|\bnot in\b)|_KINDS\b|\"local\"\s*:")
    hits = []
    for p in (SRC / "suites").rglob("*.py"):
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if "engine" in line and pattern.search(line):
                hits.append(f"{p.relative_to(SRC)}:{n}: {line.strip()}")
    assert hits == []


@pytest.mark.parametrize("sealed", ["plugins", "registry"])
def test_protocol_and_registry_are_not_sealed(sealed: str) -> None:
    lock = (SRC.parent.parent / "rubric.lock").read_text()
    assert f"pkg:sealedeval/{sealed}.py" not in lock


FILES = {_module(p): p for p in SRC.rglob("*.py")}


def _from_imports(path: Path, *, top_only: bool = False) -> list[tuple[str, str]]:
    """(module, name) of every ``from module import name`` (relative ones resolved), and
    (module, "") of every ``import module``; ``top_only``: the module body's own statements."""
    tree = _tree(path)
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    nodes = tree.body if top_only else list(ast.walk(tree))
    out: list[tuple[str, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out += [(name, a.name) for a in node.names]
    return [(m, n) for m, n in out if m.startswith("sealedeval")]


@functools.cache
def _top_from_imports(path: Path) -> tuple[tuple[str, str], ...]:
    return tuple(_from_imports(path, top_only=True))


def _defining(module: str, name: str, seen: frozenset[str] = frozenset()) -> str:
    """The file a name comes from: a package that only hands ``name`` on from one of its
    modules (a face) leads to that module."""
    if f"{module}.{name}" in FILES:
        return f"{module}.{name}"
    if module not in FILES or module in seen:
        return module
    for src, n in _top_from_imports(FILES[module]):
        if n == name and src in FILES:
            return _defining(src, name, seen | {module})
    return module


@functools.cache
def _file_graph() -> dict[str, set[str]]:
    """Module → the package files it imports (any import: at the top, inside a function,
    under TYPE_CHECKING), each name resolved to the file that defines it."""
    graph: dict[str, set[str]] = {}
    for mod, path in FILES.items():
        targets = {_defining(m, n) if n else m for m, n in _from_imports(path)}
        graph[mod] = {t for t in targets if t in FILES and t != mod}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_anywhere() -> None:
    """Every package is covered: no two files import each other, directly or round a loop,
    whether the import sits at the top, inside a function or under TYPE_CHECKING."""
    assert _circles(_file_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


LAYERS: list[tuple[str, ...]] = [
    ("errors", "canonical", "yamlio", "fsutil", "_version", "validation"),
    ("stats", "registry", "render"),
    ("store", "config_types", "graders"),
    ("engines", "plugins", "keys"),
    ("config", "seal"),
    ("run", "stages", "probes"),
    ("suites", "workflow"),
    ("imports", "publish"),
    ("audit", "archive"),
    ("cli", "api", "__init__"),
]
"""Every top-level module and package of ``sealedeval``, bottom up: a file imports only from
its own layer or below. The Python API and the CLI are faces at the top."""

LEAVES = {"sealedeval.workflow": 0}
"""Files placed apart from their package: ``workflow/__init__.py`` only names the shipped
workflow's paths (the loader reads the central schema's) and imports nothing."""


def _layer(module: str) -> int:
    if module in LEAVES:
        return LEAVES[module]
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_every_package_has_a_layer_and_imports_point_down() -> None:
    graph = _file_graph()
    tops = {m.split(".")[1] if "." in m else "__init__" for m in graph}
    assert tops == {t for names in LAYERS for t in names}, "a package without a layer"
    up = sorted(
        f"{m} imports {d}" for m, deps in graph.items() for d in deps if _layer(d) > _layer(m)
    )
    assert up == []
