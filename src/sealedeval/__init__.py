"""sealedeval: pre-registered, reproducible evaluation of LLM engines.

The rubric is sealed before the first engine call; every published number is re-derived from the
versioned raw runs. See DESIGN in the repository README for the stage layout.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
