"""Flattening of JSON Schemas into schema paths (the schema nodes of the hypergraph).

Inputs are the top-level properties of a tool's object input schema. Outputs are flattened
recursively: object properties join with ``.``, array items add ``[]``; both intermediate
containers and leaves become paths (``songs[]``, ``songs[].id``, ``owner.email``). A root
array response yields paths such as ``[].password``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hyperplan.catalog import normalize_type

MAX_OUTPUT_DEPTH = 6
MAX_OUTPUT_PATHS = 400


class SchemaWarning(UserWarning):
    """A schema was cut short (recursion, depth or size) while flattening."""


@dataclass(frozen=True, slots=True)
class SchemaField:
    """One flattened schema path with its JSON type, description and requiredness."""

    path: str
    type: str
    description: str = ""
    required: bool = False
    enum: tuple[Any, ...] | None = None


@lru_cache(maxsize=4096)
def _type_name(raw: str) -> str:
    return normalize_type(raw)


def schema_type(schema: dict[str, Any]) -> str:
    """The JSON type of a schema, inferring ``object``/``array`` from keywords."""
    if "type" in schema:
        raw = schema["type"]
        return _type_name(raw) if isinstance(raw, str) else normalize_type(raw)
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, dict):
                    kind = schema_type(option)
                    if kind not in ("null", "any"):
                        return kind
    return "any"


def _enum(schema: dict[str, Any]) -> tuple[Any, ...] | None:
    values = schema.get("enum")
    if isinstance(values, list) and values:
        return tuple(v for v in values if isinstance(v, str | int | float | bool))
    return None


def input_fields(schema: dict[str, Any]) -> list[SchemaField]:
    """Top-level properties of an object input schema, with their required flags."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields = []
    for name, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        fields.append(
            SchemaField(
                path=str(name),
                type=schema_type(sub),
                description=str(sub.get("description") or sub.get("title") or ""),
                required=name in required,
                enum=_enum(sub),
            )
        )
    return fields


def _merge_composite(schema: dict[str, Any]) -> dict[str, Any]:
    """Fold ``allOf`` and the first object option of ``anyOf``/``oneOf`` into one schema."""
    if "allOf" not in schema and "anyOf" not in schema and "oneOf" not in schema:
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k not in ("allOf",)}
    props: dict[str, Any] = dict(schema.get("properties") or {})
    for part in schema.get("allOf") or []:
        if isinstance(part, dict):
            part = _merge_composite(part)
            props.update(part.get("properties") or {})
            if "items" in part and "items" not in merged:
                merged["items"] = part["items"]
    for key in ("anyOf", "oneOf"):
        for part in schema.get(key) or []:
            if isinstance(part, dict) and schema_type(part) in ("object", "array"):
                part = _merge_composite(part)
                for pk, pv in (part.get("properties") or {}).items():
                    props.setdefault(pk, pv)
                if "items" in part and "items" not in merged:
                    merged["items"] = part["items"]
                break
    if props:
        merged["properties"] = props
    return merged


def output_fields(schema: dict[str, Any] | None, *, where: str = "",
                  oversized: list[tuple[str, int]] | None = None) -> list[SchemaField]:
    """All paths of an output schema (containers and leaves), depth- and size-bounded.

    Recursive schemas (Python-level cycles left by ``$ref`` resolution) are cut at the
    repeated node with a :class:`SchemaWarning` naming ``where`` and the path. A schema of
    more than :data:`MAX_OUTPUT_PATHS` paths keeps the first ones, with a warning, or with
    ``(where, number of paths)`` appended to ``oversized`` when it is given (the caller
    warns once for all).
    """
    if not schema:
        return []
    out: list[SchemaField] = []
    _walk(schema, "", out, set(), 0, where)
    if len(out) <= MAX_OUTPUT_PATHS:
        return out
    if oversized is not None:
        oversized.append((where, len(out)))
    else:
        warnings.warn(
            f"{where}: output schema has {len(out)} paths, keeping the first "
            f"{MAX_OUTPUT_PATHS}",
            SchemaWarning,
            stacklevel=2,
        )
    return out[:MAX_OUTPUT_PATHS]


def _walk(
    schema: dict[str, Any],
    prefix: str,
    out: list[SchemaField],
    stack: set[int],
    depth: int,
    where: str,
) -> None:
    if id(schema) in stack:
        warnings.warn(
            f"{where}: recursive output schema at {prefix or '<root>'!r}; cut there",
            SchemaWarning,
            stacklevel=3,
        )
        return
    if depth > MAX_OUTPUT_DEPTH:
        return
    stack = stack | {id(schema)}
    schema = _merge_composite(schema)
    kind = schema_type(schema)
    if kind == "object":
        for name, sub in (schema.get("properties") or {}).items():
            sub = sub if isinstance(sub, dict) else {}
            path = f"{prefix}.{name}" if prefix else str(name)
            out.append(
                SchemaField(
                    path=path,
                    type=schema_type(_merge_composite(sub)),
                    description=str(sub.get("description") or sub.get("title") or ""),
                    enum=_enum(sub),
                )
            )
            _walk(sub, path, out, stack, depth + 1, where)
    elif kind == "array":
        items = schema.get("items")
        if isinstance(items, dict) and schema_type(_merge_composite(items)) in ("object", "array"):
            _walk(items, f"{prefix}[]", out, stack, depth + 1, where)
        elif not prefix:  # a root list of scalars: its own description, else its items'
            item_type = schema_type(items) if isinstance(items, dict) else "any"
            described = schema.get("description") or (
                items.get("description") if isinstance(items, dict) else "")
            out.append(SchemaField(path="[]", type=item_type, description=str(described or "")))
    elif not prefix:
        out.append(
            SchemaField(path="result", type=kind, description=str(schema.get("description", "")))
        )
