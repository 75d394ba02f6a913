"""NesTools tasks (``test_data_dev.jsonl``): per-task APIs and nested gold calls.

Each JSON line is a task ``{test_id, task, api: [...], call: [...]}``. An ``api`` entry is
``{api_name, api_description, parameters: {name: {type, description}}, required: [names],
responses: {name: {type, description}}}``; types are Python names (``str``, ``list``...).
The tool pool is the union of every task's APIs. The same ``api_name`` is reused by different
tasks with different specs: identical specs (canonical JSON) are one tool, a different spec
under a seen name becomes ``name~2``, ``name~3`` in file order (``metadata["original_name"]``
keeps the published name).

A gold call is ``{api_name, parameters, responses: ["API_call_0", ...]}``: ``responses``
names the call's outputs, in the order of the API's ``responses`` keys, with a counter that
runs across the task's calls. Later arguments reference them by the string ``"API_call_k"``,
alone or inside lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool
from hyperplan.errors import CatalogError
from hyperplan.importers.common import params_to_object_schema, read_jsonl
from hyperplan_bench.importers.gold import (
    GoldCall,
    GoldFlow,
    GoldTask,
    SpecNamer,
    gold_call,
    unique,
)

SOURCE = "nestools"
_REFERENCE = re.compile(r"\bAPI_call_\d+\b")


def load_nestools(jsonl_file: str | Path) -> Catalog:
    """The union of all tasks' APIs as one catalog (see the module doc for naming)."""
    tools, _ = _scan_rows(read_jsonl(jsonl_file), str(jsonl_file))
    return build_catalog(tools, source=SOURCE)


def load_nestools_tasks(jsonl_file: str | Path) -> list[GoldTask]:
    """One :class:`GoldTask` per line: all the task's APIs (catalog names) and the flows of
    its gold calls. A reference to an output no earlier call produced is a
    :class:`CatalogError`."""
    file = str(jsonl_file)
    rows = read_jsonl(jsonl_file)
    _, name_maps = _scan_rows(rows, file)
    pairs = enumerate(zip(rows, name_maps, strict=True))
    return [_task(row, name_map, file, _where(row, i)) for i, (row, name_map) in pairs]


# --- tools -----------------------------------------------------------------------------------


def _scan_rows(rows: list[Any], file: str) -> tuple[list[ToolSpec], list[dict[str, str]]]:
    """The new tools in file order, and per task the map ``api_name -> catalog name``."""
    namer = SpecNamer()
    tools: list[ToolSpec] = []
    name_maps: list[dict[str, str]] = []
    for index, row in enumerate(rows):
        name_map: dict[str, str] = {}
        for api in _apis(row, file, _where(row, index)):
            assigned, new = namer.name_for(api["api_name"], api)
            name_map.setdefault(api["api_name"], assigned)
            if new:
                tools.append(_tool(api, assigned, file))
        name_maps.append(name_map)
    return tools, name_maps


def _where(row: Any, index: int) -> str:
    test_id = row.get("test_id") if isinstance(row, dict) else None
    return f"test_id {test_id}" if test_id is not None else f"task {index + 1}"


