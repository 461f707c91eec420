"""``sealedeval init`` sets up DVC when it is installed (``dvc init``, the default remote
``storage`` beside the project, ``.dvcignore``), and says so and skips it when it is not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sealedeval.workflow import init


def test_without_dvc_init_says_so_and_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(
        init.shutil, "which", lambda cmd, *a, **k: None if cmd == "dvc" else real_which(cmd)
    )
    res = init.init_project(tmp_path / "myeval")
    assert res.dvc.startswith("dvc is not installed: skipped `dvc init`")
    assert not (tmp_path / "myeval/.dvc").exists()
    assert (tmp_path / "myeval/.dvcignore").read_text().startswith("# DVC never looks")
    assert res.git_init


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dvc") is None, reason="dvc missing")
def test_with_dvc_a_repository_and_a_default_remote(tmp_path: Path) -> None:
    res = init.init_project(tmp_path / "myeval")
    root = tmp_path / "myeval"
    config = (root / ".dvc/config").read_text()
    assert "remote = storage" in config
    assert "myeval-dvc-storage" in config
    assert res.dvc.startswith("dvc init; default remote storage → ")
    assert res.dvc.endswith("(change it: README.md)")
    assert "dvc remote modify storage url" in (root / "README.md").read_text()
    # the template's .dvcignore is kept, not replaced by dvc init's
    assert (root / ".dvcignore").read_text().startswith("# DVC never looks")
    # again, with --force: DVC is left as it is
    again = init.init_project(root, force=True)
    assert again.dvc == "kept your .dvc/ (DVC already set up)"
    assert (root / ".dvc/config").read_text() == config
