"""Asyncio dispatcher: every request becomes exactly one stored row, ok or classified error.

Concurrency is bounded per engine by running exactly ``concurrency`` workers that pull from one
request iterator (a worker that finishes a call takes the next request at once, so C calls are
always in flight: the latency-bound wall time is N·L/C). Rows stream into the raw store as they
finish (never at the end, so a crash loses at most one flush window); the store writes parts on
its own thread, so a Parquet write or an fsync never stalls the event loop. An exception inside
a solver that is not an ``EngineError`` is a harness bug: it is recorded as an error row *and*
re-raised at the end, so it is neither hidden nor allowed to lose the other rows.

Per-call Python work is kept small because on a fast server it, not the network, bounds
calls/s (``benchmarks/dispatch.py``): rows are plain dicts in schema order, the messages are
encoded once per request (``Request.messages_json``: the key, the HTTP body and the row share
it) and the other JSON columns go through the canonical encoder's fast path.

A retry's wait is shown on the progress bar and, when it is long (``WAIT_LINE_S``) or the
server asked for it (Retry-After), as a line on stderr: a run waiting out a rate limit must
not look hung. Prompt-cache tokens (``Completion.cache_write_tokens`` / ``cache_read_tokens``)
are summed over every call a row's solver makes and priced apart (``cost_usd``).

Every call goes through the run's circuit breaker (``run.retry.CircuitBreaker``): an engine
whose first calls are refused, unresolvable, fail TLS or are rejected with 401/403/404 stops
within those calls, and each request not called becomes an error row that says so (``attempts``
0), so the counts still add up and a rerun asks them again. The API key, if a server echoed
it, is scrubbed from every error row.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final

from sealedeval._version import __version__
from sealedeval.canonical import compact
from sealedeval.config import EngineConfig
from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.engines.batch import BATCH_PRICE_FACTOR
from sealedeval.errors import UserError
from sealedeval.run.batch import BatchAnswer
from sealedeval.run.gcpolicy import quiet_gc
from sealedeval.run.progress import StatusLines
from sealedeval.run.retry import (
    DEFAULT_RETRY_AFTER_MAX_S,
    Attempts,
    CircuitBreaker,
    RetryPolicy,
    with_retries,
)
from sealedeval.run.solvers import CallFn, Solver, SolveResult, get_solver, single_call

__all__ = ["CallFn", "Dispatcher", "RunStats", "SolveResult", "Solver", "single_call"]
from sealedeval.seal.lock import SealState
from sealedeval.store.raw import RawWriter
from sealedeval.store.schema import ROW_DEFAULTS


@dataclass
class RunStats:
    requested: int = 0
    skipped: int = 0
    ok: int = 0
    error: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    bugs: list[BaseException] = field(default_factory=list)
    not_called: int = 0
    """Error rows of requests the open circuit did not call (part of ``error``)."""

    def line(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.by_kind.items())) or "none"
        n = self.not_called
        unasked = f", of which not called (circuit open) {n}" if n else ""
        return (
            f"requested {self.requested}, skipped (already ok) {self.skipped}, "
            f"ok {self.ok}, error {self.error} ({kinds}){unasked}"
        )


_second: list[Any] = [-1, ""]


def now_iso() -> str:
    """UTC now as ``2026-11-30T02:48:46.707309Z``; two per row, so the date part is formatted
    once per second (datetime's isoformat + replace was 3% of a call on a fast server)."""
    t = time.time()
    sec = int(t)
    if sec != _second[0]:
        _second[0], _second[1] = sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return f"{_second[1]}.{int((t - sec) * 1_000_000):06d}Z"


MIN_SCRUBBED: Final = 8
"""Keys shorter than this are not scrubbed: replacing a 3-letter test key would mangle words;
real provider keys are tens of characters."""

WAIT_LINE_S: Final = 5.0
"""Retry waits at least this long get their own stderr line (shorter ones only the bar's)."""


def cost_usd(
    cfg: EngineConfig, tokens_in: int, tokens_out: int, cache_write: int = 0, cache_read: int = 0
) -> float:
    """Cost of a row. ``tokens_in`` includes the prompt-cache tokens, which are priced at
    ``price_cache_write_per_mtok`` / ``price_cache_read_per_mtok`` when the engine has them
    (else as plain input): kinds without a cache cost exactly what they did before."""
    p_in = cfg.price_in_per_mtok
    p_write = float(cfg.extra.get("price_cache_write_per_mtok", p_in))
    p_read = float(cfg.extra.get("price_cache_read_per_mtok", p_in))
    fresh = tokens_in - cache_write - cache_read
    total = fresh * p_in + cache_write * p_write + cache_read * p_read
    return (total + tokens_out * cfg.price_out_per_mtok) / 1e6


@dataclass(frozen=True)
class _Prices:
    """``cost_usd``'s prices of one engine, so a row's cost is the same arithmetic on the
    same floats without reading and converting the config per row."""

    p_in: float
    p_out: float
    p_write: float
    p_read: float

    @classmethod
    def of(cls, cfg: EngineConfig) -> _Prices:
        p_in = cfg.price_in_per_mtok
        return cls(
            p_in,
            cfg.price_out_per_mtok,
            float(cfg.extra.get("price_cache_write_per_mtok", p_in)),
            float(cfg.extra.get("price_cache_read_per_mtok", p_in)),
        )

    def cost(self, tokens_in: int, tokens_out: int, cache_write: int, cache_read: int) -> float:
        """Exactly ``cost_usd(cfg, ...)``: the same operations in the same order."""
        fresh = tokens_in - cache_write - cache_read
        total = fresh * self.p_in + cache_write * self.p_write + cache_read * self.p_read
        return (total + tokens_out * self.p_out) / 1e6


def retry_policy(cfg: EngineConfig) -> RetryPolicy:
    """The engine's retry policy (its ``max_retries``, backoff and Retry-After ceiling)."""
    return RetryPolicy(
        cfg.max_retries,
        cfg.backoff_base_s,
        cfg.backoff_max_s,
        float(cfg.extra.get("retry_after_max_s", DEFAULT_RETRY_AFTER_MAX_S)),
    )


def key_scrubber(cfg: EngineConfig) -> Callable[[str], str]:
    """A function that writes the engine's API key, wherever a server echoed it, as ``***``
    (identity when the engine has no key, or an unset key variable: no call would carry it)."""
    try:
        key = cfg.api_key()
    except UserError:
        key = None
    if not key or len(key) < MIN_SCRUBBED:
        return lambda text: text

    def scrub(text: str) -> str:
        return text.replace(key, "***") if key in text else text

    return scrub


class Dispatcher:
    def __init__(
        self,
        engine: Engine,
        writer: RawWriter,
        seal: SealState,
        *,
        solver: Solver | None = None,
        progress: bool = True,
        status: IO[str] | None = None,
        label: str | None = None,
        breaker: CircuitBreaker | None = None,
        served: Mapping[str, BatchAnswer] | None = None,
    ) -> None:
        """``progress``: the tqdm bar on stderr; ``status``: a stream for throttled one-line
        status reports (``run.progress.StatusLines``), labelled ``label`` (default
        ``suite/engine``); ``breaker``: the run's circuit breaker (shared by a run's phases;
        default: a new one per ``run``); ``served``: answers a batch API already gave, by
        request key (``run.batch``): a request's first call is served from it instead of
        made, its row priced at ``BATCH_PRICE_FACTOR`` and its attempts the batches that
        asked it."""
        self.served = served
        self.engine = engine
        self.status = status
        self.label = label
        self.cfg = engine.config
        self.writer = writer
        self.seal = seal
        self.solver = solver
        self.progress = progress
        self.policy = retry_policy(self.cfg)
        self._bar: Any = None
        self.scrub = key_scrubber(self.cfg)
        self.given_breaker = breaker
        self.breaker = breaker or CircuitBreaker(scrub=self.scrub)
        # Fields every row of this dispatcher shares, in RAW_SCHEMA order with the per-row ones.
        self._const = {
            "engine": self.cfg.name,
            "engine_kind": self.cfg.kind,
            "model": engine.model,
            "engine_identity": compact(engine.identity()),
            "rubric_sha256": seal.rubric_sha256,
            "seal_commit": seal.seal_commit,
            "sealed": seal.sealed,
            "harness_version": __version__,
        }
        # Every row starts as a copy of this one template (the ok-row defaults with the
        # shared fields set): one C-level dict copy instead of a copy and an update per row.
        self._template = dict(ROW_DEFAULTS)
        self._template.update(self._const)
        # The prices of ``cost_usd``, read and converted once per run instead of per row.
        self._prices = _Prices.of(self.cfg)
        # Solvers by name, looked up once per run: a registry lookup per call is avoidable.
        self._solvers: dict[str, Solver] = {}

    def _row(self, req: Request, started: str, t0: float, attempts: int) -> dict[str, Any]:
        """A raw row (RAW_SCHEMA's columns) with the ok-row defaults; callers fill the rest."""
        row = self._template.copy()
        row["request_key"] = req.request_key
        row["suite"] = req.suite
        row["item_id"] = req.item_id
        row["condition"] = req.condition
        row["repeat"] = req.repeat
        row["seed"] = req.seed
        row["params"] = req.params_json
        row["messages"] = req.messages_json
        row["latency_s"] = round(time.perf_counter() - t0, 6)
        row["started_at"] = started
        row["finished_at"] = now_iso()
        row["attempts"] = attempts
        row["status"] = "ok"
        return row

    def _solver(self, name: str) -> Solver:
        solver = self._solvers[name] = get_solver(name)
        return solver

    def _waiting(self, req: Request, wait: float, e: EngineError, attempt: int) -> None:
        """Show a retry's wait: on the bar always, as a line when long or asked for."""
        said = f", Retry-After {e.retry_after:g} s" if e.retry_after is not None else ""
        note = f"waiting {wait:.1f} s ({e.kind}{said})"
        if self._bar is not None:
            self._bar.set_postfix_str(note, refresh=False)
        if wait >= WAIT_LINE_S or e.retry_after is not None:
            print(
                f"{req.suite}/{self.cfg.name}: {req.item_id} try {attempt} {e.kind}: {note}",
                file=sys.stderr,
                flush=True,
            )

    async def _one(self, req: Request, stats: RunStats) -> None:
        attempts = Attempts()
        engine, policy = self.engine, self.policy
        cache = [0, 0]  # prompt-cache tokens written / read, over every call of this row

        def on_wait(wait: float, e: EngineError, attempt: int) -> None:
            self._waiting(req, wait, e, attempt)

        breaker = self.breaker
        batched = self.served.get(req.request_key) if self.served is not None else None
        price = [1.0]

        async def call(r: Request) -> Completion:
            if batched is not None and r is req:  # the solver's own request, answered batched
                attempts.n += batched.batches
                price[0] = BATCH_PRICE_FACTOR
                if isinstance(batched.outcome, EngineError):
                    raise batched.outcome
                c = batched.outcome
                cache[0] += c.cache_write_tokens
                cache[1] += c.cache_read_tokens
                return c
            c = await with_retries(
                lambda: engine.complete(r),
                policy,
                seed=lambda: zlib.crc32(r.request_key.encode()),
                attempts=attempts,
                on_wait=on_wait,
                sleep=breaker.sleep,
                breaker=breaker,
            )
            cache[0] += c.cache_write_tokens
            cache[1] += c.cache_read_tokens
            return c

        started, t0 = now_iso(), time.perf_counter()
        try:
            if breaker.trip is not None:
                stats.not_called += 1
                raise breaker.not_called()
            # An engine that replays whole recorded rows is served by the ``replay`` solver.
            name = "replay" if getattr(engine, "replays_rows", False) else req.solver
            solver = self.solver or self._solvers.get(name) or self._solver(name)
            res = await solver(engine, req, call)
        except EngineError as e:
            row = self._row(req, started, t0, attempts.n)
            row["status"], row["error_kind"] = "error", e.kind
            row["error_message"] = self.scrub(str(e))[:500]
            row["response"] = self.scrub(compact(e.response))
            row["output_text"] = self.scrub(e.output_text)
            stats.error += 1
            stats.by_kind[e.kind] += 1
        except Exception as e:  # a harness bug: keep the row, surface the bug at the end
            row = self._row(req, started, t0, attempts.n)
            row["status"], row["error_kind"] = "error", "harness"
            row["error_message"] = self.scrub(f"{type(e).__name__}: {e}")[:500]
            stats.error += 1
            stats.by_kind["harness"] += 1
            stats.bugs.append(e)
        else:
            c = res.completion
            row = self._row(req, started, t0, attempts.n)
            row["response"] = c.response_json or compact(c.response)
            row["output_text"] = c.output_text
            row["finish_reason"] = c.finish_reason
            row["engine_path"] = c.engine_path
            if res.trajectory:
                row["trajectory"] = compact(res.trajectory)
            row["tokens_in"] = res.tokens_in if res.tokens_in is not None else c.tokens_in
            row["tokens_out"] = res.tokens_out if res.tokens_out is not None else c.tokens_out
            stats.ok += 1
        if row["status"] != "ok":
            cache = [0, 0]  # an error row records no tokens, so no cache tokens either
        row["cost_usd"] = price[0] * self._prices.cost(
            row["tokens_in"], row["tokens_out"], cache[0], cache[1]
        )
        self.writer.append(row)

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
        self._bar = bar
        if self.given_breaker is None:
            self.breaker = CircuitBreaker(scrub=self.scrub)  # each run starts closed
        lines = None
        if self.status is not None:
            label = self.label or f"{requests[0].suite if requests else ''}/{self.cfg.name}"
            lines = StatusLines(label, len(requests), self.status, skipped=stats.skipped)
            lines.start(stats)
        todo = iter(requests)

        async def worker() -> None:
            for req in todo:  # one shared iterator: each request is taken by exactly one worker
                await self._one(req, stats)
                bar.update(1)
                if lines is not None:
                    lines.update(stats)

        n_workers = max(1, min(self.cfg.concurrency, len(requests)))
        with quiet_gc():  # the planned requests are never garbage while they run
            workers = [asyncio.create_task(worker()) for _ in range(n_workers)]
            try:
                done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
                for d in done:
                    d.result()  # a failed worker (e.g. the store's disk-full error) ends the run
            finally:
                for t in workers:
                    t.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*workers, return_exceptions=True)
                bar.close()
                if lines is not None:
                    lines.close(stats)
                self.writer.flush()
        return stats
