"""Run the real lm-evaluation-harness and promptfoo against a loopback OpenAI-compatible server.

Shared by the tests (which run the real tools when they are installed) and by
``scripts/imports/make_*_fixture.sh`` (which made the committed fixtures). The server is
``tests/fakes/openai_server.py`` (the real chat-completions protocol on 127.0.0.1) answering
from a fixed table per model, so every run gives the same answers and the same scores; for
lm-eval's multiple-choice task it also speaks the legacy completions protocol with ``echo`` and
``logprobs`` and vLLM's tokenizer endpoints, scoring each choice from a fixed table per model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, last_user_content

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "imports"
LM_EVAL_TASK = FIXTURES / "lm_eval_task"
LM_EVAL_MC_TASK = FIXTURES / "lm_eval_mc_task"
LM_EVAL_CORPUS_TASK = FIXTURES / "lm_eval_corpus_task"
PROMPTFOO_CONFIG = FIXTURES / "promptfoo_config"

#: A key that is no secret: runs use it so that the tests can prove no key reaches a log,
#: a row or a ledger entry (the harnesses send it as ``Authorization: Bearer ...``).
DUMMY_KEY = "sk-sealedeval-dummy-key-0000"

#: Replies per model, by a word of the question. Scored by lm-eval's exact_match (case and
#: punctuation ignored): tiny-a is right on 0 1 2 5 and, by the first word (flex), on 4;
#: tiny-b on 0 3 5 and, flex, on 1.
LM_EVAL_ANSWERS: dict[str, dict[str, str]] = {
    "tiny-a": {
        "France": "Paris",
        "2+2": "4",
        "sky": "Blue.",
        "planet": "Saturn",
        "hot": "cold, surely",
        "gold": "Au",
    },
    "tiny-b": {
        "France": "Paris",
        "2+2": "4 obviously",
        "sky": "green",
        "planet": "Jupiter",
        "hot": "warm",
        "gold": "Au",
    },
}


#: Replies for the corpus-level tasks (tests/fixtures/imports/lm_eval_corpus_task/), by a word
#: of the prompt. tinyf1 (labels 1 1 1 0 0 0 1 0): tiny-a says 1 1 0 1 1 0 1 0 (TP 3, FP 2,
#: FN 1: F1 6/9, accuracy 5/8), tiny-b 1 0 0 1 0 1 1 1 ("maybe" maps to 0; TP 2, FP 3, FN 2:
#: F1 4/9, accuracy 3/8): an F1 computed as a mean, or as accuracy, would not match.
#: tinybleu: tiny-a close to the references, tiny-b further off.
LM_EVAL_CORPUS_ANSWERS: dict[str, dict[str, str]] = {
    "tiny-a": {
        "Paris": "yes",
        "ice": "yes",
        "fish": "no",
        "sun": "yes",
        "stone": "yes",
        "two larger": "no",
        "birds": "yes",
        "moon": "no",
        "chat": "the cat sleeps on the sofa",
        "pleut": "it has been raining since this morning",
        "marché": "we will go to market tomorrow",
        "porte": "the door is open",
    },
    "tiny-b": {
        "Paris": "yes",
        "ice": "maybe",
        "fish": "no",
        "sun": "yes",
        "stone": "no",
        "two larger": "yes",
        "birds": "yes",
        "moon": "yes",
        "chat": "a cat is on the couch",
        "pleut": "rain since morning",
        "marché": "tomorrow we go to the market",
        "porte": "the door is closed",
    },
}


#: The log-likelihood of each choice of the multiple-choice task (tinymc), per model, by a word
#: of the question; a choice not listed scores MC_UNLISTED. The server spreads a choice's
#: value evenly over its tokens, so lm-eval's sum over the continuation is the value. acc picks
#: the highest value, acc_norm the highest value per character of the choice (lm-eval's
#: ``lls / len(choice)``): tiny-a is right by acc on 0 4, by acc_norm on 0 1 3 4 (acc 2/6,
#: acc_norm 4/6); tiny-b by acc on 1 2 3 5, by acc_norm also on 4 (4/6, 5/6). No ties.
MC_LOGLIKELIHOODS: dict[str, dict[str, dict[str, float]]] = {
    "tiny-a": {
        "barks": {"dog": -1.0, "cat": -3.0},
        "liquid": {"mercury": -4.0, "iron": -3.0},
        "bees": {"honey": -2.0, "milk": -1.5},
        "largest": {"blue whale": -5.0, "elephant": -4.5},
        "spider": {"eight": -1.0, "six": -2.0},
        "frozen": {"steam": -1.0, "ice": -2.0},
    },
    "tiny-b": {
        "barks": {"cat": -1.0, "dog": -2.0},
        "liquid": {"mercury": -1.0},
        "bees": {"honey": -1.0},
        "largest": {"blue whale": -2.0, "elephant": -3.0},
        "spider": {"six": -1.0, "eight": -1.5},
        "frozen": {"ice": -1.0},
    },
}
MC_UNLISTED = -8.0
#: The log-prob of every token of the question (lm-eval does not count them).
MC_CONTEXT_LOGPROB = -1.0
#: The last token of the task's prompt (``doc_to_text`` ends with it); the choice follows.
MC_ANSWER_CUE = "Answer:"


def mc_logprober(model: str, tokens: Sequence[str]) -> list[float]:
    """Token log-probs of ``Question: ...\nAnswer: <choice>``: the choice's value from
    MC_LOGLIKELIHOODS spread evenly over its tokens, MC_CONTEXT_LOGPROB before it."""
    cue = max((i for i, t in enumerate(tokens) if t.endswith(MC_ANSWER_CUE)), default=None)
    if cue is None or cue == len(tokens) - 1:
        return [MC_CONTEXT_LOGPROB] * len(tokens)
    question, choice = "".join(tokens[: cue + 1]), "".join(tokens[cue + 1 :]).strip()
    table = next((v for k, v in MC_LOGLIKELIHOODS.get(model, {}).items() if k in question), {})
    n = len(tokens) - cue - 1
    return [MC_CONTEXT_LOGPROB] * (cue + 1) + [table.get(choice, MC_UNLISTED) / n] * n


def mc_expected(model: str, docs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """acc and acc_norm of ``model`` on ``docs`` straight from MC_LOGLIKELIHOODS (independent of
    lm-eval and of the importer)."""
    acc = norm = 0
    for d in docs:
        table = next(v for k, v in MC_LOGLIKELIHOODS[model].items() if k in d["question"])
        lls = [table.get(c, MC_UNLISTED) for c in d["choices"]]
        per_char = [ll / len(c) for ll, c in zip(lls, d["choices"], strict=True)]
        acc += lls.index(max(lls)) == d["answer"]
        norm += per_char.index(max(per_char)) == d["answer"]
    return {"acc,none": acc / len(docs), "acc_norm,none": norm / len(docs)}


#: Replies for the promptfoo config (tests/fixtures/imports/promptfoo_config/): tiny-a passes
#: capital, sum and sky; tiny-b capital only ("4 obviously" is not equal to "4", "green");
#: both fail planet; the BOOM test gets HTTP 500 (PROMPTFOO_FAULTS) and is an error.
PROMPTFOO_ANSWERS: dict[str, dict[str, str]] = {
    "tiny-a": {"France": "Paris", "2+2": "4", "sky": "Blue", "planet": "Saturn"},
    "tiny-b": {"France": "Paris.", "2+2": "4 obviously", "sky": "green", "planet": "Mars"},
}
#: Every request for the BOOM test is answered with HTTP 500 (more than promptfoo retries).
PROMPTFOO_FAULTS = {"BOOM": ["server"] * 50}


def _responder(table: Mapping[str, Mapping[str, str]]) -> Any:
    def answer(body: dict[str, Any]) -> str:
        text = last_user_content(body)
        replies = table.get(str(body.get("model")), {})
        for word, reply in replies.items():
            if word in text:
                return reply
        return "I do not know"

    return answer


@contextmanager
def answering_server(
    table: Mapping[str, Mapping[str, str]], faults: Mapping[str, list[str]] | None = None
) -> Iterator[FakeOpenAI]:
    """A loopback chat-completions server answering from ``table`` (model → word → reply)."""
    with FakeOpenAI(responder=_responder(table), faults=faults, retry_after="0") as fake:
        yield fake


@contextmanager
def scoring_server() -> Iterator[FakeOpenAI]:
    """A loopback server scoring the multiple-choice task's choices from MC_LOGLIKELIHOODS
    (legacy completions with echo + logprobs, and the tokenizer endpoints)."""
    with FakeOpenAI(responder=_responder({}), logprober=mc_logprober, retry_after="0") as fake:
        yield fake


def offline_env(home: Path) -> dict[str, str]:
    """The environment a harness runs in: caches under ``home``, no hub access, the dummy key,
    loopback never proxied, no telemetry."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    return keep | {
        "HOME": str(home),
        "HF_HOME": str(home / "hf"),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OPENAI_API_KEY": DUMMY_KEY,
        "NO_PROXY": "*",
        "no_proxy": "*",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(home / "promptfoo"),
        "PROMPTFOO_CACHE_ENABLED": "false",
    }


