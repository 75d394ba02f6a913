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
recorded when JSON-serialisable. Descriptions come from the docstring
(:mod:`hyperplan.importers.docstrings`): the summary (first paragraph; a leading
``name(args)`` call line of a C builtin is dropped) describes the tool; Google ``Args:`` /
``Returns:`` sections, reST ``:param x:`` / ``:returns:`` fields or NumPy ``Parameters`` /
``Returns`` sections (headers underlined with dashes) describe parameters and output (without
any, a "returns X" clause of the summary describes the output: "Add a book to the cart;
returns the cart id"). The return annotation gives the output schema (``None`` -> no output
schema; missing -> none either, unless a Returns section documents one: then an untyped
output with that description).

A module (``python:MODULE``) gives its public routines - functions, C builtins, bound methods
of module-level objects - each once, named as the module exports it: its ``__all__`` (minus
routines re-exported from a module that acts on the host), else the routines it defines
itself (never what it merely imported: ``from os import *`` adds nothing); what cannot be
imported from it is left out with one warning (see :func:`load_python_callables`).
:func:`load_python_target` refuses modules and callables that act on the host and bounds the
import (:mod:`hyperplan.importers.python_safety`).

Tools carry ``metadata = {"module", "qualname"}`` and the callable is kept in a registry:
:func:`get_callable` returns it for a tool.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
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
from hyperplan.importers.docstrings import Docstring, doc_type_schema, parse_docstring
from hyperplan.importers.python_safety import (
    import_with_limit,
    origins,
    refuse_unsafe_callable,
    refuse_unsafe_module,
    unsafe_reason,
)
from hyperplan.importers.schema_refs import resolve_refs, unique_tools

_REGISTRY: dict[tuple[str, str], Callable[..., Any]] = {}
_MAX_NOTES = 10  # problems quoted in a module's warning


@dataclass(frozen=True)
class _Ctx:
    file: str
    tool: str
    mode: typing.Literal["validation", "serialization"]


def load_python_callables(
    funcs: Iterable[Callable[..., Any]] | ModuleType, *, source: str = "python"
) -> Catalog:
    """One tool per callable (or per public routine of a module, see :func:`module_functions`).

    Callables listed explicitly must all be usable: a missing signature or a type hint that
    cannot be evaluated is a :class:`CatalogError`. A module's routines are taken as far as
    they go: a hint that cannot be evaluated (e.g. a name imported only under
    ``TYPE_CHECKING``) gives an unconstrained schema, and a routine without a signature (some
    C builtins) or with an unusable schema is left out; both are reported in one
    :class:`~hyperplan.graph.schema_paths.SchemaWarning` per module."""
    if isinstance(funcs, ModuleType):
        entries = _module_entries(funcs)
        return _load(entries, source, module=funcs.__name__, lenient=True, skip=True)
    listed: list[tuple[str | None, Any]] = [(None, f) for f in list(funcs)]
    return _load(listed, source, module=None, lenient=False, skip=False)


def load_python_target(spec: str, *, allow_unsafe: bool = False,
                       import_timeout: float | None = None) -> Catalog:
    """Load ``"package.module:attr"`` (a callable, a list/tuple of callables or a module;
    ``attr`` may be dotted) or ``"package.module"`` (its public routines). A single named
    callable is the tool named ``attr``'s last part; its unresolvable type hints give
    unconstrained schemas (with a warning) rather than an error.

    Trust (:mod:`hyperplan.importers.python_safety`): the module is imported within
    ``import_timeout`` seconds (default ``HYPERPLAN_IMPORT_TIMEOUT`` or 30) and any failure
    at import is one :class:`CatalogError`; a module that acts on the host, or a callable
    that comes from one, is refused unless ``allow_unsafe``."""
    where = f"python:{spec}"
    module_name, _, attr = spec.partition(":")
    if not module_name.strip():
        raise CatalogError("no module named (expected python:MODULE[:ATTR])", file=where,
                           field="module")
    if not allow_unsafe:
        refuse_unsafe_module(where, module_name)
    target: Any = import_with_limit(module_name, where, import_timeout)
    for part in attr.split(".") if attr else []:
        if not hasattr(target, part):
            raise CatalogError(f"{module_name} has no attribute {attr!r}", file=where,
                               field="attr")
        target = getattr(target, part)
    if not allow_unsafe:
        _refuse_unsafe_target(where, attr, target)
    if isinstance(target, ModuleType):
        catalog = load_python_callables(target, source=spec)
        if not catalog.tools:
            raise CatalogError(
                f"module {target.__name__} has no public function with a signature (classes "
                "are not listed; name one as MODULE:ATTR)",
                file=where,
                field="module",
            )
        return catalog
    if isinstance(target, list | tuple):
        return load_python_callables(target, source=spec)
    if callable(target):
        return _load([(attr, target)], spec, module=module_name, lenient=True, skip=False)
    raise CatalogError(
        f"{attr!r} is not a callable, a list of callables or a module", file=where, field="attr"
    )


