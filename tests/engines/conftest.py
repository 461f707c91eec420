"""Make ``tests.fakes`` importable however pytest is invoked (``pytest`` or ``python -m``)."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
