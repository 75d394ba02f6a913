"""Local ``$ref`` resolution for JSON Schemas (OpenAPI ``#/components/...``, ``#/$defs/...``).

:func:`resolve_refs` returns a new, self-contained copy of a schema: every local reference
(a JSON pointer into ``root``, with ``~0``/``~1`` and percent escapes) is inlined, ``$defs`` /
``definitions`` and ``discriminator.mapping`` (references too) are dropped, and boolean
sub-schemas become objects (``true`` -> ``{}``, ``false`` -> ``{"not": {}}``). A reference
met again inside its own expansion is replaced by ``{"type": "object", "description":
"recursive reference to <ref>"}`` with a :class:`~hyperplan.graph.schema_paths.SchemaWarning`
(also when the pointer differs but leads to a schema being expanded, e.g.
``#/components/schemas/A/properties/b`` inside ``#/components/schemas/A``),
so the result is always a finite tree. So is a reference met deeper than
:data:`MAX_REF_DEPTH` levels (chains of distinct types that only recurse after dozens of
levels, as in large cloud APIs) or once :data:`MAX_NODES` nodes were produced. A caller that
imports many schemas may pass a ``notes`` list to collect these messages instead of a warning
per cut (and warn once itself).

Shapes that would break later stages (``properties`` that is not an object, ``items`` that
is not a schema, ``anyOf`` that is not a list, unresolvable or external references, cyclic
Python objects, absurd nesting) raise :class:`~hyperplan.errors.CatalogError` naming the file,
the tool and the field path. The module also holds two small checks every importer shares.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from hyperplan.catalog import ToolSpec
from hyperplan.errors import CatalogError
from hyperplan.graph.schema_paths import SchemaWarning
from hyperplan.importers.common import read_json
from hyperplan.importers.repair import (
    RepairLog,
    hoisted_required,
    named_properties,
    read_schema,
    repair_keywords,
    short,
)

MAX_DEPTH = 100
"""Deepest schema nesting accepted (guards against ``RecursionError``)."""

MAX_REF_DEPTH = 64
"""Nesting level from which a ``$ref`` is no longer inlined (keeps below :data:`MAX_DEPTH`)."""

MAX_NODES = 2000
"""Schema nodes produced per :func:`resolve_refs` call before references stop being inlined
(the hypergraph keeps 400 output paths at most; APIs whose types all refer to one another,
like Stripe's, would otherwise expand every schema to this size, at great cost)."""

MAX_TOTAL_NODES = 200_000
"""Schema nodes visited per call before giving up (YAML alias bombs share objects)."""

_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)
_DROPPED = ("$defs", "definitions")


@dataclasses.dataclass
class _Walk:
    root: Any
    file: str | None
    tool: str | None
    field: str
    notes: list[str] | None = None
    log: RepairLog | None = None
    refs: list[str] = dataclasses.field(default_factory=list)
    targets: list[int] = dataclasses.field(default_factory=list)
    origins: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    nodes: int = 0
    over_budget: bool = False

    def error(self, message: str, path: str) -> CatalogError:
        return CatalogError(message, file=self.file, tool=self.tool, field=path or self.field)

    def warn(self, message: str, path: str) -> None:
        if self.notes is not None:
            self.notes.append(f"tool {self.tool!r}, field {path or self.field!r}: {message}")
            return
        where = f"file {self.file}, " if self.file else ""
        warnings.warn(
            f"{where}tool {self.tool!r}, field {path or self.field!r}: {message}",
            SchemaWarning,
            stacklevel=4,
        )

    def repaired(self, path: str, action: str) -> None:
        """Record a repair at ``path``: relative to the shared definition being inlined,
        if any (one field of the document, repaired for each tool using it)."""
        assert self.log is not None
        if self.origins:
            ref, entry = self.origins[-1]
            rel = path[len(entry):].lstrip(".") if path.startswith(entry) else path
            self.log.repaired(self.tool or "", rel, action, definition=ref)
        else:
            self.log.repaired(self.tool or "", path, action)


_DROP = object()
"""What :func:`_keyword` returns for a keyword a lenient walk leaves out."""


