"""The batch fakes against the providers' official clients: what ``openai`` and ``anthropic``
send and parse, the fakes accept and answer, statuses move over polls, and partial failures,
expiry and limits look as the clients' models expect them; batches list newest first in the
pages the clients' auto-pagination follows, OpenAI's keep their ``metadata``, and a create whose
answer is lost (reset, a proxy's 502) still made its batch, as on the real services."""

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


def _openai_batch(client: Any, text: str, **kw: Any) -> Any:
    up = client.files.create(
        file=("in.jsonl", io.BytesIO(_jsonl([_line("k1", text)]))), purpose="batch"
    )
    return client.batches.create(
        input_file_id=up.id, endpoint="/v1/chat/completions", completion_window="24h", **kw
    )


def test_openai_batches_keep_their_metadata_and_list_newest_first_in_pages() -> None:
    with FakeOpenAI(api_key=KEY) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
        made = [
            _openai_batch(client, f"t{i}", metadata={"sealedeval_token": f"tok{i}"})
            for i in range(5)
        ]
        assert made[0].metadata == {"sealedeval_token": "tok0"}
        assert client.batches.retrieve(made[3].id).metadata == {"sealedeval_token": "tok3"}
        first = client.batches.list(limit=2)
        assert [b.id for b in first.data] == [made[4].id, made[3].id] and first.has_more
        # the client's auto-pagination follows ``after`` = the page's last id until has_more ends
        listed = list(client.batches.list(limit=2))
        assert [b.id for b in listed] == [b.id for b in reversed(made)]
        assert [b.metadata for b in listed][-1] == {"sealedeval_token": "tok0"}
        last = client.batches.list(limit=2, after=made[1].id)
        assert [b.id for b in last.data] == [made[0].id] and last.has_more is False
        assert client.batches.list().data[0].id == made[4].id  # default limit 20
        with pytest.raises(openai.BadRequestError, match="limit"):
            client.batches.list(limit=101)
        with pytest.raises(openai.BadRequestError, match="metadata"):
            _openai_batch(client, "x", metadata={f"k{i}": "v" for i in range(17)})
        with pytest.raises(openai.BadRequestError, match="metadata"):
            _openai_batch(client, "x", metadata={"k": "v" * 513})
        assert fake.batch_creates() == 5  # refused creates make no batch


def test_openai_create_whose_answer_is_lost_still_made_the_batch() -> None:
    with FakeOpenAI(api_key=KEY, batch_create_faults=["reset", "bad_gateway"]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
        with pytest.raises(openai.APIConnectionError):
            _openai_batch(client, "one", metadata={"sealedeval_token": "lost"})
        with pytest.raises(openai.InternalServerError):
            _openai_batch(client, "two", metadata={"sealedeval_token": "proxy"})
        kept = _openai_batch(client, "three", metadata={"sealedeval_token": "fine"})
        listed = list(client.batches.list(limit=100))
        assert [b.metadata for b in listed] == [
            {"sealedeval_token": "fine"},
            {"sealedeval_token": "proxy"},
            {"sealedeval_token": "lost"},
        ]
        assert listed[0].id == kept.id and fake.batch_creates() == 3
        # the lost ones run like any other
        lost = listed[2]
        while lost.status not in ("completed", "failed", "expired", "cancelled"):
            lost = client.batches.retrieve(lost.id)
        assert lost.status == "completed" and lost.output_file_id


def test_anthropic_message_batches_list_newest_first_in_both_directions() -> None:
    with FakeAnthropic(api_key=KEY) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key=KEY, max_retries=0)
        made = [
            client.messages.batches.create(
                requests=[
                    {"custom_id": f"k{j}", "params": _params(f"b{i}")}  # type: ignore[typeddict-item]
                    for j in range(i + 1)
                ]
            )
            for i in range(5)
        ]
        first = client.messages.batches.list(limit=2)
        assert [b.id for b in first.data] == [made[4].id, made[3].id] and first.has_more
        assert first.last_id == made[3].id
        # auto-pagination follows ``after_id`` = the page's last_id
        listed = list(client.messages.batches.list(limit=2))
        assert [b.id for b in listed] == [b.id for b in reversed(made)]
        # a listed batch shows how many requests it holds, never their custom_ids
        assert [sum(dict(b.request_counts).values()) for b in listed] == [5, 4, 3, 2, 1]
        assert "requests" not in listed[0].model_dump()
        newer = client.messages.batches.list(limit=2, before_id=made[1].id)
        assert [b.id for b in newer.data] == [made[3].id, made[2].id] and newer.has_more
        assert [b.id for b in client.messages.batches.list(before_id=made[1].id)] == [
            made[4].id,
            made[3].id,
            made[2].id,
        ]
        with pytest.raises(anthropic.BadRequestError, match="limit"):
            client.messages.batches.list(limit=1001)
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.list(after_id="msgbatch_nope")


def test_anthropic_create_whose_answer_is_lost_still_made_the_batch() -> None:
    with FakeAnthropic(api_key=KEY, batch_create_faults=["reset", "bad_gateway"]) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key=KEY, max_retries=0)
        reqs = [{"custom_id": "k1", "params": _params("x")}]
        with pytest.raises(anthropic.APIConnectionError):
            client.messages.batches.create(requests=reqs)  # type: ignore[arg-type]
        with pytest.raises(anthropic.InternalServerError):
            client.messages.batches.create(requests=reqs)  # type: ignore[arg-type]
        assert fake.batch_creates() == 2
        listed = list(client.messages.batches.list())
        assert len(listed) == 2
        ended = client.messages.batches.retrieve(listed[1].id)
        assert ended.processing_status == "ended"
        assert [r.custom_id for r in client.messages.batches.results(ended.id)] == ["k1"]
