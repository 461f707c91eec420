"""Shared fixtures: a throwaway sealed project (a git repo) built from this repository's
config/ and data/, so tests exercise the real seal → run → publish → audit path offline."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.projects import PROJECT_FILES, git, make_project, sealedeval  # noqa: E402

__all__ = ["PROJECT_FILES", "REPO", "git", "make_project", "sealedeval", "shared_fixture"]

SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
"""Third-party data the tests read but this repository does not commit (published benchmark
files under their own licences): ``../shared/fixtures/`` beside the checkout, where CI has it.
docs/bloodpanel.md, "Published Kantesti files", says where the public originals are."""


def shared_fixture(name: str, *files: str) -> Path:
    """``../shared/fixtures/<name>``; the calling test is skipped, naming the missing path,
    where it (or one of ``files`` inside it) is absent, so a checkout without the shared
    directory still runs everything else."""
    where = SHARED_FIXTURES / name
    for path in [where, *(where / f for f in files)]:
        if not path.exists():
            pytest.skip(
                f"third-party fixture {path} is absent (not committed here; docs/bloodpanel.md, "
                "'Published Kantesti files', says where the public original is)"
            )
    return where


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    def factory(name: str = "proj", **kw: bool) -> Path:
        return make_project(tmp_path / name, **kw)

    return factory


# -- parallel runs: `pytest -n 2` (pytest-xdist; pyproject's addopts make it `--dist loadfile`) --

DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds (setup + call + teardown) of each test that takes 0.5 s or more, as last measured
(``python -m tests.durations LOG`` rewrites it from a ``--durations=0`` report). Only the order in
which a parallel run hands out its work units reads it: a stale or missing entry costs balance,
never a result."""
UNLISTED_S = 0.05  # a test not in durations.json
SAME_WORKER = {
    # one session-wide build (html_fixture.tiny_report, cached per process) serves both files
    "tests/publish/test_html_report.py": "tests/publish/html_fixture.py",
    "tests/publish/test_html_browser.py": "tests/publish/html_fixture.py",
}
"""Test files that share a per-process build: one work unit, so it is built once."""


@pytest.hookimpl(optionalhook=True)  # an xdist hook: no error where xdist is absent
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the longest work unit first.

    A work unit is a test file (so its module fixtures, often a built and published project,
    are set up once, on one worker), or the files of ``SAME_WORKER`` together. Whenever a worker
    needs work it gets the pending unit with the most seconds in ``durations.json``: the long
    units start at once and the short ones fill in at the end, so the workers finish together
    (xdist's own order is by number of tests, which puts a file of one 90-s test last)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # only a parallel run has xdist loaded

    known: dict[str, float] = (
        json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.exists() else {}
    )

    class LongestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SAME_WORKER.get(module, module)

        def _assign_work_unit(self, node: Any) -> None:
            def seconds(unit: str) -> float:
                return sum(known.get(t, UNLISTED_S) for t in self.workqueue[unit])

            self.workqueue.move_to_end(max(self.workqueue, key=seconds), last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