def resolve_refs(
    schema: Any,
    root: Any,
    *,
    file: str | None,
    tool: str | None,
    field: str,
    notes: list[str] | None = None,
    log: RepairLog | None = None,
) -> dict[str, Any]:
    """Return a fully inlined copy of ``schema`` whose local ``$ref`` point into ``root``.

    ``field`` names the schema's place (``"parameters"``, ``"responses.200"``) in errors and
    warnings; nested problems extend it (``"parameters.properties.tags.items"``). With
    ``notes``, the messages about cut references (``"tool 't', field 'f': ..."``) are appended
    to it instead of being warned. With ``log`` the walk is lenient
    (:mod:`~hyperplan.importers.repair`): what can be repaired is, what cannot is dropped,
    each recorded in ``log``; only a schema that is unreadable as a whole (or too big) is
    still an error.
    """
    walk = _Walk(root=root, file=file, tool=tool, field=field, notes=notes, log=log)
    try:
        return _schema(walk, schema, field, 0, ())
    except RecursionError:
        raise walk.error("schema nested too deeply", field) from None


def _schema(
    walk: _Walk, node: Any, path: str, depth: int, stack: tuple[int, ...]
) -> dict[str, Any]:
    if isinstance(node, bool):
        return {} if node else {"not": {}}
    if not isinstance(node, dict):
        read = read_schema(node) if walk.log is not None else None
        if read is None:
            raise walk.error(f"schema must be a JSON object, got {type(node).__name__}", path)
        walk.repaired(path, read[1])
        return _schema(walk, read[0], path, depth, stack)
    if depth > MAX_DEPTH or id(node) in stack:
        problem = (f"schema nested deeper than {MAX_DEPTH} levels" if depth > MAX_DEPTH
                   else "schema object contains itself (cyclic object)")
        if walk.log is None:
            raise walk.error(problem, path)
        walk.repaired(path, f"{problem}: cut here")
        return {"type": "object", "description": f"cut: {problem}"}
    stack = (*stack, id(node))
    walk.nodes += 1
    if walk.nodes > MAX_TOTAL_NODES:
        raise walk.error(f"schema has more than {MAX_TOTAL_NODES} nodes", path)
    ref = node.get("$ref")
    if ref is not None:
        return _inline_ref(walk, node, path, depth, stack)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        kept = _keyword(walk, str(key), value, f"{path}.{key}", depth, stack)
        if kept is not _DROP:
            out[key] = kept
    if walk.log is not None and id(node) not in walk.log.clean:
        _repair(walk, node, out, path)
    return out


def _repair(walk: _Walk, node: dict[str, Any], out: dict[str, Any], path: str) -> None:
    """Repair the keywords of ``out``, the copy of ``node``. A node of the document found
    fine is remembered as such in the log (a shared definition is then checked once per
    file, not at every use)."""
    assert walk.log is not None
    before = dict(out)
    repair_keywords(out, lambda key, action: walk.repaired(f"{path}.{key}", action),
                    hoisted_required(node))
    if len(out) == len(before) and all(out.get(k, out) is v for k, v in before.items()):
        walk.log.clean[id(node)] = node  # kept alive, so its id is never another node's


def _sub(walk: _Walk, node: Any, path: str, depth: int, stack: tuple[int, ...], *,
         keep: bool = False) -> dict[str, Any] | None:
    """:func:`_schema`, but a lenient walk drops a value that is no schema (``None``), or
    reads it as any value (``{}``) with ``keep``."""
    if isinstance(node, dict) or walk.log is None:
        return _schema(walk, node, path, depth, stack)
    if not isinstance(node, bool) and read_schema(node) is None:
        walk.repaired(path, f"{short(node)} is not a schema: "
                      f"{'read as any value' if keep else 'dropped'}")
        return {} if keep else None
    return _schema(walk, node, path, depth, stack)


