"""YAML reading for every module: the safe loader, in C when PyYAML was built with libyaml.

The pure-Python loader parsed bloodpanel's assertion batteries in about a second per analysis
(benchmarks/analysis.py); libyaml's parser builds the same Python objects through the same
``SafeConstructor`` in a fraction of that. Only plain data is ever constructed (no tags that
build objects), and a parse error still carries its line and column (``problem_mark``).
"""

from __future__ import annotations

from typing import IO, Any

import yaml

SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """``yaml.safe_load`` with the C loader when present: plain data only."""
    return yaml.load(stream, Loader=SafeLoader)
