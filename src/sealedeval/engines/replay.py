"""The ``replay`` kind: serve the answers of a recorded run, so it can be graded again.

Why: re-grading an old run under a new sealed rubric must not call an engine again (the
answers are what is being re-graded, and calls cost money and drift), yet it must be a new run
bound to the current seal — seal check, one raw row per planned request, a ledger entry — so
it goes through ``sealedeval run`` like any engine::

    engines:
      old: {kind: replay, source: archive/raw/golden/local}
    suites:
      golden: {engines: [old]}

``source`` is a raw-store directory (``results/raw/SUITE/ENGINE``: our own runs, or an import
written by ``sealedeval import``, which has the same format), relative to the project. Under
the seal that recorded it the directory can stay where it is; after a re-seal, move it out of
``results/raw`` first (rows under two rubric hashes in one suite are refused as mixed).

Matching (``match``): each planned request is answered by the source row with the same request
key (``key``), else by the row with the same item id, condition and repeat (``item``); ``auto``
(the default) tries the key first. Keys change whenever anything in a request changes — a new
rubric changes the suite's seed, so every key — which is why matching by item is what lets a
run be regraded under a new sealed rubric. The latest row per key counts (an ok row is final,
as everywhere in the store). A recorded error row is served as that error again; a request
with no recorded row — or with two different recorded rows for its item, condition and repeat
— is an error row (``replay_missing`` / ``replay_ambiguous``), never a silent skip.

Whole rows are replayed, trajectories included: a multi-call solver (an agent) cannot be
replayed call by call, since only the row is stored. The engine therefore brings its own solver
(``recorded``, which the dispatcher's ``replay`` solver serves instead of the request's).

Provenance: ``identity()`` — stored in every row's ``engine_identity`` and in result.json —
holds the source directory, the sha256 of what was read (over each part's relative path and
sha256), the part count and the hashes of the ledger entries that wrote those parts. The model
defaults to the source rows' model, so keys built from it match when nothing else changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from sealedeval.canonical import compact
from sealedeval.config_types import EngineConfig
from sealedeval.engines.base import Capabilities, Completion, EngineError, Request, engine_kind
from sealedeval.errors import UserError
from sealedeval.fsutil import sha256_file, sha256_text
from sealedeval.store import ledger, segments
from sealedeval.store.raw import iter_raw, latest_rows

MATCH_MODES: Final = ("auto", "key", "item")
MISSING: Final = "replay_missing"
AMBIGUOUS: Final = "replay_ambiguous"

ItemKey = tuple[str, str, int]


def _capabilities(cfg: EngineConfig) -> Capabilities:
    """What the recorded engine declared, as far as suites plan by it (configurable): the
    replay answers what a chat engine with JSON-schema output was asked, by default."""
    return Capabilities(json_schema=bool(cfg.extra.get("json_schema", True)), seeds=True)


class _Source:
    """The recorded rows of one raw-store directory, indexed by key and by item."""

    def __init__(self, root: Path, source: str, where: str) -> None:

        path = Path(source)
        self.dir = path if path.is_absolute() else root / path
        if not self.dir.is_dir():
            raise UserError(f"{where}.source: {source}: no such directory")
        self.parts = sorted(p for p in self.dir.glob("part-*.parquet"))
        if not self.parts:
            raise UserError(f"{where}.source: {source}: no raw parts (part-*.parquet) in it")
        shas = [sha256_file(p) for p in self.parts]
        self.sha256 = sha256_text(
            compact([[p.name, s] for p, s in zip(self.parts, shas, strict=True)])
        )
        self.ledger = _ledger_entries(root, set(shas))
        rows = latest_rows(dict(r) for r in iter_raw(self.parts))
        self.by_key: dict[str, dict[str, Any]] = rows
        by_item: dict[ItemKey, list[dict[str, Any]]] = {}
        for r in rows.values():
            by_item.setdefault(
                (str(r["item_id"]), str(r["condition"]), int(r["repeat"])), []
            ).append(r)
        self.by_item = by_item
        models = sorted({str(r["model"]) for r in rows.values()})
        self.model = models[0] if len(models) == 1 else ""


def _ledger_entries(root: Path, shas: set[str]) -> list[str]:
    """Hashes of the project's ledger entries that wrote any of these parts (none when the
    source came from elsewhere without its ledger)."""

    out = []
    for e in segments.all_entries(root):
        if any(p.get("sha256") in shas for p in ledger.entry_parts(e)):
            out.append(str(e.get("hash", "")))
    return out


def _loads(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {"raw": text}


@engine_kind("replay", _capabilities)
class ReplayEngine:
    """Answers each planned request with a recorded raw row (see the module docstring)."""

    def __init__(self, config: EngineConfig, *, root: Path | None = None, **_: Any) -> None:
        where = f"engines.{config.name}"
        source = str(config.extra.get("source") or "")
        if not source:
            raise UserError(f"{where}: kind replay needs source")
        self.match = str(config.extra.get("match", "auto"))
        if self.match not in MATCH_MODES:
            raise UserError(f"{where}.match: one of {', '.join(MATCH_MODES)}, not {self.match!r}")
        self.config = config
        self.source_name = source
        self.src = _Source(root or Path.cwd(), source, where)

    @property
    def model(self) -> str:
        return self.config.model or self.src.model or "replay"

    def identity(self) -> dict[str, Any]:
        return self.config.public() | {
            "model": self.model,
            "source": self.source_name,
            "source_sha256": self.src.sha256,
            "source_parts": len(self.src.parts),
            "source_ledger": self.src.ledger,
            "match": self.match,
        }

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def lookup(self, request: Request) -> dict[str, Any]:
        """The recorded row answering ``request``; ``EngineError`` when there is none (or no
        single one)."""
        if self.match in ("auto", "key"):
            row = self.src.by_key.get(request.request_key)
            if row is not None:
                return row
        item = (request.item_id, request.condition, request.repeat)
        if self.match in ("auto", "item"):
            found = self.src.by_item.get(item, [])
            ok = [r for r in found if r["status"] == "ok"]
            pick = ok or found
            if len(pick) == 1:
                return pick[0]
            if len(pick) > 1:
                raise EngineError(
                    AMBIGUOUS,
                    f"{self.source_name}: {len(pick)} recorded rows for item {item[0]} "
                    f"condition {item[1]} repeat {item[2]} (different request keys)",
                )
        how = "key" if self.match == "key" else "key or item"
        raise EngineError(
            MISSING,
            f"{self.source_name}: no recorded row by {how} for {request.request_key[:12]} "
            f"(item {item[0]}, condition {item[1]}, repeat {item[2]})",
        )

    async def complete(self, request: Request) -> Completion:
        """One call's answer: the recorded row's (used when a solver calls the engine)."""
        return self._completion(self.lookup(request))

    def _completion(self, row: Mapping[str, Any]) -> Completion:
        if row["status"] != "ok":
            raise EngineError(
                str(row["error_kind"] or "error"),
                f"recorded: {row['error_message']}",
                response=_loads(str(row["response"])),
                output_text=str(row["output_text"]),
            )
        text = str(row["output_text"])
        return Completion(
            output_text=text,
            response=_loads(str(row["response"])),
            tokens_in=int(row["tokens_in"]),
            tokens_out=int(row["tokens_out"]),
            finish_reason=str(row["finish_reason"]),
            engine_path=str(row["engine_path"]),
            message={"role": "assistant", "content": text},
            response_json=str(row["response"]),
        )

    replays_rows: Final = True
    """Whole rows are replayed: the dispatcher answers with ``recorded`` (solver ``replay``)
    instead of running the request's solver over engine calls."""

    def recorded(self, request: Request) -> tuple[Completion, list[Any]]:
        """The whole recorded row, trajectory included, whatever the request's solver."""
        row = self.lookup(request)
        traj = _loads(str(row["trajectory"]))
        return self._completion(row), traj if isinstance(traj, list) else []
