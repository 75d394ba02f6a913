"""Checking call arguments against a tool's input JSON Schema before anything is executed.

:func:`validate_arguments` returns ``None`` for valid arguments, else one readable message that
names the tool and the path of the offending field, e.g. ``music.play: 'song_id' is a required
property`` or ``music.search: at 'limit': 'abc' is not of type 'integer'`` (``(+N more errors)``
is appended when there are several). The validator class follows the schema's ``$schema``
(Draft 2020-12 when absent); format checking is off, so ``"format": "date"`` never rejects.
A number that is not finite (``NaN``, ``Infinity``, ``-Infinity``, or ``1e999``, which parses
as infinity) anywhere in the arguments is refused first, naming its path
(``calc.add: at 'items[2].price': NaN is not a finite number``): JSON has no such values, and
a transport would otherwise send them as ``null``.
Compiled validators are cached per ``(tool name, schema)``. A schema that is itself invalid
(or has an unresolvable ``$ref``) is reported the same way, as a message, never raised: the
runtimes turn every message into an ``INVALID_ARGUMENTS`` result.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator

from hyperplan.catalog import ToolSpec
from hyperplan.execute.results import ErrorKind, ToolResult
from hyperplan.execute.runtimes.base import Clock, fail_result, truncate

_MESSAGE_CHARS = 300


def rejected(tool: ToolSpec, arguments: Any, unknown: str | None,
             clock: Clock) -> ToolResult | None:
    """The failed result of a call that may not run — an ``UNKNOWN_TOOL`` when ``unknown``
    (the runtime's reason) is given, else ``INVALID_ARGUMENTS`` when the arguments do not
    satisfy the input schema — or ``None`` when the call may go ahead."""
    if unknown is not None:
        return fail_result(tool, arguments, ErrorKind.UNKNOWN_TOOL, f"{tool.name}: {unknown}",
                           clock)
    problem = validate_arguments(tool, arguments)
    if problem is not None:
        return fail_result(tool, arguments, ErrorKind.INVALID_ARGUMENTS, problem, clock)
    return None


def validate_arguments(tool: ToolSpec, arguments: Any) -> str | None:
    """``None`` when ``arguments`` satisfy ``tool.input_schema``, else one readable message."""
    if not isinstance(arguments, Mapping):
        return f"{tool.name}: arguments must be an object, got {type(arguments).__name__}"
    infinite = non_finite_path(arguments)
    if infinite is not None:
        where, number = infinite
        return f"{tool.name}: at {where!r}: {number} is not a finite number"
    compiled = _compiled(tool.name, _schema_key(tool.input_schema))
    if isinstance(compiled, str):
        return f"{tool.name}: {compiled}"
    try:
        errors = list(compiled.iter_errors(dict(arguments)))
    except Exception as exc:  # unresolvable $ref and similar schema-side failures
        return f"{tool.name}: cannot validate against the input schema: " + truncate(
            f"{type(exc).__name__}: {exc}", _MESSAGE_CHARS)
    if not errors:
        return None
    return f"{tool.name}: {_describe(errors)}"


def non_finite_path(arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """The path and JSON spelling of the first float in ``arguments`` (nested objects and
    arrays included, walked without recursion) that is NaN or infinite, else None."""
    # a path is a linked list (parent, key): extending it costs nothing at any depth
    stack: list[tuple[Any, Any]] = [((None, key), value)
                                    for key, value in reversed(list(arguments.items()))]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            spelling = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return field_path(_unlinked(path)), spelling
        if isinstance(value, Mapping):
            stack.extend(((path, key), item) for key, item in reversed(list(value.items())))
        elif isinstance(value, list | tuple):
            stack.extend(((path, index), item) for index, item in reversed(list(enumerate(value))))
    return None


def _unlinked(path: Any) -> list[Any]:
    parts: list[Any] = []
    while path is not None:
        path, key = path
        parts.append(key)
    return parts[::-1]


def _schema_key(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, default=repr)


@lru_cache(maxsize=4096)
def _compiled(tool_name: str, schema_json: str) -> Validator | str:
    """A validator for the schema, or a message when the schema is invalid.

    ``tool_name`` is part of the cache key only, so one tool's schema never shadows another's
    identical one in error reporting."""
    del tool_name
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        return "invalid input schema: " + truncate(_at(exc.absolute_path, exc.message),
                                                   _MESSAGE_CHARS)
    return cls(schema)


def _describe(errors: list[ValidationError]) -> str:
    chosen = best_match(errors)
    assert chosen is not None  # errors is non-empty
    message = truncate(_at(chosen.absolute_path, chosen.message), _MESSAGE_CHARS)
    extra = len(errors) - 1
    return message + (f" (+{extra} more error{'s' if extra > 1 else ''})" if extra else "")


def _at(path: Iterable[Any], message: str) -> str:
    where = field_path(path)
    return f"at {where!r}: {message}" if where else message


def field_path(path: Iterable[Any]) -> str:
    """``["items", 0, "name"]`` -> ``"items[0].name"``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
