"""Benchmark suites. Each is a folder with items, prompts, rubric and plan."""

from sealedeval.suites.base import Suite, get_suite, suites

__all__ = ["Suite", "get_suite", "suites"]
