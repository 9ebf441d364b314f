"""The errors of the Python client: ``code`` is stable (the engine's, or the client's own), branch on it."""

from __future__ import annotations

INVALID_OPTION = "ERR_INVALID_OPTION"


class Error(Exception):
    """A failure of ec: ``code`` is stable (``ERR_INVALID_OPTION``, ``ERR_ENGINE_EXITED``…), branch on it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


class InvalidOptionError(Error, ValueError):
    """An option is not what it must be (``ERR_INVALID_OPTION``), raised before any I/O.

    A ``ValueError`` too, so ``except ValueError`` catches it; the engine's verdict on an option's
    value comes back as this class.
    """

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_OPTION, message)


class InvalidOptionTypeError(InvalidOptionError, TypeError):
    """An option of the wrong type (a string for ``frames``): an ``InvalidOptionError`` that is also a ``TypeError``."""


def error_for(code: str, message: str) -> Error:
    """The error of the engine's ``code``: ``ERR_INVALID_OPTION`` is an ``InvalidOptionError``, any other an ``Error``."""
    return InvalidOptionError(message) if code == INVALID_OPTION else Error(code, message)
