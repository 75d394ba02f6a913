"""The Tool-Schema Hypergraph (HyperAgent paper, Preliminaries and HyperGraph Construction).

The names below are exported lazily (:mod:`hyperplan._lazy`): importing one small module of
the package (``hyperplan.graph.schema_paths``, which the MCP runtime needs) does not load the
graph builder and its numerical stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperplan._lazy import lazy_exports

if TYPE_CHECKING:
    from hyperplan.graph.build import build_graph, structure_from_catalog
    from hyperplan.graph.io import load_graph, save_graph
    from hyperplan.graph.links import LinkConfig, infer_links
    from hyperplan.graph.model import (
        Hypergraph,
        Link,
        NodeKind,
        SchemaNode,
        ToolEdge,
        node_key,
    )
    from hyperplan.graph.overrides import (
        ObservedFlow,
        apply_overrides,
        strengthen_from_traces,
    )

_EXPORTS = {
    "Hypergraph": "model",
    "Link": "model",
    "LinkConfig": "links",
    "NodeKind": "model",
    "ObservedFlow": "overrides",
    "SchemaNode": "model",
    "ToolEdge": "model",
    "apply_overrides": "overrides",
    "build_graph": "build",
    "infer_links": "links",
    "load_graph": "io",
    "node_key": "model",
    "save_graph": "io",
    "strengthen_from_traces": "overrides",
    "structure_from_catalog": "build",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "Hypergraph", "Link", "LinkConfig", "NodeKind", "ObservedFlow", "SchemaNode", "ToolEdge",
    "apply_overrides", "build_graph", "infer_links", "load_graph", "node_key", "save_graph",
    "strengthen_from_traces", "structure_from_catalog",
]
