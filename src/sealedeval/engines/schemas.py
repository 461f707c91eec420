"""Per-kind engine options: which keys each built-in kind takes, and which it needs.

The central schema types every engine key; this says which belong to which kind, so a key a kind
does not read (``n_ctx`` on an ``openai_chat`` engine, a typo) is an error naming the kind, and a
kind's required key (``base_url`` of ``openai_chat``) is checked before anything runs — not
discovered as a run of error rows. Kept free of the kinds' own imports (HTTP clients, llama.cpp)
so loading a config stays cheap. A kind from another package (entry-point group
``sealedeval.engines``) registers its options with the kind (``engine_kind(name, caps,
options=KindOptions(...))``, which calls ``register``); one that registers none is checked by
the central schema only.

Prices are per kind too: every kind is priced per input and output token (``COMMON``); only
kinds whose API has a prompt cache take ``price_cache_write_per_mtok`` /
``price_cache_read_per_mtok`` (``CACHE_PRICES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sealedeval.errors import UserError


@dataclass(frozen=True)
class KindOptions:
    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()


COMMON = frozenset(
    {
        "kind",
        "model",
        "concurrency",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "price_in_per_mtok",
        "price_out_per_mtok",
        "retention_note",
        "fail_on_error",
        "retry_after_max_s",
    }
)
"""What the dispatcher reads for every kind (limits, retries, prices, the error threshold)."""

CACHE_PRICES = frozenset({"price_cache_write_per_mtok", "price_cache_read_per_mtok"})
"""Prompt-cache prices, for the kinds whose API bills cache writes and reads apart."""

KINDS: dict[str, KindOptions] = {
    "openai_chat": KindOptions(
        required=frozenset({"base_url"}),
        optional=frozenset({"api_key_env", "tool_protocol"}),
    ),
    "anthropic": KindOptions(
        required=frozenset({"model", "api_key_env"}),
        optional=frozenset(
            {
                "base_url",
                "anthropic_version",
                "prompt_cache",
                "json_output",
                "default_max_tokens",
                "tool_protocol",
            }
        )
        | CACHE_PRICES,
    ),
    "replay": KindOptions(
        required=frozenset({"source"}),
        optional=frozenset({"match", "json_schema", "tool_protocol"}),
    ),
    "local": KindOptions(
        optional=frozenset(
            {"n_ctx", "n_threads", "model_path", "startup_timeout_s", "cache_mb", "tool_protocol"}
        ),
    ),
    "reference": KindOptions(optional=frozenset({"variant"})),
    "imported": KindOptions(),
    "kantesti": KindOptions(
        required=frozenset({"base_url"}),
        optional=frozenset(
            {
                "endpoint",
                "username_env",
                "password_env",
                "language",
                "primary_timeout_s",
                "primary_tries",
                "fallback_timeout_s",
                "phase_backoff_s",
            }
        ),
    ),
}


def register(kind: str, options: KindOptions) -> None:
    """The options of a kind from another package (called by ``engine_kind``); a built-in
    kind's options cannot be replaced this way."""
    if kind in KINDS and KINDS[kind] != options:
        raise ValueError(f"engine kind {kind!r} already has registered options")
    KINDS[kind] = options


def check_engine(name: str, section: Mapping[str, Any], where: str) -> None:
    """One-line error for a key the kind does not take, or a key it needs that is missing."""
    from sealedeval.engines.base import engine_kinds

    kind = str(section.get("kind"))
    opts = KINDS.get(kind)
    if opts is None:
        # raises for an unknown kind (did you mean ...); imports a plugin kind, which may
        # register its options as it is defined
        engine_kinds.get(kind)
        opts = KINDS.get(kind)
        if opts is None:
            return
    allowed = COMMON | opts.required | opts.optional
    for key in sorted(section):
        if key not in allowed:
            raise UserError(
                f"{where}: engines.{name}.{key}: not an option of kind {kind} "
                f"(its options: {', '.join(sorted(allowed - {'kind'}))})"
            )
    for key in sorted(opts.required):
        if not section.get(key):
            raise UserError(f"{where}: engines.{name}: kind {kind} needs {key}")
