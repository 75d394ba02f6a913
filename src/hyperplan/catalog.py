"""The tool catalog: what every importer returns and what the hypergraph is built from.

A :class:`ToolSpec` is one tool with its input JSON Schema (an object schema), an optional
output JSON Schema and optional declared effects / preconditions (state predicates that are
not parameters, e.g. ``"spotify.authenticated"``). A :class:`Catalog` is an ordered set of
tools with unique names.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hyperplan.errors import CatalogError

# C0/C1 controls, DEL, and the bidi embedding/override/isolate characters
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null", "any")

_TYPE_ALIASES = {
    "str": "string",
    "string": "string",
    "text": "string",
    "date": "string",
    "datetime": "string",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "number": "number",
    "decimal": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "null": "null",
    "none": "null",
    "any": "any",
    "enum": "string",
    "time": "string",
}


def known_type(raw: Any) -> str | None:
    """:func:`normalize_type`, but ``None`` instead of ``"any"`` for unknown names."""
    kind = normalize_type(raw)
    return None if kind == "any" else kind


def normalize_type(raw: Any) -> str:
    """Map a loosely written type (``"str"``, ``"int"``, ``["string", "null"]``, ``None``)
    to one JSON Schema type name from :data:`JSON_TYPES`; unknown names become ``"any"``."""
    if isinstance(raw, list):
        named = [normalize_type(t) for t in raw]
        non_null = [t for t in named if t != "null"]
        return non_null[0] if non_null else "null"
    if not isinstance(raw, str):
        return "any"
    key = raw.split("(")[0].strip().lower()  # "Date (yyyy-mm-dd)" -> "date"
    if key.startswith(("list[", "array[", "list of")):
        return "array"
    if key.startswith(("dict[", "dict of")):
        return "object"
    return _TYPE_ALIASES.get(key, "any")


class ToolSpec(BaseModel):
    """One tool: hyperedge e with inputs I(e) from ``input_schema`` and outputs O(e) from
    ``output_schema`` plus declared ``effects`` (seed 000, Preliminaries)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: dict[str, Any] | None = None
    effects: tuple[str, ...] = ()
    preconditions: tuple[str, ...] = ()
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _strip_name(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("tool name is empty")
        if _CONTROL.search(value):
            raise ValueError(f"tool name {value!r} contains control or bidi characters "
                             "(they could inject terminal escapes or hide text)")
        return value

    @field_validator("input_schema")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        kind = value.get("type", "object")
        if kind != "object" and not (isinstance(kind, list) and "object" in kind):
            raise ValueError(f"input schema must be an object schema, got type {kind!r}")
        props = value.get("properties", {})
        if not isinstance(props, dict):
            raise ValueError("input schema 'properties' must be an object")
        for pname, pschema in props.items():
            if _CONTROL.search(str(pname)):
                raise ValueError(f"property name {pname!r} contains control characters")
            if not isinstance(pschema, dict):
                raise ValueError(f"property {pname!r} schema must be an object")
        required = value.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ValueError("input schema 'required' must be a list of names")
        return value

    @field_validator("output_schema")
    @classmethod
    def _output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and not isinstance(value, dict):
            raise ValueError("output schema must be a JSON Schema object")
        return value

    @property
    def required_inputs(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", []))


def make_tool(*, file: str | None = None, **fields: Any) -> ToolSpec:
    """Build a :class:`ToolSpec`, turning validation failures into a :class:`CatalogError`
    that names the file, the tool and the field; ``required`` names that are not among the
    input properties are kept out of nothing silently: a warning names them."""
    try:
        tool = ToolSpec(**fields)
        schema = tool.input_schema
        missing = [r for r in schema.get("required", [])
                   if r not in (schema.get("properties") or {})]
        if missing:
            warnings.warn(f"{file or tool.source}: tool {tool.name!r}: 'required' names "
                          f"{', '.join(map(repr, missing))}, not in 'properties' (no input "
                          "is made for them)", stacklevel=2)
        return tool
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        name = fields.get("name")
        raise CatalogError(
            str(err.get("msg", exc)),
            file=file,
            tool=name if isinstance(name, str) else None,
            field=loc or None,
        ) from None


class Catalog(BaseModel):
    """An ordered collection of tools with unique names."""

    model_config = ConfigDict(frozen=True)

    tools: tuple[ToolSpec, ...]
    source: str = ""

    def __len__(self) -> int:
        return len(self.tools)

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def get(self, name: str) -> ToolSpec:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)


def build_catalog(tools: Iterable[ToolSpec], *, source: str = "") -> Catalog:
    """Collect tools into a :class:`Catalog`; duplicate names are a :class:`CatalogError`."""
    seen: dict[str, ToolSpec] = {}
    for tool in tools:
        if tool.name in seen:
            raise CatalogError(
                "duplicate tool name", file=source or tool.source or None, tool=tool.name
            )
        seen[tool.name] = tool
    return Catalog(tools=tuple(seen.values()), source=source)


def merge_catalogs(catalogs: Iterable[Catalog]) -> Catalog:
    """Concatenate catalogs; a name defined twice is a :class:`CatalogError`."""
    tools = [t for c in catalogs for t in c.tools]
    return build_catalog(tools, source="+".join(c.source for c in catalogs if c.source))