def run_lm_eval(
    out: Path, base_url: str, model: str, work: Path, *, limit: int | None = None
) -> Path:
    """``lm_eval --model local-chat-completions ... --log_samples --output_path out`` on the
    tinyqa task (run in a copy of its folder: the YAML names its data relatively); returns
    the directory holding ``results_*.json`` and ``samples_tinyqa_*.jsonl``."""
    args = [
        "--model",
        "local-chat-completions",
        "--model_args",
        f"model={model},base_url={base_url}/chat/completions,num_concurrent=1,max_retries=1,"
        "tokenized_requests=False",
        "--apply_chat_template",
        "--tasks",
        "tinyqa",
    ]
    return _lm_eval(out, model, work, LM_EVAL_TASK, args, limit)


def run_lm_eval_corpus(out: Path, base_url: str, model: str, work: Path) -> Path:
    """``lm_eval --model local-chat-completions ... --tasks tinyf1,tinybleu --log_samples``
    against ``answering_server(LM_EVAL_CORPUS_ANSWERS)``: two generate_until tasks scored by
    corpus-level aggregations (``f1``, ``bleu``), one results file for both. lm-eval's CLI
    runs with ``simple_evaluate(bootstrap_iters=0)`` (its Python API's switch, which the CLI
    lacks): no bootstrap of the corpus metrics' standard errors — 100,000 resamples of the F1,
    about ten minutes on two cores — so their stderr is ``N/A``; the metrics are unchanged."""
    args = [
        "--model",
        "local-chat-completions",
        "--model_args",
        f"model={model},base_url={base_url}/chat/completions,num_concurrent=1,max_retries=1,"
        "tokenized_requests=False",
        "--apply_chat_template",
        "--tasks",
        "tinyf1,tinybleu",
    ]
    return _lm_eval(out, model, work, LM_EVAL_CORPUS_TASK, args, None, entry=_NO_BOOTSTRAP)


