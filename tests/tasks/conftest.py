"""Fixtures for the ``tasks`` suite tests (helpers live in ``_support.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In-process tests load configs whose suites default their root to the current directory
    (``plugins.bind`` passes none): run them from the temp project."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
