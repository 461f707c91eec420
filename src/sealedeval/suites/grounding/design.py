"""The run design: which calls are made, in which (seeded, shuffled) order.

``full`` is the seed's complete 846-call design:

======================  ===============================================  =====
track                   shape                                            calls
======================  ===============================================  =====
A (primary model)       40 items × 6 conditions × 2 replicates             480
A (secondary model)     40 items × {E, C} × 2 replicates                   160
B1 gap surfacing        10 probes × 3 conditions × 2 replicates             60
B2 assembly             10 questions × (select + 3 assemblies) × 2          80
B3 disclosure           3 conditions × 3 requesters × 2 replicates          18
B4 chains               16 chains × 3 rounds                                48
======================  ===============================================  =====

The seed does not say which conditions the secondary model ran; {E, C} is the pair that carries
H5 (records vs prose with the same content), the study's central comparison.

``default`` is the smallest design that still runs every track and every condition with the
spec's two track-A replicates: track A on three items (COMP-03, an internal net-revenue
question where the deficient wiki states the superseded rule; XORG-09, a governed counterparty
question only the federation records make answerable; ABST-01, unanswerable) × 6 conditions × 2
replicates = 36 calls; B1 on one gap (B1-G1) × 3 conditions = 3; B2 on one question (B2-06) ×
4 stages = 4; B3 on the competitor requester × 3 conditions = 3; B4 on scenario S1 in both
ownership representations (2 chains × 3 rounds) = 6. 52 calls, no secondary model; the other
tracks run 1 replicate. ``tiny`` (37 calls: XORG-09 and ABST-01, one B1 gap, B2-06, B3, one
chain) keeps the Snakemake smoke test to seconds on the reference engine.

``embedded`` is what the default profile runs on the embedded model (``engine_profiles``), a
subset of ``default`` so every call pairs with the reference and naive engines' calls:

======================  ===============================================  =====
track                   shape                                            calls
======================  ===============================================  =====
A                       COMP-03, XORG-09, ABST-01 × 6 conditions × 1        18
B1                      gap G1 under ``schema`` and ``records_deficient``    2
B2                      B2-06: selection, then the answer on its own pick    2
B3                      competitor requester × 3 conditions                  3
B4                      chain R1 (records ownership) × 3 rounds              3
======================  ===============================================  =====

Why so small: SmolLM2's tokenizer splits every digit, so the ~9,850 characters of CSV tables
are ~9,200 tokens and a track-A prompt is 9,600-12,200 tokens (B2 ``full`` 13,500; the local
engine needs ``n_ctx: 16384``). On two CPU cores attention makes a prompt token's cost grow
with its position: measured with llama.cpp (llama-cpp-python 0.3.36, Q4_1, 2 threads) on the
shared 2-core machine, a cold 9,630-token track-A prompt took 370 CPU-s (with flash
attention it had used 291 CPU-s and was not done when stopped), and a call whose tables were
cached but which added 61 tokens and wrote one took 9.5 CPU-s: about 0.1 CPU-s per new prompt
token at position ~10,000. So
every distinct context block costs minutes (E's prose ~1,480 tokens, C's records ~2,220), and
the subset keeps each block to one prefill: the tables once, then A, B, E, C, F, D, the B1
gapped records and B4's coordinator context once each; items within a block are nearly free
(~60 tokens and one answer). Cut against ``default``: one track-A replicate; B1 without the
deficient prose; B2 without the ``full`` (+4,000 tokens) and ``keyword_top5`` assemblies; B4
without the prose-ownership chain. :func:`estimate_seconds` ranks designs offline; a measured
run is the authority (docs/benchmarks.md, "The default profile").

The call order is a seeded shuffle across the whole run (spec: so service drift cannot confound
conditions); calls that consume an earlier call's output (B2 ``own_pick`` after ``select``, B4
rounds) keep their relative order by swapping within the positions the shuffle gave them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "CACHE_ORDERED",
    "DEFAULT_SHUFFLE_SEED",
    "EMBEDDED_TOTALS",
    "FULL_TOTALS",
    "OUTPUT_TOKENS",
    "PROFILES",
    "Design",
    "Profile",
    "RequestSpec",
    "approx_tokens",
    "build_design",
    "estimate_seconds",
]

Profile = Literal["tiny", "default", "embedded", "full"]
PROFILES: tuple[Profile, ...] = ("tiny", "default", "embedded", "full")
CACHE_ORDERED: frozenset[str] = frozenset({"embedded"})
"""Profiles whose call order is shuffled within prompt-cache blocks, not across the whole run
(see :func:`build_design`)."""
DEFAULT_SHUFFLE_SEED = 20260906
"""Call-order seed (the seed study's run date); recorded in every :class:`Design`."""

FULL_TOTALS: dict[str, int] = {"A": 480, "A-secondary": 160, "B1": 60, "B2": 80, "B3": 18, "B4": 48}
"""Per-track call counts of the seed's published design (846 in all)."""
EMBEDDED_TOTALS: dict[str, int] = {"A": 18, "B1": 2, "B2": 2, "B3": 3, "B4": 3}
"""Per-track call counts of the ``embedded`` subset (the default profile's embedded model)."""

_TRACK_A_CONDITIONS = ("A", "B", "E", "C", "F", "D")
_SECONDARY_CONDITIONS = ("E", "C")
_B1_CONDITIONS = ("schema", "prose_deficient", "records_deficient")
_B2_STAGES = ("select", "full", "own_pick", "keyword_top5")
_B3_CONDITIONS = ("no_policy", "prose_policy", "classification_records")
_B3_REQUESTERS = ("own_carrier", "competitor_carrier", "auditor")
_ROUNDS = ("round1", "round2", "round3")

_FAMILIES = (("COMP", 12), ("TEMP", 10), ("XORG", 12), ("ABST", 6))
_ALL_ITEMS = tuple(f"{fam}-{n:02d}" for fam, count in _FAMILIES for n in range(1, count + 1))
_B1_PROBES = tuple(f"B1-G{n}" for n in range(1, 7)) + tuple(f"B1-K{n}" for n in range(1, 5))
_B2_QUESTIONS = tuple(f"B2-{n:02d}" for n in range(1, 11))
_B4_CHAINS = tuple(f"B4-{kind}{n}" for kind in ("R", "P") for n in range(1, 9))

_DEFAULT_ITEMS = ("COMP-03", "XORG-09", "ABST-01")
_DEFAULT_B1 = ("B1-G1",)
_DEFAULT_B2 = ("B2-06",)
_DEFAULT_B3 = ("competitor_carrier",)
_DEFAULT_B4 = ("B4-R1", "B4-P1")

_EMBEDDED_ITEMS = ("COMP-03", "XORG-09", "ABST-01")
_EMBEDDED_B1 = ("B1-G1",)
_EMBEDDED_B1_CONDITIONS = ("schema", "records_deficient")
_EMBEDDED_B2 = ("B2-06",)
_EMBEDDED_B3 = ("competitor_carrier",)
_EMBEDDED_B4 = ("B4-R1",)

_TINY_ITEMS = ("XORG-09", "ABST-01")
_TINY_B1 = ("B1-G1",)
_TINY_B4 = ("B4-R1",)

OUTPUT_TOKENS: dict[str, int] = {
    "A": 45,
    "B1": 40,
    "B2:select": 30,
    "B2": 45,
    "B3": 40,
    "B4:round1": 50,
    "B4:round2": 40,
    "B4:round3": 90,
}
"""Expected output tokens per call kind (compact JSON answers), used by the runtime estimate."""


@dataclass(frozen=True)
class RequestSpec:
    """One engine call of the design.

    Attributes:
        track: ``A``, ``B1``, ``B2``, ``B3`` or ``B4``.
        item_id: Item (A), probe (B1), question (B2), requester (B3) or chain (B4) id.
        condition: Condition (A, B1, B3), stage (B2: ``select`` or an assembly) or round (B4).
        replicate: 1-based replicate number.
        model_role: ``primary`` or ``secondary`` (the lead maps roles to engines).
        depends_on: Request id whose raw output this call needs, if any.
    """

    track: str
    item_id: str
    condition: str
    replicate: int
    model_role: str = "primary"
    depends_on: str | None = None

    @property
    def request_id(self) -> str:
        """Stable id: ``track/item/condition/model_role/rN``."""
        return f"{self.track}/{self.item_id}/{self.condition}/{self.model_role}/r{self.replicate}"

    def sibling(self, condition: str) -> RequestSpec:
        """The request of the same item/replicate/role under another condition or round."""
        return replace(self, condition=condition, depends_on=None)

    @property
    def group(self) -> str | None:
        """Ordering group: calls of one group must run in stage order (B2 select→own_pick,
        B4 round1→round2→round3)."""
        if self.track == "B4":
            return f"B4/{self.item_id}/{self.model_role}/r{self.replicate}"
        if self.track == "B2" and self.condition in ("select", "own_pick"):
            return f"B2/{self.item_id}/{self.model_role}/r{self.replicate}"
        return None

    @property
    def stage(self) -> int:
        """Position within its group."""
        order = {"select": 0, "own_pick": 1, "round1": 0, "round2": 1, "round3": 2}
        return order.get(self.condition, 0)

    @property
    def kind(self) -> str:
        """Call kind for :data:`OUTPUT_TOKENS`."""
        if self.track == "B4":
            return f"B4:{self.condition}"
        if self.track == "B2" and self.condition == "select":
            return "B2:select"
        return self.track


@dataclass(frozen=True)
class Design:
    """The ordered requests of one run and how the order was drawn."""

    profile: str
    shuffle_seed: int
    specs: tuple[RequestSpec, ...]

    def counts(self) -> dict[str, int]:
        """Calls per track (secondary-model track A counted as ``A-secondary``)."""
        out: dict[str, int] = {}
        for s in self.specs:
            key = "A-secondary" if s.model_role == "secondary" else s.track
            out[key] = out.get(key, 0) + 1
        return out


def _track_a(
    items: Sequence[str],
    conditions: Sequence[str],
    reps: int,
    role: str,
) -> list[RequestSpec]:
    return [
        RequestSpec("A", i, c, r, role)
        for i in items
        for c in conditions
        for r in range(1, reps + 1)
    ]


def _b2(questions: Sequence[str], reps: int) -> list[RequestSpec]:
    out: list[RequestSpec] = []
    for q in questions:
        for r in range(1, reps + 1):
            select = RequestSpec("B2", q, "select", r)
            out.append(select)
            for stage in _B2_STAGES[1:]:
                dep = select.request_id if stage == "own_pick" else None
                out.append(RequestSpec("B2", q, stage, r, depends_on=dep))
    return out


def _b4(chains: Sequence[str]) -> list[RequestSpec]:
    out: list[RequestSpec] = []
    for c in chains:
        prev: str | None = None
        for rnd in _ROUNDS:
            spec = RequestSpec("B4", c, rnd, 1, depends_on=prev)
            out.append(spec)
            prev = spec.request_id
    return out


def _unordered(profile: Profile) -> list[RequestSpec]:
    if profile == "full":
        return [
            *_track_a(_ALL_ITEMS, _TRACK_A_CONDITIONS, 2, "primary"),
            *_track_a(_ALL_ITEMS, _SECONDARY_CONDITIONS, 2, "secondary"),
            *[
                RequestSpec("B1", p, c, r)
                for p in _B1_PROBES
                for c in _B1_CONDITIONS
                for r in (1, 2)
            ],
            *_b2(_B2_QUESTIONS, 2),
            *[
                RequestSpec("B3", q, c, r)
                for c in _B3_CONDITIONS
                for q in _B3_REQUESTERS
                for r in (1, 2)
            ],
            *_b4(_B4_CHAINS),
        ]
    if profile == "default":
        return [
            *_track_a(_DEFAULT_ITEMS, _TRACK_A_CONDITIONS, 2, "primary"),
            *[RequestSpec("B1", p, c, 1) for p in _DEFAULT_B1 for c in _B1_CONDITIONS],
            *_b2(_DEFAULT_B2, 1),
            *[RequestSpec("B3", q, c, 1) for c in _B3_CONDITIONS for q in _DEFAULT_B3],
            *_b4(_DEFAULT_B4),
        ]
    if profile == "embedded":
        return [spec for block in _embedded_blocks() for spec in block]
    if profile == "tiny":
        return [
            *_track_a(_TINY_ITEMS, _TRACK_A_CONDITIONS, 2, "primary"),
            *[RequestSpec("B1", p, c, 1) for p in _TINY_B1 for c in _B1_CONDITIONS],
            *_b2(_DEFAULT_B2, 1),
            *[RequestSpec("B3", q, c, 1) for c in _B3_CONDITIONS for q in _DEFAULT_B3],
            *_b4(_TINY_B4),
        ]
    raise ValueError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")


def _embedded_blocks() -> list[list[RequestSpec]]:
    """The ``embedded`` calls in prompt-cache blocks, in the order they run.

    Each block is a set of calls whose prompts share everything up to the question; consecutive
    blocks share the data tables and the table definitions. The prompts without data tables
    (B3, and B2's selection stage) come first, so the tables are prefilled once, by the first
    call that carries them (B2's ``own_pick`` answer), and stay in the server's KV cache; the
    track-A conditions run in the order A, B, E, C, F, D because C's records are a prefix of
    F's and D's context. A B4 chain's owner round carries no tables: its round 3 gets the
    tables back from the server's RAM prompt cache (``engines.local.cache_mb``).
    """
    blocks: list[list[RequestSpec]] = [
        [RequestSpec("B3", q, c, 1) for q in _EMBEDDED_B3 for c in _B3_CONDITIONS],
    ]
    for q in _EMBEDDED_B2:
        select = RequestSpec("B2", q, "select", 1)
        blocks.append([select, RequestSpec("B2", q, "own_pick", 1, depends_on=select.request_id)])
    blocks += [_track_a(_EMBEDDED_ITEMS, (c,), 1, "primary") for c in _TRACK_A_CONDITIONS]
    blocks += [[RequestSpec("B1", p, c, 1) for p in _EMBEDDED_B1] for c in _EMBEDDED_B1_CONDITIONS]
    blocks += [_b4((chain,)) for chain in _EMBEDDED_B4]
    return blocks


def build_design(
    profile: Profile = "default",
    shuffle_seed: int = DEFAULT_SHUFFLE_SEED,
) -> Design:
    """The requests of ``profile`` in a seeded random call order.

    The whole run is shuffled at once (not per track or per condition); then each dependency
    group is re-sorted into stage order *within the positions the shuffle gave it*, so the
    positions stay random and every call still follows the one whose output it needs.

    A profile in :data:`CACHE_ORDERED` (``embedded``) is shuffled within its prompt-cache
    blocks instead (:func:`_embedded_blocks`: the calls that share a context block run one
    after another, in a seeded order), because on the embedded llama.cpp server a whole-run
    shuffle re-processes a ~2,000-token context block at positions ~10,000 on nearly every
    call. The spec shuffles to keep *service drift* from confounding conditions; a local model
    with fixed weights, fixed seeds and one request at a time has no such drift.

    Raises:
        ValueError: Unknown profile.
    """
    rng = random.Random(shuffle_seed)
    if profile in CACHE_ORDERED:
        specs = []
        for block in _embedded_blocks():
            rng.shuffle(block)
            specs += block
    else:
        specs = _unordered(profile)
        rng.shuffle(specs)
    groups: dict[str, list[int]] = {}
    for pos, spec in enumerate(specs):
        if spec.group is not None:
            groups.setdefault(spec.group, []).append(pos)
    for positions in groups.values():
        members = sorted((specs[p] for p in positions), key=lambda s: s.stage)
        for pos, member in zip(positions, members, strict=True):
            specs[pos] = member
    return Design(profile=profile, shuffle_seed=shuffle_seed, specs=tuple(specs))


_PIECE = re.compile(r"\d| ?[A-Za-z]{1,7}| ?[^\sA-Za-z\d]{1,2}|\n|\s+")


def approx_tokens(text: str) -> list[str]:
    """Token-like pieces of ``text`` for offline estimates: one per digit (SmolLM2's tokenizer
    splits every digit, which makes the CSV tables ~9,200 tokens for ~9,850 characters), one per
    line break, one per up to seven letters or two punctuation marks with a leading space.
    Within about 2% of SmolLM2's token counts on this suite's data-bearing prompts and 6% on
    the short B3 prompts (checked by a test when the model is installed)."""
    return _PIECE.findall(text)


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _span_cost(p0: int, p1: int, base: float, attention: float) -> float:
    """Seconds to process positions [p0, p1): a fixed cost per token plus attention over every
    earlier position (linear in the position, so quadratic over a long prompt)."""
    return base * (p1 - p0) + attention * (p1 * p1 - p0 * p0) / 2


def estimate_seconds(
    design: Design,
    prompt_text: Callable[[RequestSpec], str],
    *,
    prefill_s_per_token: float = 0.0063,
    gen_s_per_token: float = 0.02,
    attention_s_per_position: float = 1.4e-6,
    decode_s_per_position: float = 5e-6,
    cache_states: int = 1,
    tokens: Callable[[str], Sequence[str]] = approx_tokens,
) -> dict[str, float]:
    """Estimate the serial runtime of ``design`` on the embedded llama.cpp server.

    Simulates the server's prompt cache: the KV cache of the previous call plus an LRU RAM
    cache of ``cache_states`` saved states (1 = only the previous call, which is what the local
    engine's 128 MiB RAM cache amounts to for ~12k-token prompts, whose states are larger than
    that; a 2 GiB cache holds about seven). A call re-processes only what follows the longest
    prefix it shares with any of them; every token costs ``prefill_s_per_token`` plus
    ``attention_s_per_position`` per earlier position, so a long prompt costs quadratically.
    Output tokens come from :data:`OUTPUT_TOKENS` and cost ``gen_s_per_token`` plus
    ``decode_s_per_position`` per earlier position (decoding re-reads the whole KV cache for
    every token: ~23 KB per position for SmolLM2-135M).

    The prefill defaults are measured for SmolLM2-135M (Q4_1, llama.cpp 0.3.36) on the 2-core
    reference machine: CPU time per prompt token was 11.4 ms + 2.54 µs per earlier position on
    one thread (13.0 s for tokens 0-1k, 16.1 s for 1k-2k, 39.3 s for 2k-4k, 109 s for 4k-8k),
    halved here for the server's two threads (an uncontended machine). Generation uses the
    ~50 tokens/s of short-context decoding plus a KV-cache term measured the same way (0.125
    CPU-s per output token at position 12,129 on one thread). A measured run is the authority;
    this model only ranks designs.

    Returns:
        ``calls``, ``output_tokens``, ``prefill_tokens`` (not served from a cache),
        ``generation_s``, ``prefill_s`` and ``total_s``.
    """
    kv: list[str] = []
    cache: list[list[str]] = []
    out_tokens = prefill_tokens = 0.0
    gen_s = pre_s = 0.0
    for spec in design.specs:
        toks = list(tokens(prompt_text(spec)))
        reuse = max((_common_prefix(c, toks) for c in [kv, *cache]), default=0)
        reuse = min(reuse, len(toks) - 1)  # the last prompt token is always evaluated
        prefill_tokens += len(toks) - reuse
        pre_s += _span_cost(reuse, len(toks), prefill_s_per_token, attention_s_per_position)
        n_out = OUTPUT_TOKENS[spec.kind]
        out_tokens += n_out
        gen_s += _span_cost(len(toks), len(toks) + n_out, gen_s_per_token, decode_s_per_position)
        kv = toks
        keep = (
            [c for c in cache if c != toks][len(cache) - cache_states + 1 :]
            if cache_states > 1
            else []
        )
        cache = [*keep, toks]
    return {
        "calls": float(len(design.specs)),
        "output_tokens": out_tokens,
        "prefill_tokens": prefill_tokens,
        "generation_s": gen_s,
        "prefill_s": pre_s,
        "total_s": gen_s + pre_s,
    }