def _apis(row: Any, file: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(row, dict) or not isinstance(row.get("api"), list):
        raise CatalogError("task needs an 'api' list", file=file, field=f"{where}.api")
    for index, api in enumerate(row["api"]):
        field = f"{where}.api[{index}]"
        if not isinstance(api, dict):
            raise CatalogError("API entry is not an object", file=file, field=field)
        name = api.get("api_name")
        if not isinstance(name, str) or not name.strip():
            raise CatalogError("missing api_name", file=file, field=f"{field}.api_name")
    return list(row["api"])


def _tool(api: dict[str, Any], name: str, file: str) -> ToolSpec:
    original = api["api_name"]
    required = api.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CatalogError("must be a list of names", file=file, tool=name, field="required")
    return make_tool(
        file=file,
        name=name,
        description=str(api.get("api_description") or ""),
        input_schema=params_to_object_schema(_specs(api, "parameters", file, name), required),
        output_schema=params_to_object_schema(_specs(api, "responses", file, name)),
        source=SOURCE,
        metadata={"original_name": original},
    )


def _specs(api: dict[str, Any], key: str, file: str, tool: str) -> dict[str, dict[str, Any]]:
    specs = api.get(key) or {}
    if not isinstance(specs, dict):
        raise CatalogError("must be an object of name -> spec", file=file, tool=tool, field=key)
    for pname, spec in specs.items():
        if not isinstance(spec, dict):
            raise CatalogError(
                "spec is not an object", file=file, tool=tool, field=f"{key}.{pname}"
            )
    return specs


# --- gold calls ------------------------------------------------------------------------------


def _task(row: dict[str, Any], name_map: dict[str, str], file: str, where: str) -> GoldTask:
    calls = row.get("call")
    if not isinstance(calls, list):
        raise CatalogError("task needs a 'call' list", file=file, field=f"{where}.call")
    # first definition wins, as in name_map
    apis = reversed(row["api"])
    responses = {api["api_name"]: list(api.get("responses") or {}) for api in apis}
    outputs: dict[str, tuple[str, str]] = {}
    flows: list[GoldFlow] = []
    gold_calls: list[GoldCall] = []
    for index, call in enumerate(calls):
        field = f"{where}.call[{index}]"
        tool, api_name, params = _call(call, name_map, file, field)
        flows.extend(_flows(tool, params, outputs, file, field))
        outputs.update(_outputs(call, tool, responses[api_name], file, field))
        gold_calls.append(gold_call(tool, params, lambda v: any(True for _ in references(v))))
    return GoldTask(
        id=str(row.get("test_id", where)),
        text=str(row.get("task") or ""),
        tools=unique(name_map.values()),
        flows=unique(flows),
        calls=tuple(gold_calls),
    )


def _call(
    call: Any, name_map: dict[str, str], file: str, field: str
) -> tuple[str, str, dict[str, Any]]:
    """The catalog tool, the API name and the parameters of one gold call."""
    if not isinstance(call, dict):
        raise CatalogError("call is not an object", file=file, field=field)
    api_name = call.get("api_name")
    if not isinstance(api_name, str) or api_name not in name_map:
        raise CatalogError(
            f"call to {api_name!r}, which is not in the task's api list",
            file=file,
            field=f"{field}.api_name",
        )
    params = call.get("parameters") or {}
    if not isinstance(params, dict):
        raise CatalogError(
            "must be an object", file=file, tool=name_map[api_name], field=f"{field}.parameters"
        )
    return name_map[api_name], api_name, params


def _flows(
    consumer: str,
    params: dict[str, Any],
    outputs: dict[str, tuple[str, str]],
    file: str,
    field: str,
) -> Iterator[GoldFlow]:
    for param, value in params.items():
        for ref in references(value):
            if ref not in outputs:
                raise CatalogError(
                    f"{ref} names no output of an earlier call",
                    file=file,
                    tool=consumer,
                    field=f"{field}.parameters.{param}",
                )
            producer, output_path = outputs[ref]
            yield GoldFlow(producer, output_path, consumer, str(param))


def _outputs(
    call: dict[str, Any], tool: str, keys: list[str], file: str, field: str
) -> dict[str, tuple[str, str]]:
    """``API_call_k -> (tool, response key)`` for the outputs one call names."""
    names = call.get("responses") or []
    if not isinstance(names, list) or len(names) > len(keys):
        raise CatalogError(
            f"must list at most the API's {len(keys)} responses",
            file=file,
            tool=tool,
            field=f"{field}.responses",
        )
    return {str(ref): (tool, key) for ref, key in zip(names, keys, strict=False)}


def references(value: Any) -> Iterator[str]:
    """Every ``API_call_k`` name in ``value`` (strings, lists and objects, recursively)."""
    if isinstance(value, str):
        yield from _REFERENCE.findall(value)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)
