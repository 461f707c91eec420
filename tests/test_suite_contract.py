"""The suite contract is checked where a suite is registered, not discovered at run time.

A misspelt hook (``figure``) would silently never be called, and a hook with the wrong
arguments would fail deep inside publish; both are refused with their name when the suite is
registered (``plugins.check_suite``, which the suite registry calls).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from sealedeval import plugins
from sealedeval.errors import UserError
from sealedeval.plugins import HOOKS, REQUIRED, SuiteBase, check_suite, hook
from sealedeval.registry import Registry

SRC = Path(__file__).resolve().parents[1] / "src/sealedeval"


class Good(SuiteBase):
    name = "good"

    def rubric_inputs(self) -> list[str]:
        return []

    def figures(self, section: Any) -> list[Any]:
        return ["mine"]


def _registry() -> Registry[Any]:
    return Registry("suite", check=check_suite)


def test_a_suite_base_subclass_registers_and_only_its_own_hooks_count() -> None:
    reg = _registry()
    reg.register("good")(Good())
    suite = reg.get("good")
    assert hook(suite, "figures")(None) == ["mine"]
    for name in sorted(set(HOOKS) - {"figures"}):
        assert hook(suite, name) is None, name  # SuiteBase's placeholder is no hook


def test_a_misspelt_hook_is_refused_with_its_name() -> None:
    class Misspelt(Good):
        def figure(self, section: Any) -> list[Any]:
            return []

    with pytest.raises(UserError, match=r"`figure` is no hook .*did you mean `figures`\?"):
        _registry().register("m")(Misspelt())


def test_a_hook_with_the_wrong_arguments_is_refused_with_its_name() -> None:
    class Mistyped(Good):
        def figures(self, section: Any, extra: Any) -> list[Any]:  # type: ignore[override]
            return []

    with pytest.raises(UserError, match=r"`figures\(section, extra\)` cannot be called as "):
        _registry().register("t")(Mistyped())


def test_a_suite_written_to_the_positional_contract_is_told_the_context_record() -> None:
    """A method taking 0.1's argument list is not only refused: the line names the record that
    carries those arguments now, so the fix is one signature away."""

    class Positional(Good):
        def requests(self, cfg: Any, items: Any, engine: Any, model: str, seed: int) -> list[Any]:  # type: ignore[override]
            return []

    with pytest.raises(
        UserError,
        match=(
            r"`requests\(cfg, items, engine, model, seed\)` cannot be called as "
            r"`requests\(ctx: RequestContext\)` \(the context record `RequestContext` carries "
            r"cfg, items, engine, model, seed\)"
        ),
    ):
        _registry().register("p")(Positional())


def test_the_context_records_are_frozen_and_carry_what_each_hook_reads() -> None:
    """Each record is immutable (a hook cannot change what the next one sees) and keyword-only
    (a field added later cannot shift another), and the follow-up record extends the request
    record, so a suite that plans both phases reads them the same way."""
    import dataclasses

    for name, ctx in plugins.CONTEXTS.items():
        assert dataclasses.is_dataclass(ctx), name
        params = ctx.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, name
        assert all(f.kw_only for f in dataclasses.fields(ctx)), name
        assert name in REQUIRED or name in HOOKS, name
    assert issubclass(plugins.FollowupContext, plugins.RequestContext)
    assert issubclass(plugins.AnalyzeContext, plugins.GradeContext)
    ctx = plugins.GradeContext(cfg=None, items=[], rows=[])  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.rows = [{}]  # type: ignore[misc]
    with pytest.raises(TypeError):
        plugins.GradeContext(None, [], [])  # type: ignore[misc]


def test_a_missing_protocol_method_is_refused() -> None:
    class NoGrade:
        name = "x"

        def rubric_inputs(self) -> list[str]:
            return []

    with pytest.raises(UserError, match=r"suite 'x' .*: lacks `generate\(ctx\)`"):
        _registry().register("x")(NoGrade())
    with pytest.raises(UserError, match="lacks"):  # configured suites are checked too
        _registry().replace("x", NoGrade(), plugins.suites.info("golden"))


def test_the_suite_registry_checks_and_the_built_in_suites_pass() -> None:
    assert plugins.suites.check is check_suite
    for name in ("golden", "bloodpanel", "grounding"):
        check_suite(name, plugins.get_suite(name))


def test_every_hook_the_code_looks_up_is_in_the_list() -> None:
    """``hook()`` refuses a name not in HOOKS; this finds every literal lookup in the package
    (the Snakemake rules included), so none waits for its code path to fail."""
    looked_up: set[str] = set()
    for f in [*SRC.rglob("*.py"), *SRC.rglob("*.smk")]:
        text = f.read_text(encoding="utf-8")
        for call in ast.walk(ast.parse(text)) if f.suffix == ".py" else []:
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in ("hook", "presentation_hook")
                and len(call.args) == 2
                and isinstance(call.args[1], ast.Constant)
            ):
                looked_up.add(str(call.args[1].value))
        if f.suffix == ".smk":
            looked_up |= {
                line.split('"')[-2] for line in text.splitlines() if "hook(get_suite(" in line
            }
    assert looked_up and looked_up <= set(HOOKS) | set(REQUIRED), looked_up
    with pytest.raises(ValueError, match="not a suite hook"):
        hook(Good(), "figurs")


def test_every_adapter_lives_in_its_suites_suite_module() -> None:
    """A newcomer looks for a suite's adapter in one place: ``suites/<name>/suite.py``, for the
    built-in suites and the suite kinds alike."""
    for name in ("golden", "bloodpanel", "grounding"):
        assert type(plugins.get_suite(name)).__module__ == f"sealedeval.suites.{name}.suite"
        assert plugins.suites.target(name) == f"sealedeval.suites.{name}.suite:suite"
    for kind in ("tasks", "imported"):
        assert plugins.suite_kinds.target(kind).startswith(f"sealedeval.suites.{kind}.suite:")
    found = {p.parent.name for p in (SRC / "suites").glob("*/suite.py")}
    assert found == {"golden", "bloodpanel", "grounding", "tasks", "imported"}
