"""Importers: each turns one tool-description format into a :class:`hyperplan.catalog.Catalog`
(``hyperplan.sources.load_source`` picks one from a ``KIND:LOCATION`` string). The benchmark
datasets' importers are in the lab, :mod:`hyperplan_bench.importers`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.importers.mcp import load_mcp_tools
    from hyperplan.importers.openai_functions import load_openai_functions
    from hyperplan.importers.openapi import load_openapi
    from hyperplan.importers.python_callables import load_python_callables, load_python_target

_EXPORTS = {
    "load_mcp_tools": "mcp",
    "load_openai_functions": "openai_functions",
    "load_openapi": "openapi",
    "load_python_callables": "python_callables",
    "load_python_target": "python_callables",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "load_mcp_tools", "load_openai_functions", "load_openapi", "load_python_callables",
    "load_python_target",
]
