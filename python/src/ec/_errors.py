"""The one error type of the Python client; ``code`` is the engine's stable code."""

from __future__ import annotations


class Error(Exception):
    """A failure of ec: ``code`` is stable (``ERR_INVALID_OPTION``, ``ERR_ENGINE_EXITED``…), branch on it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
