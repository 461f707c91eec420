"""Graders, registered by name with a version; every graded row names both."""

from sealedeval.graders import abstention, exact, regex  # noqa: F401  (registration)
from sealedeval.graders.base import Grade, Grader, grader, graders

__all__ = ["Grade", "Grader", "grader", "graders"]
