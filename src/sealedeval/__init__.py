"""sealedeval: pre-registered, reproducible evaluation of LLM engines.

The rubric is sealed before the first engine call; every published number is re-derived from the
versioned raw runs (docs/architecture.md). From Python (docs/python-api.md)::

    import sealedeval

    run = sealedeval.eval("golden", ["reference"], root="myeval", config="config/tiny.yaml")
    sealedeval.metrics_df("myeval")  # after `sealedeval publish`: one row per published metric

The names below load on first use (module ``__getattr__``): ``import sealedeval`` is what every
``sealedeval`` command pays at start-up, and the API's modules import the whole run stage and
pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sealedeval.api import (
        EngineRun,
        EvalResult,
        comparisons_df,
        eval,
        metrics_df,
        samples_df,
    )

    __version__: str

__all__ = [
    "EngineRun",
    "EvalResult",
    "__version__",
    "comparisons_df",
    "eval",
    "metrics_df",
    "samples_df",
]

_API = frozenset(__all__) - {"__version__"}
_NO_METADATA = "0+unknown"
"""The version of a copy that is neither installed nor a source checkout with pyproject.toml."""


def _installed_metadata_version() -> str | None:
    """``Version:`` of the ``sealedeval-*.dist-info/METADATA`` on ``sys.path``, read the way
    ``importlib.metadata`` finds it (first path entry that holds one) but without importing it:
    that import (its e-mail header parser) cost about as much as the whole CLI's own start-up,
    and ``run``, ``grade`` and ``publish`` record the version in every row and result. None when
    no entry holds exactly one such directory (``importlib.metadata`` decides then)."""
    import os
    import sys

    for entry in sys.path:
        try:
            found = [
                n
                for n in os.listdir(entry or ".")
                if n.startswith("sealedeval-") and n.endswith(".dist-info")
            ]
        except OSError:
            continue
        if len(found) != 1:
            if found:
                return None
            continue
        try:
            with open(os.path.join(entry or ".", found[0], "METADATA"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip() or None
                    if not line.strip():  # the headers end here
                        break
        except OSError:
            pass
        return None
    return None


def _version() -> str:
    """The installed distribution's version (its metadata); in a source checkout with nothing
    installed (the sources on ``PYTHONPATH``), pyproject.toml's, so rows and result.json name
    the version the code carries."""
    quick = _installed_metadata_version()
    if quick is not None:
        return quick
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sealedeval")
    except PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project") or {}
    except (OSError, tomllib.TOMLDecodeError):
        return _NO_METADATA
    if project.get("name") != "sealedeval":
        return _NO_METADATA
    return str(project.get("version") or _NO_METADATA)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _API:
        from sealedeval import api

        value = getattr(api, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
