"""Engines: registry of kinds and the common request/completion contract."""

from sealedeval.engines.base import (
    Capabilities,
    Completion,
    Engine,
    EngineError,
    Request,
    build_engine,
    capabilities,
    engine_kinds,
)

__all__ = [
    "Capabilities",
    "Completion",
    "Engine",
    "EngineError",
    "Request",
    "build_engine",
    "capabilities",
    "engine_kinds",
]
