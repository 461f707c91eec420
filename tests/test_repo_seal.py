"""The committed rubric.lock must match this repository's rubric inputs.

Otherwise README's main command fails on a fresh clone (`run` refuses a changed rubric). When a
rubric input changes on purpose, re-seal: `sealedeval seal && git add rubric.lock`.
"""

from __future__ import annotations

from tests.conftest import REPO

from sealedeval.config import load_config
from sealedeval.plugins import get_suite
from sealedeval.seal import lock


def test_committed_lock_matches_rubric_inputs() -> None:
    doc = lock.read(REPO)
    # what `sealedeval seal` seals: the suites the repository's config names
    names = sorted(load_config(REPO).data["suites"])
    now = lock.compute(REPO, {n: get_suite(n).rubric_inputs() for n in names})
    stale = [s for s in now["suites"] if now["suites"][s] != doc["suites"].get(s)]
    assert not stale, f"rubric.lock is stale for {stale}: run `sealedeval seal` and commit it"
    assert doc["sha256"] == now["sha256"]
