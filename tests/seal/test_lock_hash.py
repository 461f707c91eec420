"""The normalised hash of sealed Python sources (``PY_HASH`` ast-v1) must never drift: a
change to how it is computed would make every existing rubric.lock fail. ``lock._dump`` is a
one-pass form of the first implementation, kept here as the reference it must equal."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import pytest

from sealedeval.seal import lock

SRC = Path(lock.__file__).resolve().parents[1]


def _reference_strip(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _reference_dump(node: object) -> str:
    if isinstance(node, ast.AST):
        parts = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            parts.append(f"{name}={_reference_dump(value)}")
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(_reference_dump(v) for v in node) + "]"
    return repr(node)


def _reference_hash(text: str) -> str:
    tree = _reference_strip(ast.parse(text))
    return hashlib.sha256(_reference_dump(tree).encode()).hexdigest()


TRICKY = '''
"""module doc"""
class A:
    """only a docstring"""
def f(x: int = 0, *a, k=None, **kw) -> None:
    "doc"
    async def g():
        """inner"""
        return [i async for i in x if i]
    lambda: ...
    return f"{x!r:>{k}}" + b"\\x00".decode() + str(1j) + str(-0.0)
if x := 1:
    pass
'''


def test_one_pass_dump_equals_the_reference_on_tricky_source(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text(TRICKY, encoding="utf-8")
    assert lock.hash_input(p) == _reference_hash(TRICKY)
    # docstrings are out, code is in: a changed docstring keeps the hash, a changed body not
    p.write_text(TRICKY.replace("only a docstring", "another"), encoding="utf-8")
    assert lock.hash_input(p) == _reference_hash(TRICKY)
    p.write_text(TRICKY.replace("return [i", "return [-i"), encoding="utf-8")
    assert lock.hash_input(p) != _reference_hash(TRICKY)


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_one_pass_dump_equals_the_reference_on_every_package_source(path: Path) -> None:
    assert lock.hash_input(path) == _reference_hash(path.read_text(encoding="utf-8"))
