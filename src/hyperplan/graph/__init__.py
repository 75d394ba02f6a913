"""The Tool-Schema Hypergraph (HyperAgent paper, Preliminaries and HyperGraph Construction).

The names below are exported lazily (:mod:`hyperplan._lazy`): importing one small module of
the package (``hyperplan.graph.schema_paths``, which the MCP runtime needs) does not load the
graph builder and its numerical stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import by_submodule, lazy_exports

if TYPE_CHECKING:
    from hyperplan.graph.build import build_graph as build_graph
    from hyperplan.graph.build import structure_from_catalog as structure_from_catalog
    from hyperplan.graph.io import load_graph as load_graph
    from hyperplan.graph.io import save_graph as save_graph
    from hyperplan.graph.links import LinkConfig as LinkConfig
    from hyperplan.graph.links import infer_links as infer_links
    from hyperplan.graph.model import Hypergraph as Hypergraph
    from hyperplan.graph.model import Link as Link
    from hyperplan.graph.model import NodeKind as NodeKind
    from hyperplan.graph.model import SchemaNode as SchemaNode
    from hyperplan.graph.model import ToolEdge as ToolEdge
    from hyperplan.graph.model import node_key as node_key
    from hyperplan.graph.overrides import ObservedFlow as ObservedFlow
    from hyperplan.graph.overrides import apply_overrides as apply_overrides
    from hyperplan.graph.overrides import strengthen_from_traces as strengthen_from_traces

_EXPORTS = by_submodule({
    "build": ("build_graph", "structure_from_catalog"),
    "io": ("load_graph", "save_graph"),
    "links": ("LinkConfig", "infer_links"),
    "model": ("Hypergraph", "Link", "NodeKind", "SchemaNode", "ToolEdge", "node_key"),
    "overrides": ("ObservedFlow", "apply_overrides", "strengthen_from_traces"),
})
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
