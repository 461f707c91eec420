"""The ``imported`` kind: an engine whose rows were written by ``sealedeval import``.

Another harness called the model; its log is the record. The engine names the model (``model``,
the id the log gives) so the rows' model can be checked against it at import, and it has nothing
to call: starting it is a one-line refusal, never a request to anyone. It is not the
``reference`` kind (a suite's ceiling), which imported engines used to be declared as.
"""

from __future__ import annotations

from typing import Any

from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind


@engine_kind("imported", Capabilities(chat=False))
class ImportedEngine:
    def __init__(self, config: EngineConfig, **_: Any) -> None:
        self.config = config

    @property
    def model(self) -> str:
        return self.config.model

    def identity(self) -> dict[str, Any]:
        return self.config.public() | {"model": self.model}

    async def start(self) -> None:
        raise EngineError(
            "refused",
            f"engine {self.config.name} is kind imported: its rows come from `sealedeval "
            "import`, there is nothing to call",
        )

    async def close(self) -> None:
        return None

    async def complete(self, request: Request) -> Completion:
        raise EngineError("refused", f"engine {self.config.name} is kind imported")
