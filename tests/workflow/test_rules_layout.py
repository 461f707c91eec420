"""The rules have one source: the repository's top-level ``rules/`` (one ``.smk`` per stage).

The package reaches them through the link ``src/sealedeval/workflow/rules``, so the repository's
Snakefile, an editable install and an ``init`` project all run the same files; a built wheel
carries the files themselves (``tests/workflow/test_init_wheel.py`` runs one).
"""

from __future__ import annotations

import re

from tests.conftest import REPO

from sealedeval.workflow import WORKFLOW_DIR


def test_the_package_rules_are_the_top_level_rules() -> None:
    link = REPO / "src/sealedeval/workflow/rules"
    assert link.is_symlink() and link.resolve() == (REPO / "rules").resolve()
    assert (WORKFLOW_DIR / "rules").resolve() == (REPO / "rules").resolve()


def test_main_includes_every_rule_file_and_no_other() -> None:
    main = (WORKFLOW_DIR / "main.smk").read_text(encoding="utf-8")
    included = set(re.findall(r'^include: "rules/([a-z_]+\.smk)"$', main, flags=re.M))
    assert included == {p.name for p in (REPO / "rules").glob("*.smk")}
