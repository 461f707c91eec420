"""The package's version, for rows, result.json, deposits and registry provenance.

Apart from ``sealedeval/__init__.py`` (whose other names load the Python API) so that the
modules that record the version import a leaf, not the package's face.
"""

from __future__ import annotations

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


__version__ = _version()
