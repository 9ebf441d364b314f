"""``ec.open`` options: types checked here against the signature, values by the engine (its schema is
the one place that knows them); snake_case here, the engine's camelCase on the wire, its messages back."""

from __future__ import annotations

import collections.abc
import json
import numbers
import re
import typing
from typing import Any, Callable, Dict, Literal, Mapping, Optional, Sequence, Tuple, Union, cast

from ._errors import InvalidOptionTypeError
from ._types import ErrorHandler

# Options whose dict keys are the engine's field names too: snake_case here as well
# (credentials={"access_key_id": ..., "secret_access_key": ...}).
_NESTED = {"credentials"}
# What typing.get_origin says of Callable[...] (an alias pyright cannot type).
_CALLABLE: object = getattr(collections.abc, "Callable")
# The annotations of each checked signature, resolved once.
_HINTS: Dict[Callable[..., Any], Dict[str, Any]] = {}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def describe(value: object) -> str:
    """What came, as the engine says it ("a function", a quoted string, "a list of length 3")."""
    if callable(value):
        return "a function"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return f"a {'list' if isinstance(value, list) else 'tuple'} of length {len(cast('Sequence[object]', value))}"
    if isinstance(value, collections.abc.Mapping):
        return "a dict"
    if value is None or isinstance(value, (bool, numbers.Number)):
        return repr(value)
    return f"a {type(value).__name__}"


_NAMES: Dict[Any, Tuple[str, str]] = {
    bool: ("a boolean", "booleans"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
    type(None): ("None", "None"),
}


def _what(hint: Any, plural: bool = False) -> str:
    """An annotation in words: ``Optional[Tuple[int, int]]`` → "a list of integers or None"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _NAMES:
        return _NAMES[hint][1 if plural else 0]
    if origin is Union:
        words = [_what(a, plural) for a in args]
        return ", ".join(words[:-1]) + " or " + words[-1]
    if origin is Literal:
        words = [json.dumps(a) if isinstance(a, str) else repr(a) for a in args]
        return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]
    if origin in (tuple, list, collections.abc.Sequence):
        return ("lists" if plural else "a list") + f" of {_what(args[0], True)}" if args else "a list"
    if origin in (dict, collections.abc.Mapping):
        return "dicts" if plural else "a dict"
    if origin is _CALLABLE:
        return "functions" if plural else "a function"
    return "values" if plural else "a value"


def _is_bool(value: object) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy's bool too


def _matches(value: object, hint: Any) -> bool:
    """Whether ``value`` has the annotation's type; a Literal's values are the engine's to check, only their type here."""
    if hint is Any:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        return any(_matches(value, a) for a in args)
    if origin is Literal:
        return any(_matches(value, type(a)) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return _is_bool(value)
    if hint is int:
        return isinstance(value, numbers.Integral) and not _is_bool(value)
    if hint is float:
        return isinstance(value, numbers.Real) and not _is_bool(value)
    if hint is str:
        return isinstance(value, str)
    if origin in (tuple, list, collections.abc.Sequence):
        if not isinstance(value, (list, tuple)):
            return False
        items = cast("Sequence[object]", value)
        return not args or all(_matches(v, args[0]) for v in items)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, collections.abc.Mapping):
            return False
        return all(isinstance(k, str) for k in cast("Mapping[object, object]", value))
    if origin is _CALLABLE:
        return callable(value)
    return True


def check_options(signature_of: Callable[..., Any], options: Mapping[str, object]) -> None:
    """Raises ``InvalidOptionTypeError`` for an option whose type is not its annotation's (None leaves any
    option to the engine's default); what each value may be is the engine's to say."""
    for name in ("labels", "filter"):
        if callable(options.get(name)):
            what = "true, a list of labeler names or a dict of labeler settings" if name == "labels" else '"drop" or "tag"'
            raise InvalidOptionTypeError(
                f"Expected {what} for {name} but received a function (a Python function cannot run inside the engine; label or filter the batches in your loop)"
            )
    hints = _HINTS.get(signature_of)
    if hints is None:
        hints = _HINTS[signature_of] = typing.get_type_hints(signature_of)
    for name, value in options.items():
        hint = hints.get(name)
        if value is None or hint is None or _matches(value, hint):
            continue
        raise InvalidOptionTypeError(f"Expected {_what(hint)} for {name} but received {describe(value)}")


def _jsonable(name: str, value: object) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(name, v) for v in cast("Sequence[object]", value)]
    if isinstance(value, collections.abc.Mapping):
        return {str(k): _jsonable(name, v) for k, v in cast("Mapping[object, object]", value).items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    item = getattr(value, "item", None)
    if callable(item):  # numpy scalars
        return item()
    raise InvalidOptionTypeError(f"Expected JSON values (numbers, strings, lists, dicts) for {name} but received {describe(value)}")


def engine_options(options: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, str], Optional[ErrorHandler]]:
    """Splits ``ec.open`` options into the engine's (camelCase JSON, None left out), the name map back, and ``on_error``."""
    on_error = options.get("on_error")
    wire: Dict[str, Any] = {}
    names: Dict[str, str] = {}
    for name, value in options.items():
        if name == "on_error" or value is None:
            continue
        key = _camel(name)
        names[key] = name
        if key in _NESTED and isinstance(value, collections.abc.Mapping):
            nested = cast("Mapping[object, object]", value)
            value = {_camel(str(k)): v for k, v in nested.items()}
            names.update({f"{key}.{_camel(str(k))}": f"{name}.{k}" for k in nested})
        wire[key] = _jsonable(name, value)
    return wire, names, on_error


def python_names(message: str, names: Mapping[str, str]) -> str:
    """The engine's message with its option names as the caller spelled them (shuffleBuffer → shuffle_buffer)."""
    # Longest first, so "credentials.accessKeyId" is renamed before "credentials".
    for camel, snake in sorted(names.items(), key=lambda kv: -len(kv[0])):
        if camel != snake:
            message = re.sub(rf"\b{re.escape(camel)}\b", snake, message)
    return message


