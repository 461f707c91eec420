"""Engines: registry of kinds and the common request/completion contract."""

from sealedeval.engines.base import (
    Capabilities,
    Completion,
    Engine,
    EngineError,
    Request,
    build_engine,
    capabilities,
)
from sealedeval.engines.schemas import engine_kinds

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
