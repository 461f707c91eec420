"""Engines: registry of kinds and the common request/completion contract."""

from sealedeval.engines.base import (
    Completion,
    Engine,
    EngineError,
    Request,
    build_engine,
    engine_kinds,
)

__all__ = ["Completion", "Engine", "EngineError", "Request", "build_engine", "engine_kinds"]
