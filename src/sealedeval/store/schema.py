"""The raw-row contract: one row per engine request attempt-series.

Structured fields (params, messages, the raw response body, tool trajectories) are stored as
canonical JSON strings so the Parquet schema stays flat and stable across suites, and so the
bytes an engine returned are kept exactly as received. Nothing here may hold a secret.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

RAW_SCHEMA = pa.schema(
    [
        ("request_key", pa.string()),
        ("suite", pa.string()),
        ("item_id", pa.string()),
        ("condition", pa.string()),
        ("repeat", pa.int32()),
        ("seed", pa.int64()),
        ("engine", pa.string()),
        ("engine_kind", pa.string()),
        ("model", pa.string()),
        ("engine_identity", pa.string()),
        ("params", pa.string()),
        ("messages", pa.string()),
        ("response", pa.string()),
        ("output_text", pa.string()),
        ("trajectory", pa.string()),
        ("finish_reason", pa.string()),
        ("engine_path", pa.string()),
        ("tokens_in", pa.int64()),
        ("tokens_out", pa.int64()),
        ("cost_usd", pa.float64()),
        ("latency_s", pa.float64()),
        ("started_at", pa.string()),
        ("finished_at", pa.string()),
        ("attempts", pa.int32()),
        ("status", pa.string()),
        ("error_kind", pa.string()),
        ("error_message", pa.string()),
        ("rubric_sha256", pa.string()),
        ("seal_commit", pa.string()),
        ("sealed", pa.bool_()),
        ("harness_version", pa.string()),
    ]
)

STATUSES = ("ok", "error", "refused")
ERROR_KINDS = ("rate_limit", "server", "timeout", "connection", "malformed", "truncated", "refused")


@dataclass
class RawRow:
    """A raw row in Python form; ``to_dict`` matches RAW_SCHEMA column for column."""

    request_key: str
    suite: str
    item_id: str
    condition: str
    repeat: int
    seed: int
    engine: str
    engine_kind: str
    model: str
    engine_identity: str
    params: str
    messages: str
    status: str
    started_at: str
    finished_at: str
    rubric_sha256: str
    seal_commit: str
    sealed: bool
    harness_version: str
    response: str = ""
    output_text: str = ""
    trajectory: str = "[]"
    finish_reason: str = ""
    engine_path: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    error_kind: str = ""
    error_message: str = ""
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_extra")
        return d
