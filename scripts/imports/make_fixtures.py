"""Make the committed import fixtures with the real harnesses (see make_*_fixture.sh).

    python scripts/imports/make_fixtures.py lm-eval     # tests/fixtures/imports/lm_eval/
    python scripts/imports/make_fixtures.py promptfoo   # tests/fixtures/imports/promptfoo/

Both run the real tool against tests/fakes/openai_server.py on 127.0.0.1 (answers from the
tables in tests/imports/harness_runs.py) with a dummy key, then check that the key is in no
file written, and record the versions that made the files in ``VERSIONS.json``.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.imports import harness_runs as hr  # noqa: E402


def _no_key(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file() and hr.DUMMY_KEY.encode() in f.read_bytes():
            raise SystemExit(f"{f}: holds the API key; not writing a fixture")


def _versions(dest: Path, tool: dict[str, str], command: list[str]) -> None:
    doc = {
        **tool,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "made_by": "scripts/imports/make_fixtures.py",
        "commands": command,
    }
    (dest / "VERSIONS.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def lm_eval() -> None:
    dest = hr.FIXTURES / "lm_eval"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        out = work / "out"
        with hr.answering_server(hr.LM_EVAL_ANSWERS) as fake:
            hr.run_lm_eval(out, fake.base_url, "tiny-a", work)
            hr.run_lm_eval(out, fake.base_url, "tiny-b", work, limit=4)
        _no_key(out)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(out, dest)
    _versions(
        dest,
        {"lm_eval": hr.lm_eval_version()},
        [
            "lm_eval --model local-chat-completions --model_args model=tiny-a,base_url=... "
            "--apply_chat_template --include_path . --tasks tinyqa --log_samples --output_path out",
            "the same for model=tiny-b with --limit 4",
        ],
    )
    print(f"wrote {dest}")


def promptfoo() -> None:
    """``results.json`` (one run of each test) and ``results-repeat2.json`` (``--repeat 2``)."""
    dest = hr.FIXTURES / "promptfoo"
    dest.mkdir(parents=True, exist_ok=True)
    commands = []
    for name, extra in (("results.json", []), ("results-repeat2.json", ["--repeat", "2"])):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            with hr.answering_server(hr.PROMPTFOO_ANSWERS, hr.PROMPTFOO_FAULTS) as fake:
                result, cmd = hr.run_promptfoo(work, fake.base_url, extra)
            _no_key(work)
            shutil.copyfile(result, dest / name)
        commands.append(" ".join(cmd))
    _versions(dest, hr.promptfoo_versions(), commands)
    print(f"wrote {dest}")


if __name__ == "__main__":
    {"lm-eval": lm_eval, "promptfoo": promptfoo}[sys.argv[1]]()
