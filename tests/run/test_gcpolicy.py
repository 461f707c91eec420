"""The collector policy of runs and builds: frozen while inside, restored after."""

from __future__ import annotations

import gc

from sealedeval.run.gcpolicy import YOUNG_THRESHOLD, keep_alive, quiet_gc


def test_quiet_gc_freezes_raises_the_threshold_and_restores_both() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with quiet_gc():
        assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
        made = [[i] for i in range(1000)]  # containers made inside: not frozen yet
        inside = gc.get_freeze_count()
        keep_alive()  # ... now they are
        assert gc.get_freeze_count() >= inside + len(made)
        with quiet_gc():
            assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
        assert gc.get_threshold()[0] >= YOUNG_THRESHOLD  # an inner exit restores nothing
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0 or gc.get_freeze_count() <= frozen


def test_keep_alive_outside_a_block_freezes_nothing() -> None:
    frozen = gc.get_freeze_count()
    keep_alive()
    assert gc.get_freeze_count() == frozen
