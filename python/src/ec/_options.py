"""``ec.open`` options: snake_case here, the engine's camelCase on the wire, the engine's messages back."""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Optional, Tuple

from ._errors import Error

# Options that only the Python side handles.
_LOCAL = {"on_error"}
# Options whose dict keys are the engine's field names too: snake_case here as well
# (credentials={"access_key_id": ..., "secret_access_key": ...}).
_NESTED = {"credentials"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _describe(value: Any) -> str:
    return "a function" if callable(value) else repr(value)


def _jsonable(name: str, value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(name, v) for v in value]
    if isinstance(value, list):
        return [_jsonable(name, v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(name, v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    raise Error("ERR_INVALID_OPTION", f"Expected JSON values (numbers, strings, lists, dicts) for {name} but received {_describe(value)}")


def engine_options(options: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, str], Optional[Callable[..., Any]]]:
    """Splits ``ec.open`` options into the engine's (camelCase JSON), the name map back, and ``on_error``."""
    on_error = options.get("on_error")
    if on_error is not None and not callable(on_error):
        raise Error("ERR_INVALID_OPTION", f"Expected a function for on_error but received {_describe(on_error)}")
    for name, what in (("labels", "true, a list of labeler names or an object of labeler settings"), ("filter", '"drop" or "tag"')):
        if callable(options.get(name)):
            raise Error("ERR_INVALID_OPTION", f"Expected {what} for {name} but received a function (a Python function cannot run inside the engine; label or filter the batches in your loop)")
    wire: Dict[str, Any] = {}
    names: Dict[str, str] = {}
    for name, value in options.items():
        if name in _LOCAL or value is None:
            continue
        key = _camel(name)
        names[key] = name
        if key in _NESTED and isinstance(value, dict):
            value = {_camel(str(k)): v for k, v in value.items()}
            names.update({f"{key}.{_camel(str(k))}": f"{name}.{k}" for k in options[name]})
        wire[key] = _jsonable(name, value)
    return wire, names, on_error


def python_names(message: str, names: Dict[str, str]) -> str:
    """The engine's message with its option names as the caller spelled them (shuffleBuffer → shuffle_buffer)."""
    # Longest first, so "credentials.accessKeyId" is renamed before "credentials".
    for camel, snake in sorted(names.items(), key=lambda kv: -len(kv[0])):
        if camel != snake:
            message = re.sub(rf"\b{re.escape(camel)}\b", snake, message)
    return message
