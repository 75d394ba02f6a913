"""AppWorld API docs and train tasks.

API docs are JSON files (one per app) mapping ``api_name`` to a doc with ``app_name,
api_name, path, method, description, parameters[{name, type, required, description,
default, constraints}]`` and ``response_schemas.success`` (an example response, possibly a
list). Tools are named ``"{app_name}.{api_name}"``. Parameter types such as ``list[string]``
and ``number | integer | string`` become JSON Schema types; constraints such as
``value in [...]``, ``value >= 1.0, <= 20.0``, ``length >= 1`` and ``value is email address``
become ``enum``, bounds and ``format``; others are kept under ``x-constraints``.

Train tasks are JSON lines with ``id, instruction, gold_apis`` (``app.api_name`` names).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool, normalize_type
from hyperplan.errors import CatalogError
from hyperplan.importers.common import read_json, read_jsonl, schema_from_example

SOURCE = "appworld"


@dataclass(frozen=True, slots=True)
class AppWorldTask:
    """One AppWorld task with the ``app.api_name`` tools its gold solution calls."""

    id: str
    instruction: str
    gold_apis: tuple[str, ...]


def load_appworld(path: str | Path) -> Catalog:
    """Read one AppWorld api-docs file, or every ``*.json`` of a directory (sorted by name)."""
    root = Path(path)
    if not root.exists():
        raise CatalogError(f"directory {root}: not found (appworld: reads the api_docs "
                           "directory or one API doc file)")
    files = sorted(root.glob("*.json")) if root.is_dir() else [root]
    if not files:
        raise CatalogError("no *.json API doc files in directory", file=str(root))
    tools = [tool for file in files for tool in _file_tools(file)]
    return build_catalog(tools, source=SOURCE)


def load_appworld_tasks(path: str | Path) -> list[AppWorldTask]:
    """Read ``tasks_train.jsonl``: one :class:`AppWorldTask` per line."""
    tasks = []
    for lineno, row in enumerate(read_jsonl(path), start=1):
        where = f"line {lineno}"
        if not isinstance(row, dict):
            raise CatalogError("task is not a JSON object", file=str(path), field=where)
        apis = row.get("gold_apis")
        if not isinstance(apis, list) or not all(isinstance(a, str) for a in apis):
            raise CatalogError(
                "must be a list of names", file=str(path), field=f"{where}.gold_apis"
            )
        tasks.append(
            AppWorldTask(
                id=_text(row, "id", str(path), where),
                instruction=_text(row, "instruction", str(path), where),
                gold_apis=tuple(apis),
            )
        )
    return tasks


def _text(row: dict[str, Any], key: str, file: str, where: str, tool: str | None = None) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        field = f"{where}.{key}" if where else key
        raise CatalogError(f"missing or empty {key!r}", file=file, tool=tool, field=field)
    return value


def _file_tools(file: Path) -> list[ToolSpec]:
    docs = read_json(file)
    if not isinstance(docs, dict):
        raise CatalogError("API docs must be an object of api_name -> doc", file=str(file))
    return [_tool(doc, str(file), str(key)) for key, doc in docs.items()]


def _tool(doc: Any, file: str, key: str) -> ToolSpec:
    if not isinstance(doc, dict):
        raise CatalogError("API doc is not an object", file=file, tool=key)
    app = _text(doc, "app_name", file, "", tool=key).strip()
    api = _text(doc, "api_name", file, "", tool=key).strip()
    name = f"{app}.{api}"
    responses = doc.get("response_schemas") or {}
    if not isinstance(responses, dict):
        raise CatalogError("must be an object", file=file, tool=name, field="response_schemas")
    success = responses.get("success")
    return make_tool(
        file=file,
        name=name,
        description=str(doc.get("description") or ""),
        input_schema=_input_schema(doc.get("parameters", []), file, name),
        output_schema=schema_from_example(success) if success is not None else None,
        source=SOURCE,
        metadata={
            "app": app,
            "api_name": api,
            "method": doc.get("method"),
            "path": doc.get("path"),
        },
    )


def _input_schema(params: Any, file: str, tool: str) -> dict[str, Any]:
    if not isinstance(params, list):
        raise CatalogError("must be a list", file=file, tool=tool, field="parameters")
    props: dict[str, Any] = {}
    required: list[str] = []
    for index, param in enumerate(params):
        where = f"parameters[{index}]"
        if not isinstance(param, dict):
            raise CatalogError("parameter is not an object", file=file, tool=tool, field=where)
        pname = _text(param, "name", file, where, tool=tool)
        props[pname] = _param_schema(param)
        if param.get("required") is True and pname not in required:
            required.append(pname)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _param_schema(param: dict[str, Any]) -> dict[str, Any]:
    schema = _type_schema(param.get("type"))
    if param.get("description"):
        schema["description"] = str(param["description"])
    if param.get("default") is not None:
        schema["default"] = param["default"]
    constraints = param.get("constraints") or []
    extra = [c for c in constraints if not _apply_constraint(schema, str(c))]
    if extra:
        schema["x-constraints"] = [str(c) for c in extra]
    return schema


def _type_schema(raw: Any) -> dict[str, Any]:
    """``list[string]`` -> array of strings; ``a | b`` -> a type list; else one type."""
    if not isinstance(raw, str):
        return {}
    text = raw.strip()
    inner = re.fullmatch(r"list\[(.+)\]", text, flags=re.IGNORECASE)
    if inner:
        return {"type": "array", "items": _type_schema(inner.group(1))}
    if "|" in text:
        kinds = list(dict.fromkeys(normalize_type(t) for t in text.split("|")))
        return {"type": kinds if len(kinds) > 1 else kinds[0]}
    kind = normalize_type(text)
    return {} if kind == "any" else {"type": kind}


_BOUND = re.compile(r"(value|length)?\s*(>=|<=|>|<)\s*(-?[\d.]+(?:e[+-]?\d+)?)", re.IGNORECASE)
_VALUE_KEYS = {">=": "minimum", ">": "exclusiveMinimum", "<=": "maximum", "<": "exclusiveMaximum"}


def _apply_constraint(schema: dict[str, Any], text: str) -> bool:
    """Fold one AppWorld constraint into ``schema``; ``False`` when it is not understood."""
    text = text.strip()
    if text.startswith("value in ["):
        try:
            values = ast.literal_eval(text.removeprefix("value in "))
        except (ValueError, SyntaxError):
            return False
        if not isinstance(values, list | tuple):
            return False
        schema["enum"] = list(values)
        return True
    if text == "value is email address":
        schema["format"] = "email"
        return True
    bounds = _parse_bounds(text)
    if bounds is None:
        return False
    for subject, op, number in bounds:
        if subject == "value":
            schema[_VALUE_KEYS[op]] = number
        else:
            noun = "Items" if schema.get("type") == "array" else "Length"
            strict = {">": 1, "<": -1}.get(op, 0)
            schema[("min" if ">" in op else "max") + noun] = int(number) + strict
    return True


def _parse_bounds(text: str) -> list[tuple[str, str, float]] | None:
    """``"value >= 1.0, <= 20.0"`` -> ``[("value", ">=", 1.0), ("value", "<=", 20.0)]``."""
    parsed = []
    subject = "value"
    for part in text.split(","):
        match = _BOUND.fullmatch(part.strip())
        if match is None:
            return None
        subject = (match.group(1) or subject).lower()
        parsed.append((subject, match.group(2), float(match.group(3))))
    return parsed
