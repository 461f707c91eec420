"""The batch fakes against the providers' official clients: what ``openai`` and ``anthropic``
send and parse, the fakes accept and answer, statuses move over polls, and partial failures,
expiry and limits look as the clients' models expect them."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

KEY = "sk-fake-batch-0123456789"


def _line(key: str, text: str) -> dict[str, Any]:
    return {
        "custom_id": key,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": text}]},
    }


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def test_openai_client_drives_a_batch_through_every_status_to_its_files() -> None:
    faults = {"FAIL": ["rate_limit"], "LATE": ["expired"], "CUT": ["truncated"]}
    with FakeOpenAI(api_key=KEY, faults=faults, batch_polls=2) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
        texts = {"k1": "one", "k2": "two FAIL", "k3": "three LATE", "k4": "four CUT"}
        up = client.files.create(
            file=("in.jsonl", io.BytesIO(_jsonl([_line(k, t) for k, t in texts.items()]))),
            purpose="batch",
        )
        assert up.purpose == "batch" and up.bytes > 0
        batch = client.batches.create(
            input_file_id=up.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert batch.status == "validating" and batch.request_counts is not None
        seen = [batch.status]
        while batch.status not in ("completed", "failed", "expired", "cancelled"):
            batch = client.batches.retrieve(batch.id)
            seen.append(batch.status)
        # two polls per step: validating, in_progress, finalizing, then the end
        steps = ["validating", "in_progress", "finalizing"]
        assert seen == [s for s in steps for _ in (0, 1)] + ["expired"]
        assert batch.request_counts.total == 4  # type: ignore[union-attr]
        assert (batch.request_counts.completed, batch.request_counts.failed) == (2, 2)  # type: ignore[union-attr]
        assert batch.output_file_id and batch.error_file_id
        out = [json.loads(x) for x in client.files.content(batch.output_file_id).text.splitlines()]
        err = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
    by_key = {x["custom_id"]: x for x in out + err}
    assert set(by_key) == set(texts)
    assert by_key["k1"]["response"]["status_code"] == 200
    assert by_key["k1"]["response"]["body"]["choices"][0]["message"]["content"] == "ANSWER: one"
    assert by_key["k4"]["response"]["body"]["choices"][0]["finish_reason"] == "length"
    assert by_key["k2"]["response"]["status_code"] == 429
    assert by_key["k2"]["response"]["body"]["error"]["type"] == "rate_limit_error"
    assert by_key["k3"]["response"] is None
    assert by_key["k3"]["error"]["code"] == "batch_expired"
    assert fake.batch_creates() == 1


def test_openai_batch_over_the_limit_fails_validation_and_a_bad_key_is_refused() -> None:
    with FakeOpenAI(api_key=KEY, batch_max_requests=2) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
        data = _jsonl([_line(f"k{i}", "x") for i in range(3)])
        up = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
        batch = client.batches.create(
            input_file_id=up.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        batch = client.batches.retrieve(batch.id)
        assert batch.status == "failed"
        assert batch.errors is not None and batch.errors.data
        assert batch.errors.data[0].code == "too_many_requests"
        bad = openai.OpenAI(base_url=fake.base_url, api_key="wrong-key", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.batches.retrieve(batch.id)
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")


def test_openai_batch_cancel_ends_cancelled_with_every_line_in_the_error_file() -> None:
    with FakeOpenAI(api_key=KEY) as fake:
        fake.batch_hold.set()
        client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
        up = client.files.create(
            file=("in.jsonl", io.BytesIO(_jsonl([_line("k1", "x")]))), purpose="batch"
        )
        b = client.batches.create(
            input_file_id=up.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        for _ in range(3):
            b = client.batches.retrieve(b.id)
        assert b.status == "in_progress"  # held
        assert client.batches.cancel(b.id).status == "cancelling"
        b = client.batches.retrieve(b.id)
        assert b.status == "cancelled" and b.error_file_id and not b.output_file_id
        line = json.loads(client.files.content(b.error_file_id).text)
        assert line["error"]["code"] == "batch_cancelled"


def _params(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-fake",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


def test_anthropic_client_drives_a_message_batch_to_its_results() -> None:
    faults = {"BUSY": ["overloaded"], "LATE": ["expired"]}
    with FakeAnthropic(api_key=KEY, faults=faults, batch_polls=2) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key=KEY, max_retries=0)
        batch = client.messages.batches.create(
            requests=[
                {"custom_id": "k1", "params": _params("one")},  # type: ignore[typeddict-item]
                {"custom_id": "k2", "params": _params("two BUSY")},  # type: ignore[typeddict-item]
                {"custom_id": "k3", "params": _params("three LATE")},  # type: ignore[typeddict-item]
                {"custom_id": "k4", "params": _params("four", seed=3)},  # type: ignore[typeddict-item]
            ]
        )
        assert batch.processing_status == "in_progress"
        assert batch.request_counts.processing == 4
        first = client.messages.batches.retrieve(batch.id)
        assert first.processing_status == "in_progress" and first.results_url is None
        done = client.messages.batches.retrieve(batch.id)
        assert done.processing_status == "ended" and done.results_url
        counts = done.request_counts
        assert (counts.succeeded, counts.errored, counts.expired, counts.processing) == (1, 2, 1, 0)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["k1"].type == "succeeded"
    assert results["k1"].message.content[0].text == "ANSWER: one"  # type: ignore[union-attr]
    assert results["k2"].type == "errored"
    assert results["k2"].error.error.type == "overloaded_error"  # type: ignore[union-attr]
    assert results["k3"].type == "expired"
    # a param the Messages API does not know is the request's error, not the batch's
    assert results["k4"].type == "errored"
    assert "seed" in results["k4"].error.error.message  # type: ignore[union-attr]
    assert fake.batch_creates() == 1


def test_anthropic_batch_refusals_and_cancel() -> None:
    with FakeAnthropic(api_key=KEY, batch_max_requests=2) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key=KEY, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="at most 2"):
            client.messages.batches.create(
                requests=[{"custom_id": f"k{i}", "params": _params("x")} for i in range(3)]  # type: ignore[misc]
            )
        with pytest.raises(anthropic.BadRequestError, match="custom_id"):
            client.messages.batches.create(
                requests=[{"custom_id": "no spaces", "params": _params("x")}]  # type: ignore[list-item]
            )
        fake.batch_hold.set()
        b = client.messages.batches.create(
            requests=[{"custom_id": "k1", "params": _params("x")}]  # type: ignore[list-item]
        )
        assert client.messages.batches.retrieve(b.id).processing_status == "in_progress"
        assert client.messages.batches.cancel(b.id).processing_status == "canceling"
        ended = client.messages.batches.retrieve(b.id)
        assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
        assert [r.result.type for r in client.messages.batches.results(b.id)] == ["canceled"]
        bad = anthropic.Anthropic(base_url=fake.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            bad.messages.batches.retrieve(b.id)
        assert fake.batch_creates() == 1
