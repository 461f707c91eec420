"""The tool-using agent solver and self-consistency voting.

An agent answers a question about a small directory of files (the *sandbox*) by calling tools —
``list_files``, ``read_file``, ``grep`` — over several engine calls, until it answers or hits the
step limit. Two wire protocols, chosen per engine (``tool_protocol`` in the engine config):

* ``native``: OpenAI tool calling. The request carries ``tools``; the model replies with
  ``tool_calls``; results go back as ``role: tool`` messages. For engines whose server parses tool
  calls (OpenAI, vLLM, ...).
* ``json``: a JSON-constrained action protocol for engines without native tool calling. Every
  turn is ``{"action": list_files|read_file|grep|answer, "argument": "..."}``, enforced with
  ``response_format`` (a JSON schema the server turns into a grammar); tool results go back as
  user messages. The embedded llama.cpp server needs this: its SmolLM2 chat template ignores
  ``tools`` (the model never sees them) and the server only returns ``tool_calls`` when one
  function is *forced* by ``tool_choice`` — which is not an agent deciding anything.

Everything the agent did is returned as the trajectory (stored in the raw row): every model
turn, every tool call with its arguments and result or error, and how the run stopped
(``answer``, ``step_limit``). A tool error (unknown file, a path outside the sandbox, a bad
argument, an unknown tool, malformed action JSON) is fed back to the model and costs a step; it
is a model outcome, never an infrastructure error. Engine errors propagate unchanged so the
dispatcher classifies and retries them as for any call.

Self-consistency (``self_consistency: n > 1``) runs ``n`` trajectories with fixed per-trajectory
seeds at the configured temperature and answers with the modal normalised answer (ties go to the
answer seen first); all ``n`` trajectories and the vote are stored.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sealedeval.engines.base import Completion, Engine, EngineError, Request
from sealedeval.run.solvers import CallFn, SolveResult, solvers

TOOLS = ("list_files", "read_file", "grep")
PROTOCOLS = ("native", "json")
MAX_RESULT_CHARS = 1200
MAX_GREP_LINES = 30
ANSWER_MAX_CHARS = 160
LAST_STEP = "This is your last step: answer now."

TOOL_SPECS: dict[str, dict[str, Any]] = {
    "list_files": {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List the files in the directory with their sizes in bytes.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    },
    "read_file": {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read one file of the directory.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "a name from list_files"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    "grep": {
        "type": "function",
        "function": {
            "name": "grep",
            "description": "Show the lines (file:line: text) that contain a text, ignoring case.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "plain text to look for"},
                    "path": {"type": "string", "description": "optional: one file name"},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
    },
}

_JSON_HELP = {
    "list_files": "list_files: list the files with their sizes in bytes (argument: empty).",
    "read_file": "read_file: read one file (argument: the file name).",
    "grep": "grep: show the lines of the files that contain a text (argument: the text).",
}


class ToolError(Exception):
    """A tool refused or failed; the message goes back to the model. ``kind`` classifies it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Sandbox:
    """A flat, read-only directory held in memory: ``files`` maps a name to its text.

    Names are resolved strictly: an absolute path, a home path or any ``..`` component is a
    traversal attempt and is refused (``ToolError('outside_sandbox')``) before any lookup, so no
    tool can ever reach a file outside the mapping — not even a file that would exist on disk.
    """

    files: Mapping[str, str]

    def resolve(self, path: str) -> str:
        raw = str(path).strip().strip("\"'`")
        if not raw:
            raise ToolError("bad_arguments", "a file name is required")
        unified = raw.replace("\\", "/")
        parts = unified.split("/")
        if (
            unified.startswith(("/", "~"))
            or re.match(r"^[A-Za-z]:", unified)
            or ".." in parts
            or "\x00" in unified
        ):
            raise ToolError("outside_sandbox", f"refused: {raw!r} is outside the directory")
        name = posixpath.normpath(unified)
        if name in self.files:
            return name
        raise ToolError("not_found", f"no such file: {raw!r} (use list_files)")

    def list_files(self) -> str:
        return "\n".join(
            f"{n} {len(t.encode('utf-8'))} bytes" for n, t in sorted(self.files.items())
        )

    def read_file(self, path: str) -> str:
        return self.files[self.resolve(path)]

    def grep(self, pattern: str, path: str | None = None) -> str:
        needle = str(pattern).strip().lower()
        if not needle:
            raise ToolError("bad_arguments", "grep needs a non-empty text to look for")
        names = [self.resolve(path)] if path else sorted(self.files)
        hits = [
            f"{n}:{i}: {line}"
            for n in names
            for i, line in enumerate(self.files[n].splitlines(), start=1)
            if needle in line.lower()
        ]
        if not hits:
            return "no matching lines"
        more = len(hits) - MAX_GREP_LINES
        out = "\n".join(hits[:MAX_GREP_LINES])
        return out + (f"\n... {more} more lines" if more > 0 else "")


