"""StableToolBench solvable queries (``G1_instruction.json``, ``G2_category.json``...).

A file is a list of queries ``{query_id, query, api_list: [...], "relevant APIs": [[tool_name,
api_name], ...]}``. An ``api_list`` entry is ``{category_name, tool_name, api_name,
api_description, required_parameters: [{name, type, description, default}],
optional_parameters: [...], method, template_response?}``. Tools are named
``"{tool_name}.{api_name}"``; the catalog is the union over the file's queries, the first
definition of a name winning. Types are RapidAPI names (``STRING``, ``NUMBER``, ``ENUM``,
``DATE (YYYY-MM-DD)``); empty-string defaults mean "no default" and are dropped.

``template_response`` is an example whose leaves are type names (``"str"``) with
``_list_length`` markers; it is sometimes a JSON text cut at 1000 characters, which is
repaired by closing it after its last complete member.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import (
    Catalog,
    ToolSpec,
    build_catalog,
    known_type,
    make_tool,
)
from hyperplan.errors import CatalogError
from hyperplan.importers.common import read_json, schema_from_example
from hyperplan_bench.importers.gold import unique

SOURCE = "stabletoolbench"
_CLOSERS = {"{": "}", "[": "]"}


@dataclass(frozen=True, slots=True)
class StableQuery:
    """One query with its candidate tools (``api_names``) and gold ``relevant`` tools."""

    query_id: str
    query: str
    api_names: tuple[str, ...]
    relevant: tuple[str, ...]


def load_stabletoolbench(file: str | Path) -> Catalog:
    """The union of every query's ``api_list`` as one catalog."""
    tools: dict[str, ToolSpec] = {}
    for where, query in _queries(file):
        for index, api in enumerate(_api_list(query, str(file), where)):
            name = _api_name(api, str(file), f"{where}.api_list[{index}]")
            if name not in tools:
                tools[name] = _tool(api, name, str(file))
    return build_catalog(tools.values(), source=SOURCE)


def load_stabletoolbench_queries(file: str | Path) -> list[StableQuery]:
    """Every query with its candidate and relevant tool names."""
    result = []
    for where, query in _queries(file):
        apis = _api_list(query, str(file), where)
        names = [_api_name(a, str(file), f"{where}.api_list[{i}]") for i, a in enumerate(apis)]
        result.append(
            StableQuery(
                query_id=str(query.get("query_id", where)),
                query=str(query.get("query") or ""),
                api_names=unique(names),
                relevant=_relevant(query, str(file), where),
            )
        )
    return result


def _queries(file: str | Path) -> list[tuple[str, dict[str, Any]]]:
    data = read_json(file)
    if not isinstance(data, list):
        raise CatalogError("must be a list of queries", file=str(file))
    for index, query in enumerate(data):
        if not isinstance(query, dict):
            raise CatalogError("query is not an object", file=str(file), field=f"[{index}]")
    return [(f"[{index}]", query) for index, query in enumerate(data)]


def _api_list(query: dict[str, Any], file: str, where: str) -> list[dict[str, Any]]:
    apis = query.get("api_list")
    if not isinstance(apis, list) or not all(isinstance(a, dict) for a in apis):
        raise CatalogError("must be a list of API objects", file=file, field=f"{where}.api_list")
    return apis


def _api_name(api: dict[str, Any], file: str, where: str) -> str:
    for key in ("tool_name", "api_name"):
        if not isinstance(api.get(key), str) or not api[key].strip():
            raise CatalogError(f"missing {key}", file=file, field=f"{where}.{key}")
    return _joined(api["tool_name"], api["api_name"])


def _joined(tool_name: str, api_name: str) -> str:
    """The catalog name; surrounding blanks (``" Quotes API"`` occurs) are dropped."""
    return f"{tool_name.strip()}.{api_name.strip()}"


def _relevant(query: dict[str, Any], file: str, where: str) -> tuple[str, ...]:
    pairs = query.get("relevant APIs") or []
    ok = isinstance(pairs, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    )
    if not ok:
        raise CatalogError(
            "must be a list of [tool_name, api_name]", file=file, field=f"{where}.relevant APIs"
        )
    return unique(_joined(tool, api) for tool, api in pairs)


def _tool(api: dict[str, Any], name: str, file: str) -> ToolSpec:
    return make_tool(
        file=file,
        name=name,
        description=str(api.get("api_description") or ""),
        input_schema=_input_schema(api, file, name),
        output_schema=_output_schema(api.get("template_response")),
        source=SOURCE,
        metadata={
            "category": api.get("category_name"),
            "tool_name": api["tool_name"],
            "api_name": api["api_name"],
            "method": api.get("method"),
        },
    )


def _input_schema(api: dict[str, Any], file: str, tool: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for key in ("required_parameters", "optional_parameters"):
        params = api.get(key) or []
        if not isinstance(params, list):
            raise CatalogError("must be a list", file=file, tool=tool, field=key)
        for index, param in enumerate(params):
            field = f"{key}[{index}]"
            if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                raise CatalogError("parameter needs a 'name'", file=file, tool=tool, field=field)
            if param["name"] in props:
                continue
            props[param["name"]] = _param_schema(param)
            if key == "required_parameters":
                required.append(param["name"])
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _param_schema(param: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    kind = known_type(param.get("type"))
    if kind:
        schema["type"] = kind
    if param.get("description"):
        schema["description"] = str(param["description"])
    if param.get("default") not in (None, ""):
        schema["default"] = param["default"]
    return schema



def _output_schema(template: Any) -> dict[str, Any] | None:
    if template is None:
        return None
    if isinstance(template, str) and template.lstrip().startswith(("{", "[")):
        parsed = parse_truncated_json(template)
        return None if parsed is None else schema_from_example(parsed)
    return schema_from_example(template)


def parse_truncated_json(text: str) -> Any:
    """Parse JSON text, or, when it was cut short, its longest prefix that ends after a
    complete member or element, with the open brackets closed; ``None`` if nothing parses."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for cut, stack in reversed(_cut_points(text)):
        try:
            return json.loads(text[:cut] + "".join(_CLOSERS[b] for b in reversed(stack)))
        except json.JSONDecodeError:
            continue
    return None


def _cut_points(text: str) -> list[tuple[int, str]]:
    """Positions of commas and opening brackets outside strings, with the brackets open
    there (a cut at a comma drops it; a cut after a bracket keeps it)."""
    points: list[tuple[int, str]] = []
    stack = ""
    in_string = escaped = False
    for pos, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack += char
            points.append((pos + 1, stack))
        elif char in "}]":
            stack = stack[:-1]
        elif char == ",":
            points.append((pos, stack))
    return points
