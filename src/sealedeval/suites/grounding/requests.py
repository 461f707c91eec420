"""From the call design to harness requests, and back.

The design (:mod:`.design`) lists engine *calls* in a seeded whole-run order. The harness
dispatches *requests*, one raw row each. Most calls are one request; the two kinds of dependent
calls are not, because a call that consumes an earlier call's output cannot be dispatched on
its own:

* B2 ``select`` and its ``own_pick`` answer form one request run by the ``select_then_answer``
  solver (the pick is parsed from the first reply and assembled into the second prompt);
* the three rounds of a B4 chain form one request run by the ``multi_agent_chain`` solver
  (coordinator → the addressed owner agent → coordinator).

A multi-call request takes the position of its first call in the shuffled design, so the
dispatch order is the design's order with the dependent calls pulled up behind the call they
depend on. Everything a step needs (which calls, their order, the answerer variant, the limit
on calls) travels in ``Request.item``, which is grader-side data and never sent to an engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from sealedeval.config import EngineConfig
from sealedeval.engines.base import Request
from sealedeval.keys import derive_seed, keyed_request
from sealedeval.suites.grounding.bundle import (
    GroundingData,
    build_suite,
    render_request,
    response_format_for,
)
from sealedeval.suites.grounding.design import Design, RequestSpec
from sealedeval.suites.grounding.tracks import b4_chains

__all__ = [
    "SOLVER_CHAIN",
    "SOLVER_SELECT",
    "VARIANTS",
    "agent_of",
    "build_requests",
    "call_specs",
    "condition_label",
    "specs_for",
    "stage_label",
    "step_request",
]

SUITE = "grounding"
SOLVER_SELECT = "select_then_answer"
SOLVER_CHAIN = "multi_agent_chain"
VARIANTS = ("reference", "naive")
"""Answerers of the ``reference`` engine kind: the condition-aware reference reader, or the
schema-only naive baseline (engine option ``variant``)."""


def stage_label(spec: RequestSpec) -> str:
    """The condition label of one call: ``D``, ``B1/schema``, ``B2/own_pick``, ``B4/round2``.

    Track-A conditions keep the spec's letters; a secondary-model call gets ``@secondary``.
    """
    base = spec.condition if spec.track == "A" else f"{spec.track}/{spec.condition}"
    return base if spec.model_role == "primary" else f"{base}@{spec.model_role}"


def condition_label(specs: Sequence[RequestSpec], data: GroundingData) -> str:
    """The condition label of a request (the raw row's ``condition``)."""
    first = specs[0]
    if first.track == "B4":
        label = f"B4/{data.chain(first.item_id).ownership}"
        return label if first.model_role == "primary" else f"{label}@{first.model_role}"
    if len(specs) > 1:
        base = f"{first.track}/" + "+".join(s.condition for s in specs)
        return base if first.model_role == "primary" else f"{base}@{first.model_role}"
    return stage_label(first)


def specs_for(item_id: str, condition: str, repeat: int) -> list[RequestSpec]:
    """The calls of a raw row, from its ``item_id``, ``condition`` label and ``repeat``.

    The inverse of :func:`condition_label`, so grading needs neither the run seed nor the
    design: a row says what it asked.

    Raises:
        ValueError: The label is not one this suite writes.
    """
    label, _, role = condition.partition("@")
    role = role or "primary"
    track, sep, rest = label.partition("/")
    if not sep:
        if label not in ("A", "B", "E", "C", "F", "D"):
            raise ValueError(f"grounding: unknown condition label {condition!r}")
        return [RequestSpec("A", item_id, label, repeat, role)]
    if track == "B4" and rest in ("records", "prose"):
        out: list[RequestSpec] = []
        prev: str | None = None
        for rnd in ("round1", "round2", "round3"):
            spec = RequestSpec("B4", item_id, rnd, repeat, role, depends_on=prev)
            out.append(spec)
            prev = spec.request_id
        return out
    if track == "B2" and rest == "select+own_pick":
        select = RequestSpec("B2", item_id, "select", repeat, role)
        return [select, RequestSpec("B2", item_id, "own_pick", repeat, role, select.request_id)]
    if track in ("B1", "B2", "B3") and rest and "+" not in rest:
        return [RequestSpec(track, item_id, rest, repeat, role)]
    raise ValueError(f"grounding: unknown condition label {condition!r}")


def _grouped(design: Design) -> list[list[RequestSpec]]:
    """Calls grouped into requests, in design order (a group sits at its first call)."""
    groups: list[list[RequestSpec]] = []
    by_group: dict[str, list[RequestSpec]] = {}
    for spec in design.specs:
        key = spec.group
        if key is None:
            groups.append([spec])
        elif key in by_group:
            by_group[key].append(spec)
        else:
            by_group[key] = [spec]
            groups.append(by_group[key])
    for g in groups:
        g.sort(key=lambda s: s.stage)
    return groups


def _solver(specs: Sequence[RequestSpec]) -> str:
    if len(specs) == 1:
        return "single"
    return SOLVER_CHAIN if specs[0].track == "B4" else SOLVER_SELECT


def _spec_dict(spec: RequestSpec) -> dict[str, Any]:
    return asdict(spec)


def call_specs(request: Request) -> list[RequestSpec]:
    """The calls a request stands for, in the order they are made."""
    return [RequestSpec(**s) for s in request.item["specs"]]


def build_requests(
    design: Design,
    *,
    engine: EngineConfig,
    model: str,
    seed: int,
    temperature: float,
    max_tokens: int,
    roles: Sequence[str] = ("primary",),
    data: GroundingData | None = None,
) -> list[Request]:
    """The requests of ``design`` for one engine, in the design's (shuffled) order.

    Args:
        design: The ordered calls.
        engine: The engine these requests are for (its name enters the key; a reference-kind
            engine's ``variant`` picks its answerer).
        model: The engine's model id (enters the key).
        seed: The suite seed; per-request sampling seeds derive from it and the call id.
        temperature: Sampling temperature of every call.
        max_tokens: Output cap of every call.
        roles: Which model roles this engine plays (``primary``, ``secondary``).
        data: The generated suite (default: the published one).
    """
    data = data or build_suite()
    variant = str(engine.extra.get("variant", "reference"))
    out: list[Request] = []
    for specs in _grouped(design):
        first = specs[0]
        if first.model_role not in roles:
            continue
        messages = render_request(data, first)
        req_seed = derive_seed(seed, first.request_id) % (2**31)
        params: dict[str, Any] = {
            "temperature": float(temperature),
            "max_tokens": int(max_tokens),
            "seed": req_seed,
            "response_format": response_format_for(first),
        }
        condition = condition_label(specs, data)
        item = {
            "request_id": first.request_id,
            "track": first.track,
            "specs": [_spec_dict(s) for s in specs],
            "variant": variant,
            "max_calls": len(specs),
            "base_params": {"temperature": float(temperature), "max_tokens": int(max_tokens)},
            "call": 0,
            "prior": {},
        }
        out.append(
            keyed_request(
                SUITE,
                first.item_id,
                condition,
                first.replicate,
                req_seed,
                engine.name,
                model,
                params,
                messages,
                item=item,
                solver=_solver(specs),
            )
        )
    return out


def step_request(parent: Request, index: int, prior: Mapping[str, str]) -> Request:
    """The engine request for call ``index`` of a multi-call request.

    Call 0 is the parent itself (its messages are the row's ``messages`` and its key the row's
    key). A later call is rendered from the outputs of the earlier ones (``prior``, by call id)
    and gets its own response format and a sampling seed derived from the parent's.
    """
    specs = call_specs(parent)
    item = dict(parent.item) | {"call": index, "prior": dict(prior)}
    if index == 0:
        return Request(
            parent.request_key,
            parent.suite,
            parent.item_id,
            parent.condition,
            parent.repeat,
            parent.seed,
            parent.messages,
            parent.params,
            item=item,
            tools=parent.tools,
        )
    spec = specs[index]
    messages = render_request(build_suite(), spec, prior)
    seed = derive_seed(parent.seed, spec.request_id) % (2**31)
    params = dict(parent.item["base_params"]) | {
        "seed": seed,
        "response_format": response_format_for(spec),
    }
    return Request(
        request_key=f"{parent.request_key}#{index}",
        suite=parent.suite,
        item_id=parent.item_id,
        condition=stage_label(spec),
        repeat=parent.repeat,
        seed=seed,
        messages=tuple(dict(m) for m in messages),
        params=params,
        item=item,
    )


def agent_of(spec: RequestSpec, prior: Mapping[str, str], data: GroundingData | None = None) -> str:
    """Which agent makes a call: ``coordinator``, ``owner:<role>``, ``selector`` or
    ``answerer`` (recorded in the trajectory so a reader can follow the conversation)."""
    if spec.track == "B4":
        if spec.condition != "round2":
            return "coordinator"
        data = data or build_suite()
        chain = data.chain(spec.item_id)
        r1 = b4_chains.parse_request(prior.get(spec.sibling("round1").request_id, ""))
        return f"owner:{b4_chains.route_owner(chain, r1, data.catalog)}"
    if spec.track == "B2" and spec.condition == "select":
        return "selector"
    return "answerer"