#: ``python -c`` running lm-eval's CLI with ``simple_evaluate``'s ``bootstrap_iters`` at 0.
_NO_BOOTSTRAP = (
    "-c",
    "import functools, lm_eval; from lm_eval import evaluator; "
    "lm_eval.simple_evaluate = functools.partial(evaluator.simple_evaluate, bootstrap_iters=0); "
    "from lm_eval.__main__ import cli_evaluate; cli_evaluate()",
)


def run_lm_eval_mc(out: Path, base_url: str, model: str, work: Path) -> Path:
    """``lm_eval --model local-completions ... --tasks tinymc --log_samples`` against
    ``scoring_server``'s ``base_url``: every choice scored by one legacy completions request
    (``echo``, ``logprobs``); token counts from the server's tokenizer endpoints
    (``tokenizer_backend=remote``, vLLM's protocol), so no tokenizer files or hub are needed."""
    args = [
        "--model",
        "local-completions",
        "--model_args",
        f"model={model},base_url={base_url}/completions,num_concurrent=1,max_retries=1,"
        "tokenizer_backend=remote",
        "--tasks",
        "tinymc",
    ]
    return _lm_eval(out, model, work, LM_EVAL_MC_TASK, args, None)


def _lm_eval(
    out: Path,
    model: str,
    work: Path,
    task_dir: Path,
    args: Sequence[str],
    limit: int | None,
    *,
    entry: Sequence[str] = ("-m", "lm_eval"),
) -> Path:
    tasks = work / task_dir.name
    if not tasks.exists():
        shutil.copytree(task_dir, tasks)
    cmd = [
        sys.executable,
        *entry,
        *args,
        "--include_path",
        ".",
        "--log_samples",
        "--output_path",
        str(out),
        *(["--limit", str(limit)] if limit is not None else []),
    ]
    proc = subprocess.run(
        cmd, cwd=tasks, env=offline_env(work), capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise AssertionError(f"lm_eval failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    folder = out / model.replace("/", "__")  # lm-eval's model_name_sanitized
    assert list(folder.glob("results_*.json")), f"lm_eval wrote no results under {folder}"
    return folder


def lm_eval_version() -> str:
    from importlib.metadata import version

    return version("lm_eval")


#: The promptfoo release the fixture was made with: 0.115 runs on node >= 18 (later releases
#: want node >= 22).
PROMPTFOO_VERSION = "0.115"


def promptfoo_bin() -> list[str] | None:
    """How to run promptfoo here: ``$PROMPTFOO_BIN`` (e.g. node_modules/.bin/promptfoo of an
    ``npm install promptfoo@0.115``), else ``promptfoo`` on PATH; None when neither (or no
    node) is there."""
    if not shutil.which("node"):
        return None
    given = os.environ.get("PROMPTFOO_BIN")
    if given and Path(given).exists():
        return [given]
    found = shutil.which("promptfoo")
    return [found] if found else None


def run_promptfoo(work: Path, base_url: str, extra: Sequence[str] = ()) -> tuple[Path, list[str]]:
    """``promptfoo eval -c promptfooconfig.yaml -o out/results.json`` in a copy of the config
    folder, the providers pointed at ``base_url`` through ``OPENAI_BASE_URL`` (so no address
    is in the config or the output); returns the results file and the command."""
    exe = promptfoo_bin()
    assert exe is not None, "promptfoo is not installed"
    cfg = work / "config"
    shutil.copytree(PROMPTFOO_CONFIG, cfg)
    (cfg / "out").mkdir()
    home = work / "home"
    home.mkdir(exist_ok=True)
    args = [
        "eval",
        "-c",
        "promptfooconfig.yaml",
        "-o",
        "out/results.json",
        "--no-cache",
        "--no-progress-bar",
        "--no-table",
        "--max-concurrency",
        "1",
        *extra,
    ]
    env = offline_env(home) | {"OPENAI_BASE_URL": base_url}
    proc = subprocess.run(
        [*exe, *args], cwd=cfg, env=env, capture_output=True, text=True, timeout=600
    )
    out = cfg / "out" / "results.json"
    # promptfoo exits 100 when a test failed (one does, by design)
    if proc.returncode not in (0, 100) or not out.exists():
        raise AssertionError(f"promptfoo failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return out, ["promptfoo", *args]


def promptfoo_versions() -> dict[str, str]:
    exe = promptfoo_bin()
    assert exe is not None
    version = subprocess.run([*exe, "--version"], capture_output=True, text=True, check=True)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    return {"promptfoo": version.stdout.strip(), "node": node.stdout.strip()}
