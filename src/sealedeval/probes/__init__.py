"""Probes that measure something other than accuracy: contamination (the model's own loss, with
its log-prob source validated first), prompt injection and attribute swaps. Pure statistics here;
the golden suite builds the requests. ``logprobs`` registers the in-process ``logprob_probe``
solver on import (it loads llama-cpp-python only when a probe actually runs)."""

from sealedeval.probes.contamination import contamination_table
from sealedeval.probes.injection import compliance_table, complied
from sealedeval.probes.logprobs import Position, positions_from_completion_logprobs, validate
from sealedeval.probes.swap import swap_table

__all__ = [
    "Position",
    "compliance_table",
    "complied",
    "contamination_table",
    "positions_from_completion_logprobs",
    "swap_table",
    "validate",
]
