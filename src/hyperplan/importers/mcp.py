"""Importer for Model Context Protocol ``tools/list`` results (a file format, no ``mcp`` SDK).

Reads a JSON file (or parsed data) that is either the result object
``{"tools": [{name, title?, description?, inputSchema, outputSchema?, annotations?}]}``, a
JSON-RPC response wrapping it in ``"result"`` (an ``"error"`` response is a
:class:`~hyperplan.errors.CatalogError`), a bare list of tools, or one tool object.
``nextCursor`` (pagination) is ignored: concatenate pages before importing.

``inputSchema`` must be an object schema (a missing one is read as no inputs);
``outputSchema`` becomes the output schema. Non-conforming fields are repaired and a tool
that cannot be read is dropped, each with a warning (:mod:`~hyperplan.importers.repair`);
a file with no usable tool is a :class:`~hyperplan.errors.CatalogError`. Local ``$ref`` are
inlined (recursive ones cut with a warning). The scalar values of tool annotations are kept
in ``metadata["annotations"]``; ``metadata["read_only"]`` copies ``readOnlyHint`` and
``metadata["destructive"]`` is ``destructiveHint`` or, when only ``readOnlyHint == False``
is given, ``True`` (the MCP default for non-read-only tools). Keys
an MCP tool does not define (a misplaced ``parameters``, a typo) are ignored with one
:class:`~hyperplan.catalog.CatalogWarning` for the file listing them per tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, make_tool
from hyperplan.errors import CatalogError
from hyperplan.importers.common import UnknownKeys, unknown_keys
from hyperplan.importers.repair import RepairLog, lenient_catalog, short
from hyperplan.importers.schema_refs import name_and_description, read_source, tool_schemas

SOURCE = "mcp"


def load_mcp_tools(source: str | Path | dict[str, Any] | list[Any]) -> Catalog:
    """Load an MCP ``tools/list`` result from a JSON file path or parsed data (leniently:
    see :mod:`~hyperplan.importers.repair`)."""
    data, file = read_source(source, "<mcp-tools>")
    return lenient_catalog(_entries(data, file), file, _tool, _unknown)


#: The keys of an MCP ``Tool`` (2025-11-25 schema); anything else is ignored with a warning.
_TOOL_KEYS = frozenset({"name", "title", "description", "inputSchema", "outputSchema",
                        "annotations", "_meta", "icons", "execution"})
_ALIASES = {"input_schema": "'inputSchema'", "parameters": "'inputSchema'",
            "output_schema": "'outputSchema'", "returns": "'outputSchema'",
            "meta": "'_meta'"}


def _unknown(entry: dict[str, Any]) -> list[UnknownKeys]:
    found = unknown_keys(entry, _TOOL_KEYS, aliases=_ALIASES)
    return [found] if found is not None else []


def _entries(data: Any, file: str) -> list[Any]:
    if isinstance(data, dict) and ("jsonrpc" in data or "result" in data or "error" in data):
        if "error" in data:
            raise CatalogError(
                f"JSON-RPC error response: {data['error']!r}", file=file, field="error"
            )
        data = data.get("result")
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        if "tools" in data:
            if not isinstance(data["tools"], list):
                raise CatalogError("'tools' must be a list", file=file, field="tools")
            return list(data["tools"])
        if "name" in data and "inputSchema" in data:
            return [data]
    raise CatalogError(
        "expected {'tools': [...]}, a JSON-RPC result or a list of tools", file=file, field="tools"
    )


def _tool(entry: Any, index: int, file: str, log: RepairLog) -> ToolSpec:
    if not isinstance(entry, dict):
        raise CatalogError(
            "tool entry must be an object", file=file, tool=f"#{index}", field=f"tools[{index}]"
        )
    name, description = name_and_description(entry, index, file, log)
    inputs, outputs = tool_schemas(entry.get("inputSchema"), entry.get("outputSchema"),
                                   file=file, tool=name, in_field="inputSchema",
                                   out_field="outputSchema", log=log)
    return make_tool(
        file=file,
        name=name,
        description=description,
        input_schema=inputs,
        output_schema=outputs,
        source=SOURCE,
        metadata=_metadata(entry, index, name, log),
    )


def _metadata(entry: dict[str, Any], index: int, name: str, log: RepairLog) -> dict[str, Any]:
    metadata: dict[str, Any] = {"index": index}
    if isinstance(entry.get("title"), str):
        metadata["title"] = entry["title"]
    annotations = entry.get("annotations")
    if annotations is None:
        return metadata
    if not isinstance(annotations, dict):
        log.repaired(name, "annotations", f"{short(annotations)} is not an object: dropped")
        return metadata
    metadata["annotations"] = {
        str(k): v for k, v in annotations.items() if isinstance(v, str | int | float | bool)
    }
    read_only = _hint(annotations, "readOnlyHint", name, log)
    destructive = _hint(annotations, "destructiveHint", name, log)
    for key, value in (("readOnlyHint", read_only), ("destructiveHint", destructive)):
        if isinstance(value, bool):
            metadata["annotations"][key] = value
    if isinstance(read_only, bool):
        metadata["read_only"] = read_only
    if isinstance(destructive, bool):
        metadata["destructive"] = destructive
    elif read_only is False:
        metadata["destructive"] = True
    return metadata


def _hint(annotations: dict[str, Any], key: str, name: str, log: RepairLog) -> Any:
    """An annotation's boolean hint; the strings ``"true"``/``"false"`` are read as such."""
    value = annotations.get(key)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        log.repaired(name, f"annotations.{key}", f"the string {short(value)} read as "
                     f"{value.strip().lower()}")
        return value.strip().lower() == "true"
    return value
