"""The deterministic ``reference`` engine: each suite's ceiling.

It answers from the item's grader-side data (the reference answer, or a guideline computation), so
a perfect score proves the rubric can be met and that grading is wired correctly. It never sees
anything the prompt would not also carry for a real engine beyond ``Request.item``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind

Answerer = Callable[[Request], str]


@engine_kind("reference", Capabilities(chat=False, json_schema=True, seeds=True))
class ReferenceEngine:
    def __init__(self, config: EngineConfig, *, answerer: Answerer | None = None, **_: Any) -> None:
        self.config = config
        self.answerer = answerer

    @property
    def model(self) -> str:
        return self.config.model or "reference"

    def identity(self) -> dict[str, Any]:
        return self.config.public() | {"model": self.model}

    async def start(self) -> None:
        if self.answerer is None:
            raise EngineError("refused", "this suite has no reference engine")

    async def close(self) -> None:
        return None

    async def complete(self, request: Request) -> Completion:
        assert self.answerer is not None
        text = self.answerer(request)
        words_in = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        message = {"role": "assistant", "content": text}
        body: dict[str, Any] = {
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": words_in, "completion_tokens": len(text.split())},
        }
        return Completion(
            output_text=text,
            response=body,
            tokens_in=words_in,
            tokens_out=len(text.split()),
            message=message,
        )