def _keyword(
    walk: _Walk, key: str, value: Any, path: str, depth: int, stack: tuple[int, ...]
) -> Any:
    if key in _SCHEMA_MAPS:
        if isinstance(value, list) and walk.log is not None:
            named = named_properties(value)
            if named is not None:
                walk.repaired(path, "a list of named schemas read as the map it means")
                value = named
        if not isinstance(value, dict):
            if walk.log is None:
                raise walk.error(f"'{key}' must be an object of schemas", path)
            walk.repaired(path, f"{short(value)} is not an object of schemas: dropped")
            return _DROP
        return {str(k): _sub(walk, v, f"{path}.{k}", depth + 1, stack, keep=True)
                for k, v in value.items()}
    if key in _SCHEMA_LISTS:
        if isinstance(value, dict) and walk.log is not None:
            walk.repaired(path, "one schema read as a list of one")
            value = [value]
        if not isinstance(value, list):
            if walk.log is None:
                raise walk.error(f"'{key}' must be a list of schemas", path)
            walk.repaired(path, f"{short(value)} is not a list of schemas: dropped")
            return _DROP
        parts = [_sub(walk, v, f"{path}[{i}]", depth + 1, stack) for i, v in enumerate(value)]
        return [p for p in parts if p is not None]
    if key == "items" and isinstance(value, list):
        parts = [_sub(walk, v, f"{path}[{i}]", depth + 1, stack) for i, v in enumerate(value)]
        return [p for p in parts if p is not None]
    if key == "items" or key in _SCHEMA_ONE:
        sub = _sub(walk, value, path, depth + 1, stack)
        return _DROP if sub is None else sub
    if value is None or isinstance(value, str | int | float):  # immutable: nothing to copy
        return value
    if key == "discriminator" and isinstance(value, dict) and "mapping" in value:
        # its values are references into the document, dangling in the inlined copy (and
        # copying a base type's mapping of every subtype at each use is quadratic)
        value = {k: v for k, v in value.items() if k != "mapping"}
    try:
        return copy.deepcopy(value)
    except RecursionError:
        raise walk.error(f"value of '{key}' is nested too deeply", path) from None


def _inline_ref(
    walk: _Walk, node: dict[str, Any], path: str, depth: int, stack: tuple[int, ...]
) -> dict[str, Any]:
    ref = node["$ref"]
    siblings = {k: v for k, v in node.items() if k != "$ref"}
    if not isinstance(ref, str):
        if walk.log is None:
            raise walk.error(f"$ref must be a string, got {type(ref).__name__}", f"{path}.$ref")
        walk.repaired(f"{path}.$ref", f"{short(ref)} is not a reference: dropped")
        return _schema(walk, siblings, path, depth, stack)
    rest = _schema(walk, siblings, path, depth, stack) if siblings else {}
    if ref in walk.refs:
        walk.warn(f"recursive reference {ref} cut", path)
        return {**rest, "type": "object", "description": f"recursive reference to {ref}"}
    if depth >= MAX_REF_DEPTH:
        walk.warn(f"reference {ref} not inlined: schema nested deeper than {MAX_REF_DEPTH} "
                  "levels", path)
        return {**rest, "type": "object", "description": f"reference to {ref} (not inlined)"}
    if walk.nodes > MAX_NODES:
        if not walk.over_budget:
            walk.over_budget = True
            walk.warn(f"schema exceeds {MAX_NODES} nodes; {ref} and later refs not inlined", path)
        return {**rest, "type": "object", "description": f"reference to {ref} (not inlined)"}
    try:
        target = lookup_pointer(walk.root, ref, file=walk.file, tool=walk.tool, field=path)
    except CatalogError as exc:
        if walk.log is None:
            raise
        walk.repaired(f"{path}.$ref", f"{exc.reason}: dropped (any value)")
        return rest
    if id(target) in walk.targets:  # the same schema reached again under another pointer
        walk.warn(f"recursive reference {ref} cut", path)
        return {**rest, "type": "object", "description": f"recursive reference to {ref}"}
    walk.refs.append(ref)
    walk.targets.append(id(target))
    walk.origins.append((ref, path))
    try:
        # a fresh object stack: meeting an object again across a reference is recursion
        # through pointers that differ (cut above, or when a pointer repeats), not a cycle
        resolved = _schema(walk, target, path, depth + 1, ())
    finally:
        walk.refs.pop()
        walk.targets.pop()
        walk.origins.pop()
    return {**resolved, **rest}


def lookup_pointer(root: Any, ref: str, *, file: str | None, tool: str | None, field: str) -> Any:
    """Follow a local reference ``#/a/b~1c`` inside ``root``; anything else is an error."""
    if not ref.startswith("#"):
        raise CatalogError(
            f"external $ref {ref!r} is not supported", file=file, tool=tool, field=field
        )
    pointer = unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        raise CatalogError(
            f"unresolvable $ref {ref!r} (anchors unsupported)", file=file, tool=tool, field=field
        )
    node = root
    for token in pointer.split("/")[1:] if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise CatalogError(f"unresolvable $ref {ref!r}", file=file, tool=tool, field=field)
    return node


