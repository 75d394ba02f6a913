"""Helpers shared by the importers: reading JSON with clear errors, turning example
responses into JSON Schemas, and warning about the keys of a catalog that nothing reads."""

from __future__ import annotations

import difflib
import json
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperplan.catalog import CatalogWarning, normalize_type
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


@dataclass(frozen=True)
class UnknownKeys:
    """Keys of one object of a catalog entry that its format does not define (so nothing
    reads them): where they sit (``" beside 'function'"``) and, per key, what was probably
    meant (``"function.returns"``), or ``""``."""

    keys: tuple[str, ...]
    where: str = ""
    hints: tuple[str, ...] = ()

    def describe(self) -> str:
        """``"unknown key 'returns' beside 'function' (ignored; did you mean
        function.returns?)"``: the keys in ``repr`` form, so the text injects nothing."""
        plural = "s" if len(self.keys) > 1 else ""
        keys = ", ".join(repr(k) for k in self.keys)
        meant = [hint if len(self.keys) == 1 else f"{hint} for {key!r}"
                 for key, hint in zip(self.keys, self.hints, strict=False) if hint]
        hint = f"; did you mean {', '.join(meant)}?" if meant else ""
        return f"unknown key{plural} {keys}{self.where} (ignored{hint})"


def unknown_keys(obj: Mapping[str, Any], known: frozenset[str], *, where: str = "",
                 aliases: Mapping[str, str] | None = None) -> UnknownKeys | None:
    """The keys of ``obj`` outside ``known`` (``x-`` extension keys are allowed), or None.
    Each gets the hint ``aliases[key]`` if given, else the closest known key if one is
    close (``'paramters'`` -> ``'parameters'``). One set test when every key is known."""
    if known.issuperset(obj):
        return None
    keys = tuple(sorted(str(k) for k in obj if k not in known and not str(k).startswith("x-")))
    if not keys:
        return None
    return UnknownKeys(keys, where, tuple(_hint(k, known, aliases or {}) for k in keys))


def _hint(key: str, known: frozenset[str], aliases: Mapping[str, str]) -> str:
    if key in aliases:
        return aliases[key]
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    return repr(close[0]) if close else ""


def warn_unknown_keys(file: str, found: Iterable[tuple[str, list[UnknownKeys]]], *,
                      limit: int = 5) -> None:
    """One :class:`~hyperplan.catalog.CatalogWarning` for a whole catalog listing, per tool
    (``(tool name, its unknown keys)``), the keys nothing read: ``tools.json: tool 'get_x':
    unknown key 'returns' beside 'function' (ignored; did you mean function.returns?)``.
    At most ``limit`` tools are spelled out, then how many more; nothing when all is known
    (a misplaced key silently drops what the author meant, so it is never silent)."""
    tools = [(name, parts) for name, parts in found if parts]
    if not tools:
        return
    shown = "; ".join(f"tool {name!r}: " + ", ".join(p.describe() for p in parts)
                      for name, parts in tools[:limit])
    more = f"; and {len(tools) - limit} more tools" if len(tools) > limit else ""
    warnings.warn(f"{file}: {shown}{more}", CatalogWarning, stacklevel=3)
