"""Per-kind options (engines/schemas.py + the central schema) and Retry-After beyond 120 s.

A key a kind does not read, or a required key left out, must be one line naming the engine, the
key and the kind — for every built-in kind — and a server's Retry-After is honoured up to the
engine's ``retry_after_max_s`` (a longer one ends the call at once), with the wait shown.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealedeval.config import load_config, load_schema
from sealedeval.engines.base import EngineError
from sealedeval.engines.schemas import BUILTIN_KINDS, KindOptions, kind_options
from sealedeval.engines.schemas import check_engine as _check
from sealedeval.errors import UserError
from sealedeval.run.retry import DEFAULT_RETRY_AFTER_MAX_S, Attempts, RetryPolicy, with_retries

CENTRAL = load_schema()["properties"]["engines"]["additionalProperties"]["properties"]
"""The dispatcher's keys every kind takes, typed by the central schema."""
COMMON = frozenset(CENTRAL)
KINDS = {k: kind_options(k) for k in BUILTIN_KINDS}


def check_engine(name: str, section: dict[str, Any], where: str) -> dict[str, Any]:
    return _check(name, section, where, CENTRAL)


VALID: dict[str, dict[str, Any]] = {
    "openai_chat": {"kind": "openai_chat", "base_url": "http://127.0.0.1:1/v1"},
    "anthropic": {"kind": "anthropic", "model": "claude-x", "api_key_env": "K"},
    "replay": {"kind": "replay", "source": "archive/raw/golden/local"},
    "local": {"kind": "local"},
    "reference": {"kind": "reference"},
    "imported": {"kind": "imported", "model": "google/gemma-2b"},
    "kantesti": {"kind": "kantesti", "base_url": "http://127.0.0.1:1"},
}
FOREIGN = {  # a key some other kind takes, per kind
    "openai_chat": "prompt_cache",
    "anthropic": "n_ctx",
    "replay": "base_url",
    "local": "price_cache_read_per_mtok",
    "reference": "source",
    "imported": "variant",
    "kantesti": "anthropic_version",
}


def test_every_built_in_kind_has_options_and_the_tables_cover_it() -> None:
    assert set(VALID) == set(KINDS) == set(FOREIGN)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_a_valid_section_passes_and_a_foreign_key_is_one_line_naming_the_kind(kind: str) -> None:
    check_engine("e", VALID[kind], "cfg.yaml")
    key = FOREIGN[kind]
    with pytest.raises(UserError) as e:
        check_engine("e", VALID[kind] | {key: "x"}, "cfg.yaml")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"cfg.yaml: engines.e.{key}: not an option of kind {kind}; it is an ")


@pytest.mark.parametrize("kind", sorted(VALID))
def test_each_required_key_is_checked(kind: str) -> None:
    for key in sorted(KINDS[kind].required):  # type: ignore[union-attr]
        section = {k: v for k, v in VALID[kind].items() if k != key}
        with pytest.raises(UserError, match=f"^cfg.yaml: engines.e: kind {kind} needs {key}$"):
            check_engine("e", section, "cfg.yaml")


def test_cache_prices_are_options_of_the_kind_with_a_cache_only() -> None:
    prices = {"price_cache_write_per_mtok": 3.75, "price_cache_read_per_mtok": 0.3}
    check_engine("e", VALID["anthropic"] | prices, "c")
    with pytest.raises(UserError, match="not an option of kind openai_chat"):
        check_engine("e", VALID["openai_chat"] | prices, "c")
    assert "retry_after_max_s" in COMMON


def test_a_plugin_kind_registers_its_options_with_the_kind() -> None:
    from sealedeval.engines.base import Capabilities, engine_kind

    name = "test_plugin_kind_opts"
    options = KindOptions.from_schema(
        {"required": ["endpoint"], "properties": {"endpoint": {}, "region": {"enum": ["eu"]}}},
        "test",
    )
    engine_kind(name, Capabilities(), options=options)(
        lambda config, **kw: None  # type: ignore[arg-type,return-value]
    )
    check_engine("p", {"kind": name, "endpoint": "/x", "region": "eu"}, "c")
    with pytest.raises(UserError, match=f"kind {name} needs endpoint"):
        check_engine("p", {"kind": name}, "c")
    with pytest.raises(UserError, match=f"engines.p.source: not an option of kind {name}"):
        check_engine("p", {"kind": name, "endpoint": "/x", "source": "y"}, "c")
    # its own schema types its own option, in the central schema's words
    with pytest.raises(UserError, match=r"^c: engines\.p\.region: 'us' is not one of \['eu'\]$"):
        check_engine("p", {"kind": name, "endpoint": "/x", "region": "us"}, "c")
    with pytest.raises(UserError, match=r"not an option of kind .*; did you mean 'region'\?"):
        check_engine("p", {"kind": name, "endpoint": "/x", "regoin": "eu"}, "c")
    # the central keys keep their types whatever the kind
    with pytest.raises(UserError, match=r"engines\.p\.concurrency: 0 is less than"):
        check_engine("p", {"kind": name, "endpoint": "/x", "concurrency": 0}, "c")
    with pytest.raises(ValueError, match="already has registered options"):
        engine_kind("openai_chat", Capabilities(), options=options)


def test_every_built_in_option_file_sits_beside_its_kind() -> None:
    here = Path(__file__).resolve().parents[2] / "src/sealedeval/engines"
    for kind in BUILTIN_KINDS:
        assert (here / f"{kind}.py").is_file() and (here / f"{kind}.options.yaml").is_file()
    # no kind's option is one of the dispatcher's (the central schema types those)
    for kind, opts in KINDS.items():
        assert opts is not None
        assert not (set(opts.properties) - {"model"}) & COMMON, kind


