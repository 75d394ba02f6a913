"""Catalog sources named on the command line: ``KIND:LOCATION``.

==================  ==========================================================
``openai:FILE``      OpenAI / JSON-Schema function specs
``openapi:FILE``     OpenAPI 3.x or Swagger 2.0 document (JSON or YAML)
``mcp:FILE``         MCP ``tools/list`` result
``mcp-server:CMD``   the tools a stdio MCP server lists (started, asked, stopped)
``python:MOD:ATTR``  Python callables (type hints + docstrings)
``demo``             the example catalog shipped with hyperplan
==================  ==========================================================

Installed packages add kinds (:data:`SOURCE_GROUP`): hyperplan-bench, the benchmark lab, adds
the benchmark datasets' ``appworld:DIR``, ``nestful:FILE``, ``nestools:FILE``,
``sealtools:PATH``, ``stabletoolbench:FILE`` and ``tau2:DOMAIN`` (:mod:`hyperplan_bench.sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from hyperplan.catalog import Catalog
from hyperplan.errors import CatalogError

if TYPE_CHECKING:
    from hyperplan.plugins import Point


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


def _python(loc: str) -> Catalog:
    from hyperplan.importers.python_callables import load_python_target

    return load_python_target(loc)


CORE_LOADERS: dict[str, Callable[[str], Catalog]] = {
    "openai": _openai,
    "openapi": _openapi,
    "mcp": _mcp,
    "mcp-server": _mcp_server,
    "python": _python,
}
"""The library's own source kinds; installed packages add kinds through the entry-point group
:data:`SOURCE_GROUP` (hyperplan-bench adds the benchmark datasets')."""

SOURCE_GROUP = "hyperplan.sources"
"""Entry points adding catalog source kinds: ``kind = "module:function"``, a function from the
LOCATION to a :class:`~hyperplan.catalog.Catalog`."""

LAB_KINDS = ("appworld", "nestful", "nestools", "sealtools", "stabletoolbench", "tau2")
"""Source kinds of the benchmark lab (hyperplan-bench): without it, naming one says how to
install it."""


class _Loaders(Mapping[str, Callable[[str], Catalog]]):
    """:data:`CORE_LOADERS` and the kinds installed packages add (:data:`SOURCE_GROUP`),
    the entry points read on first use (``import hyperplan.sources`` stays cheap)."""

    def __init__(self) -> None:
        self._all: dict[str, Callable[[str], Catalog]] | None = None

    def _loaded(self) -> dict[str, Callable[[str], Catalog]]:
        if self._all is None:
            from hyperplan.plugins import entry_points

            added = {point.name: point for point in entry_points(SOURCE_GROUP)
                     if point.name not in CORE_LOADERS}
            self._all = {**CORE_LOADERS, **{name: _plugin_loader(point)
                                            for name, point in sorted(added.items())}}
        return self._all

    def __getitem__(self, kind: str) -> Callable[[str], Catalog]:
        return self._loaded()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _plugin_loader(point: Point) -> Callable[[str], Catalog]:
    """The loader an entry point names, imported when a source of its kind is loaded."""

    def load(location: str) -> Catalog:
        loader: Callable[[str], Catalog] = point.load()
        return loader(location)

    return load


LOADERS: Mapping[str, Callable[[str], Catalog]] = _Loaders()
"""Every source kind with its loader: the library's (:data:`CORE_LOADERS`) and those of
installed packages."""


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
    if sep and location and kind in LAB_KINDS and kind not in LOADERS:
        raise CatalogError(f"catalog source {kind}: is part of hyperplan-bench, the benchmark "
                           "lab, which is not installed; install it beside hyperplan (from a "
                           "checkout of the repository: pip install -e ./bench)")
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