def check_input_schema(schema: dict[str, Any], *, file: str | None, tool: str, field: str) -> None:
    """Raise a :class:`CatalogError` naming ``field`` unless ``schema`` is an object schema
    with a ``required`` list of names (checked before :class:`ToolSpec` would, so the error
    names the field as the source format spells it)."""
    kind = schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise CatalogError(
            f"input schema must be an object schema, got type {kind!r}",
            file=file,
            tool=tool,
            field=field,
        )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CatalogError(
            "'required' must be a list of property names",
            file=file,
            tool=tool,
            field=f"{field}.required",
        )


def string_list(value: Any, *, file: str | None, tool: str, field: str,
                log: RepairLog | None = None) -> tuple[str, ...]:
    """A list of strings (``x-effects``); ``None`` is empty, anything else is an error, or
    with ``log`` (lenient import) read as well as it can be: one string as a list of one,
    entries that are not strings dropped."""
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if log is None:
        raise CatalogError("must be a list of strings", file=file, tool=tool, field=field)
    if isinstance(value, str):
        log.repaired(tool, field, f"the string {short(value)} read as a list of one")
        return (value,)
    kept = tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
    log.repaired(tool, field, "entries that are not strings dropped" if kept
                 else f"{short(value)} is not a list of strings: dropped")
    return kept


def unique_tools(tools: Iterable[ToolSpec], *, file: str | None, field: str) -> list[ToolSpec]:
    """The tools in order; a repeated name is a :class:`CatalogError` naming ``field``."""
    seen: set[str] = set()
    out = []
    for tool in tools:
        if tool.name in seen:
            raise CatalogError("duplicate tool name", file=file, tool=tool.name, field=field)
        seen.add(tool.name)
        out.append(tool)
    return out


def read_source(source: Any, label: str) -> tuple[Any, str]:
    """``(data, file)``: a ``str``/``Path`` is read as JSON and named by its path; parsed
    data is returned as is and named ``label`` (e.g. ``"<openai-functions>"``) in errors."""
    if isinstance(source, str | Path):
        try:
            return read_json(source), str(source)
        except RecursionError:
            raise CatalogError("JSON nested too deeply", file=str(source)) from None
    return source, label


def name_and_description(entry: dict[str, Any], index: int, file: str,
                         log: RepairLog | None = None) -> tuple[str, str]:
    """The required non-empty ``name`` and optional string ``description`` of a tool entry
    (with ``log``, lenient import, a description that is not a string is dropped)."""
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CatalogError(
            "missing required key 'name' (a non-empty string)",
            file=file,
            tool=f"#{index}",
            field="name",
        )
    description = entry.get("description") or ""
    if not isinstance(description, str) and log is not None:
        log.repaired(name, "description", f"{short(description)} is not a string: dropped")
        description = ""
    if not isinstance(description, str):
        raise CatalogError(
            "'description' must be a string", file=file, tool=name, field="description"
        )
    return name, description


def tool_schemas(raw_in: Any, raw_out: Any, *, file: str, tool: str, in_field: str,
                 out_field: str, log: RepairLog | None = None,
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A tool's input schema (refs inlined, checked to be an object schema) and its output
    schema (refs inlined; ``None`` when absent). With ``log`` (lenient import), a missing
    input schema is one without inputs and an output schema that cannot be read is dropped,
    each recorded."""
    if raw_in is None and log is not None:
        log.repaired(tool, in_field, "missing: read as a tool without inputs")
        raw_in = {"type": "object", "properties": {}}
    inputs = resolve_refs(raw_in, raw_in, file=file, tool=tool, field=in_field, log=log)
    check_input_schema(inputs, file=file, tool=tool, field=in_field)
    outputs = None
    if raw_out is not None:
        try:
            outputs = resolve_refs(raw_out, raw_out, file=file, tool=tool, field=out_field,
                                   log=log)
        except CatalogError as exc:
            if log is None:
                raise
            log.repaired(tool, exc.field or out_field, f"{exc.reason}: output schema dropped")
    return inputs, outputs
