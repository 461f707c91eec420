"""Golden through the batch fakes against a live run on the same fake answers.

One throwaway sealed project, two engines on one fake server: ``live`` (chat calls) and ``bat``
(``batch: true``, split at a small configured limit). The batch run must store the same answers
and responses, grade the same and analyse to the same numbers, at half the cost; its batch ids
go into the ledger and its state file is gone once the rows are stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.projects import make_project
from tests.run._support import fake_engine_config

from sealedeval.store import ledger
from sealedeval.store.raw import latest_rows, raw_dir, raw_files, read_raw

LIMIT = 7  # requests per batch: golden's 40 requests make 6 batches


def _cli(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    return rc, out + err


def _config(root: Path, engines: dict[str, Any], suite: dict[str, Any]) -> tuple[str, ...]:
    doc = {
        "engines": engines,
        "suites": {
            "golden": suite,
            "bloodpanel": {"engines": ["reference"], "enabled": False},
            "grounding": {"engines": ["reference"], "enabled": False},
        },
    }
    (root / "config/batch.yaml").write_text(yaml.safe_dump(doc, sort_keys=True))
    return ("-c", "config/tiny.yaml", "-c", "config/batch.yaml")


def _rows(root: Path, engine: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    files = [f for f in raw_files(root, "golden") if f.parent.name == engine]
    rows = latest_rows(read_raw(files).to_pylist()).values()
    return {(r["item_id"], r["condition"], r["repeat"]): r for r in rows}


def _strip_cost(x: Any) -> Any:
    """The analysis without its cost figures (the one thing a batch changes) and timings."""
    if isinstance(x, dict):
        return {
            k: _strip_cost(v)
            for k, v in x.items()
            if "cost" not in k and "latency" not in k and k not in ("engine", "engines")
        }
    if isinstance(x, list):
        return [_strip_cost(v) for v in x]
    if isinstance(x, str):  # an engine identity: its name, and the batch flag, differ
        return x.replace('"name":"bat"', '"name":"live"').replace(',"batch":true', "")
    return x


def _costs(x: Any, path: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(x, dict):
        for k, v in x.items():
            if "cost" in k and isinstance(v, int | float):
                out[f"{path}/{k}"] = float(v)
            else:
                out |= _costs(v, f"{path}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out |= _costs(v, f"{path}/{i}")
    return out


def _compare(root: Path, cfgs: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    live, bat = _rows(root, "live"), _rows(root, "bat")
    assert live.keys() == bat.keys() and len(live) > LIMIT
    for k, lr in live.items():
        br = bat[k]
        assert (br["status"], br["output_text"], br["response"]) == (
            lr["status"],
            lr["output_text"],
            lr["response"],
        ), k
        assert (br["tokens_in"], br["tokens_out"]) == (lr["tokens_in"], lr["tokens_out"])
        assert lr["cost_usd"] > 0 and br["cost_usd"] == pytest.approx(0.5 * lr["cost_usd"])
    for stage in ("grade", "analyze"):
        rc, out = _cli(root, stage, "golden", *cfgs, capsys=capsys)
        assert rc == 0, out[-3000:]
    from sealedeval.stages import artifacts

    graded: dict[str, dict[tuple[Any, ...], Any]] = {"live": {}, "bat": {}}
    for r in artifacts.read_graded(root / "results/graded/golden.parquet"):
        key = (r["item_id"], r["condition"], r["repeat"], r["grader"])
        graded[str(r["engine"])][key] = (r["status"], r["passed"], r.get("score"))
    assert graded["live"] and graded["live"] == graded["bat"]
    doc = json.loads((root / "results/analysis/golden.json").read_text())
    per = _engine_sections(doc)
    assert _strip_cost(per["live"]) == _strip_cost(per["bat"])
    lc, bc = _costs(per["live"]), _costs(per["bat"])
    assert lc.keys() == bc.keys() and any(v > 0 for v in lc.values())
    for k, v in lc.items():
        assert bc[k] == pytest.approx(0.5 * v), k


def _engine_sections(doc: Any) -> dict[str, Any]:
    """Every part of the analysis keyed by engine name, gathered per engine."""
    out: dict[str, Any] = {"live": [], "bat": []}

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in out:
                    out[k].append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    assert out["live"] and len(out["live"]) == len(out["bat"])
    return out


def test_golden_openai_batch_matches_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    with FakeOpenAI() as fake:
        live = fake_engine_config(fake.base_url, price_in_per_mtok=2.5, price_out_per_mtok=10)
        bat = live | {"batch": True, "batch_poll_seconds": 0.01, "batch_max_requests": LIMIT}
        cfgs = _config(
            root,
            {"live": live, "bat": bat},
            {"engines": ["live", "bat"], "branch_engines": [], "max_tokens": 32},
        )
        for e in ("live", "bat"):
            rc, out = _cli(
                root, "run", "golden", "--engine", e, "--no-progress", *cfgs, capsys=capsys
            )
            assert rc == 0, out[-3000:]
        assert "submitted batch batch_" in out and "batches: " in out
        n = len(_rows(root, "bat"))
        assert fake.batch_creates() == -(-n // LIMIT)
        chats = [r for r in fake.requests if r.path == "/v1/chat/completions"]
        assert len(chats) == n  # the live run's calls only: the batch run made none
    entry = ledger.read(root)[-1]
    assert entry["engine"] == "bat" and len(entry["batches"]) == -(-n // LIMIT)
    assert not (raw_dir(root, "golden", "bat") / "_batch.json").exists()
    _compare(root, cfgs, capsys)


KEY = "sk-ant-batch-7f3a9c1d5b"
ENV = "SEALEDEVAL_BATCH_ANTHROPIC_KEY"


@pytest.mark.slow
def test_golden_anthropic_batch_matches_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, KEY)
    root = make_project(tmp_path / "proj")
    with FakeAnthropic(api_key=KEY) as fake:
        live = {
            "kind": "anthropic",
            "model": "claude-fake",
            "base_url": fake.base_url,
            "api_key_env": ENV,
            "concurrency": 2,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "price_in_per_mtok": 3,
            "price_out_per_mtok": 15,
            "prompt_cache": "off",  # cache splits depend on call order; the totals do not
        }
        bat = live | {"batch": True, "batch_poll_seconds": 0.01, "batch_max_requests": LIMIT}
        cfgs = _config(
            root,
            {"live": live, "bat": bat},
            {"engines": ["live", "bat"], "branch_engines": [], "max_tokens": 32},
        )
        for e in ("live", "bat"):
            rc, out = _cli(
                root, "run", "golden", "--engine", e, "--no-progress", *cfgs, capsys=capsys
            )
            assert rc == 0, out[-3000:]
        n = len(_rows(root, "bat"))
        assert fake.batch_creates() == -(-n // LIMIT)
        assert sum(1 for r in fake.requests if r.path == "/v1/messages") == n
        leaks = [p for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == []
    _compare(root, cfgs, capsys)
