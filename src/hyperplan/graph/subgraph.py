"""Subhypergraphs of a Tool-Schema Hypergraph (HyperAgent paper, Preliminaries): the graph
induced by a set of tools, offered as ``Hypergraph.induce``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from hyperplan.graph.elements import Link, SchemaNode, ToolEdge

if TYPE_CHECKING:
    from hyperplan.graph.model import Hypergraph


def induce(graph: Hypergraph, tool_ids: Iterable[int]) -> Hypergraph:
    """The subhypergraph induced by tools E_S: V_S = ∪ V(e), D_S = links inside V_S
    (HyperAgent paper, Preliminaries). Ids are renumbered; names are preserved."""
    keep = sorted(set(tool_ids))
    tool_map = {old: new for new, old in enumerate(keep)}
    old_nodes = [n for n in graph.nodes if n.tool in tool_map]
    old_nodes.sort(key=lambda n: (not n.kind.input_side, n.id))
    node_map = {n.id: new for new, n in enumerate(old_nodes)}
    nodes = [
        SchemaNode(node_map[n.id], n.kind, tool_map[n.tool], n.path, n.type,
                   n.description, n.required, n.evidence, n.confidence)
        for n in old_nodes
    ]
    tools = []
    for old in keep:
        t = graph.tools[old]
        tools.append(ToolEdge(
            tool_map[old], t.name, t.description,
            tuple(node_map[i] for i in t.inputs), tuple(node_map[o] for o in t.outputs),
            tuple(node_map[r] for r in t.required), t.metadata,
        ))
    kept_tool = np.zeros(graph.n_tools, dtype=bool)
    kept_tool[keep] = True
    inside = np.flatnonzero(kept_tool[graph.node_tool[graph.link_source]]
                            & kept_tool[graph.node_tool[graph.link_target]])
    links = [
        Link(node_map[int(graph.link_source[k])], node_map[int(graph.link_target[k])],
             float(graph.link_weight[k]), graph.link_evidence[k])
        for k in inside.tolist()
    ]
    return type(graph).from_parts(nodes, tools, links, graph.metadata)
