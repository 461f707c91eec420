"""Make ``tests.fakes`` importable however pytest is invoked; git identity for the projects."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.run.conftest import _git_identity  # noqa: E402, F401  (the run tests' clean git identity)
