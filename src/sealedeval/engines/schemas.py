"""Per-kind engine options: which keys each built-in kind takes, and which it needs.

The central schema types every engine key; this says which belong to which kind, so a key a kind
does not read (``n_ctx`` on an ``openai_chat`` engine, a typo) is an error naming the kind, and a
kind's required key (``base_url`` of ``openai_chat``) is checked before anything runs — not
discovered as a run of error rows. Kept free of the kinds' own imports (HTTP clients, llama.cpp)
so loading a config stays cheap. A kind from another package (entry-point group
``sealedeval.engines``) is checked by the central schema only.
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
    }
)
"""What the dispatcher reads for every kind (limits, retries, prices, the error threshold)."""

KINDS: dict[str, KindOptions] = {
    "openai_chat": KindOptions(
        required=frozenset({"base_url"}),
        optional=frozenset({"api_key_env", "tool_protocol"}),
    ),
    "local": KindOptions(
        optional=frozenset(
            {"n_ctx", "n_threads", "model_path", "startup_timeout_s", "cache_mb", "tool_protocol"}
        ),
    ),
    "reference": KindOptions(optional=frozenset({"variant"})),
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


def check_engine(name: str, section: Mapping[str, Any], where: str) -> None:
    """One-line error for a key the kind does not take, or a key it needs that is missing."""
    from sealedeval.engines.base import engine_kinds

    kind = str(section.get("kind"))
    opts = KINDS.get(kind)
    if opts is None:
        if kind not in engine_kinds:
            engine_kinds.get(kind)  # raises: unknown engine kind ..., did you mean ...
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
