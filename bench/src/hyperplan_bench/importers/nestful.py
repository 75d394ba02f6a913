"""NESTFUL (IBM) tool specs and gold call sequences.

A spec file (``*-spec.json``) is a list of tools with ``name``, ``description``, input
parameters in one or more of ``parameters``, ``query_parameters``, ``path_parameters``
(executable, glaive) or ``arguments`` (sgd), each a ``{name: {type, description, required,
enum | allowed_values, default | default_value, items, properties}}`` mapping, and
``output_parameters`` in the same shape (sgd outputs carry ``possible_values`` and no type;
nested ``properties`` values may be bare type names such as ``"string"``). A tool listed twice
with the same spec is kept once; a different spec under a seen name becomes ``name~2``
(gold calls, which carry no spec, always mean the first).

A data file (``*-data.json``, next to its spec) is a list of ``{input, output: [{name,
arguments, label}]}``. Arguments reference earlier calls' outputs as ``$var1.skyId$``
(a field, possibly nested such as ``$var1.author[0].id$``) or ``$var3$`` (the whole output),
alone, inside longer strings (``"5 * $var1.Exchange Rate$"``) or inside lists and objects; a
few references lack the leading ``$``. The final ``var_result`` pseudo-call is not a tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
from hyperplan.importers.common import read_json
from hyperplan_bench.importers.gold import (
    GoldCall,
    GoldFlow,
    GoldTask,
    SpecNamer,
    gold_call,
    resolve_output_path,
    unique,
)

SOURCE = "nestful"
RESULT_CALL = "var_result"
_INPUT_KEYS = ("parameters", "query_parameters", "path_parameters", "arguments")
_REFERENCE = re.compile(r"(?<!\w)\$?(var\d+)(?:\.([^$]*?))?\$")


def load_nestful(spec_file: str | Path) -> Catalog:
    """Read a NESTFUL ``*-spec.json`` file (executable, glaive or sgd variant)."""
    file = str(spec_file)
    entries = read_json(spec_file)
    if not isinstance(entries, list):
        raise CatalogError("spec must be a list of tools", file=file)
    namer = SpecNamer()
    tools = []
    for index, entry in enumerate(entries):
        tool = _tool(entry, index, file, namer)
        if tool is not None:
            tools.append(tool)
    return build_catalog(tools, source=SOURCE)


def load_nestful_tasks(
    data_file: str | Path, spec_file: str | Path | None = None
) -> list[GoldTask]:
    """Read a NESTFUL ``*-data.json`` file; the spec defaults to the ``*-spec.json`` beside it.

    Tools are the spec tools the gold calls use; calls to tools missing from the spec are left
    out of ``tools`` and of ``flows``, as are references to labels no earlier call defines.
    """
    data = Path(data_file)
    spec = Path(spec_file) if spec_file else data.with_name(data.name.replace("-data", "-spec"))
    catalog = load_nestful(spec)
    samples = read_json(data)
    if not isinstance(samples, list):
        raise CatalogError("data must be a list of samples", file=str(data))
    stem = data.stem.removesuffix("-data")
    return [_task(s, f"{stem}/{i}", str(data), catalog) for i, s in enumerate(samples)]


# --- specs -----------------------------------------------------------------------------------


def _tool(entry: Any, index: int, file: str, namer: SpecNamer) -> ToolSpec | None:
    """The tool of one spec entry, or ``None`` when it repeats an identical earlier entry."""
    if not isinstance(entry, dict):
        raise CatalogError("tool entry is not an object", file=file, field=f"[{index}]")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CatalogError("missing tool name", file=file, tool=f"#{index}", field="name")
    assigned, new = namer.name_for(name, entry)
    if not new:
        return None
    return make_tool(
        file=file,
        name=assigned,
        description=str(entry.get("description") or ""),
        input_schema=_input_schema(entry, file, name),
        output_schema=_output_schema(entry, file, name),
        source=SOURCE,
        metadata=_metadata(entry, name),
    )


def _metadata(entry: dict[str, Any], name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"original_name": name}
    for key in ("method", "host", "endpoint", "url"):
        if isinstance(entry.get(key), str):
            meta[key] = entry[key]
    return meta


def _input_schema(entry: dict[str, Any], file: str, tool: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    params = [(key, pname, spec) for key in _INPUT_KEYS if key in entry
              for pname, spec in _param_map(entry[key], file, tool, key).items()]
    marks = _required_marks([spec for _, _, spec in params])
    for (key, pname, spec), needed in zip(params, marks, strict=True):
        props.setdefault(pname, _property(spec, file, tool, f"{key}.{pname}"))
        if needed and pname not in required:
            required.append(pname)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _required_marks(specs: list[Any]) -> list[bool]:
    """Which parameters of one tool are required. Most tools flag the required ones
    (``"required": true``; the rest are optional); some flag only the optional ones
    (``"optional": true``) and leave the required ones unflagged, so when no parameter of the
    tool says ``required`` but one says ``optional``, every parameter not marked optional is
    required. A tool flagging neither way states no requirement."""
    flagged = [s if isinstance(s, dict) else {} for s in specs]
    if any("required" in s for s in flagged) or not any("optional" in s for s in flagged):
        return [s.get("required") is True for s in flagged]
    return [s.get("optional") is not True for s in flagged]


def _output_schema(entry: dict[str, Any], file: str, tool: str) -> dict[str, Any] | None:
    outputs = entry.get("output_parameters")
    return None if outputs is None else _object_schema(outputs, file, tool, "output_parameters")


def _param_map(params: Any, file: str, tool: str, field: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise CatalogError("must be an object of name -> spec", file=file, tool=tool, field=field)
    return params


def _object_schema(params: Any, file: str, tool: str, field: str) -> dict[str, Any]:
    props = {
        str(pname): _property(spec, file, tool, f"{field}.{pname}")
        for pname, spec in _param_map(params, file, tool, field).items()
    }
    return {"type": "object", "properties": props}


def _property(spec: Any, file: str, tool: str, field: str) -> dict[str, Any]:
    """One parameter spec as a JSON Schema; a bare type name stands for ``{"type": ...}``."""
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict):
        raise CatalogError("parameter spec is not an object", file=file, tool=tool, field=field)
    schema: dict[str, Any] = {}
    kind = known_type(spec.get("type"))
    if kind:
        schema["type"] = kind
    if spec.get("description"):
        schema["description"] = str(spec["description"])
    for key in ("enum", "allowed_values", "possible_values"):
        if isinstance(spec.get(key), list) and spec[key]:
            schema["enum"] = spec[key]
            break
    for key in ("default", "default_value"):
        if spec.get(key) is not None:
            schema["default"] = spec[key]
            break
    if "properties" in spec:
        schema.update(_object_schema(spec["properties"], file, tool, f"{field}.properties"))
    if isinstance(spec.get("items"), dict | str):
        schema["items"] = _property(spec["items"], file, tool, f"{field}.items")
    return schema



# --- gold data -------------------------------------------------------------------------------


def _task(sample: Any, task_id: str, file: str, catalog: Catalog) -> GoldTask:
    if not isinstance(sample, dict) or not isinstance(sample.get("output"), list):
        raise CatalogError("sample needs an 'output' list of calls", file=file, field=task_id)
    known = {tool.name: tool for tool in catalog.tools}
    producers: dict[str, str] = {}
    tools: list[str] = []
    flows: list[GoldFlow] = []
    calls: list[GoldCall] = []
    for index, call in enumerate(sample["output"]):
        name, arguments = _call(call, file, f"{task_id}.output[{index}]")
        if name == RESULT_CALL:
            continue
        if name in known:
            tools.append(name)
            flows.extend(_flows(name, arguments, producers, known))
            calls.append(gold_call(name, arguments, lambda v: any(True for _ in references(v))))
        if isinstance(call.get("label"), str):
            producers[call["label"]] = name
    return GoldTask(
        id=task_id,
        text=str(sample.get("input") or ""),
        tools=unique(tools),
        flows=unique(flows),
        calls=tuple(calls),
    )


def _call(call: Any, file: str, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(call, dict):
        raise CatalogError("call is not an object", file=file, field=where)
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise CatalogError("call has no tool name", file=file, field=f"{where}.name")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        raise CatalogError("must be an object", file=file, tool=name, field=f"{where}.arguments")
    return name, arguments


def _flows(
    consumer: str, arguments: dict[str, Any], producers: dict[str, str], known: dict[str, ToolSpec]
) -> Iterator[GoldFlow]:
    for param, value in arguments.items():
        for label, field in references(value):
            producer = known.get(producers.get(label, ""))
            if producer is None:
                continue
            path = resolve_output_path(producer.output_schema, field)
            yield GoldFlow(producer.name, field if path is None else path, consumer, str(param))


def references(value: Any) -> Iterator[tuple[str, str]]:
    """``(label, field)`` of every ``$label.field$`` / ``$label$`` reference in ``value``
    (strings, lists and objects, searched recursively); ``field`` is ``""`` for a whole
    output."""
    if isinstance(value, str):
        for match in _REFERENCE.finditer(value):
            yield match.group(1), (match.group(2) or "").strip()
    elif isinstance(value, list):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)
