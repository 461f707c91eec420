"""Request keys and seeds: the one module every suite's seal includes.

A request key names everything that changes an answer, and every seed derives from the config
seed and the rubric hash; both are part of what a pre-registration fixes, so this module is
sealed with each suite (``rubric_inputs``), while the suite protocol and registry
(``sealedeval.plugins``) are not: adding a suite must not re-seal the others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from json.encoder import encode_basestring as _encode_str  # what ensure_ascii=False writes
from typing import Any

from sealedeval.canonical import compact
from sealedeval.config import Config
from sealedeval.engines.base import Request


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the config seed, the rubric hash and any labels.

    Deriving item and sampling seeds from the rubric hash makes the generated items provably
    depend on the sealed rubric: a different rubric gives different cases.
    """
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def _jstr(value: object) -> str:
    """A key field as ``compact`` writes it; plain strings take the C string encoder directly."""
    return _encode_str(value) if type(value) is str else compact(value)


def request_key(
    suite: str,
    item_id: str,
    condition: str,
    repeat: int,
    engine: str,
    model: str,
    params: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    *,
    messages_json: str | None = None,
    params_json: str | None = None,
) -> str:
    """Stable key: everything that changes the answer (like Inspect's cache key) goes in.

    The key is the sha256 of ``compact`` of the document {condition, engine, item, messages,
    model, params, repeat, suite, tools}. It is assembled field by field in sorted-key order so
    the messages, by far the largest part, can come pre-encoded (``messages_json``, the same
    bytes ``compact`` gives them); the text is byte-identical to ``compact(doc)`` (tested), so
    keys never change with this shortcut.
    """
    mj = compact(list(messages)) if messages_json is None else messages_json
    text = "".join(
        (
            '{"condition":',
            _jstr(condition),
            ',"engine":',
            _jstr(engine),
            ',"item":',
            _jstr(item_id),
            ',"messages":',
            mj,
            ',"model":',
            _jstr(model),
            ',"params":',
            compact(dict(params)) if params_json is None else params_json,
            ',"repeat":',
            compact(repeat),
            ',"suite":',
            _jstr(suite),
            ',"tools":',
            compact(list(tools)) if tools else "[]",
            "}",
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def keyed_request(
    suite: str,
    item_id: str,
    condition: str,
    repeat: int,
    seed: int,
    engine: str,
    model: str,
    params: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    *,
    item: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    solver: str = "single",
) -> Request:
    """A ``Request`` with its key, encoding the messages once for both.

    The encoded messages ride along as the request's ``messages_json`` so the HTTP body and the
    raw row reuse them instead of encoding the prompt again.
    """
    msgs = tuple(dict(m) for m in messages)
    mj = _messages_json(msgs)
    pj = compact(dict(params))
    key = request_key(
        suite,
        item_id,
        condition,
        repeat,
        engine,
        model,
        params,
        msgs,
        tools,
        messages_json=mj,
        params_json=pj,
    )
    req = Request(
        key,
        suite,
        item_id,
        condition,
        repeat,
        seed,
        msgs,
        dict(params),
        item=dict(item or {}),
        tools=tuple(dict(t) for t in tools),
        solver=solver,
    )
    req.__dict__["messages_json"] = mj  # fills Request.messages_json's cache (same bytes)
    req.__dict__["params_json"] = pj
    return req


def _messages_json(msgs: tuple[dict[str, Any], ...]) -> str:
    """``compact(list(msgs))``, remembered for chat messages made only of strings.

    Repeats (pass@k, sampling runs) and every task over the same files send the same prompt
    text many times; the strings' hashes are cached by Python, so looking the encoding up costs
    a fraction of encoding ~4 KB again. Messages with any non-string value are encoded afresh
    (equal-comparing values like 1, 1.0 and True must not share an entry).
    """
    parts = []
    for m in msgs:
        for k, v in m.items():
            if type(k) is not str or type(v) is not str:
                return compact(list(msgs))
        parts.append(tuple(m.items()))
    return _encoded_messages(tuple(parts))


@lru_cache(maxsize=4096)
def _encoded_messages(parts: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    return compact([dict(p) for p in parts])


def suite_seed(cfg: Config, suite: str, rubric_sha256: str) -> int:
    """Item seeds derive from the config seed and the rubric hash (docs/workflow.md,
    ``sealedeval generate``): a re-sealed rubric draws other items."""
    return derive_seed(cfg.seed, rubric_sha256, suite)
