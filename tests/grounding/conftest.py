"""Shared fixtures: the suite is generated once per session (generation takes about a second)."""

from __future__ import annotations

import pytest

from sealedeval.suites.grounding.bundle import GroundingData, build_suite


@pytest.fixture(scope="session")
def suite() -> GroundingData:
    """The published suite (corpus seed ``CORPUS_SEED``)."""
    return build_suite()
