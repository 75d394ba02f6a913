"""Per-graph views of a Tool-Schema Hypergraph computed from its nodes alone: input nodes by
parameter name, preconditions by predicate, and which tools write or authenticate (the
effect nodes of HyperAgent's V_F). Each function takes the graph;
:class:`~hyperplan.graph.model.Hypergraph` offers them as attributes computed once per graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hyperplan.graph.elements import NodeKind, frozen_array

if TYPE_CHECKING:
    from hyperplan.graph.model import Hypergraph


def inputs_by_name(graph: Hypergraph) -> dict[str, list[int]]:
    """The input nodes (not preconditions) of every tool, by bare parameter name (read
    only: computed once per graph)."""
    return _input_side_by_path(graph, NodeKind.INPUT)


def preconditions_by_path(graph: Hypergraph) -> dict[str, list[int]]:
    """The precondition nodes by effect predicate (read only: computed once per graph)."""
    return _input_side_by_path(graph, NodeKind.PRECONDITION)


def _input_side_by_path(graph: Hypergraph, kind: NodeKind) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for node in graph.nodes[: graph.n_input_nodes]:
        if node.kind is kind:
            index.setdefault(node.path, []).append(node.id)
    return index


def writing_tools(graph: Hypergraph) -> np.ndarray:
    """Per tool, whether it writes: it has the state-change effect ``<tool>.done``
    (:func:`hyperplan.graph.effects.write_tools`); read only, computed once per graph."""
    writes = np.zeros(graph.n_tools, dtype=bool)
    for node in graph.nodes[graph.n_input_nodes:]:
        if node.kind is NodeKind.EFFECT and node.path == f"{graph.tools[node.tool].name}.done":
            writes[node.tool] = True
    return frozen_array(writes)


def authenticating_tools(graph: Hypergraph) -> np.ndarray:
    """Per tool, whether it authenticates: it has an effect ``<ns>.authenticated`` (a
    login, a token endpoint)."""
    auth = np.zeros(graph.n_tools, dtype=bool)
    for node in graph.nodes[graph.n_input_nodes:]:
        if node.kind is NodeKind.EFFECT and (node.path == "authenticated"
                                             or node.path.endswith(".authenticated")):
            auth[node.tool] = True
    return frozen_array(auth)


def unprompted_writers(graph: Hypergraph) -> np.ndarray:
    """Per tool, whether it writes and is no login (:attr:`Hypergraph.writing_tools` less
    :func:`authenticating_tools`): such a tool changes the world, so it is proposed as the
    producer of another tool's input only when the request itself asks for it (HyperAgent's
    effect nodes; the rule is ours, issue 37: "a destructive or write tool is never proposed
    as a producer unless the request asks for that effect")."""
    return frozen_array(graph.writing_tools & ~authenticating_tools(graph))
