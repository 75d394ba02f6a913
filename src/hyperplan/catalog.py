"""The tool catalog: what every importer returns and what the hypergraph is built from.

A :class:`ToolSpec` is one tool with its input JSON Schema (an object schema), an optional
output JSON Schema and optional declared effects / preconditions (state predicates that are
not parameters, e.g. ``"spotify.authenticated"``). A :class:`Catalog` is an ordered set of
tools with unique names.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hyperplan.errors import CatalogError

#: C0/C1 controls, DEL, and the bidi embeddings, overrides and isolates: never part of a tool
#: or parameter name, since a name is printed to terminals and copied into exports, where they
#: would inject escape sequences or make text read differently from what it is.
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

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
    ``output_schema`` plus declared ``effects`` (HyperAgent paper, Preliminaries)."""

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
        start = len(value) - len(value.lstrip(" \t\r\n"))  # surrounding blanks go,
        end = len(value.rstrip(" \t\r\n"))                 # any other control is refused
        bad = control_char(value, start, end)
        if bad:
            raise ValueError(f"tool name contains {bad}")
        value = value.strip()
        if not value:
            raise ValueError("tool name is empty")
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
            if not isinstance(pschema, dict):
                raise ValueError(f"property {pname!r} schema must be an object")
        required = value.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ValueError("input schema 'required' must be a list of names")
        _check_property_names(value)
        return value

    @field_validator("output_schema")
    @classmethod
    def _output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and not isinstance(value, dict):
            raise ValueError("output schema must be a JSON Schema object")
        if value is not None:
            _check_property_names(value)
        return value

    @property
    def required_inputs(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", []))


def control_char(text: str, start: int = 0, end: int | None = None) -> str:
    """The first :data:`CONTROL_CHARS` character of ``text[start:end]``, said safely
    (``"the control character '\\x1b' at position 4"``), or ``""`` when there is none."""
    found = CONTROL_CHARS.search(text, start, len(text) if end is None else end)
    if found is None:
        return ""
    kind = "bidi control" if found.group() >= "\u202a" else "control"
    return f"the {kind} character {found.group()!r} at position {found.start()}"


def printable(text: str) -> str:
    """``text`` safe to print to a terminal: every :data:`CONTROL_CHARS` character but line
    breaks and tabs written as its escape (``\\x1b``), so a description cannot inject escape
    sequences or reorder what a reader sees."""
    return CONTROL_CHARS.sub(
        lambda m: m.group() if m.group() in "\n\t" else repr(m.group())[1:-1], text)


_NESTED_SCHEMAS = ("items", "allOf", "anyOf", "oneOf")
_HOLDS_NAMES = frozenset(("properties", *_NESTED_SCHEMAS))


def _check_property_names(schema: dict[str, Any]) -> None:
    """Refuse a property name holding a :data:`CONTROL_CHARS` character anywhere a name can
    become a schema path (``properties`` at any depth, through ``items`` and
    ``allOf``/``anyOf``/``oneOf``): such paths are node names of the graph, shown and
    exported like tool names. One regex search per ``properties`` object, leaf schemas are
    skipped with one set test, and shared or recursive sub-schemas are read once."""
    todo, seen = [schema], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        props = node.get("properties")
        if isinstance(props, dict) and props:
            names = [str(n).strip(" \t\r\n") for n in props]  # blanks around are data noise
            if CONTROL_CHARS.search("".join(names)):
                bad = next(n for n in names if CONTROL_CHARS.search(n))
                raise ValueError(f"property name {bad!r} contains {control_char(bad)}")
            todo += [sub for sub in props.values()
                     if isinstance(sub, dict) and not _HOLDS_NAMES.isdisjoint(sub)]
        for key in _NESTED_SCHEMAS:
            sub = node.get(key)
            if isinstance(sub, dict):
                todo.append(sub)
            elif isinstance(sub, list):
                todo += [part for part in sub if isinstance(part, dict)]


class CatalogWarning(UserWarning):
    """Something of a catalog was ignored (a misplaced key, a ``required`` name with no
    property): the catalog still loads, but the user should know what it lost."""


class Repair(BaseModel):
    """One non-conforming field a lenient importer repaired (``additionalProperties: "true"``
    read as ``true``), or one tool it dropped because nothing usable was left of it.

    ``field`` is the path of the field in the tool (``responses.200.properties.id.type``), or
    inside ``definition`` when the field sits in a shared definition the tool refers to
    (``definition="#/components/schemas/Pet"``, ``field="additionalProperties"``): that one
    field of the document is then repaired once for every tool using it."""

    model_config = ConfigDict(frozen=True)

    tool: str
    field: str
    action: str
    definition: str = ""
    dropped: bool = False


def make_tool(*, file: str | None = None, **fields: Any) -> ToolSpec:
    """Build a :class:`ToolSpec`, turning validation failures into a :class:`CatalogError`
    that names the file, the tool and the field. ``required`` names that are not among the
    input properties make no input node, so one :class:`CatalogWarning` per tool names them
    rather than dropping them silently."""
    try:
        tool = ToolSpec(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        name = fields.get("name")
        raise CatalogError(
            str(err.get("msg", exc)).removeprefix("Value error, "),
            file=file,
            tool=name if isinstance(name, str) else None,
            field=loc or None,
        ) from None
    _warn_missing_required(tool, file)
    return tool


def _warn_missing_required(tool: ToolSpec, file: str | None) -> None:
    required = tool.input_schema.get("required")
    if not required:
        return
    props = tool.input_schema.get("properties") or {}
    missing = [r for r in required if r not in props]
    if missing:
        warnings.warn(f"{file or tool.source or '<catalog>'}: tool {tool.name!r}: 'required' "
                      f"names {', '.join(map(repr, missing))}, not in 'properties' (ignored: "
                      "no input is made for them)", CatalogWarning, stacklevel=3)


class Catalog(BaseModel):
    """An ordered collection of tools with unique names."""

    model_config = ConfigDict(frozen=True)

    tools: tuple[ToolSpec, ...]
    source: str = ""
    #: what a lenient importer repaired or dropped (each also said in a CatalogWarning)
    repairs: tuple[Repair, ...] = ()

    def __len__(self) -> int:
        return len(self.tools)

    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def get(self, name: str) -> ToolSpec:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)


def build_catalog(tools: Iterable[ToolSpec], *, source: str = "",
                  repairs: Iterable[Repair] = ()) -> Catalog:
    """Collect tools into a :class:`Catalog`; duplicate names are a :class:`CatalogError`."""
    seen: dict[str, ToolSpec] = {}
    for tool in tools:
        if tool.name in seen:
            raise CatalogError(
                "duplicate tool name", file=source or tool.source or None, tool=tool.name
            )
        seen[tool.name] = tool
    return Catalog(tools=tuple(seen.values()), source=source, repairs=tuple(repairs))


def merge_catalogs(catalogs: Iterable[Catalog], *,
                   labels: Sequence[str] | None = None) -> Catalog:
    """Concatenate catalogs in order (so the merged order is deterministic). Names defined
    by two catalogs are one :class:`CatalogError` listing every clash with the two catalogs
    (``labels[i]`` names catalog ``i`` in it, else its ``source``)."""
    parts = list(catalogs)
    names = list(labels) if labels is not None else [c.source for c in parts]
    owner: dict[str, int] = {}
    clashes: list[str] = []
    for index, catalog in enumerate(parts):
        for tool in catalog.tools:
            first = owner.setdefault(tool.name, index)
            if first != index:
                clashes.append(f"{tool.name!r} ({_label(names, first)} and "
                               f"{_label(names, index)})")
    if clashes:
        shown = ", ".join(clashes[:5]) + (f" and {len(clashes) - 5} more"
                                          if len(clashes) > 5 else "")
        raise CatalogError(f"{len(clashes)} tool name{'s are' if len(clashes) > 1 else ' is'}"
                           f" defined twice: {shown}; rename one side of each")
    tools = [t for c in parts for t in c.tools]
    return build_catalog(tools, source="+".join(c.source for c in parts if c.source),
                         repairs=[r for c in parts for r in c.repairs])


def _label(labels: Sequence[str], index: int) -> str:
    return labels[index] if index < len(labels) and labels[index] else f"catalog {index + 1}"
