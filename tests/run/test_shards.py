"""Shards split requests by key: a partition (every key in exactly one shard), order-free."""

from __future__ import annotations

import hashlib

import pytest

from sealedeval.errors import UserError
from sealedeval.stages.run import in_shard, marker_name, parse_shard


def test_shards_partition_the_keys() -> None:
    keys = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(1000)]
    n = 4
    owners = [[s for s in range(n) if in_shard(k, (s, n))] for k in keys]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(1 for o in owners if o == [s]) for s in range(n)]
    assert min(sizes) > 200  # roughly balanced
    assert all(in_shard(k, None) and in_shard(k, (0, 1)) for k in keys)


def test_parse_shard_and_marker() -> None:
    assert parse_shard("2/5") == (2, 5)
    assert marker_name((2, 5)) == "_run.2-of-5.json"
    assert marker_name(None) == marker_name((0, 1)) == "_run.json"
    for bad in ("5/5", "a/b", "1", "-1/3", "0/0"):
        with pytest.raises(UserError):
            parse_shard(bad)
