"""The package's dependency rules, checked on its import statements.

Folders are stages and dependencies point one way: stats/store/render at the bottom, suites in
the middle, publish above them importing no suite, the audit on top. These tests read every
module's imports (including imports inside functions), so a shortcut that breaks a rule fails
here, whatever the code path that would have exercised it.
"""

from __future__ import annotations

import ast
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


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
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
