"""The grade and analyze stages by chunk (``stages.chunked``) on a real project's runs: the
workflow's job (``sealedeval analyze --grade``: ``pipeline.build_analysis``) and ``sealedeval
grade`` write the graded file and analysis document (seal and completeness, the suite's
analysis, engine identities) that reading every row at once writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import sealedeval

from sealedeval.canonical import dumps
from sealedeval.config import load_config
from sealedeval.stages import artifacts, chunked, pipeline

TINY = ["config/tiny.yaml"]


def test_the_workflow_job_graded_by_chunk_writes_what_grading_whole_writes(
    project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project()
    sealedeval(root, "run", "golden", "--engine", "reference", "--no-progress", "-c", TINY[0])
    cfg = load_config(root, TINY)
    key = pipeline.stage_key(cfg, "golden")
    path = artifacts.graded_path(root, "golden")
    spent: list[int] = []
    real = chunked.grade_by_chunk

    def counted(*args: object, **kw: object) -> int | None:
        n = real(*args, **kw)  # type: ignore[arg-type]
        spent.append(-1 if n is None else n)
        return n

    monkeypatch.setattr(chunked, "grade_by_chunk", counted)
    docs: list[bool] = []
    real_doc = pipeline._analysis_by_chunk

    def counted_doc(*args: object) -> object:
        doc = real_doc(*args)  # type: ignore[arg-type]
        docs.append(doc is not None)
        return doc

    monkeypatch.setattr(pipeline, "_analysis_by_chunk", counted_doc)
    splits: list[tuple[str, ...]] = []
    real_split = chunked.latest_buckets

    def counted_split(*args: object, **kw: object) -> object:
        splits.append(tuple(kw["columns"]))  # type: ignore[arg-type]
        return real_split(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(chunked, "latest_buckets", counted_split)
    outputs = {}
    for rows in (10**9, 4):  # whole (fewer attempts than a chunk), then buckets of ~4 attempts
        monkeypatch.setattr(chunked, "CHUNK_ROWS", rows)
        graded, made, doc = pipeline.build_analysis(cfg, "golden", key)
        assert made
        outputs[rows] = (path.read_bytes(), dumps(doc), list(map(dict, graded)))
        path.unlink()
        assert pipeline.grade_suite(cfg, "golden")[1] == path
        assert path.read_bytes() == outputs[rows][0]
    assert spent and all(n > 0 for n in spent)  # graded by chunk, twice, and only at 4 rows
    assert len(spent) == 2
    assert docs == [True]  # analysed by chunk (from the file graded by chunk) at 4 rows only
    # the job split the attempts once, for its grading and its analysis; `grade` once more
    suite_columns = {"output_text", "trajectory", "error_kind"}
    assert len(splits) == 2 and suite_columns <= set(splits[0])
    assert "trajectory" not in splits[1]
    assert outputs[4] == outputs[10**9]