def _refuse_unsafe_target(where: str, attr: str, target: Any) -> None:
    """Refuse ``target`` (what ``MODULE:ATTR`` named) when it, or a routine it exposes, comes
    from a host-acting module (:mod:`hyperplan.importers.python_safety`)."""
    if isinstance(target, ModuleType):
        refuse_unsafe_module(where, target.__name__)
        for name, func in _module_entries(target):
            refuse_unsafe_callable(where, name or _callable_name(func), func)
    elif isinstance(target, list | tuple):
        for item in target:
            refuse_unsafe_callable(where, _callable_name(item), item)
    else:
        refuse_unsafe_callable(where, attr.rpartition(".")[2], target)


def module_functions(module: ModuleType) -> list[Callable[..., Any]]:
    """Public routines of ``module``: those named in ``__all__`` if it is set, else the public
    names bound to routines defined in the module, in its submodules (a package) or in its
    private twin (``_bisect`` for ``bisect``) - Python functions, C builtins, bound methods
    and other routines (not classes nor other callable objects); an object exported under
    several names once."""
    return [obj for _, obj in _module_entries(module)]


def _module_entries(module: ModuleType) -> list[tuple[str | None, Callable[..., Any]]]:
    names = getattr(module, "__all__", None)
    if names is not None:  # the author's export list, minus re-exported host routines
        own_unsafe = unsafe_reason(module.__name__) is not None
        pairs = [(str(n), getattr(module, n)) for n in names if hasattr(module, n)
                 and (own_unsafe or not _from_unsafe(getattr(module, n)))]
    else:
        pairs = [
            (n, obj)
            for n, obj in vars(module).items()
            if not n.startswith("_") and _is_own(module, getattr(obj, "__module__", None))
        ]
    seen: set[int] = set()
    out: list[tuple[str | None, Callable[..., Any]]] = []
    for name, obj in pairs:
        if inspect.isroutine(obj) and not isinstance(obj, type) and id(obj) not in seen:
            seen.add(id(obj))
            out.append((name, obj))
    return out


def _from_unsafe(obj: Any) -> bool:
    return any(unsafe_reason(m) is not None for m in origins(obj))


def _is_own(module: ModuleType, defined_in: object) -> bool:
    """Whether a routine defined in ``defined_in`` belongs to ``module``'s own API: defined
    there, in one of its submodules (a package re-exporting them) or in its private twin (a
    C accelerator: ``_bisect`` for ``bisect``)."""
    if not isinstance(defined_in, str):
        return False
    name = module.__name__
    if defined_in == name:
        return True
    if hasattr(module, "__path__") and defined_in.startswith(f"{name}."):
        return True
    return defined_in.rpartition(".")[2] == "_" + name.rpartition(".")[2]


def _load(
    entries: list[tuple[str | None, Any]],
    source: str,
    *,
    module: str | None,
    lenient: bool,
    skip: bool,
) -> Catalog:
    """Tools for ``(path, callable)`` entries: ``path`` is the callable's dotted attribute
    path in ``module`` and its last part names the tool (``None``: the callable's own name).
    ``lenient``: unresolvable hints give ``{}``; ``skip``: a callable that gives a
    :class:`CatalogError` is left out. Both are reported in one warning."""
    tools: list[ToolSpec] = []
    funcs: list[Callable[..., Any]] = []
    notes: list[str] = []
    for index, (name, func) in enumerate(entries):
        if not callable(func):
            raise CatalogError(
                f"not callable: {func!r}", file=source, tool=f"#{index}", field="callable"
            )
        try:
            tools.append(_tool(func, source, name, module, notes if lenient else None))
        except CatalogError as exc:
            if not skip:
                raise
            notes.append(f"skipped {exc}")
            continue
        funcs.append(func)
    if notes:
        shown = "; ".join(notes[:_MAX_NOTES])
        more = f"; and {len(notes) - _MAX_NOTES} more" if len(notes) > _MAX_NOTES else ""
        warnings.warn(f"python source {source!r}: {shown}{more}", SchemaWarning, stacklevel=3)
    catalog = build_catalog(unique_tools(tools, file=source, field="name"), source=source)
    for tool, func in zip(catalog.tools, funcs, strict=True):
        _REGISTRY[(source, tool.name)] = _by_keyword(func)
    return catalog


