"""The engine contract shared by every kind.

An engine turns a ``Request`` (messages + generation params) into a ``Completion`` or raises an
``EngineError`` with a classified ``kind``. Retrying, timing and storing are the dispatcher's job,
so kinds stay small. Kinds register a factory by name (``@engine_kind("openai_chat")``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

from sealedeval.canonical import compact
from sealedeval.config_types import EngineConfig
from sealedeval.engines.schemas import KindOptions, engine_kinds
from sealedeval.engines.schemas import register as register_options

# Retryable: the service may answer next time. Final: retrying would give the same bytes.
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
FINAL = frozenset({"malformed", "truncated", "refused"})


@dataclass(frozen=True)
class Attachment:
    """A file sent with a request (e.g. a rendered PDF for an engine with ``input_pdf``).

    The suite derives it deterministically from the request's item, which the key already names,
    so it is not part of the request key: keys, equality and raw rows are unaffected by it.
    """

    filename: str
    media_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Request:
    """One call. ``item`` carries grader-side data for the reference engine; never sent.

    ``attachments`` are files for engines that take them (``Capabilities.input_pdf``), built by
    the suite from the item; like ``item`` they are excluded from equality and repr (the key is
    computed from messages and params, never from them).
    """

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
    attachments: tuple[Attachment, ...] = field(default=(), compare=False, repr=False)

    @cached_property
    def messages_json(self) -> str:
        """The messages as canonical compact JSON, encoded once per request.

        The request key, the HTTP body and the raw row's ``messages`` column all need these
        bytes; a golden prompt is ~4 KB, and encoding it three times per call was a fifth of the
        dispatcher's CPU on a fast server. Suites that already encoded the messages for the key
        hand the text over (``keys.keyed_request``); a request derived with
        ``dataclasses.replace`` is a new object and encodes its own messages.
        """
        return compact(list(self.messages))

    @cached_property
    def params_json(self) -> str:
        """The params as canonical compact JSON (the key and the raw row share it)."""
        return compact(self.params)


@dataclass
class Completion:
    output_text: str
    response: dict[str, Any]
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str = "stop"
    engine_path: str = "primary"
    message: dict[str, Any] = field(default_factory=dict)
    response_json: str = ""
    """``compact(response)`` when the engine already has it (from the bytes it parsed), else
    empty and the dispatcher encodes ``response``."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache by this call (Anthropic's
    ``cache_creation_input_tokens``); part of ``tokens_in``, priced apart from it."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's prompt cache (``cache_read_input_tokens``);
    part of ``tokens_in``, priced apart from it."""


class EngineError(Exception):
    """A classified failure. ``retry_after`` is the server's hint in seconds, if it gave one;
    ``unreachable`` says why a ``connection`` failure means the host cannot be reached at all."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retry_after: float | None = None,
        response: dict[str, Any] | None = None,
        output_text: str = "",
        unreachable: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.response = response or {}
        self.output_text = output_text
        self.unreachable = unreachable
        """For a ``connection`` error: why no exchange could even start with the configured
        host (``engines.http.unreachable_reason``: connection refused, name not resolved, TLS
        failure), else "". The dispatcher's circuit breaker reads it (``run.retry``)."""

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


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, declared by its kind (and refined by its config).

    Suites plan requests from these, never from kind names: a new kind (or a user's engine from
    an entry point) gets the right prompts by declaring what it supports.

    - ``chat``: takes chat messages and generation params (temperature, max_tokens, seed...);
      False for engines that take the item itself (the reference ceiling, a PDF upload service).
    - ``json_schema``: honours ``response_format`` with a JSON Schema (constrained decoding).
    - ``bounded_output``: a small model whose constrained answer must be bounded in length to
      close within ``max_tokens`` (the embedded model); suites give it length-limited schemas.
    - ``logprobs``: token log-probabilities of a given text (in-process probes).
    - ``tool_protocol``: ``native`` (OpenAI tool calling) or ``json`` (a JSON-schema-constrained
      action protocol); the engine's ``tool_protocol`` config overrides the kind's default.
    - ``seeds``: honours a per-request sampling seed.
    - ``max_context``: context window in tokens, 0 if unknown.
    - ``input_pdf``: takes a rendered PDF attachment (``Request.attachments``) instead of text.
    """

    chat: bool = True
    json_schema: bool = False
    bounded_output: bool = False
    logprobs: bool = False
    tool_protocol: str = "native"
    seeds: bool = False
    max_context: int = 0
    input_pdf: bool = False


CapabilityFn = Callable[[EngineConfig], Capabilities]
_capabilities: dict[str, CapabilityFn] = {}

EngineFactory = Callable[..., Engine]


def engine_kind(
    name: str,
    capabilities: Capabilities | CapabilityFn | None = None,
    *,
    options: KindOptions | None = None,
) -> Callable[[EngineFactory], EngineFactory]:
    """Register an engine kind with the capabilities it declares (a value, or a function of the
    engine's config when they depend on it) and, for a kind from another package, the config
    keys it takes (``options``: its options schema; built-in kinds ship theirs as
    ``engines/<kind>.options.yaml`` so a config is checked without importing them)."""
    if options is not None:
        register_options(name, options)
    caps = capabilities or Capabilities()
    if callable(caps):
        _capabilities[name] = caps
    else:
        fixed = caps

        def declared(_cfg: EngineConfig) -> Capabilities:
            return fixed

        _capabilities[name] = declared
    return engine_kinds.register(name)


def capabilities(config: EngineConfig) -> Capabilities:
    """The capabilities of a configured engine: the kind's, with ``tool_protocol`` from config."""
    engine_kinds.get(config.kind)  # imports the kind, which declares its capabilities
    fn = _capabilities.get(config.kind)
    caps = fn(config) if fn is not None else Capabilities()
    proto = config.extra.get("tool_protocol")
    if proto:
        caps = replace(caps, tool_protocol=str(proto))
    n_ctx = config.extra.get("n_ctx")
    if n_ctx:
        caps = replace(caps, max_context=int(n_ctx))
    return caps


def build_engine(config: EngineConfig, **kwargs: Any) -> Engine:
    """Instantiate the configured kind; kinds import lazily so `grade` never loads HTTP code."""
    engine: Engine = engine_kinds.get(config.kind)(config, **kwargs)
    return engine
