"""Catalog sources named on the command line: ``KIND:LOCATION``.

==================  ==========================================================
``appworld:DIR``     AppWorld API docs (a directory of ``<app>.json`` or one file)
``openai:FILE``      OpenAI / JSON-Schema function specs
``openapi:FILE``     OpenAPI 3.x or Swagger 2.0 document (JSON or YAML)
``mcp:FILE``         MCP ``tools/list`` result
``mcp-server:CMD``   the tools a stdio MCP server lists (started, asked, stopped)
``nestful:FILE``     NESTFUL ``*-spec.json``
``nestools:FILE``    NesTools ``*.jsonl`` (union of the tasks' APIs)
``sealtools:PATH``   Seal-Tools ``tool.jsonl`` (or the release directory holding it)
``stabletoolbench:FILE``  StableToolBench query file (union of ``api_list``)
``python:MOD:ATTR``  Python callables (type hints + docstrings)
``tau2:DOMAIN``      τ² airline / retail / telecom assistant tools (extra ``tau2``)
``demo``             the example catalog shipped with hyperplan
==================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from hyperplan.catalog import Catalog
from hyperplan.errors import CatalogError


def _appworld(loc: str) -> Catalog:
    from hyperplan.importers.appworld import load_appworld

    return load_appworld(loc)


def _openai(loc: str) -> Catalog:
    from hyperplan.importers.openai_functions import load_openai_functions

    return load_openai_functions(Path(loc))


def _openapi(loc: str) -> Catalog:
    from hyperplan.importers.openapi import load_openapi

    return load_openapi(Path(loc))


def _mcp(loc: str) -> Catalog:
    from hyperplan.importers.mcp import load_mcp_tools

    return load_mcp_tools(Path(loc))


def _mcp_server(loc: str) -> Catalog:
    import shlex

    from hyperplan.execute.runtimes.mcp import MCPRuntime

    try:
        parts = shlex.split(loc)
    except ValueError as exc:
        raise CatalogError(f"mcp-server: cannot split {loc!r}: {exc}") from None
    if not parts:
        raise CatalogError("mcp-server: no server command")
    with MCPRuntime(parts[0], parts[1:]) as runtime:
        return runtime.catalog()


def _nestful(loc: str) -> Catalog:
    from hyperplan.importers.nestful import load_nestful

    return load_nestful(loc)


def _nestools(loc: str) -> Catalog:
    from hyperplan.importers.nestools import load_nestools

    return load_nestools(loc)


def _sealtools(loc: str) -> Catalog:
    from hyperplan.importers.sealtools import load_sealtools

    return load_sealtools(loc)


def _stabletoolbench(loc: str) -> Catalog:
    from hyperplan.importers.stabletoolbench import load_stabletoolbench

    return load_stabletoolbench(loc)


def _tau2(loc: str) -> Catalog:
    from hyperplan.importers.tau2 import load_tau2_catalog

    return load_tau2_catalog(loc)


def _python(loc: str) -> Catalog:
    from hyperplan.importers.python_callables import load_python_target

    return load_python_target(loc)


LOADERS: dict[str, Callable[[str], Catalog]] = {
    "appworld": _appworld,
    "openai": _openai,
    "openapi": _openapi,
    "mcp": _mcp,
    "mcp-server": _mcp_server,
    "nestful": _nestful,
    "nestools": _nestools,
    "sealtools": _sealtools,
    "stabletoolbench": _stabletoolbench,
    "python": _python,
    "tau2": _tau2,
}


def demo_catalog_path() -> Path:
    """The example catalog shipped in the package (OpenAI function format)."""
    return Path(str(resources.files("hyperplan") / "examples" / "music_catalog.json"))


def load_source(spec: str, *, allow_unsafe_tools: bool = False) -> Catalog:
    """Load a catalog from ``KIND:LOCATION`` (see module docstring); ``allow_unsafe_tools``
    lets a ``python:`` source expose a module that acts on the host (refused by default)."""
    if allow_unsafe_tools and spec.startswith("python:"):
        from hyperplan.importers.python_callables import load_python_target

        return load_python_target(spec.partition(":")[2], allow_unsafe=True)
    if spec == "demo":
        return _openai(str(demo_catalog_path()))
    kind, sep, location = spec.partition(":")
    if not sep or kind not in LOADERS or not location:
        raise CatalogError(
            f"unknown catalog source {spec!r}; expected KIND:LOCATION with KIND one of "
            f"{', '.join(sorted(LOADERS))} (or 'demo')"
        )
    return LOADERS[kind](location)


def tag_server(catalog: Catalog, server: str) -> Catalog:
    """``catalog`` with ``metadata["server"] = server`` on every tool that names no app and no
    dotted namespace of its own: when a gateway or selector merges several sources, link
    inference knows which server each tool came from (a link between two servers needs
    specific evidence, :mod:`hyperplan.graph.field_roles`)."""
    tools = tuple(
        tool if tool.metadata.get("app") or "." in tool.name
        else tool.model_copy(update={"metadata": {**tool.metadata, "server": server}})
        for tool in catalog.tools)
    return catalog.model_copy(update={"tools": tools})
