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


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from sealedeval._version import __version__ as value
    elif name in _API:
        from sealedeval import api

        value = getattr(api, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
