"""Asyncio dispatcher: every request becomes exactly one stored row, ok or classified error.

Concurrency is bounded per engine by a semaphore; rows stream into the raw store as they finish
(never at the end, so a crash loses at most one flush window). An exception inside a solver that
is not an ``EngineError`` is a harness bug: it is recorded as an error row *and* re-raised at the
end, so it is neither hidden nor allowed to lose the other rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sealedeval import __version__
from sealedeval.canonical import compact
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.run.retry import Attempts, RetryPolicy, with_retries
from sealedeval.run.solvers import CallFn, Solver, SolveResult, get_solver, single_call

__all__ = ["CallFn", "Dispatcher", "RunStats", "SolveResult", "Solver", "single_call"]
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter
from sealedeval.store.schema import RawRow


@dataclass
class RunStats:
    requested: int = 0
    skipped: int = 0
    ok: int = 0
    error: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    bugs: list[BaseException] = field(default_factory=list)

    def line(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.by_kind.items())) or "none"
        return (
            f"requested {self.requested}, skipped (already ok) {self.skipped}, "
            f"ok {self.ok}, error {self.error} ({kinds})"
        )


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def cost_usd(cfg: EngineConfig, tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * cfg.price_in_per_mtok + tokens_out * cfg.price_out_per_mtok) / 1e6


class Dispatcher:
    def __init__(
        self,
        engine: Engine,
        writer: RawWriter,
        seal: SealState,
        *,
        solver: Solver | None = None,
        progress: bool = True,
    ) -> None:
        self.engine = engine
        self.cfg = engine.config
        self.writer = writer
        self.seal = seal
        self.solver = solver
        self.progress = progress
        self.policy = RetryPolicy(
            self.cfg.max_retries, self.cfg.backoff_base_s, self.cfg.backoff_max_s
        )
        self._sem = asyncio.Semaphore(self.cfg.concurrency)
        self._identity = compact(engine.identity())

    def _row(self, req: Request, started: str, t0: float, attempts: int) -> RawRow:
        return RawRow(
            request_key=req.request_key,
            suite=req.suite,
            item_id=req.item_id,
            condition=req.condition,
            repeat=req.repeat,
            seed=req.seed,
            engine=self.cfg.name,
            engine_kind=self.cfg.kind,
            model=self.engine.model,
            engine_identity=self._identity,
            params=compact(req.params),
            messages=compact(list(req.messages)),
            status="ok",
            started_at=started,
            finished_at=now_iso(),
            latency_s=round(time.perf_counter() - t0, 6),
            attempts=attempts,
            rubric_sha256=self.seal.rubric_sha256,
            seal_commit=self.seal.seal_commit,
            sealed=self.seal.sealed,
            harness_version=__version__,
        )

    async def _one(self, req: Request, stats: RunStats) -> None:
        attempts = Attempts()

        async def call(r: Request) -> Completion:
            return await with_retries(
                lambda: self.engine.complete(r),
                self.policy,
                seed=zlib.crc32(r.request_key.encode()),
                attempts=attempts,
            )

        async with self._sem:
            started, t0 = now_iso(), time.perf_counter()
            try:
                solver = self.solver or get_solver(req.solver)
                res = await solver(self.engine, req, call)
            except EngineError as e:
                row = self._row(req, started, t0, attempts.n)
                row.status, row.error_kind, row.error_message = "error", e.kind, str(e)[:500]
                row.response = compact(e.response)
                row.output_text = e.output_text
                stats.error += 1
                stats.by_kind[e.kind] += 1
            except Exception as e:  # a harness bug: keep the row, surface the bug at the end
                row = self._row(req, started, t0, attempts.n)
                row.status, row.error_kind = "error", "harness"
                row.error_message = f"{type(e).__name__}: {e}"[:500]
                stats.error += 1
                stats.by_kind["harness"] += 1
                stats.bugs.append(e)
            else:
                c = res.completion
                row = self._row(req, started, t0, attempts.n)
                row.response = compact(c.response)
                row.output_text = c.output_text
                row.finish_reason = c.finish_reason
                row.engine_path = c.engine_path
                row.trajectory = compact(res.trajectory)
                row.tokens_in = res.tokens_in if res.tokens_in is not None else c.tokens_in
                row.tokens_out = res.tokens_out if res.tokens_out is not None else c.tokens_out
                stats.ok += 1
            row.cost_usd = cost_usd(self.cfg, row.tokens_in, row.tokens_out)
            self.writer.add(row)

    async def run(self, requests: Sequence[Request], stats: RunStats) -> RunStats:
        from tqdm import tqdm

        bar = tqdm(
            total=len(requests),
            desc=f"{requests[0].suite if requests else ''}/{self.cfg.name}",
            unit="call",
            disable=not self.progress,
            file=sys.stderr,
            mininterval=1.0,
        )
        pending: set[asyncio.Task[None]] = set()
        try:
            # A bounded window of tasks keeps memory flat for 100k-request shards.
            window = max(64, self.cfg.concurrency * 4)
            for req in requests:
                if len(pending) >= window:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for d in done:
                        d.result()
                    bar.update(len(done))
                pending.add(asyncio.create_task(self._one(req, stats)))
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for d in done:
                    d.result()
                bar.update(len(done))
        finally:
            for t in pending:
                t.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*pending, return_exceptions=True)
            bar.close()
            self.writer.flush()
        return stats