def get_callable(tool: ToolSpec, *, allow_unsafe: bool = False) -> Callable[..., Any]:
    """The callable a tool was built from (registry first, then ``module``/``qualname``:
    :func:`find_callable`). A callable with positional-only parameters (C builtins such as
    ``math.sqrt``) comes wrapped so that it takes them by keyword, as tool arguments are
    passed."""
    found = _REGISTRY.get((tool.source, tool.name))
    if found is not None:
        return found
    return _by_keyword(find_callable(tool, allow_unsafe=allow_unsafe))


def find_callable(tool: ToolSpec, *, allow_unsafe: bool = False) -> Callable[..., Any]:
    """The callable ``tool.metadata``'s ``module``/``qualname`` name, found as a fresh process
    finds it: the module imported within the time limit and, unless ``allow_unsafe``, refused
    when it or the callable acts on the host, as by :func:`load_python_target`."""
    module, qualname = str(tool.metadata.get("module")), str(tool.metadata.get("qualname"))
    where = f"python:{module}:{qualname}"
    if not allow_unsafe:
        refuse_unsafe_module(where, module)
    target: Any = import_with_limit(module, where)
    try:
        for part in qualname.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise CatalogError("callable not found", file=where, tool=tool.name,
                           field="metadata") from None
    if not callable(target):
        raise CatalogError("metadata does not name a callable", file=where, tool=tool.name,
                           field="metadata")
    if not allow_unsafe:
        refuse_unsafe_callable(where, tool.name, target)
    return typing.cast(Callable[..., Any], target)


