"""Tracks B1–B4 of the grounding suite: data, pure renderers and per-response scoring."""
