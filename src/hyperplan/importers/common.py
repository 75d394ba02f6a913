"""Helpers shared by the importers: reading JSON with clear errors and turning example
responses into JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hyperplan.catalog import normalize_type
from hyperplan.errors import CatalogError


def read_text(path: str | Path) -> str:
    """A file's UTF-8 text; a missing or unreadable file is a :class:`CatalogError`."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError("file not found", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read file: {exc}", file=str(p)) from None


def read_json(path: str | Path) -> Any:
    """Load a JSON file; a missing file or malformed JSON is a :class:`CatalogError`
    naming the file (and line/column for syntax errors)."""
    p = Path(path)
    text = read_text(p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=str(p)
        ) from None


def read_jsonl(path: str | Path) -> list[Any]:
    """Load a JSON-lines file; a malformed line is a :class:`CatalogError` naming it."""
    p = Path(path)
    lines = read_text(p).splitlines()
    rows = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise CatalogError(
                f"malformed JSON on line {lineno}: {exc.msg}", file=str(p)
            ) from None
    return rows


_EXAMPLE_STRING_TYPES = {"str", "string", "int", "integer", "float", "number", "bool", "boolean"}


def schema_from_example(value: Any, *, max_depth: int = 12) -> dict[str, Any]:
    """Infer a JSON Schema from an example response value.

    Handles AppWorld ``response_schemas`` (examples such as ``1``, ``"string"``, ``true``) and
    StableToolBench ``template_response`` (type names such as ``"str"`` and ``_list_length``
    markers). Lists take the schema of their first element.
    """
    if max_depth <= 0:
        return {"type": "object"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if value is None:
        return {}
    if isinstance(value, str):
        key = value.strip().lower()
        if key in _EXAMPLE_STRING_TYPES:
            return {"type": normalize_type(key)}
        if key.startswith("list of"):
            return {"type": "array"}
        return {"type": "string"}
    if isinstance(value, list):
        if not value:
            return {"type": "array"}
        return {"type": "array", "items": schema_from_example(value[0], max_depth=max_depth - 1)}
    if isinstance(value, dict):
        props = {
            str(k): schema_from_example(v, max_depth=max_depth - 1)
            for k, v in value.items()
            if not str(k).startswith("_list_length")
        }
        return {"type": "object", "properties": props}
    return {}


def params_to_object_schema(
    params: dict[str, dict[str, Any]], required: list[str] | None = None
) -> dict[str, Any]:
    """Build an object JSON Schema from a ``{name: {type, description, required?, enum?}}``
    mapping as used by NESTFUL and NesTools (types like ``"str"`` are normalised)."""
    props: dict[str, Any] = {}
    req = list(required or [])
    for name, spec in params.items():
        spec = spec if isinstance(spec, dict) else {}
        prop: dict[str, Any] = {}
        kind = normalize_type(spec.get("type"))
        if kind != "any":
            prop["type"] = kind
        if spec.get("description"):
            prop["description"] = str(spec["description"])
        enum = spec.get("enum") or spec.get("allowed_values")
        if isinstance(enum, list) and enum:
            prop["enum"] = enum
        if isinstance(spec.get("properties"), dict):
            prop["type"] = "object"
            prop["properties"] = params_to_object_schema(spec["properties"])["properties"]
        props[str(name)] = prop
        if spec.get("required") is True and name not in req:
            req.append(str(name))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if req:
        schema["required"] = req
    return schema
