"""What a file given to ``sealedeval import`` is, from its content, never from its name.

Users rename files (``results_<time>.json`` → ``my_run.json``) and harnesses' files share
extensions, so every importer asks this module what a file looks like before it parses it, and
refuses a file of another harness with the name of the one it looks like ("not lm-eval output:
looks like a promptfoo export"). Messages are plain words: an empty file, a truncated zip, a
file that is not JSON.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Final

from sealedeval.errors import UserError

INSPECT: Final = "an Inspect log"
LM_EVAL_RESULTS: Final = "lm-eval results"
LM_EVAL_V0: Final = "pre-0.4 lm-eval results"
LM_EVAL_SAMPLES: Final = "lm-eval samples (JSON lines)"
PROMPTFOO: Final = "a promptfoo export"

#: Bytes read to recognise a JSON-lines samples file: its first line is one sample.
_FIRST_LINE_BYTES: Final = 1 << 22


def read_bytes(path: Path) -> bytes:
    """The file's bytes; missing, unreadable or empty is one line in plain words."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: a directory, not a log file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if not data.strip():
        raise UserError(f"{path}: empty file")
    return data


def kind_of_json(doc: Any) -> str | None:
    """Which harness wrote this JSON document, from its keys (None: none we know)."""
    if not isinstance(doc, dict):
        return None
    results = doc.get("results")
    if isinstance(doc.get("eval"), dict) and "version" in doc and "status" in doc:
        return INSPECT
    if isinstance(results, dict) and (
        "lm_eval_version" in doc or "configs" in doc or "n-samples" in doc
    ):
        return LM_EVAL_RESULTS
    if (
        isinstance(results, dict)
        and "version" in results
        and (isinstance(results.get("results"), list) or "evalId" in doc or "prompts" in results)
    ):
        return PROMPTFOO
    if isinstance(results, dict) and isinstance(doc.get("versions"), dict):
        return LM_EVAL_V0
    if (
        isinstance(results, dict)
        and results
        and all(
            isinstance(v, dict) and any(k in v for k in ("acc", "acc_norm", "ppl", "em", "f1"))
            for v in results.values()
        )
    ):
        return LM_EVAL_V0
    return None


def kind_of(path: Path, data: bytes | None = None) -> str | None:
    """What the file looks like (one of this module's names), or None."""
    data = read_bytes(path) if data is None else data
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
        except (zipfile.BadZipFile, OSError):
            return None
        return INSPECT if "header.json" in names or "_journal/start.json" in names else None
    try:
        return kind_of_json(json.loads(data))
    except ValueError:
        pass
    first = data[:_FIRST_LINE_BYTES].split(b"\n", 1)[0]
    try:
        line = json.loads(first)
    except ValueError:
        return None
    if isinstance(line, dict) and "doc_id" in line and "metrics" in line:
        return LM_EVAL_SAMPLES
    return None


def refuse_other(path: Path, wanted: str, found: str | None) -> None:
    """One line when the file is another harness's: ``not lm-eval output: looks like ...``."""
    if found is not None and found != wanted:
        raise UserError(f"{path}: not {wanted}: looks like {found}")


def load_json(path: Path, wanted: str) -> tuple[bytes, Any]:
    """A JSON log's bytes and value, with plain-word errors: empty, a zip (or truncated zip),
    not JSON (a truncated file), another harness's file."""
    data = read_bytes(path)
    if data[:2] == b"PK":
        refuse_other(path, wanted, kind_of(path, data))
        raise UserError(f"{path}: a zip archive, not {wanted} (expected JSON)")
    try:
        doc = json.loads(data)
    except ValueError as e:
        where = f":{e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        if kind_of(path, data) == LM_EVAL_SAMPLES:
            refuse_other(path, wanted, LM_EVAL_SAMPLES)
        truncated = isinstance(e, json.JSONDecodeError) and e.pos >= len(data.rstrip()) - 1
        what = "truncated JSON (the file ends early)" if truncated else "not JSON"
        raise UserError(f"{path}{where}: {what}, so not {wanted}") from None
    refuse_other(path, wanted, kind_of_json(doc))
    return data, doc
