"""The Tool-Schema Hypergraph (HyperAgent paper, Preliminaries and HyperGraph Construction)."""

from hyperplan.graph.build import build_graph, structure_from_catalog
from hyperplan.graph.io import load_graph, save_graph
from hyperplan.graph.links import LinkConfig, infer_links
from hyperplan.graph.model import Hypergraph, Link, NodeKind, SchemaNode, ToolEdge, node_key
from hyperplan.graph.overrides import ObservedFlow, apply_overrides, strengthen_from_traces

__all__ = [
    "Hypergraph",
    "Link",
    "LinkConfig",
    "NodeKind",
    "ObservedFlow",
    "SchemaNode",
    "ToolEdge",
    "apply_overrides",
    "build_graph",
    "infer_links",
    "load_graph",
    "node_key",
    "save_graph",
    "strengthen_from_traces",
    "structure_from_catalog",
]
