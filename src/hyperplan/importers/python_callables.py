"""Importer for plain Python callables: tool schemas from signatures, type hints and docstrings.

Each callable becomes one tool named after it. Parameters (``*args``/``**kwargs`` and a
leading unannotated ``self``/``cls`` are skipped) become the input properties: the schema
comes from the type hint through pydantic's ``TypeAdapter`` (int, float, str, bool,
``list[X]``, ``dict``, ``Optional``, ``Literal``, ``Enum``, ``BaseModel``, dataclasses,
TypedDicts - ``typing.TypedDict``, which pydantic rejects before Python 3.12, is expanded by
hand), with ``$defs`` inlined and recursive models cut with a
:class:`~hyperplan.graph.schema_paths.SchemaWarning`. Unannotated or unsupported types give
an unconstrained schema ``{}`` (an unannotated parameter with a scalar default takes the
default's type). A parameter with a default is optional and its default is
recorded when JSON-serialisable. Descriptions come from the docstring: the summary (first
paragraph) describes the tool; Google ``Args:`` / ``Returns:`` sections and reST
``:param x:`` / ``:returns:`` fields describe parameters and output (without either, a
"returns X" clause of the summary describes the output: "Add a book to the cart; returns the
cart id"). The return annotation gives the output schema (``None``/missing -> no output
schema).

Tools carry ``metadata = {"module", "qualname"}`` and the callable is kept in a registry:
:func:`get_callable` returns it for a tool.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import re
import typing
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, NoneType, UnionType
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from hyperplan.catalog import Catalog, ToolSpec, build_catalog, make_tool
from hyperplan.errors import CatalogError
from hyperplan.graph.schema_paths import SchemaWarning
from hyperplan.graph.text import returns_clause
from hyperplan.importers.schema_refs import resolve_refs, unique_tools

_REGISTRY: dict[tuple[str, str], Callable[..., Any]] = {}
_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_GOOGLE_ARG = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:(param|parameter|arg|argument|key|returns?)\b([^:]*):\s*(.*)$")
_ARG_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})
_RETURN_SECTIONS = frozenset({"Returns", "Return", "Yields"})


@dataclass(frozen=True)
class Docstring:
    """A parsed docstring: summary, per-parameter descriptions and the return description."""

    summary: str
    params: dict[str, str]
    returns: str


@dataclass(frozen=True)
class _Ctx:
    file: str
    tool: str
    mode: typing.Literal["validation", "serialization"]


def load_python_callables(
    funcs: Iterable[Callable[..., Any]] | ModuleType, *, source: str = "python"
) -> Catalog:
    """One tool per callable (or per public function defined in a module)."""
    items = module_functions(funcs) if isinstance(funcs, ModuleType) else list(funcs)
    tools = []
    for index, func in enumerate(items):
        if not callable(func):
            raise CatalogError(
                f"not callable: {func!r}", file=source, tool=f"#{index}", field="callable"
            )
        tools.append(_tool(func, source))
    catalog = build_catalog(unique_tools(tools, file=source, field="name"), source=source)
    for tool, func in zip(catalog.tools, items, strict=True):
        _REGISTRY[(source, tool.name)] = func
    return catalog


def load_python_target(spec: str) -> Catalog:
    """Load ``"package.module:attr"`` (a callable, a list/tuple of callables or a module;
    ``attr`` may be dotted) or ``"package.module"`` (its public functions)."""
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CatalogError(f"cannot import module: {exc}", file=spec, field="module") from None
    for part in attr.split(".") if attr else []:
        if not hasattr(target, part):
            raise CatalogError(f"{module_name} has no attribute {attr!r}", file=spec, field="attr")
        target = getattr(target, part)
    if isinstance(target, ModuleType | list | tuple):
        return load_python_callables(target, source=spec)
    if callable(target):
        return load_python_callables([target], source=spec)
    raise CatalogError(
        f"{attr!r} is not a callable, a list of callables or a module", file=spec, field="attr"
    )


def module_functions(module: ModuleType) -> list[Callable[..., Any]]:
    """Public functions defined in ``module`` (those in ``__all__`` if it is set)."""
    names = getattr(module, "__all__", None)
    if names is not None:
        members = [getattr(module, n) for n in names if hasattr(module, n)]
        return [m for m in members if inspect.isfunction(m)]
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isfunction(obj)
        and obj.__module__ == module.__name__
        and not name.startswith("_")
    ]


def get_callable(tool: ToolSpec) -> Callable[..., Any]:
    """The callable a tool was built from (registry first, then ``module``/``qualname``)."""
    found = _REGISTRY.get((tool.source, tool.name))
    if found is not None:
        return found
    module, qualname = tool.metadata.get("module"), tool.metadata.get("qualname")
    try:
        target: Any = importlib.import_module(str(module))
        for part in str(qualname).split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        raise CatalogError("callable not found", tool=tool.name, field="metadata") from None
    if not callable(target):
        raise CatalogError("metadata does not name a callable", tool=tool.name, field="metadata")
    return typing.cast(Callable[..., Any], target)


def _callable_name(func: Callable[..., Any]) -> str:
    inner = func.func if isinstance(func, functools.partial) else func
    name = getattr(inner, "__name__", None) or type(inner).__name__
    return str(name)


def _docstring(func: Callable[..., Any]) -> str:
    """The callable's own docstring (for a class or ``partial``: not an inherited one)."""
    inner = func.func if isinstance(func, functools.partial) else func
    if isinstance(inner, type) or inner is not func:
        return inspect.cleandoc(getattr(inner, "__doc__", None) or "")
    return inspect.getdoc(func) or ""


