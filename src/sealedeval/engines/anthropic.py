"""The ``anthropic`` kind: Anthropic's Messages API (``POST {base_url}/v1/messages``), natively.

Why not an OpenAI-compatible shim: it loses the top-level ``system`` field, ``tool_use`` /
``tool_result`` content blocks, prompt caching (``cache_control``) and the rate-limit headers.
Suites keep speaking the harness's one request shape (OpenAI-style chat messages, params and
``tools``); this module translates it to the Messages API and the answer back, so golden's
agent and the ``tasks`` suite's agent solver run with native tool blocks unchanged.

Protocol (https://docs.anthropic.com/en/api/messages):

- headers ``x-api-key`` (from the variable ``api_key_env`` names), ``anthropic-version``
  (``anthropic_version``, default ``2023-06-01``) and ``content-type: application/json``;
- body ``{model, max_tokens, system, messages, tools?, tool_choice?, temperature?, top_p?,
  top_k?, stop_sequences?}``: every ``system`` message goes into the top-level ``system`` as
  text blocks; ``user`` / ``assistant`` messages become content blocks (an assistant's
  ``tool_calls`` become ``tool_use`` blocks, each ``role: tool`` message a ``tool_result``
  block of the next user turn; consecutive turns of one role are merged, as the API needs);
  OpenAI ``tools`` become ``{name, description, input_schema}``; ``tool_choice`` ``auto`` /
  ``required`` / ``none`` / a named function become ``auto`` / ``any`` / ``none`` / ``tool``;
- the reply ``{content: [text | tool_use blocks], stop_reason, usage: {input_tokens,
  output_tokens, cache_creation_input_tokens, cache_read_input_tokens}}`` becomes a
  Completion whose ``message`` carries OpenAI-style ``tool_calls`` (ids kept, so the next
  turn's ``tool_result`` blocks name them); ``stop_reason`` ``end_turn`` / ``stop_sequence`` →
  ``stop``, ``tool_use`` → ``tool_calls``, ``refusal`` → ``content_filter``, ``max_tokens`` →
  a ``truncated`` error carrying the text (as for every kind).

Params without a Messages API equivalent are refused (final), never silently dropped — except
``seed``: the API has none, the kind declares ``seeds=False``, and the seed stays in the row's
params (it is part of the request key). ``max_tokens`` is required by the API; a request
without one gets ``default_max_tokens``.

JSON output: the API has no ``response_format``. With ``json_output: tool`` (the default) a
``response_format`` JSON schema is emulated the usual Anthropic way — one tool whose
``input_schema`` is the schema, forced with ``tool_choice: {type: tool}`` — and the tool's
input, as JSON, is the answer text. That is not grammar-constrained decoding; the kind
declares ``json_schema`` because suites then ask for (and graders check) schema-shaped output.
``json_output: off`` declares it unsupported and refuses such requests.

Prompt caching (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
``prompt_cache: auto`` (default) marks the shared prefix — the last tool definition and the last
system block (golden puts its ~4 KB of files there) — with ``cache_control: {type: ephemeral}``,
and in a multi-turn request (an agent's later steps) also the last block of the conversation,
so the next step reads it back; ``system`` marks tools and system only; ``off`` nothing. Cache
tokens are part of ``tokens_in`` (the prompt's size, comparable across kinds) and priced apart:
``price_cache_write_per_mtok`` / ``price_cache_read_per_mtok``, by default
``CACHE_WRITE_MULTIPLIER`` / ``CACHE_READ_MULTIPLIER`` × ``price_in_per_mtok`` (Anthropic's
published 5-minute-cache multipliers).

Errors (https://docs.anthropic.com/en/api/errors) arrive as ``{"type": "error", "error":
{"type", "message"}}``: 429 ``rate_limit_error`` → ``rate_limit`` with ``retry-after`` and the
``anthropic-ratelimit-*`` headers kept in the row; 529 ``overloaded_error`` and 500
``api_error`` → ``server`` (retryable); 400 / 401 / 403 / 404 / 413 → ``refused`` with the
server's error type and message (final). The key is never stored: ``identity()`` names only
the variable, and any echo of the key in a body or message is replaced by ``***``.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from sealedeval.canonical import compact
from sealedeval.config_types import EngineConfig
from sealedeval.engines import batch as batchapi
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind
from sealedeval.engines.http import TEXT_IN_MESSAGE, TEXT_KEPT, retry_after
from sealedeval.engines.openai_chat import (
    OpenAIChatEngine,
    _canonical_response,
    _loads,
    _Reply,
    batch_identity,
)
from sealedeval.errors import UserError

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
DEFAULT_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` the Messages API documents (https://docs.anthropic.com/en/api/versioning)."""
DEFAULT_MAX_TOKENS: Final = 1024
BATCHES_PATH: Final = "/v1/messages/batches"
CACHE_WRITE_MULTIPLIER: Final = 1.25
"""A 5-minute cache write costs 1.25× the base input price (prompt-caching docs, "Pricing")."""
CACHE_READ_MULTIPLIER: Final = 0.1
"""A cache hit costs 0.1× the base input price (prompt-caching docs, "Pricing")."""
EPHEMERAL: Final = {"type": "ephemeral"}
PROMPT_CACHE_MODES: Final = ("auto", "system", "off")
JSON_OUTPUT_MODES: Final = ("tool", "off")
RATELIMIT_PREFIX: Final = "anthropic-ratelimit-"
ANSWER_TOOL_DESCRIPTION: Final = (
    "Give your complete answer as this tool's input. The input must follow the input schema."
)
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What the API accepts as a tool name."""

PASSED_PARAMS: Final = frozenset({"temperature", "top_p", "top_k", "metadata"})
"""OpenAI-style params whose Messages API field has the same name and meaning."""
HANDLED_PARAMS: Final = frozenset({"max_tokens", "stop", "seed", "tool_choice", "response_format"})

_STOP_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "max_tokens": "length",
}
"""Anthropic ``stop_reason`` → the harness's ``finish_reason`` (OpenAI's names, which suites
read); the raw reason stays in the stored response."""


def _capabilities(cfg: EngineConfig) -> Capabilities:
    json_ok = str(cfg.extra.get("json_output", "tool")) == "tool"
    return Capabilities(json_schema=json_ok, seeds=False, tool_protocol="native")


# -- request translation ------------------------------------------------------------------


def _text_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    """OpenAI message content (a string or text parts) → Messages API text blocks. Empty
    text is left out: the API refuses empty text blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        out: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                if part.get("text"):
                    out.append({"type": "text", "text": str(part["text"])})
                continue
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise EngineError("refused", f"{where}: content part {kind!r} is not supported")
        return out
    raise EngineError("refused", f"{where}: content must be text or a list of text parts")