def _project(tmp_path: Path, engines: dict[str, Any]) -> Path:
    (tmp_path / "config").mkdir()
    doc = {
        "project": {"name": "t", "seed": 1},
        "engines": engines,
        "suites": {"golden": {"engines": sorted(engines)}},
    }
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path


def test_the_central_schema_types_the_new_keys(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "claude": VALID["anthropic"]
            | {
                "prompt_cache": "system",
                "json_output": "off",
                "retry_after_max_s": 900,
                "price_cache_write_per_mtok": 3.75,
            },
            "old": VALID["replay"] | {"match": "item", "json_schema": False},
        },
    )
    cfg = load_config(root)
    assert cfg.engine("claude").extra["prompt_cache"] == "system"
    assert cfg.engine("old").extra["match"] == "item"
    (root / "config/bad.yaml").write_text("engines: {claude: {prompt_cache: always}}\n")
    with pytest.raises(UserError, match=r"engines\.claude\.prompt_cache: 'always' is not one of"):
        load_config(root, ["config/bad.yaml"])


def test_a_wrong_key_through_the_cli_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sealedeval.cli import main

    root = _project(tmp_path, {"claude": VALID["anthropic"] | {"n_ctx": 4096}})
    capsys.readouterr()
    rc = main(["run", "golden", "--root", str(root), "--engine", "claude"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    opts = COMMON | KINDS["anthropic"].names  # type: ignore[union-attr]
    assert err == (
        "sealedeval: error: config/config.yaml: engines.claude.n_ctx: not an option of kind "
        "anthropic; it is an option of kind local "
        f"(its options: {', '.join(sorted(opts - {'kind'}))})"
    )


# -- Retry-After ------------------------------------------------------------------------------


class _Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, s: float) -> None:
        self.delays.append(s)


def _retry(errors: list[EngineError], policy: RetryPolicy) -> tuple[Any, list[float], list[Any]]:
    sleeps = _Sleeps()
    waits: list[Any] = []
    calls = list(errors)

    async def call() -> str:
        if calls:
            raise calls.pop(0)
        return "ok"

    async def main() -> str:
        return await with_retries(
            call,
            policy,
            seed=1,
            attempts=Attempts(),
            sleep=sleeps,
            on_wait=lambda w, e, n: waits.append((w, e.kind, n)),
        )

    return asyncio.run(main()), sleeps.delays, waits


def test_retry_after_beyond_the_old_120_s_cap_is_honoured() -> None:
    value, delays, waits = _retry(
        [EngineError("rate_limit", "429", retry_after=300.0)], RetryPolicy(3, 0.5, 30.0)
    )
    assert value == "ok" and delays == [300.0]  # backoff_max_s 30 once capped it at 4 x 30
    assert waits == [(300.0, "rate_limit", 1)]


def test_retry_after_beyond_the_maximum_ends_the_call_at_once() -> None:
    err = EngineError("rate_limit", "HTTP 429", retry_after=DEFAULT_RETRY_AFTER_MAX_S + 1)
    with pytest.raises(EngineError) as e:
        _retry([err], RetryPolicy(3, 0.5, 30.0))
    assert e.value.kind == "rate_limit"
    assert "asked to wait 601 s, more than retry_after_max_s 600" in str(e.value)
    value, delays, _ = _retry([err], RetryPolicy(3, 0.5, 30.0, retry_after_max_s=3600))
    assert value == "ok" and delays == [601.0]


def test_the_maximum_also_bounds_the_floor() -> None:
    policy = RetryPolicy(3, 0.5, 30.0, retry_after_max_s=10.0)
    assert all(10.0 <= policy.delay(1, random.Random(s), 10.0) <= 10.0 for s in range(10))


def test_the_dispatcher_shows_each_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.anthropic_server import FakeAnthropic

    from sealedeval.config import EngineConfig
    from sealedeval.engines.anthropic import AnthropicEngine
    from sealedeval.engines.base import Request
    from sealedeval.run.dispatcher import Dispatcher, RunStats
    from sealedeval.seal.lock import SealState
    from sealedeval.store.raw import RawWriter, raw_dir

    monkeypatch.setenv("T_KEY", "sk-ant-fake-0123456789")
    req = Request("k", "golden", "g07", "A", 0, 1, ({"role": "user", "content": "hi"},), {})
    with FakeAnthropic(script=["rate_limit", "overloaded"], retry_after="0.02") as fake:
        cfg = EngineConfig(
            name="claude",
            kind="anthropic",
            model="m",
            base_url=fake.base_url,
            api_key_env="T_KEY",
            backoff_base_s=0.01,
            extra={"retry_after_max_s": 5},
        )
        eng = AnthropicEngine(cfg)
        writer = RawWriter(raw_dir(tmp_path, "golden", "claude"))
        stats = RunStats(requested=1)
        d = Dispatcher(eng, writer, SealState("golden", "a" * 64, "", False), progress=False)
        assert d.policy.retry_after_max_s == 5
        asyncio.run(d.run([req], stats))
        writer.close()
    assert stats.ok == 1
    err = capsys.readouterr().err
    # the 429 named its Retry-After; the 529 (none, and a short backoff) only the bar's note
    assert "golden/claude: g07 try 1 rate_limit: waiting " in err
    assert "(rate_limit, Retry-After 0.02 s)" in err
    assert "try 2 server" not in err