def _source_file(func: Callable[..., Any]) -> str:
    try:
        found = inspect.getsourcefile(inspect.unwrap(func))
    except TypeError:
        found = None
    return str(Path(found)) if found else str(getattr(func, "__module__", "<python>"))


def _signature(func: Callable[..., Any], ctx: _Ctx) -> inspect.Signature:
    try:
        return inspect.signature(func, eval_str=True)
    except (ValueError, TypeError) as exc:
        raise CatalogError(
            f"no signature: {exc}", file=ctx.file, tool=ctx.tool, field="signature"
        ) from None
    except Exception as exc:  # eval of string annotations can raise anything
        raise CatalogError(
            f"cannot evaluate type hints: {exc!r}",
            file=ctx.file,
            tool=ctx.tool,
            field="annotations",
        ) from None


def _tool(func: Callable[..., Any], source: str) -> ToolSpec:
    name = _callable_name(func)
    ctx = _Ctx(file=_source_file(func), tool=name, mode="validation")
    sig = _signature(func, ctx)
    doc = parse_docstring(_docstring(func))
    props: dict[str, Any] = {}
    required: list[str] = []
    for position, param in enumerate(sig.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if position == 0 and param.name in ("self", "cls") and param.annotation is param.empty:
            continue
        props[param.name] = _param_schema(param, doc.params.get(param.name, ""), ctx)
        if param.default is param.empty:
            required.append(param.name)
    inputs: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        inputs["required"] = required
    return make_tool(
        file=ctx.file,
        name=name,
        description=doc.summary,
        input_schema=inputs,
        output_schema=_return_schema(sig, doc.returns, ctx),
        source=source,
        metadata={
            "module": str(getattr(func, "__module__", "") or ""),
            "qualname": str(getattr(func, "__qualname__", name)),
        },
    )


def _param_schema(param: inspect.Parameter, description: str, ctx: _Ctx) -> dict[str, Any]:
    hint = param.annotation
    if hint is param.empty and isinstance(param.default, bool | int | float | str):
        hint = type(param.default)  # unannotated: the default's type
    schema = {} if hint is param.empty else _type_schema(hint, ctx, f"parameters.{param.name}")
    if description and "description" not in schema:
        schema["description"] = description
    if param.default is not param.empty:
        with contextlib.suppress(ValueError, TypeError):
            schema["default"] = to_jsonable_python(param.default)
    return schema


def _return_schema(sig: inspect.Signature, description: str, ctx: _Ctx) -> dict[str, Any] | None:
    hint = sig.return_annotation
    if hint is sig.empty or hint is None or hint is NoneType:
        return None
    out_ctx = _Ctx(file=ctx.file, tool=ctx.tool, mode="serialization")
    schema = _type_schema(hint, out_ctx, "returns")
    if description and "description" not in schema:
        schema["description"] = description
    return schema


def _type_schema(hint: Any, ctx: _Ctx, field: str, seen: tuple[Any, ...] = ()) -> dict[str, Any]:
    """JSON Schema of a type hint, ``$defs`` inlined; ``{}`` when it cannot be expressed."""
    try:
        raw = TypeAdapter(hint).json_schema(mode=ctx.mode)
    except Exception:  # pydantic raises several error types for unsupported hints
        return _manual_schema(hint, ctx, field, seen)
    return resolve_refs(raw, raw, file=ctx.file, tool=ctx.tool, field=field)


def _manual_schema(hint: Any, ctx: _Ctx, field: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    """Fallback for hints pydantic rejects, mostly ``typing.TypedDict`` on Python 3.11."""
    if typing.is_typeddict(hint):
        return _typed_dict_schema(hint, ctx, field, seen)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _type_schema(args[0], ctx, field, seen)
    if origin in (typing.Union, UnionType):
        return {"anyOf": [_type_schema(a, ctx, field, seen) for a in args]}
    if origin in (list, set, frozenset, tuple) or (
        isinstance(origin, type)
        and issubclass(origin, Iterable)
        and args
        and not issubclass(origin, dict)
    ):
        items = _type_schema(args[0], ctx, field, seen) if args else {}
        return {"type": "array", "items": items}
    if origin is dict and len(args) == 2:
        return {"type": "object", "additionalProperties": _type_schema(args[1], ctx, field, seen)}
    return {}


def _typed_dict_schema(hint: Any, ctx: _Ctx, field: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    name = getattr(hint, "__name__", "TypedDict")
    if hint in seen:
        warnings.warn(
            f"file {ctx.file}, tool {ctx.tool!r}, field {field!r}: recursive TypedDict {name} cut",
            SchemaWarning,
            stacklevel=2,
        )
        return {"type": "object", "description": f"recursive reference to {name}"}
    try:
        hints = typing.get_type_hints(hint, include_extras=True)
    except Exception as exc:  # unresolvable forward references
        raise CatalogError(
            f"cannot evaluate type hints of {name}: {exc!r}",
            file=ctx.file,
            tool=ctx.tool,
            field=field,
        ) from None
    props = {k: _type_schema(v, ctx, f"{field}.{k}", (*seen, hint)) for k, v in hints.items()}
    required = [k for k in hints if k in getattr(hint, "__required_keys__", hints)]
    schema: dict[str, Any] = {"type": "object", "title": name, "properties": props}
    if required:
        schema["required"] = required
    return schema


def parse_docstring(doc: str) -> Docstring:
    """Split a (cleaned) docstring into summary, parameter and return descriptions;
    understands Google (``Args:``/``Returns:``) and reST (``:param x:``) styles."""
    lines = doc.expandtabs().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()) or line.lstrip().startswith(":"):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    returns: list[str] = []
    _parse_google(lines, params, returns)
    _parse_rest(lines, params, returns)
    text = " ".join(summary)
    if not returns:  # no Returns section: a "returns X" clause of the summary describes it
        said = returns_clause(text)
        returns += [said] if said else []
    return Docstring(text, params, " ".join(returns).strip())


def _parse_google(lines: list[str], params: dict[str, str], returns: list[str]) -> None:
    section, indent, current = "", 0, ""
    for line in lines:
        text = line.strip()
        header = None if line.startswith(" ") else _SECTION.match(text)
        if header:
            section, indent, current = header.group(1), 0, ""
            continue
        if not text:
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            section = ""
        elif section in _RETURN_SECTIONS:
            returns.append(text)
        elif section in _ARG_SECTIONS:
            indent = indent or depth
            match = _GOOGLE_ARG.match(text) if depth <= indent else None
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current:
                params[current] = f"{params[current]} {text}".strip()


def _parse_rest(lines: list[str], params: dict[str, str], returns: list[str]) -> None:
    target: str | None = None
    for line in lines:
        text = line.strip()
        match = _REST_FIELD.match(text)
        if match:
            kind, names, body = match.groups()
            target = "return" if kind.startswith("return") else (names.split() or [""])[-1]
            if target == "return":
                returns.append(body.strip())
            elif target:
                params[target] = body.strip()
        elif text.startswith(":") or not text:
            target = None
        elif target == "return" and line.startswith(" "):
            returns.append(text)
        elif target and line.startswith(" "):
            params[target] = f"{params[target]} {text}".strip()