def _tool_input(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        parsed = json.loads(str(raw))
    except ValueError:
        raise EngineError("refused", f"{where}: tool call arguments are not JSON") from None
    if not isinstance(parsed, dict):
        raise EngineError("refused", f"{where}: tool call arguments are not a JSON object")
    return parsed


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in _text_blocks(content, "tool message"))


def convert_messages(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) of the Messages API for OpenAI-style chat ``messages``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})

    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        if role in ("system", "developer"):
            system.extend(_text_blocks(m.get("content"), where))
        elif role == "user":
            add("user", _text_blocks(m.get("content"), where))
        elif role == "assistant":
            blocks = _text_blocks(m.get("content"), where)
            for j, tc in enumerate(m.get("tool_calls") or []):
                fn = tc.get("function") or {} if isinstance(tc, dict) else {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(tc.get("id") or f"toolu_{i}_{j}"),
                        "name": str(fn.get("name", "")),
                        "input": _tool_input(fn.get("arguments"), f"{where}.tool_calls[{j}]"),
                    }
                )
            add("assistant", blocks)
        elif role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": str(m.get("tool_call_id", "")),
                        "content": _tool_result_text(m.get("content")),
                    }
                ],
            )
        else:
            raise EngineError("refused", f"{where}: role {role!r} is not supported")
    return system, out


