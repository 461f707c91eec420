"""An import inside a function is there for start-up, and the reason is one of a short list.

The layering test already counts every import wherever it stands, so hiding one in a function
buys no layering; it only hides a module's dependencies from its reader. What may stand inside
a function, and why (CONTRIBUTING.md, "Imports"):

- the command-line and workflow faces (``cli.py``, ``imports/cli.py``, ``workflow/preflight.py``,
  ``plugins.py``'s lazy registry, the package's ``__init__`` and ``_version``): each command
  imports what it runs, so ``sealedeval --help`` and every Snakemake job's parse stay fast;
- heavy third-party libraries (``HEAVY``), in modules those faces reach at start-up;
- standard-library modules that cost start-up (``SLOW_STDLIB``);
- a suite's presentation modules (``suites/<name>/present``), which only its hooks load: a run
  never imports the drawing stack.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sealedeval"

FACES = {
    "cli.py",
    "__init__.py",
    "_version.py",
    "plugins.py",
    "imports/cli.py",
    "workflow/preflight.py",
    "api/__init__.py",
}
HEAVY = {
    "PIL",
    "aiohttp",
    "httpx",
    "inspect_ai",
    "jsonschema",
    "llama_cpp",
    "matplotlib",
    "numpy",
    "pandas",
    "psutil",
    "pyarrow",
    "reportlab",
    "requests",
    "sacrebleu",
    "sqlalchemy",
    "tqdm",
    "yaml",
    "zenodo_client",
}
SLOW_STDLIB = {
    "asyncio",
    "concurrent",
    "email",
    "http",
    "importlib",
    "multiprocessing",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "tarfile",
    "tomllib",
    "urllib",
    "xml",
    "zipfile",
}


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    return top in HEAVY or top in SLOW_STDLIB or ".present" in module


def test_imports_inside_functions_are_for_start_up_only() -> None:
    offenders = []
    for f in sorted(SRC.rglob("*.py")):
        rel = f.relative_to(SRC).as_posix()
        if rel in FACES or rel.endswith("/__init__.py"):
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for st in ast.walk(fn):
                if isinstance(st, ast.ImportFrom) and not st.level:
                    names = [st.module or ""]
                elif isinstance(st, ast.Import):
                    names = [a.name for a in st.names]
                else:
                    continue
                offenders += [f"{rel}:{st.lineno} {n}" for n in names if not _allowed(n)]
    assert offenders == [], "move these to the top of their module (or say why in this test)"
