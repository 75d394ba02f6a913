"""Importers: each turns one tool-description format into a :class:`hyperplan.catalog.Catalog`
(``hyperplan.sources.load_source`` picks one from a ``KIND:LOCATION`` string)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.importers.appworld import load_appworld
    from hyperplan.importers.gold import GoldCall, GoldFlow, GoldTask
    from hyperplan.importers.mcp import load_mcp_tools
    from hyperplan.importers.nestful import load_nestful, load_nestful_tasks
    from hyperplan.importers.nestools import load_nestools, load_nestools_tasks
    from hyperplan.importers.openai_functions import load_openai_functions
    from hyperplan.importers.openapi import load_openapi
    from hyperplan.importers.python_callables import load_python_callables, load_python_target
    from hyperplan.importers.sealtools import load_sealtools, load_sealtools_tasks
    from hyperplan.importers.stabletoolbench import load_stabletoolbench
    from hyperplan.importers.tau2 import load_tau2_catalog

_EXPORTS = {
    "GoldCall": "gold",
    "GoldFlow": "gold",
    "GoldTask": "gold",
    "load_appworld": "appworld",
    "load_mcp_tools": "mcp",
    "load_nestful": "nestful",
    "load_nestful_tasks": "nestful",
    "load_nestools": "nestools",
    "load_nestools_tasks": "nestools",
    "load_openai_functions": "openai_functions",
    "load_openapi": "openapi",
    "load_python_callables": "python_callables",
    "load_python_target": "python_callables",
    "load_sealtools": "sealtools",
    "load_sealtools_tasks": "sealtools",
    "load_stabletoolbench": "stabletoolbench",
    "load_tau2_catalog": "tau2",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "GoldCall", "GoldFlow", "GoldTask", "load_appworld", "load_mcp_tools", "load_nestful",
    "load_nestful_tasks", "load_nestools", "load_nestools_tasks", "load_openai_functions",
    "load_openapi", "load_python_callables", "load_python_target", "load_sealtools",
    "load_sealtools_tasks", "load_stabletoolbench", "load_tau2_catalog",
]
