"""Typed catalogs with their outputs stripped: the catalogs users mostly have (most MCP servers
declare no ``outputSchema``), made from suites whose typed outputs give a silver reference.

``strip_outputs`` keeps each tool's name, description and input schema and drops what it
declares about its results (output schema, effects, preconditions), so every output,
precondition and effect of the graph built from it is inferred
(:mod:`hyperplan.graph.infer`). The links of the same suite's typed catalog are the silver
reference the stripped graph's links are scored against (``eval links --strip-outputs``).
"""

from __future__ import annotations

from hyperplan.catalog import Catalog, ToolSpec


def strip_tool(tool: ToolSpec) -> ToolSpec:
    """``tool`` without its output schema, declared effects and preconditions."""
    return tool.model_copy(update={"output_schema": None, "effects": (), "preconditions": ()})


def strip_outputs(catalog: Catalog) -> Catalog:
    """``catalog`` with every tool :func:`strip_tool`-ped (names and order unchanged)."""
    return Catalog(tools=tuple(strip_tool(t) for t in catalog.tools),
                   source=catalog.source)
