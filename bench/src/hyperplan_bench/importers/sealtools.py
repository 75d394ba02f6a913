"""Seal-Tools (Wu et al., 2024; Apache-2.0): a 4,076-tool pool and queries with gold calls.

The release directory (``../shared/data/sealtools``) holds:

``tool.jsonl``
    one tool per line ``{api_name, api_description, field, parameters: {name: {type,
    description}}, required: [names], responses: {name: {type, description}}}``. Types are
    Python names (``str``, ``int``, ``float``, ``bool``); ``responses`` are the tool's typed
    outputs and become its output schema (one output path per response key), so link inference
    has an output side to match. ``field`` is ``"Category/Subfield"`` (2,276 distinct values
    under 146 categories; a subfield may itself contain ``/``, as in ``Advertising/A/B
    testing``). A few specs carry annotations beside ``type`` and ``description`` (``example``,
    ``examples``, ``default``, ``unit``, ``values``, ``choices``, ``content``; one tool an
    ``example`` call): they are not read.
``dev.jsonl``
    one query per line ``{id, query, calling: [{api, parameters, responses: ["API_call_k",
    ...]}]}`` (700 queries: 200 ``dev-easy-*`` with one call, 500 ``dev-difficult-*`` with
    2–6 calls to distinct APIs). As in NesTools (:mod:`hyperplan_bench.importers.nestools`), a
    call's
    ``responses`` names its outputs, in the order of the API's ``responses`` keys, with a
    counter that runs across the query's calls; a later argument refers to one by the string
    ``"API_call_k"``, alone or inside a longer string (``"API_call_0 response"``) or a list.
``field.jsonl``
    the domain taxonomy ``{category: [subfields]}``, one category per line; not read (every
    tool names its field).

Tool names are the published ``api_name`` (unique in the release). Each tool keeps its field in
``metadata["field"]`` and the field's category in ``metadata["category"]``. The field is *not*
the tool's namespace (``metadata["app"]``, which link inference uses to penalise and block
links between apps): Seal-Tools queries combine tools of different fields — none of the 500
multi-tool dev queries stays inside one field, and 32 of the 34 gold data flows cross fields —
so fields are domain labels, not apps whose outputs only feed each other.

Dropped records are warned about (:class:`~hyperplan.catalog.CatalogWarning`): a tool line
repeating an earlier ``api_name`` (the first is kept) and a query calling an API the tool pool
lacks. Anything else malformed is a :class:`~hyperplan.errors.CatalogError` naming the file,
the line and the field, as is a reference to an output no earlier call of the query produced.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, CatalogWarning, ToolSpec, build_catalog, make_tool
from hyperplan.errors import CatalogError
from hyperplan.importers.common import (
    params_to_object_schema,
    read_text,
    unknown_keys,
    warn_unknown_keys,
)
from hyperplan_bench.importers.gold import (
    GoldCall,
    GoldFlow,
    GoldTask,
    canonical_json,
    gold_call,
    unique,
)
from hyperplan_bench.importers.nestools import references

SOURCE = "sealtools"
TOOL_FILE = "tool.jsonl"
QUERY_FILE = "dev.jsonl"
#: The keys of a ``tool.jsonl`` line (``example``: one tool's example call, not read).
TOOL_KEYS = frozenset(
    {"api_name", "api_description", "field", "parameters", "required", "responses", "example"}
)
_SHOWN = 5  # dropped records spelled out in a warning


def tool_file(path: str | Path) -> Path:
    """The tool file of ``path``: ``path/tool.jsonl`` for the release directory, else
    ``path`` itself."""
    p = Path(path)
    return p / TOOL_FILE if p.is_dir() else p


def query_file(path: str | Path) -> Path:
    """The query file of ``path``: ``path/dev.jsonl`` for the release directory, else
    ``path`` itself."""
    p = Path(path)
    return p / QUERY_FILE if p.is_dir() else p


def load_sealtools(path: str | Path) -> Catalog:
    """The tool pool of ``tool.jsonl`` (``path``: the file or the release directory) as one
    catalog, in file order (see the module doc)."""
    file = tool_file(path)
    tools, unknown = _scan_tools(file)
    warn_unknown_keys(str(file), unknown)
    return build_catalog(tools, source=SOURCE)


def load_sealtools_tasks(path: str | Path,
                        tools: str | Path | Catalog | None = None) -> list[GoldTask]:
    """One :class:`GoldTask` per query of ``path`` (the query file, or the release directory
    for its ``dev.jsonl``): the text, the distinct called APIs in call order (its ``tools``:
    Seal-Tools lists no other APIs per query), the gold calls and their data flows, each
    ``API_call_k`` resolved to the producing call's tool and response key. The response keys
    come from ``tools`` (a tool file or directory, or the catalog :func:`load_sealtools` made
    of it; default: the ``tool.jsonl`` beside the query file). A query calling an API the pool
    lacks is dropped with one warning for all."""
    file = query_file(path)
    if isinstance(tools, Catalog):
        catalog, pool = tools, "the tool pool"
    else:
        tool_path = tool_file(tools if tools is not None else file.parent)
        catalog, pool = load_sealtools(tool_path), str(tool_path)
    outputs = {t.name: _response_keys(t) for t in catalog.tools}
    tasks: list[GoldTask] = []
    dropped: list[str] = []
    for lineno, row in _rows(file):
        task = _task(row, outputs, str(file), lineno)
        if isinstance(task, str):
            dropped.append(task)
        else:
            tasks.append(task)
    if dropped:
        shown = "; ".join(dropped[:_SHOWN])
        more = f"; and {len(dropped) - _SHOWN} more" if len(dropped) > _SHOWN else ""
        warnings.warn(f"{file}: {len(dropped)} quer{'ies' if len(dropped) > 1 else 'y'} "
                      f"dropped, calling APIs not in {pool}: {shown}{more}", CatalogWarning,
                      stacklevel=2)
    return tasks


# --- reading ---------------------------------------------------------------------------------


def _rows(file: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` per non-blank line; malformed JSON is a
    :class:`CatalogError` naming the line."""
    for lineno, line in enumerate(read_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise CatalogError(f"malformed JSON on line {lineno}: {exc.msg}",
                               file=str(file)) from None


def _line_object(row: Any, file: str, lineno: int, what: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise CatalogError(f"{what} line is not a JSON object", file=file, field=f"line {lineno}")
    return row


# --- tools -----------------------------------------------------------------------------------


def _scan_tools(file: Path) -> tuple[list[ToolSpec], list[tuple[str, list[Any]]]]:
    """The tools in file order (first of each name), and each tool's unknown keys; repeated
    names are dropped with one warning."""
    name = str(file)
    tools: list[ToolSpec] = []
    unknown: list[tuple[str, list[Any]]] = []
    first: dict[str, tuple[int, str]] = {}  # name -> (line, canonical spec)
    repeats: list[str] = []
    for lineno, row in _rows(file):
        api = _line_object(row, name, lineno, "tool")
        tool = _tool(api, name, lineno)
        if tool.name in first:
            line, spec = first[tool.name]
            same = "same spec as" if canonical_json(api) == spec else "spec differs from"
            repeats.append(f"{tool.name!r} on line {lineno} ({same} line {line})")
            continue
        first[tool.name] = (lineno, canonical_json(api))
        tools.append(tool)
        extra = unknown_keys(api, TOOL_KEYS)
        unknown.append((tool.name, [extra] if extra else []))
    if repeats:
        shown = "; ".join(repeats[:_SHOWN])
        more = f"; and {len(repeats) - _SHOWN} more" if len(repeats) > _SHOWN else ""
        warnings.warn(f"{name}: {len(repeats)} tool line{'s' if len(repeats) > 1 else ''} "
                      f"dropped, repeating an earlier api_name (the first is kept): "
                      f"{shown}{more}", CatalogWarning, stacklevel=3)
    return tools, unknown


def _tool(api: dict[str, Any], file: str, lineno: int) -> ToolSpec:
    where = f"line {lineno}"
    name = api.get("api_name")
    if not isinstance(name, str) or not name.strip():
        raise CatalogError("missing api_name", file=file, field=f"{where}.api_name")
    description = _text(api, "api_description", file, name, where)
    field = _text(api, "field", file, name, where)
    required = api.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CatalogError("must be a list of names", file=file, tool=name,
                           field=f"{where}.required")
    inputs = _specs(api, "parameters", file, name, where)
    outputs = _specs(api, "responses", file, name, where)
    metadata: dict[str, Any] = {}
    if field:
        metadata = {"field": field, "category": field.split("/", 1)[0]}
    try:
        return make_tool(
            file=file,
            name=name,
            description=description,
            input_schema=params_to_object_schema(inputs, required),
            output_schema=params_to_object_schema(outputs) if outputs else None,
            source=SOURCE,
            metadata=metadata,
        )
    except CatalogError as exc:  # a bad name or property name: say on which line
        raise CatalogError(exc.reason, file=file, tool=exc.tool,
                           field=f"{where}.{exc.field}" if exc.field else where) from None


def _text(api: dict[str, Any], key: str, file: str, tool: str, where: str) -> str:
    value = api.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CatalogError("must be a string", file=file, tool=tool, field=f"{where}.{key}")
    return value


def _specs(api: dict[str, Any], key: str, file: str, tool: str,
           where: str) -> dict[str, dict[str, Any]]:
    """``parameters`` or ``responses``: ``{name: {type, description}}`` (missing: none)."""
    specs = api.get(key)
    if specs is None:
        return {}
    if not isinstance(specs, dict):
        raise CatalogError("must be an object of name -> {type, description}", file=file,
                           tool=tool, field=f"{where}.{key}")
    for pname, spec in specs.items():
        if not isinstance(spec, dict):
            raise CatalogError("spec is not an object", file=file, tool=tool,
                               field=f"{where}.{key}.{pname}")
        for part in ("type", "description"):
            if spec.get(part) is not None and not isinstance(spec[part], str):
                raise CatalogError("must be a string", file=file, tool=tool,
                                   field=f"{where}.{key}.{pname}.{part}")
    return specs


def _response_keys(tool: ToolSpec) -> list[str]:
    """The tool's response keys in order: what ``API_call_k`` names, position by position."""
    schema = tool.output_schema or {}
    return [str(k) for k in schema.get("properties") or {}]


# --- queries ---------------------------------------------------------------------------------


def _task(row: Any, outputs: dict[str, list[str]], file: str, lineno: int) -> GoldTask | str:
    """The query's :class:`GoldTask`, or, when it calls an API the pool lacks, the text of its
    entry in the dropped-queries warning."""
    query = _line_object(row, file, lineno, "query")
    where = f"line {lineno}"
    qid = query.get("id")
    if qid is not None and not isinstance(qid, str | int):
        raise CatalogError("must be a string", file=file, field=f"{where}.id")
    calls = query.get("calling")
    if not isinstance(calls, list):
        hint = " (is this the tool file? give the query file)" if "api_name" in query else ""
        raise CatalogError(f"a query needs a 'calling' list{hint}", file=file,
                           field=f"{where}.calling")
    text = query.get("query")
    if not isinstance(text, str):
        raise CatalogError("a query needs a 'query' string", file=file, field=f"{where}.query")
    named: dict[str, tuple[str, str]] = {}  # API_call_k -> (tool, response key)
    flows: list[GoldFlow] = []
    gold_calls: list[GoldCall] = []
    for index, call in enumerate(calls):
        field = f"{where}.calling[{index}]"
        tool, params, names = _call(call, file, field)
        if tool not in outputs:
            return f"{qid if qid is not None else where} calls {tool!r}"
        flows.extend(_flows(tool, params, named, file, field))
        keys = outputs[tool]
        if len(names) > len(keys):
            raise CatalogError(f"lists {len(names)} responses; the API has {len(keys)}",
                               file=file, tool=tool, field=f"{field}.responses")
        named.update({ref: (tool, key) for ref, key in zip(names, keys, strict=False)})
        gold_calls.append(gold_call(tool, params, lambda v: any(True for _ in references(v))))
    return GoldTask(
        id=str(qid) if qid is not None else where,
        text=text,
        tools=unique(c.tool for c in gold_calls),
        flows=unique(flows),
        calls=tuple(gold_calls),
    )


def _call(call: Any, file: str, field: str) -> tuple[str, dict[str, Any], list[str]]:
    """The API (as the catalog names it: blanks around dropped), the arguments and the names
    of the outputs of one gold call."""
    if not isinstance(call, dict):
        raise CatalogError("call is not an object", file=file, field=field)
    api = call.get("api")
    if not isinstance(api, str) or not api.strip():
        raise CatalogError("missing api", file=file, field=f"{field}.api")
    params = call.get("parameters")
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise CatalogError("must be an object", file=file, tool=api,
                           field=f"{field}.parameters")
    names = call.get("responses")
    names = [] if names is None else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise CatalogError("must be a list of API_call_k names", file=file, tool=api,
                           field=f"{field}.responses")
    return api.strip(), params, names


def _flows(consumer: str, params: dict[str, Any], named: dict[str, tuple[str, str]],
           file: str, field: str) -> Iterator[GoldFlow]:
    for param, value in params.items():
        for ref in references(value):
            if ref not in named:
                raise CatalogError(f"{ref} names no output of an earlier call", file=file,
                                   tool=consumer, field=f"{field}.parameters.{param}")
            producer, key = named[ref]
            yield GoldFlow(producer, key, consumer, str(param))
