"""The engine contract shared by every kind.

An engine turns a ``Request`` (messages + generation params) into a ``Completion`` or raises an
``EngineError`` with a classified ``kind``. Retrying, timing and storing are the dispatcher's job,
so kinds stay small. Kinds register a factory by name (``@engine_kind("openai_chat")``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sealedeval.config import EngineConfig
from sealedeval.registry import Registry

# Retryable: the service may answer next time. Final: retrying would give the same bytes.
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
FINAL = frozenset({"malformed", "truncated", "refused"})


@dataclass(frozen=True)
class Request:
    """One call. ``item`` carries grader-side data for the reference engine; never sent."""

    request_key: str
    suite: str
    item_id: str
    condition: str
    repeat: int
    seed: int
    messages: tuple[dict[str, Any], ...]
    params: dict[str, Any]
    item: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    tools: tuple[dict[str, Any], ...] = ()
    solver: str = "single"


@dataclass
class Completion:
    output_text: str
    response: dict[str, Any]
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str = "stop"
    engine_path: str = "primary"
    message: dict[str, Any] = field(default_factory=dict)


class EngineError(Exception):
    """A classified failure. ``retry_after`` is the server's hint in seconds, if it gave one."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retry_after: float | None = None,
        response: dict[str, Any] | None = None,
        output_text: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.response = response or {}
        self.output_text = output_text

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


class Engine(Protocol):
    config: EngineConfig

    @property
    def model(self) -> str: ...

    def identity(self) -> dict[str, Any]:
        """What identifies this engine in raw rows and result.json (no secrets)."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def complete(self, request: Request) -> Completion: ...


EngineFactory = Callable[..., Engine]
engine_kinds: Registry[EngineFactory] = Registry("engine kind")


def engine_kind(name: str) -> Callable[[EngineFactory], EngineFactory]:
    return engine_kinds.register(name)


def build_engine(config: EngineConfig, **kwargs: Any) -> Engine:
    """Instantiate the configured kind; kinds import lazily so `grade` never loads HTTP code."""
    from sealedeval.engines import kantesti, local, openai_chat, reference  # noqa: F401

    return engine_kinds.get(config.kind)(config, **kwargs)
