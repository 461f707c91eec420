"""A batch run killed mid-batch re-attaches instead of paying twice, and so does one whose create
answer was lost (a reset, a proxy's 502) or that was killed between the provider accepting a
batch and the state file's write; per-request errors and expired requests become error rows of
their kind and are asked again in follow-up batches."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fakes.openai_server import FakeOpenAI
from tests.projects import make_project
from tests.run._support import cli_popen, fake_engine_config

from sealedeval.store import ledger
from sealedeval.store.raw import latest_rows, raw_dir, raw_files, read_raw

DEPLOY = "Did deploy 19 succeed?"
MIRA = "How many deploys did mira make?"


def _cli(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from sealedeval.cli import main

    capsys.readouterr()
    rc = main([args[0], "--root", str(root), *args[1:]])
    out, err = capsys.readouterr()
    return rc, out + err


def _setup(root: Path, base_url: str, **over: Any) -> tuple[str, ...]:
    eng = fake_engine_config(base_url, price_in_per_mtok=1, price_out_per_mtok=2)
    eng |= {"batch": True, "batch_poll_seconds": 0.01, "batch_max_requests": 16} | over
    doc = {
        "engines": {"bat": eng},
        "suites": {"golden": {"engines": ["bat"], "repeats": 1, "max_tokens": 32}},
    }
    (root / "config/batch.yaml").write_text(yaml.safe_dump(doc, sort_keys=True))
    return ("run", "golden", "--engine", "bat", "--no-progress", "-c", "config/batch.yaml")


def _all_rows(root: Path) -> list[dict[str, Any]]:
    return read_raw(raw_files(root, "golden")).to_pylist()


def _latest(root: Path) -> dict[str, dict[str, Any]]:
    return latest_rows(_all_rows(root))


@pytest.mark.slow
def test_killed_mid_batch_reattaches_without_a_second_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    with FakeOpenAI() as fake:
        fake.batch_hold.set()  # batches stay in_progress: the run waits on them
        args = _setup(root, fake.base_url)
        state = raw_dir(root, "golden", "bat") / "_batch.json"
        proc = cli_popen(root, *args)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            state.exists()
            and len(json.loads(state.read_text())["batches"]) == 3
            and any(r.path.startswith("/v1/batches/") for r in fake.requests)
        ):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # after submit, before completion
        proc.communicate(timeout=30)
        submitted = fake.batch_creates()
        recorded = json.loads(state.read_text())
        assert submitted == 3 and len(recorded["batches"]) == 3  # 40 requests at 16 a batch
        assert sorted(k for b in recorded["batches"] for k in b["keys"]) == sorted(
            set(k for b in recorded["batches"] for k in b["keys"])
        )
        assert raw_files(root, "golden") == []  # nothing answered before the kill
        text = state.read_text()
        assert "authorization" not in text.lower() and "Bearer" not in text

        fake.batch_hold.clear()
        rc, out = _cli(root, *args, capsys=capsys)
        assert rc == 0, out[-3000:]
        assert "re-attaching to 3 batch(es)" in out
        assert fake.batch_creates() == submitted  # zero second submissions
        assert not any(r.path == "/v1/chat/completions" for r in fake.requests)
    rows = _latest(root)
    assert len(rows) == 40 and {r["status"] for r in rows.values()} == {"ok"}
    assert {r["attempts"] for r in rows.values()} == {1}
    entry = ledger.read(root)[-1]
    assert entry["outcome"] == "done"
    assert entry["batches"] == [b["id"] for b in recorded["batches"]]
    assert not state.exists()


def _stored_once_at_the_batch_price(root: Path) -> None:
    """Every planned request is one stored row (not two), answered, asked by one batch, and
    priced once at half the list price (1 and 2 USD per million tokens, see ``_setup``)."""
    rows = _all_rows(root)
    assert len(rows) == 40 and len({r["request_key"] for r in rows}) == 40
    assert {r["status"] for r in rows} == {"ok"} and {r["attempts"] for r in rows} == {1}
    for r in rows:
        list_price = (r["tokens_in"] * 1 + r["tokens_out"] * 2) / 1e6
        assert r["cost_usd"] == pytest.approx(0.5 * list_price) and r["cost_usd"] > 0


@pytest.mark.slow
def test_lost_create_answers_reattach_instead_of_paying_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    # the provider accepts every create; the first's answer is reset, the third's a proxy's 502
    with FakeOpenAI(batch_create_faults=["reset", "ok", "bad_gateway"]) as fake:
        args = _setup(root, fake.base_url)
        rc, out = _cli(root, *args, capsys=capsys)
        assert rc == 0, out[-3000:]
        assert fake.batch_creates() == 3  # 40 requests at 16 a batch: one batch each, not 5
        made = list(fake.batches)
        assert out.count("found on the provider") == 2
        assert f"re-attached to batch {made[0]} (token " in out
        assert f"re-attached to batch {made[2]} (token " in out
    _stored_once_at_the_batch_price(root)
    entry = ledger.read(root)[-1]
    assert entry["outcome"] == "done" and entry["batches"] == made
    assert not (raw_dir(root, "golden", "bat") / "_batch.json").exists()


@pytest.mark.slow
def test_killed_between_acceptance_and_the_state_write_reattaches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    with FakeOpenAI() as fake:
        fake.batch_create_hold.set()  # the first create is accepted; its answer never leaves
        args = _setup(root, fake.base_url)
        state = raw_dir(root, "golden", "bat") / "_batch.json"
        proc = cli_popen(root, *args)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and fake.batch_creates() < 1:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # the batch exists; the run never learnt its id
        proc.communicate(timeout=30)
        fake.batch_create_hold.clear()
        assert fake.batch_creates() == 1
        text = state.read_text() if state.exists() else "{}"

        rc, out = _cli(root, *args, capsys=capsys)
        assert rc == 0, out[-3000:]
        assert fake.batch_creates() == 3  # the lost one, then the other two: not a fourth
        recorded = json.loads(text)  # what the killed run left: the create's intent, no id
        assert recorded["batches"] == [] and len(recorded["intents"]) == 1
        assert len(recorded["intents"][0]["keys"]) == 16
        assert "authorization" not in text.lower() and "Bearer" not in text
        first = next(iter(fake.batches))
        token = recorded["intents"][0]["token"]
        assert f"re-attached to batch {first} (token {token}) found on the provider" in out
        assert fake.batches[first].obj["metadata"] == {"sealedeval_token": token}
    _stored_once_at_the_batch_price(root)
    entry = ledger.read(root)[-1]
    assert entry["outcome"] == "done" and entry["batches"] == list(fake.batches)
    assert not state.exists()


@pytest.mark.slow
def test_errors_and_expiry_are_error_rows_then_asked_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    faults = {DEPLOY: ["rate_limit", "expired"], MIRA: ["server"]}
    with FakeOpenAI(faults=faults) as fake:
        args = _setup(root, fake.base_url, max_retries=4)
        rc, out = _cli(root, *args, capsys=capsys)
        assert rc == 0, out[-3000:]
        assert "a follow-up batch asks them again" in out
        creates = fake.batch_creates()
    rows = _latest(root)
    assert len(rows) == 40 and {r["status"] for r in rows.values()} == {"ok"}
    # both deploy requests (main, repeat): one 429 and one expired in the first batches,
    # answered in the follow-up; one mira request a 500 first
    deploy = [r for r in rows.values() if DEPLOY in r["messages"]]
    mira = [r for r in rows.values() if MIRA in r["messages"]]
    assert sorted(r["attempts"] for r in deploy) == [2, 2]
    assert sorted(r["attempts"] for r in mira) == [1, 2]
    assert creates == 3 + 1  # 3 first batches, then one follow-up of the 3 that failed
    entry = ledger.read(root)[-1]
    assert len(entry["batches"]) == creates


@pytest.mark.slow
def test_an_error_left_after_the_retries_is_the_live_paths_error_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "proj")
    # both requests of each question fail first; in the follow-up, one of each fails again
    faults = {DEPLOY: ["rate_limit"] * 3, MIRA: ["expired", "expired", "truncated"]}
    with FakeOpenAI(faults=faults) as fake:
        args = _setup(root, fake.base_url, max_retries=1)
        rc, out = _cli(root, *args, capsys=capsys)
        assert rc == 0, out[-3000:]
    rows = _latest(root)
    errors = {r["error_kind"]: r for r in rows.values() if r["status"] == "error"}
    assert sorted(errors) == ["rate_limit", "truncated"]
    rl = errors["rate_limit"]
    assert rl["attempts"] == 2 and rl["error_message"].startswith("HTTP 429")
    assert json.loads(rl["response"])["status"] == 429 and rl["cost_usd"] == 0
    tr = errors["truncated"]  # expired, asked again, cut at max_tokens: final, with its text
    assert tr["attempts"] == 2 and tr["output_text"].startswith("ANSWER: ")
    entry = ledger.read(root)[-1]
    assert entry["errors_by_kind"] == {"rate_limit": 1, "truncated": 1}
