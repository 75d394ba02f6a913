"""Importer for OpenAI function-calling tool lists (also the DeepPlanning ``*_tool_schema*``).

Reads a JSON file (or already-parsed data) holding a list of
``{"type": "function", "function": {name, description, parameters, returns?}}`` entries or
bare ``{name, description, parameters, returns?}`` objects, optionally wrapped as
``{"tools": [...]}`` or ``{"functions": [...]}``; a single function object is accepted too.

``parameters`` (optional or ``null``: no inputs) must be an object schema; ``returns`` (a JSON
Schema) becomes the output schema. Local ``$ref`` (``#/$defs/...``, ``#/definitions/...``) are
inlined relative to the schema that holds them, recursive ones are cut with a
:class:`~hyperplan.graph.schema_paths.SchemaWarning`. Optional ``x-effects`` /
``x-preconditions`` string lists become effects / preconditions; ``strict`` is kept in
metadata. Non-conforming fields are repaired and a function that cannot be read is dropped,
each with a warning (:mod:`~hyperplan.importers.repair`); a file with no usable function is a
:class:`~hyperplan.errors.CatalogError`. Keys the format
does not define (``x-*`` aside) are ignored with one
:class:`~hyperplan.catalog.CatalogWarning` for the file listing them per tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, make_tool
from hyperplan.errors import CatalogError
from hyperplan.importers.common import UnknownKeys, unknown_keys
from hyperplan.importers.repair import RepairLog, lenient_catalog
from hyperplan.importers.schema_refs import (
    name_and_description,
    read_source,
    string_list,
    tool_schemas,
)

SOURCE = "openai"


def load_openai_functions(source: str | Path | list[Any] | dict[str, Any]) -> Catalog:
    """Load OpenAI-style function definitions from a JSON file path or parsed data."""
    data, file = read_source(source, "<openai-functions>")
    return lenient_catalog(_entries(data, file), file, _tool, _unknown)


def _entries(data: Any, file: str) -> list[Any]:
    if isinstance(data, dict) and data.get("format") == "hyperplan.graph":  # graph.io.FORMAT
        raise CatalogError("a saved hyperplan graph, not a tool catalog; read it with "
                           "`hyperplan graph stats|show`", file=file, field="format")
    if isinstance(data, dict):
        for key in ("tools", "functions"):
            if key in data:
                if not isinstance(data[key], list):
                    raise CatalogError(f"'{key}' must be a list", file=file, field=key)
                return list(data[key])
        if "name" in data or "function" in data:
            return [data]
        raise CatalogError(
            "expected a list of functions or a {'tools': [...]} object", file=file, field="tools"
        )
    if isinstance(data, list):
        return data
    raise CatalogError(
        f"expected a list of functions, got {type(data).__name__}", file=file, field="<root>"
    )


def _function_body(entry: Any, index: int, file: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise CatalogError(
            "function entry must be an object", file=file, tool=f"#{index}", field=f"[{index}]"
        )
    fn = entry.get("function")
    if fn is None:
        return entry
    if not isinstance(fn, dict):
        raise CatalogError(
            "'function' must be an object", file=file, tool=f"#{index}", field="function"
        )
    return fn


_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "returns", "strict", "type"})
_WRAPPER_KEYS = frozenset({"type", "function"})
_MISPLACED = {k: f"function.{k}" for k in _FUNCTION_KEYS - _WRAPPER_KEYS}


def _unknown(entry: dict[str, Any]) -> list[UnknownKeys]:
    """The keys of a (valid) entry that nothing reads, which are ignored but never silently:
    ``returns`` beside ``function`` is a misplaced ``function.returns``, and its output
    schema would be lost without a word."""
    fn = entry.get("function")
    if fn is None:
        found = [unknown_keys(entry, _FUNCTION_KEYS)]
    else:
        found = [unknown_keys(entry, _WRAPPER_KEYS, where=" beside 'function'",
                              aliases=_MISPLACED),
                 unknown_keys(fn, _FUNCTION_KEYS, where=" in 'function'")]
    return [f for f in found if f is not None]


def _tool(entry: Any, index: int, file: str, log: RepairLog) -> ToolSpec:
    fn = _function_body(entry, index, file)
    name, description = name_and_description(fn, index, file, log)
    params = fn.get("parameters")
    if params is None:  # a function without arguments
        params = {"type": "object", "properties": {}}
    inputs, outputs = tool_schemas(params, fn.get("returns"), file=file, tool=name,
                                   in_field="parameters", out_field="returns", log=log)
    metadata: dict[str, Any] = {"index": index}
    if isinstance(fn.get("strict"), bool):
        metadata["strict"] = fn["strict"]
    return make_tool(
        file=file,
        name=name,
        description=description,
        input_schema=inputs,
        output_schema=outputs,
        effects=string_list(
            _extension(fn, entry, "x-effects"), file=file, tool=name, field="x-effects", log=log
        ),
        preconditions=string_list(
            _extension(fn, entry, "x-preconditions"), file=file, tool=name,
            field="x-preconditions", log=log
        ),
        source=SOURCE,
        metadata=metadata,
    )


def _extension(fn: dict[str, Any], entry: dict[str, Any], key: str) -> Any:
    """``x-*`` keys may sit in the function object or beside it in the wrapper."""
    return fn.get(key, entry.get(key))