def convert_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tools → Messages API tools (``input_schema``)."""
    out = []
    for t in tools:
        fn = t.get("function") if t.get("type") == "function" else None
        if not isinstance(fn, Mapping):
            raise EngineError("refused", f"tool {t.get('type')!r} is not a function tool")
        tool: dict[str, Any] = {"name": str(fn["name"])}
        if fn.get("description"):
            tool["description"] = str(fn["description"])
        tool["input_schema"] = dict(fn.get("parameters") or {"type": "object", "properties": {}})
        out.append(tool)
    return out


def convert_tool_choice(choice: Any) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": str(choice)}
    if choice == "required":
        return {"type": "any"}
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return {"type": "tool", "name": str((choice.get("function") or {}).get("name", ""))}
    raise EngineError("refused", f"tool_choice {choice!r} has no Messages API equivalent")


def answer_tool(response_format: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the forced tool emulating ``response_format``, whether its input wraps a non-object
    schema in ``{"value": ...}``). Tool inputs are objects, so any other schema is wrapped."""
    if response_format.get("type") == "json_object":
        return {
            "name": "json_answer",
            "description": ANSWER_TOOL_DESCRIPTION,
            "input_schema": {"type": "object"},
        }, False
    if response_format.get("type") != "json_schema":
        raise EngineError(
            "refused", f"response_format type {response_format.get('type')!r} is not supported"
        )
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") or {"type": "object"}
    name = str(spec.get("name") or "")
    wrapped = schema.get("type") != "object"
    if wrapped:
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    return {
        "name": name if _TOOL_NAME.match(name) else "json_answer",
        "description": ANSWER_TOOL_DESCRIPTION,
        "input_schema": schema,
    }, wrapped


def _mark(block: dict[str, Any]) -> None:
    block["cache_control"] = dict(EPHEMERAL)


def apply_cache(body: dict[str, Any], mode: str) -> None:
    """Put the ``cache_control`` breakpoints of ``mode`` into ``body`` (at most 3 of the
    API's 4): the last tool, the last system block, and (``auto``, multi-turn) the last block
    of the conversation."""
    if mode == "off":
        return
    if body.get("tools"):
        _mark(body["tools"][-1])
    if body.get("system"):
        _mark(body["system"][-1])
    msgs = body["messages"]
    if mode == "auto" and len(msgs) > 1 and msgs[-1]["content"]:
        _mark(msgs[-1]["content"][-1])


# -- response translation -----------------------------------------------------------------