def run_tool(
    sandbox: Sandbox, tools: Sequence[str], name: str, args: Mapping[str, Any]
) -> tuple[bool, str, str]:
    """(ok, text for the model, error kind or "") for one tool call. Never raises."""
    try:
        if name not in tools:
            raise ToolError("unknown_tool", f"unknown tool {name!r}; tools: {', '.join(tools)}")
        if name == "list_files":
            text = sandbox.list_files()
        elif name == "read_file":
            if "path" not in args:
                raise ToolError("bad_arguments", "read_file needs a 'path'")
            text = sandbox.read_file(str(args["path"]))
        else:
            if "pattern" not in args:
                raise ToolError("bad_arguments", "grep needs a 'pattern'")
            path = args.get("path")
            text = sandbox.grep(str(args["pattern"]), str(path) if path else None)
    except ToolError as e:
        return False, f"error: {e}", e.kind
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n... [cut at {MAX_RESULT_CHARS} characters]"
    return True, text, ""


def action_schema(tools: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of one action in the ``json`` protocol (the server enforces it)."""
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": [*tools, "answer"]},
            "argument": {"type": "string", "maxLength": ANSWER_MAX_CHARS},
        },
        "required": ["action", "argument"],
        "additionalProperties": False,
    }


def json_protocol_help(tools: Sequence[str]) -> str:
    """Instructions for the ``json`` protocol (goes into the system prompt, after shared text)."""
    lines = [
        'Reply with exactly one JSON object per turn: {"action": ..., "argument": ...}.',
        "Actions:",
        *(f"- {_JSON_HELP[t]}" for t in tools),
        "- answer: your final answer in one short sentence (argument: the answer).",
        "After each action other than answer you are shown its result.",
    ]
    return "\n".join(lines)


def response_format(tools: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "agent_action", "strict": True, "schema": action_schema(tools)},
    }


@dataclass(frozen=True)
class AgentSpec:
    """What ``Request.params['agent']`` holds (it is stored with the row, never sent)."""

    protocol: str = "json"
    max_steps: int = 5
    tools: tuple[str, ...] = TOOLS
    self_consistency: int = 1
    final_answer: bool = True

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AgentSpec:
        a = dict(params.get("agent") or {})
        spec = cls(
            protocol=str(a.get("protocol", "json")),
            max_steps=int(a.get("max_steps", 5)),
            tools=tuple(a.get("tools") or TOOLS),
            self_consistency=int(a.get("self_consistency", 1)),
            final_answer=bool(a.get("final_answer", True)),
        )
        if spec.protocol not in PROTOCOLS:
            raise ValueError(f"agent protocol must be one of {PROTOCOLS}, got {spec.protocol!r}")
        if unknown := set(spec.tools) - set(TOOLS):
            raise ValueError(f"unknown agent tools {sorted(unknown)}")
        if spec.max_steps < 1 or spec.self_consistency < 1:
            raise ValueError("max_steps and self_consistency must be >= 1")
        return spec


@dataclass
class Run:
    """One trajectory's outcome."""

    answer: str
    stop: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    last: Completion | None = None


def engine_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Generation params only: the agent's own settings are never sent to an engine."""
    return {k: v for k, v in params.items() if k != "agent"}


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        parsed = json.loads(str(raw))
    except ValueError:
        raise ToolError("bad_arguments", "tool arguments are not valid JSON") from None
    if not isinstance(parsed, dict):
        raise ToolError("bad_arguments", "tool arguments must be a JSON object")
    return parsed


def _model_step(step: int, comp: Completion) -> dict[str, Any]:
    """One model turn of the trajectory; prompt-cache tokens only when the engine used a
    cache (so trajectories of kinds without one are unchanged)."""
    out: dict[str, Any] = {
        "type": "model",
        "step": step,
        "message": comp.message or {"role": "assistant", "content": comp.output_text},
        "finish_reason": comp.finish_reason,
        "tokens_in": comp.tokens_in,
        "tokens_out": comp.tokens_out,
    }
    if comp.cache_write_tokens or comp.cache_read_tokens:
        out["cache_write_tokens"] = comp.cache_write_tokens
        out["cache_read_tokens"] = comp.cache_read_tokens
    return out


async def _native(
    request: Request, call: CallFn, spec: AgentSpec, sandbox: Sandbox, params: dict[str, Any]
) -> Run:
    messages: list[dict[str, Any]] = list(request.messages)
    tools = tuple(TOOL_SPECS[t] for t in spec.tools)
    run = Run("", "step_limit")
    for step in range(1, spec.max_steps + 1):
        forced = spec.final_answer and step == spec.max_steps
        p = params | {"tool_choice": "none"} if forced else params
        comp = await call(replace(request, messages=tuple(messages), params=p, tools=tools))
        run.last = comp
        run.tokens_in += comp.tokens_in
        run.tokens_out += comp.tokens_out
        run.steps.append(_model_step(step, comp))
        msg = comp.message or {}
        calls = msg.get("tool_calls") or []
        if not calls:
            run.answer = comp.output_text.strip()
            run.stop = "forced_answer" if forced else "answer"
            return run
        messages.append({"role": "assistant", "content": msg.get("content"), "tool_calls": calls})
        for i, tc in enumerate(calls):
            fn = (tc.get("function") or {}) if isinstance(tc, dict) else {}
            name = str(fn.get("name", ""))
            try:
                args = _parse_arguments(fn.get("arguments"))
                ok, text, kind = run_tool(sandbox, spec.tools, name, args)
            except ToolError as e:
                args, ok, text, kind = {}, False, f"error: {e}", e.kind
            call_id = str(tc.get("id") or f"call_{step}_{i}") if isinstance(tc, dict) else ""
            run.steps.append(_tool_step(step, name, args, ok, text, kind))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        if spec.final_answer and step + 1 == spec.max_steps:
            messages.append({"role": "user", "content": LAST_STEP})
    return run


def _tool_step(
    step: int, name: str, args: Mapping[str, Any], ok: bool, text: str, kind: str
) -> dict[str, Any]:
    return {
        "type": "tool",
        "step": step,
        "name": name,
        "arguments": dict(args),
        "ok": ok,
        "error_kind": kind,
        "result": text,
    }


def parse_action(text: str) -> tuple[str, str]:
    """(action, argument) from one ``json``-protocol turn; ToolError('malformed_action') if not."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise ToolError("malformed_action", "reply was not one JSON object") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("action"), str):
        raise ToolError("malformed_action", 'reply needs {"action": ..., "argument": ...}')
    arg = doc.get("argument", "")
    return doc["action"], "" if arg is None else str(arg)


async def _json(
    request: Request, call: CallFn, spec: AgentSpec, sandbox: Sandbox, params: dict[str, Any]
) -> Run:
    messages: list[dict[str, Any]] = list(request.messages)
    free = params | {"response_format": response_format(spec.tools)}
    last = params | {"response_format": response_format(())}
    run = Run("", "step_limit")
    for step in range(1, spec.max_steps + 1):
        forced = spec.final_answer and step == spec.max_steps
        p = last if forced else free
        comp = await _keep_truncated(call, replace(request, messages=tuple(messages), params=p))
        run.last = comp
        run.tokens_in += comp.tokens_in
        run.tokens_out += comp.tokens_out
        run.steps.append(_model_step(step, comp))
        args: dict[str, Any] = {}
        try:
            action, arg = parse_action(comp.output_text)
        except ToolError as e:
            action, arg = "", ""
            ok, text, kind = False, f"error: {e}", e.kind
        else:
            if action == "answer":
                run.answer = arg.strip()
                run.stop = "forced_answer" if forced else "answer"
                return run
            if action == "read_file":
                args = {"path": arg}
            elif action != "list_files":
                args = {"pattern": arg}
            ok, text, kind = run_tool(sandbox, spec.tools, action, args)
        run.steps.append(_tool_step(step, action, args, ok, text, kind))
        messages.append({"role": "assistant", "content": comp.output_text})
        head = f"{action}({arg})" if action else "your reply"
        note = _steps_note(spec, step)
        messages.append({"role": "user", "content": f"Result of {head}:\n{text}\n\n{note}"})
    return run


def _steps_note(spec: AgentSpec, step: int) -> str:
    left = spec.max_steps - step
    if spec.final_answer and left == 1:
        return LAST_STEP
    return f"Steps left: {left}."


async def _keep_truncated(call: CallFn, request: Request) -> Completion:
    """An action cut at ``max_tokens`` is the model's failure to act, not an infrastructure
    error: it comes back as a completion whose text will not parse (``malformed_action``)."""
    try:
        return await call(replace(request, tools=()))
    except EngineError as e:
        if e.kind != "truncated":
            raise
        usage = e.response.get("usage") or {}
        # OpenAI's usage names, else the Messages API's (its input excludes cached tokens)
        tokens_in = int(usage.get("prompt_tokens") or 0) or sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        tokens_out = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        return Completion(
            e.output_text,
            e.response,
            tokens_in,
            tokens_out,
            "length",
            message={"role": "assistant", "content": e.output_text},
        )


def normalise_answer(text: str) -> str:
    """The voting key: case, punctuation and spacing do not split a vote."""
    return " ".join(re.sub(r"[^\w.]+", " ", text.lower()).replace(". ", " ").split()).strip(". ")


def modal(answers: Sequence[str]) -> tuple[int, int]:
    """(index of the modal answer's first occurrence, its vote count); empty answers never win
    over a real one. Returns (-1, 0) when no trajectory answered."""
    keys = [normalise_answer(a) if a.strip() else "" for a in answers]
    counts = Counter(k for k in keys if k)
    if not counts:
        return -1, 0
    best = max(counts.values())
    for i, k in enumerate(keys):
        if k and counts[k] == best:
            return i, best
    raise AssertionError("unreachable")


def sandbox_of(request: Request) -> Sandbox:
    files = request.item.get("sandbox")
    if not isinstance(files, Mapping) or not files:
        raise ValueError(f"agent request {request.request_key}: item has no 'sandbox' files")
    return Sandbox({str(k): str(v) for k, v in files.items()})


def _trajectory_seed(seed: int, index: int) -> int:
    return (seed + 7919 * index) % (2**31)


async def _one_trajectory(
    request: Request, call: CallFn, spec: AgentSpec, params: dict[str, Any]
) -> Run:
    sandbox = sandbox_of(request)
    if spec.protocol == "native":
        return await _native(request, call, spec, sandbox, params)
    return await _json(request, call, spec, sandbox, params)


def _final(run: Run, answer: str, stop: str) -> Completion:
    last = run.last
    message = {"role": "assistant", "content": answer}
    return Completion(
        output_text=answer,
        response=last.response if last is not None else {},
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        finish_reason=stop,
        engine_path=last.engine_path if last is not None else "primary",
        message=message,
    )


@solvers.register("agent")
async def agent_solver(engine: Engine, request: Request, call: CallFn) -> SolveResult:
    """Run the tool loop (or ``self_consistency`` loops and vote); see the module docstring."""
    spec = AgentSpec.from_params(request.params)
    params = engine_params(request.params)
    if spec.self_consistency == 1:
        run = await _one_trajectory(request, call, spec, params)
        steps = [*run.steps, {"type": "final", "stop": run.stop, "answer": run.answer}]
        return SolveResult(_final(run, run.answer, run.stop), steps, run.tokens_in, run.tokens_out)
    runs: list[Run] = []
    traj: list[dict[str, Any]] = []
    for i in range(spec.self_consistency):
        seed = _trajectory_seed(int(params.get("seed", request.seed)), i)
        run = await _one_trajectory(request, call, spec, params | {"seed": seed})
        runs.append(run)
        traj.append(
            {"type": "sample", "index": i, "seed": seed, "stop": run.stop, "answer": run.answer}
            | {"steps": run.steps}
        )
    idx, votes = modal([r.answer for r in runs])
    answer = runs[idx].answer if idx >= 0 else ""
    stop = "answer" if idx >= 0 else "step_limit"
    traj.append(
        {
            "type": "vote",
            "answers": [r.answer for r in runs],
            "winner": idx,
            "votes": votes,
            "stop": stop,
            "answer": answer,
        }
    )
    total = Run(answer, stop, [], sum(r.tokens_in for r in runs), sum(r.tokens_out for r in runs))
    total.last = runs[-1].last
    return SolveResult(_final(total, answer, stop), traj, total.tokens_in, total.tokens_out)


def trajectory_summary(trajectory: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts a report needs from a stored trajectory: tool calls, successful reads, files read,
    how it stopped. Self-consistency trajectories are summed over their samples."""
    steps: list[Mapping[str, Any]] = []
    stops: list[str] = []
    for t in trajectory:
        if t.get("type") == "sample":
            steps += list(t.get("steps") or [])
            stops.append(str(t.get("stop", "")))
        elif t.get("type") in ("model", "tool"):
            steps.append(t)
        elif t.get("type") == "final":
            stops.append(str(t.get("stop", "")))
    tools = [s for s in steps if s.get("type") == "tool"]
    reads = [s for s in tools if s.get("ok") and s.get("name") in ("read_file", "grep")]
    files = sorted(
        {
            str((s.get("arguments") or {}).get("path", ""))
            for s in reads
            if s.get("name") == "read_file"
        }
    )
    return {
        "model_calls": sum(1 for s in steps if s.get("type") == "model"),
        "tool_calls": len(tools),
        "tool_errors": sum(1 for s in tools if not s.get("ok")),
        "reads": len(reads),
        "files_read": files,
        "stops": stops,
    }
