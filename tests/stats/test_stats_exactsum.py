"""``stats.ExactSum``: a sum taken a batch at a time is ``math.fsum`` of every value, whatever
the batches (an analysis by chunk must give the numbers of one reading rows whole)."""

from __future__ import annotations

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from sealedeval.stats import ExactSum
from sealedeval.stats.metrics import StatusCounts, status_counts

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def _summed(values: list[float], cuts: list[int]) -> float:
    total = ExactSum()
    edges = [0, *sorted(c % (len(values) + 1) for c in cuts), len(values)]
    for a, b in itertools.pairwise(edges):
        total.add(values[a:b])
    return total.value


@given(st.lists(finite, max_size=60), st.lists(st.integers(0, 1000), max_size=12))
def test_any_batches_sum_to_the_fsum_of_all(values: list[float], cuts: list[int]) -> None:
    assert _summed(values, cuts) == math.fsum(values)


def test_tenths_in_batches_round_as_one_sum() -> None:
    values = [0.1] * 10
    assert sum(math.fsum(values[a:b]) for a, b in ((0, 3), (3, 9), (9, 10))) != 1.0
    assert _summed(values, [3, 9]) == math.fsum(values) == 1.0


def test_wide_magnitudes_and_cancellation() -> None:
    values = [1e300, 1.0, -1e300, 1e-300, 3.0, -1.0]
    assert _summed(values, [1, 3, 4]) == math.fsum(values) == 3.0 + 1e-300
    assert ExactSum().value == 0.0
    inf = ExactSum()
    inf.add([1.0, math.inf])
    inf.add([2.0])
    assert inf.value == math.inf


@given(st.lists(st.tuples(st.sampled_from(["ok", "error", "refused", None]), st.text(max_size=3))))
def test_status_counts_by_row_and_by_column_agree(rows: list[tuple[str | None, str]]) -> None:
    counts = StatusCounts()
    counts.add_columns([s for s, _ in rows], [k for _, k in rows])
    assert counts.counts() == status_counts({"status": s, "error_kind": k} for s, k in rows)
    assert counts.n == len(rows) and counts.ok == sum(s == "ok" for s, _ in rows)
