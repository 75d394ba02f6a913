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

Every kind is registered once, in :mod:`hyperplan.tool_sources` (its catalog, its optional
runtime, its close); this module is the catalog-only view of that registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from hyperplan.catalog import Catalog
from hyperplan.tool_sources import (
    CORE_KINDS,
    KINDS,
    LAB_KINDS,
    SOURCE_GROUP,
    SourceOptions,
    demo_catalog_path,
    load_catalog,
    tag_server,
)

__all__ = ["CORE_LOADERS", "LAB_KINDS", "LOADERS", "SOURCE_GROUP", "demo_catalog_path",
           "load_source", "tag_server"]


def _catalog_only(kind: str) -> Callable[[str], Catalog]:
    def load(location: str) -> Catalog:
        return KINDS[kind].catalog(location, SourceOptions())

    return load


CORE_LOADERS: dict[str, Callable[[str], Catalog]] = {
    kind: _catalog_only(kind) for kind in CORE_KINDS}
"""The library's own source kinds (:data:`hyperplan.tool_sources.CORE_KINDS`)."""


class _Loaders(Mapping[str, Callable[[str], Catalog]]):
    """Every kind of :data:`hyperplan.tool_sources.KINDS` with its catalog loader."""

    def __getitem__(self, kind: str) -> Callable[[str], Catalog]:
        if kind not in KINDS:
            raise KeyError(kind)
        return CORE_LOADERS.get(kind) or _catalog_only(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(KINDS)

    def __len__(self) -> int:
        return len(KINDS)


LOADERS: Mapping[str, Callable[[str], Catalog]] = _Loaders()
"""Every source kind with its loader: the library's (:data:`CORE_LOADERS`) and those of
installed packages."""


def load_source(spec: str, *, allow_unsafe_tools: bool = False) -> Catalog:
    """Load a catalog from ``KIND:LOCATION`` (see module docstring); ``allow_unsafe_tools``
    lets a ``python:`` source expose a module that acts on the host (refused by default)."""
    return load_catalog(spec, SourceOptions(allow_unsafe_tools=allow_unsafe_tools))
