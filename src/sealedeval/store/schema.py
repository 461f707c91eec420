"""The raw-row contract: one row per engine request attempt-series.

Structured fields (params, messages, the raw response body, tool trajectories) are stored as
canonical JSON strings so the Parquet schema stays flat and stable across suites, and so the
bytes an engine returned are kept exactly as received. Nothing here may hold a secret.
"""

from __future__ import annotations

from typing import Any

from sealedeval.store.arrow import pa

_REQUIRED: Any = object()

RAW_COLUMNS: tuple[tuple[str, pa.DataType, Any], ...] = (
    # (name, Arrow type, default for a row that does not set it; _REQUIRED: always set)
    ("request_key", pa.string(), _REQUIRED),
    ("suite", pa.string(), _REQUIRED),
    ("item_id", pa.string(), _REQUIRED),
    ("condition", pa.string(), _REQUIRED),
    ("repeat", pa.int32(), _REQUIRED),
    ("seed", pa.int64(), _REQUIRED),
    ("engine", pa.string(), _REQUIRED),
    ("engine_kind", pa.string(), _REQUIRED),
    ("model", pa.string(), _REQUIRED),
    ("engine_identity", pa.string(), _REQUIRED),
    ("params", pa.string(), _REQUIRED),
    ("messages", pa.string(), _REQUIRED),
    ("response", pa.string(), ""),
    ("output_text", pa.string(), ""),
    ("trajectory", pa.string(), "[]"),
    ("finish_reason", pa.string(), ""),
    ("engine_path", pa.string(), ""),
    ("tokens_in", pa.int64(), 0),
    ("tokens_out", pa.int64(), 0),
    ("cost_usd", pa.float64(), 0.0),
    ("latency_s", pa.float64(), 0.0),
    ("started_at", pa.string(), _REQUIRED),
    ("finished_at", pa.string(), _REQUIRED),
    ("attempts", pa.int32(), 1),
    ("status", pa.string(), _REQUIRED),
    ("error_kind", pa.string(), ""),
    ("error_message", pa.string(), ""),
    ("rubric_sha256", pa.string(), _REQUIRED),
    ("seal_commit", pa.string(), _REQUIRED),
    ("sealed", pa.bool_(), _REQUIRED),
    ("harness_version", pa.string(), _REQUIRED),
)
"""The one list of raw-row fields: the Parquet schema and the defaults derive from it, so a
writer (the dispatcher, an importer) names only what it knows."""

RAW_SCHEMA = pa.schema([(name, typ) for name, typ, _ in RAW_COLUMNS])
ROW_DEFAULTS: dict[str, Any] = {n: d for n, _, d in RAW_COLUMNS if d is not _REQUIRED}
REQUIRED_COLUMNS = tuple(n for n, _, d in RAW_COLUMNS if d is _REQUIRED)

ERROR_KINDS = ("rate_limit", "server", "timeout", "connection", "malformed", "truncated", "refused")


def raw_row(**fields: Any) -> dict[str, Any]:
    """A raw row with RAW_SCHEMA's columns: the defaults, then ``fields``; a required column
    missing or an unknown one is a programming error."""
    missing = [c for c in REQUIRED_COLUMNS if c not in fields]
    unknown = [c for c in fields if c not in RAW_SCHEMA.names]
    if missing or unknown:
        raise ValueError(f"raw row: missing {missing}, unknown {unknown}")
    return {**ROW_DEFAULTS, **fields}