def _usage(body: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(tokens_in total, tokens_out, cache write, cache read) from a Messages API usage."""
    u = body.get("usage") or {}
    fresh = int(u.get("input_tokens") or 0)
    write = int(u.get("cache_creation_input_tokens") or 0)
    read = int(u.get("cache_read_input_tokens") or 0)
    return fresh + write + read, int(u.get("output_tokens") or 0), write, read


def parse_message(
    body: Any, response_json: str = "", *, answer: str = "", wrapped: bool = False
) -> Completion:
    """Validate a Messages API ``message``; anything else is ``malformed``. ``answer`` names
    the forced JSON tool whose input is the answer text (``wrapped``: its ``value``)."""
    if not isinstance(body, dict) or body.get("type") != "message":
        raise EngineError(
            "malformed", "response is not a Messages API message", response={"raw": body}
        )
    content = body.get("content")
    if not isinstance(content, list):
        raise EngineError("malformed", "message has no content list", response=body)
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    answer_input: dict[str, Any] | None = None
    for block in content:
        if not isinstance(block, dict):
            raise EngineError("malformed", "content block is not an object", response=body)
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            inp = block.get("input")
            if not isinstance(inp, dict):
                raise EngineError("malformed", "tool_use input is not an object", response=body)
            if answer and block.get("name") == answer:
                answer_input = inp
                continue
            calls.append(
                {
                    "id": str(block.get("id", "")),
                    "type": "function",
                    "function": {
                        "name": str(block.get("name", "")),
                        "arguments": json.dumps(inp, ensure_ascii=False),
                    },
                }
            )
    stop = str(body.get("stop_reason") or "")
    finish = _STOP_REASONS.get(stop, stop)
    if answer:
        if answer_input is None:
            text = "".join(texts)
        else:
            value: Any = answer_input.get("value") if wrapped else answer_input
            text = json.dumps(value, ensure_ascii=False)
        if finish == "tool_calls":
            finish = "stop"  # the forced answer tool is the answer, not a tool call
    else:
        text = "".join(texts)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    tokens_in, tokens_out, write, read = _usage(body)
    comp = Completion(
        output_text=text,
        response=body,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        finish_reason=finish,
        message=message,
        response_json=response_json,
        cache_write_tokens=write,
        cache_read_tokens=read,
    )
    if finish == "length":
        raise EngineError("truncated", "output hit max_tokens", response=body, output_text=text)
    return comp


def classify(status: int, headers: Mapping[str, str], text: str) -> EngineError:
    """The classified error of an HTTP error status, with the server's error type and message
    (``{"type": "error", "error": {"type", "message"}}``) and the rate-limit headers kept."""
    err_type, message = "", ""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        err_type = str(doc["error"].get("type") or "")
        message = str(doc["error"].get("message") or "")
    limits = {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATELIMIT_PREFIX)}
    info: dict[str, Any] = {"status": status, "text": text[:TEXT_KEPT]}
    if err_type:
        info["error_type"] = err_type
    if limits:
        info["ratelimit"] = dict(sorted(limits.items()))
    request_id = headers.get("request-id")
    if request_id:
        info["request_id"] = request_id
    said = f"{err_type}: {message}" if err_type else text[:TEXT_IN_MESSAGE]
    wait = retry_after(headers)
    if status == 429:
        return EngineError("rate_limit", f"HTTP 429 {said}"[:500], retry_after=wait, response=info)
    if status >= 500:  # 500 api_error, 529 overloaded_error, gateways
        return EngineError("server", f"HTTP {status} {said}"[:500], retry_after=wait, response=info)
    return EngineError("refused", f"HTTP {status} {said}"[:500], response=info)


ERROR_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""The HTTP status of each error type (https://docs.anthropic.com/en/api/errors): a batch's
``errored`` result carries only the type, and is classified as the live call's status would be."""
BATCH_RESULT_KINDS: Final = {"canceled": batchapi.CANCELLED, "expired": batchapi.EXPIRED}


@engine_kind("anthropic", _capabilities)
class AnthropicEngine(OpenAIChatEngine):
    """Anthropic's Messages API over the same aiohttp/httpx transport as ``openai_chat``."""

    def __init__(self, config: EngineConfig, **kw: Any) -> None:
        x = dict(config.extra)
        self.version = str(x.get("anthropic_version", DEFAULT_VERSION))
        self.cache_mode = str(x.get("prompt_cache", "auto"))
        self.json_output = str(x.get("json_output", "tool"))
        self.default_max_tokens = int(x.get("default_max_tokens", DEFAULT_MAX_TOKENS))
        if self.cache_mode not in PROMPT_CACHE_MODES:
            raise UserError(f"engines.{config.name}.prompt_cache: one of {PROMPT_CACHE_MODES}")
        if self.json_output not in JSON_OUTPUT_MODES:
            raise UserError(f"engines.{config.name}.json_output: one of {JSON_OUTPUT_MODES}")
        # Cache tokens priced apart; unset prices follow Anthropic's published multipliers.
        x.setdefault(
            "price_cache_write_per_mtok", CACHE_WRITE_MULTIPLIER * config.price_in_per_mtok
        )
        x.setdefault("price_cache_read_per_mtok", CACHE_READ_MULTIPLIER * config.price_in_per_mtok)
        # ``{base_url}/v1/messages``: a base URL copied with its ``/v1`` (as OpenAI-style
        # clients take it) would otherwise post to /v1/v1/messages
        base = (config.base_url or DEFAULT_BASE_URL).rstrip("/").removesuffix("/v1")
        config = replace(config, base_url=base, extra=x)
        super().__init__(config, **kw)
        self._url = self.base_url + "/v1/messages"
        self._key = ""

    def identity(self) -> dict[str, Any]:
        x = self.config.extra
        return (
            self.config.public()
            | {
                "api_key_env": self.config.api_key_env,
                "anthropic_version": self.version,
                "prompt_cache": self.cache_mode,
                "json_output": self.json_output,
                "price_cache_write_per_mtok": round(float(x["price_cache_write_per_mtok"]), 9),
                "price_cache_read_per_mtok": round(float(x["price_cache_read_per_mtok"]), 9),
            }
            | batch_identity(self.config)
        )

    def _headers(self) -> dict[str, str]:
        key = self.config.api_key()
        if not key:
            raise UserError(f"engine {self.config.name!r}: kind anthropic needs api_key_env")
        self._key = key
        return {
            "content-type": "application/json",
            "x-api-key": key,
            "anthropic-version": self.version,
        }

    def scrub(self, text: str) -> str:
        """The key, wherever a server echoed it, as ``***``."""
        return text.replace(self._key, "***") if self._key else text

    def messages_body(self, request: Request) -> tuple[dict[str, Any], str, bool]:
        """(the Messages API body, the forced answer tool's name or "", whether it wraps)."""
        params = dict(request.params)
        unknown = sorted(set(params) - PASSED_PARAMS - HANDLED_PARAMS)
        if unknown:
            raise EngineError(
                "refused", f"param {unknown[0]!r} has no Messages API equivalent (kind anthropic)"
            )
        system, messages = convert_messages(request.messages)
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": int(params.get("max_tokens") or self.default_max_tokens),
        }
        if system:
            body["system"] = system
        body["messages"] = messages
        body.update({k: params[k] for k in sorted(PASSED_PARAMS) if k in params})
        stop = params.get("stop")
        if stop:
            body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        tools = convert_tools(request.tools)
        answer, wrapped = "", False
        rf = params.get("response_format")
        if rf:
            if self.json_output == "off":
                raise EngineError("refused", "response_format needs json_output: tool")
            if tools:
                raise EngineError("refused", "response_format together with tools")
            tool, wrapped = answer_tool(rf)
            tools, answer = [tool], str(tool["name"])
            body["tool_choice"] = {"type": "tool", "name": answer}
        elif params.get("tool_choice") is not None and tools:
            body["tool_choice"] = convert_tool_choice(params["tool_choice"])
        if tools:
            body["tools"] = tools
        apply_cache(body, self.cache_mode)
        return body, answer, wrapped

    # -- Message Batches (https://docs.anthropic.com/en/api/creating-message-batches) -------

    def batch_status_error(self, resp: _Reply) -> EngineError:
        return classify(resp.status, resp.headers, self.scrub(resp.text))

    def batch_options(self) -> batchapi.BatchOptions:
        return batchapi.batch_options(
            self.config,
            batchapi.BatchLimits(batchapi.ANTHROPIC_MAX_REQUESTS, batchapi.ANTHROPIC_MAX_BYTES),
        )

    def batch_line(self, request: Request) -> batchapi.BatchLine:
        """``{"custom_id": KEY, "params": BODY}``: the body a live call would POST."""
        body, _, _ = self.messages_body(request)
        return batchapi.BatchLine(
            request.request_key,
            compact_body({"custom_id": request.request_key, "params": body}),
        )

    async def batch_submit(self, lines: Sequence[batchapi.BatchLine], token: str) -> str:
        """``POST /v1/messages/batches`` with ``{requests}``. ``token`` goes nowhere: the create
        body has no other field and a batch keeps no metadata (``engines.batch``); a lost
        answer is found by ``batch_find``'s size match instead."""
        data = b'{"requests":[' + b",".join(line.data for line in lines) + b"]}"
        made = await self._json("POST", self.base_url + BATCHES_PATH, data)
        if not made.get("id"):
            raise EngineError("malformed", "POST /v1/messages/batches: no batch id", response=made)
        return str(made["id"])

    async def _batch_page(self, after: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """One page of ``GET /v1/messages/batches`` (newest first), after ``after_id``."""
        query = f"?limit={limit}" + (f"&after_id={urllib.parse.quote(after)}" if after else "")
        doc = await self._json("GET", f"{self.base_url}{BATCHES_PATH}{query}")
        return batchapi.list_page(doc, f"GET {BATCHES_PATH}")

    async def batch_mark(self) -> str:
        data, _ = await self._batch_page("", 1)
        return str(data[0]["id"]) if data else ""

    async def batch_find(self, token: str, count: int, mark: str) -> list[batchapi.Found]:
        """The batches since ``mark`` holding ``count`` requests (``request_counts`` add up to
        a batch's size): candidates only, since a listed batch shows nothing else of what it
        holds; the driver confirms one by its results. One that ended with every request
        canceled or expired has no answer to give (unusable)."""
        out = []
        for doc in await batchapi.look_back(self._batch_page, mark):
            counts = _counts(doc)
            if sum(counts.values()) != count:
                continue
            st = self._batch_status(str(doc["id"]), doc)
            answered = counts.get("succeeded", 0) + counts.get("errored", 0)
            out.append(batchapi.Found(st, "size", usable=not (st.ended and answered == 0)))
        return out

    async def batch_poll(self, batch_id: str) -> batchapi.BatchStatus:
        return self._batch_status(
            batch_id, await self._json("GET", f"{self.base_url}{BATCHES_PATH}/{batch_id}")
        )

    def _batch_status(self, batch_id: str, doc: Mapping[str, Any]) -> batchapi.BatchStatus:
        state = str(doc.get("processing_status") or "")
        counts = _counts(doc)
        failed = counts.get("errored", 0) + counts.get("canceled", 0) + counts.get("expired", 0)
        done = counts.get("succeeded", 0) + failed
        url = doc.get("results_url")
        return batchapi.BatchStatus(
            id=batch_id,
            state=state,
            ended=state == "ended",
            done=done,
            total=done + counts.get("processing", 0),
            failed=failed,
            refs=(str(url),) if url else (),
        )

    async def batch_results(
        self, status: batchapi.BatchStatus, requests: dict[str, Request]
    ) -> dict[str, batchapi.Outcome]:
        """The ``results_url``'s JSONL, one ``{custom_id, result}`` a line."""
        out: dict[str, batchapi.Outcome] = {}
        for url in status.refs:
            resp = await self._call("GET", url)
            if resp.status >= 400:
                raise self.batch_status_error(resp)
            text = self.scrub(resp.text)
            for n, raw in enumerate(text.splitlines(), 1):
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    line = None
                if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                    raise EngineError(
                        "malformed",
                        f"batch {status.id}: results line {n} is not a result",
                        response={"text": raw[:TEXT_KEPT]},
                    )
                key = line["custom_id"]
                if key in requests:
                    out[key] = self.batch_outcome(line.get("result"), requests[key])
        return out

    def batch_outcome(self, result: Any, request: Request) -> batchapi.Outcome:
        """One ``result`` → the completion, or the error the live call would have raised
        (``errored``: by its error type's status), or ``cancelled`` / ``expired``."""
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded" and isinstance(result, dict):
            message = result.get("message")
            try:
                _, answer, wrapped = self.messages_body(request)
                return parse_message(message, compact(message), answer=answer, wrapped=wrapped)
            except EngineError as e:
                return e
        if kind == "errored" and isinstance(result, dict):
            raw = result.get("error")
            doc: dict[str, Any] = raw if isinstance(raw, dict) else {}
            inner: dict[str, Any] = doc["error"] if isinstance(doc.get("error"), dict) else doc
            status = ERROR_STATUS.get(str(inner.get("type") or ""), 500)
            return classify(status, {}, json.dumps(doc, ensure_ascii=False))
        if kind in BATCH_RESULT_KINDS:
            return EngineError(BATCH_RESULT_KINDS[str(kind)], f"batch: request {kind}")
        return EngineError("malformed", f"batch: result type {kind!r}", response={"raw": result})

    async def complete(self, request: Request) -> Completion:
        if not self._started:
            await self.start()
        body, answer, wrapped = self.messages_body(request)
        resp = await self._post(compact_body(body))
        if resp.status >= 400:
            raise classify(resp.status, resp.headers, self.scrub(resp.text))
        try:
            parsed = _loads(resp.content)
        except ValueError:
            ctype = resp.headers.get("content-type", "")
            raise EngineError(
                "malformed",
                f"HTTP {resp.status} with a body that is not JSON ({ctype or 'no content-type'})",
                response={"status": resp.status, "text": self.scrub(resp.text)[:TEXT_KEPT]},
            ) from None
        if self._key and self._key.encode() in resp.content:
            parsed = json.loads(self.scrub(resp.text))
            return parse_message(parsed, compact(parsed), answer=answer, wrapped=wrapped)
        return parse_message(
            parsed, _canonical_response(resp.content, parsed), answer=answer, wrapped=wrapped
        )


def _counts(doc: Mapping[str, Any]) -> dict[str, int]:
    """A Message Batch's ``request_counts`` (processing, succeeded, errored, canceled,
    expired), which "always" add up to the number of requests in it."""
    raw = doc.get("request_counts")
    return {str(k): int(v or 0) for k, v in raw.items()} if isinstance(raw, dict) else {}


def compact_body(body: Mapping[str, Any]) -> bytes:
    """The POST body as compact JSON; key order kept (a schema's property order is the order
    the model is shown the fields in)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
