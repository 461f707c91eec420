"""Errors a user can cause: one line naming what and where, exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input, config, seal or raw data. The CLI prints ``str(e)`` on one line and exits 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
