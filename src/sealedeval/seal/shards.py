"""The shard plan: how a suite's requests are split into run jobs, as sealed with the design.

``shards: N`` under a suite splits each of its engines' requests into N shards, one run job
each (a SLURM job, a Kubernetes indexed-job pod, a local process). Which shard answers a
request is a function of its request key alone (``PARTITION``), never of the machine, the
order of the request list or the job that ran first: so a shard's key set can be recomputed
by anyone from the sealed items, and the merge (``stages/merge.py``) can prove every shard
held exactly its own keys.

The plan sealed in the design (``seal/design.py``, key ``shards``) names the partition
function and its version and N per engine. A partition function that changes what it does
gets a new version, so a design sealed under the old one is reported as changed, not silently
re-read. A changed N after the seal is a design change the audit discloses like a changed
parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sealedeval.errors import UserError

PARTITION = "sealedeval.shard.key-mod/1"
"""Name and version of the partition: shard = int(first 12 hex digits of the key, base 16) mod N.

The request key is a sha256-derived hex string (``keys.py``), so its leading 48 bits are
uniform and the shards are balanced up to sampling noise."""

KEY_HEX_DIGITS = 12


def shard_of(request_key: str, count: int) -> int:
    """The shard (0-based) of ``count`` that answers ``request_key`` (``PARTITION``)."""
    if count < 1:
        raise UserError(f"shards: {count}: need at least 1")
    try:
        head = int(request_key[:KEY_HEX_DIGITS], 16)
    except ValueError:
        raise UserError(f"request key {request_key!r}: not a hex key, cannot shard it") from None
    return head % count


def in_shard(request_key: str, shard: tuple[int, int] | None) -> bool:
    """Whether ``shard`` (index, count) answers ``request_key``; every key is in no-shard."""
    if shard is None or shard[1] == 1:
        return True
    return shard_of(request_key, shard[1]) == shard[0]


def split(keys: Sequence[str], count: int) -> list[list[str]]:
    """``keys`` split into ``count`` lists by ``PARTITION`` (each in the order given)."""
    out: list[list[str]] = [[] for _ in range(count)]
    for k in keys:
        out[shard_of(k, count)].append(k)
    return out


def suite_shards(section: Mapping[str, Any]) -> int:
    """N for a suite's config section (``shards``, default 1)."""
    n = section.get("shards", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserError(f"suites.*.shards: {n!r}: need an integer >= 1")
    return n


def shard_plan(section: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan sealed in a suite's design: the partition and N per engine; None when the
    suite is not sharded (N = 1), so an unsharded design reads as it always did."""
    n = suite_shards(section)
    if n == 1:
        return None
    engines = sorted(str(e) for e in section.get("engines") or [])
    return {"partition": PARTITION, "n": {e: n for e in engines}}


def legacy_plan(sealed_suite: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan of a sealed design: its ``shards`` key, or, for a design sealed before the
    plan was recorded, the one its ``parameters.shards`` implied (then ``PARTITION`` was the
    only partition there was)."""
    if "shards" in sealed_suite:
        plan = sealed_suite.get("shards")
        return dict(plan) if plan else None
    n = (sealed_suite.get("parameters") or {}).get("shards", 1)
    if not isinstance(n, int) or n <= 1:
        return None
    engines = sorted(str(e) for e in sealed_suite.get("engines") or {})
    return {"partition": PARTITION, "n": {e: n for e in engines}}


def plan_changes(sealed: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> list[str]:
    """``shards...: old → new`` for each difference between two plans (None: unsharded)."""
    a = dict(sealed or {})
    b = dict(now or {})
    out = []
    if a and b and a.get("partition") != b.get("partition"):
        out.append(f"shards.partition: {a.get('partition')} → {b.get('partition')}")
    na: Mapping[str, Any] = a.get("n") or {}
    nb: Mapping[str, Any] = b.get("n") or {}
    for e in sorted(set(na) | set(nb)):
        if e in na and e in nb and na[e] != nb[e]:
            out.append(f"shards.{e}: {na[e]} → {nb[e]}")
        elif e in na and not nb:
            out.append(f"shards.{e}: {na[e]} → 1")
        elif e in nb and not na:
            out.append(f"shards.{e}: 1 → {nb[e]}")
    return out