def _by_keyword(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` itself, or a wrapper passing its positional-only parameters given by keyword
    positionally (a skipped optional one in between takes its default)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (ValueError, TypeError):
        return func
    positional = [p for p in params if p.kind is p.POSITIONAL_ONLY]
    if not positional:
        return func

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        given = [p.name in kwargs for p in positional]
        front: list[Any] = []
        for index, param in enumerate(positional[len(args):], start=len(args)):
            if param.name in kwargs:
                front.append(kwargs.pop(param.name))
            elif param.default is not param.empty and any(given[index:]):
                front.append(param.default)
            else:
                break
        return func(*args, *front, **kwargs)

    return call


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


def _without_call_line(doc: str, names: set[str]) -> str:
    """``doc`` without a leading ``name(args) -> result`` paragraph (C builtins and NumPy
    ufuncs start their docstrings with their call form)."""
    lines = doc.splitlines()
    count = 0
    while count < len(lines) and any(
        re.match(rf"{re.escape(n)}\(.*\)\s*(->.*)?$", lines[count].strip()) for n in names
    ):
        count += 1
    if not count:
        return doc
    return "\n".join(lines[count:]).strip("\n")


def _source_file(func: Callable[..., Any]) -> str:
    try:
        found = inspect.getsourcefile(inspect.unwrap(func))
    except (TypeError, ValueError):
        found = None
    return str(Path(found)) if found else str(getattr(func, "__module__", "<python>"))


def _signature(func: Callable[..., Any], ctx: _Ctx, notes: list[str] | None) -> inspect.Signature:
    """The signature with string annotations evaluated. ``notes`` given: an annotation that
    cannot be evaluated becomes ``Any`` and is noted; else it is a :class:`CatalogError`."""
    try:
        return inspect.signature(func, eval_str=True)
    except (ValueError, TypeError) as exc:
        error: Exception = exc
        field, what = "signature", "no signature"
    except Exception as exc:  # eval of string annotations can raise anything
        error, field, what = exc, "annotations", "cannot evaluate type hints"
    if notes is None:
        text = f"{error!r}" if field == "annotations" else str(error)
        raise CatalogError(f"{what}: {text}", file=ctx.file, tool=ctx.tool, field=field) from None
    try:
        sig = inspect.signature(func)
    except (ValueError, TypeError) as exc:
        raise CatalogError(
            f"no signature: {exc}", file=ctx.file, tool=ctx.tool, field="signature"
        ) from None
    bad: list[str] = []

    def evaluate(hint: Any, field: str) -> Any:
        if not isinstance(hint, str):
            return hint
        try:
            return eval(hint, *_namespaces(func))  # what inspect's eval_str does, one by one
        except Exception:
            bad.append(field)
            return Any

    params = [
        p.replace(annotation=evaluate(p.annotation, f"parameters.{p.name}"))
        for p in sig.parameters.values()
    ]
    sig = sig.replace(
        parameters=params, return_annotation=evaluate(sig.return_annotation, "returns")
    )
    if bad:
        fields = ", ".join(repr(b) for b in bad)
        notes.append(
            f"file {ctx.file}, tool {ctx.tool!r}, field {fields}: type hint not evaluated "
            f"({type(error).__name__}: {error}), taken as any value"
        )
    return sig


def _namespaces(func: Callable[..., Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Globals and locals to evaluate ``func``'s string annotations in."""
    try:
        inner: Any = inspect.unwrap(func)
    except ValueError:
        inner = func
    inner = getattr(inner, "__func__", inner)
    local: dict[str, Any] = {}
    if isinstance(inner, type):
        local = dict(vars(inner))
        inner = getattr(inner, "__init__", inner)
    found = getattr(inner, "__globals__", None)
    if isinstance(found, dict):
        return found, local
    module = sys.modules.get(str(getattr(func, "__module__", "") or ""))
    return (dict(vars(module)) if module else {}), local


def _metadata(func: Callable[..., Any], name: str, module: str | None, path: str | None
              ) -> dict[str, Any]:
    """``module``/``qualname`` where :func:`get_callable` finds ``func`` again: where it was
    defined, else (a bound method, an alias, a callable object) where it was listed."""
    own_module = str(getattr(func, "__module__", "") or "")
    qualname = str(getattr(func, "__qualname__", name))
    if module is None or path is None:
        return {"module": own_module, "qualname": qualname}
    target: Any = sys.modules.get(own_module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is func:
        return {"module": own_module, "qualname": qualname}
    return {"module": module, "qualname": path}


def _tool(
    func: Callable[..., Any],
    source: str,
    path: str | None = None,
    module: str | None = None,
    notes: list[str] | None = None,
) -> ToolSpec:
    name = path.rpartition(".")[2] if path else _callable_name(func)
    ctx = _Ctx(file=_source_file(func), tool=name, mode="validation")
    sig = _signature(func, ctx, notes)
    doc = parse_docstring(_without_call_line(_docstring(func), {name, _callable_name(func)}))
    props: dict[str, Any] = {}
    required: list[str] = []
    for position, param in enumerate(sig.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if position == 0 and param.name in ("self", "cls") and param.annotation is param.empty:
            continue
        props[param.name] = _param_schema(param, doc.params.get(param.name, ""), ctx,
                                          doc.types.get(param.name, ""))
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
        output_schema=_return_schema(sig, doc, ctx),
        source=source,
        metadata=_metadata(func, name, module, path),
    )


def _param_schema(param: inspect.Parameter, description: str, ctx: _Ctx,
                  doc_type: str = "") -> dict[str, Any]:
    """From the type hint; unannotated: the default's type, else the plain type a NumPy
    docstring declares (:func:`~hyperplan.importers.docstrings.doc_type_schema`), else ``{}``."""
    hint = param.annotation
    if hint is param.empty and isinstance(param.default, bool | int | float | str):
        hint = type(param.default)  # unannotated: the default's type
    if param.default is None:  # "axis : int, optional" defaulting to None also takes None
        doc_type = ""
    schema: dict[str, Any] = (
        dict(doc_type_schema(doc_type)) if hint is param.empty
        else _type_schema(hint, ctx, f"parameters.{param.name}"))
    if description and "description" not in schema:
        schema["description"] = description
    if param.default is not param.empty:
        with contextlib.suppress(ValueError, TypeError):
            schema["default"] = to_jsonable_python(param.default)
    return schema


def _return_schema(sig: inspect.Signature, doc: Docstring, ctx: _Ctx) -> dict[str, Any] | None:
    """From the return annotation; without one, a documented return (a Returns section or
    field) gives an untyped output with its description."""
    hint, description = sig.return_annotation, doc.returns
    if hint is sig.empty and description and doc.returns_section:
        return {"description": description}
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
