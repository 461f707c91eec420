"""Item generation provably depends on the seal (docs/workflow.md, ``sealedeval generate``).

Every suite's items derive their seeds from the config seed *and* the rubric hash, so a different
rubric gives different cases: nobody can pick a favourable cohort after looking, and keep the
seal. If a suite's generation stopped deriving from the rubric hash, this test fails for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import REPO

from sealedeval.config import load_config
from sealedeval.keys import suite_seed
from sealedeval.stages.pipeline import generate_items, items_meta


@pytest.mark.parametrize("suite", ["golden", "bloodpanel", "grounding"])
def test_items_change_with_the_rubric_hash(suite: str) -> None:
    cfg = load_config(REPO, ["config/tiny.yaml"])
    one = generate_items(cfg, suite, "1" * 64)
    assert generate_items(cfg, suite, "1" * 64) == one  # deterministic
    assert generate_items(cfg, suite, "2" * 64) != one  # and bound to the seal
    meta = items_meta(cfg, suite, "1" * 64)
    assert meta["rubric_sha256"] == "1" * 64
    assert meta["seed"] == str(suite_seed(cfg, suite, "1" * 64))


def test_the_suite_seed_mixes_config_seed_rubric_and_suite(tmp_path: Path) -> None:
    cfg = load_config(REPO, ["config/tiny.yaml"])
    base = suite_seed(cfg, "golden", "1" * 64)
    assert suite_seed(cfg, "golden", "2" * 64) != base
    assert suite_seed(cfg, "bloodpanel", "1" * 64) != base
    other = tmp_path / "seed.yaml"
    other.write_text("project: {name: x, seed: 8}\n")
    assert (
        suite_seed(load_config(REPO, ["config/tiny.yaml", str(other)]), "golden", "1" * 64) != base
    )
