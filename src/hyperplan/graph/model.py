"""The Tool-Schema Hypergraph H = (V, E, D) (HyperAgent paper, Preliminaries).

* V = V_I ∪ V_O ∪ V_F: schema nodes owned by one tool each. Input-side nodes (input schemas
  and preconditions) always come first, so node id ``r < n_input_nodes`` is also the row of r
  in the producer matrix A_prod.
* E: tools as directed hyperedges I(e) -> O(e) (outputs and effects).
* D ⊆ V_O × V_I: weighted port-level dependency links D(v_o, v_i) = w, w in (0, 1].

The graph is immutable after construction: integer ids inside, names at the edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from hyperplan.errors import GraphError
from hyperplan.graph import columns, neighbours, subgraph, views
from hyperplan.graph.elements import (
    Evidence,
    Link,
    NodeKind,
    SchemaNode,
    ToolEdge,
    frozen_array,
    node_key,
)

__all__ = ["Evidence", "Hypergraph", "Link", "NodeKind", "SchemaNode", "ToolEdge", "node_key"]


@dataclass(frozen=True, eq=False)
class Hypergraph:
    """An immutable Tool-Schema Hypergraph. Build it with :func:`hyperplan.graph.build`
    or :meth:`from_parts`; load it with :func:`hyperplan.graph.io.load_graph`.

    The class holds the frozen data and its lookups; what is computed from them lives in
    functions beside it (:mod:`~hyperplan.graph.columns`, :mod:`~hyperplan.graph.views`,
    :mod:`~hyperplan.graph.neighbours`, :mod:`~hyperplan.graph.subgraph`), offered here by
    name: the derived views as attributes computed once per graph."""

    nodes: tuple[SchemaNode, ...]
    tools: tuple[ToolEdge, ...]
    link_source: np.ndarray
    link_target: np.ndarray
    link_weight: np.ndarray
    link_evidence: tuple[str, ...]
    n_input_nodes: int
    metadata: Mapping[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_parts(
        cls,
        nodes: Sequence[SchemaNode],
        tools: Sequence[ToolEdge],
        links: Iterable[Link],
        metadata: Mapping[str, Any] | None = None,
    ) -> Hypergraph:
        """Validate and freeze. Nodes must be numbered 0..n-1 with input-side nodes first;
        links must go from an output-side to an input-side node of different tools or the
        same tool, with weight in (0, 1]. Duplicate links keep the highest weight."""
        nodes, tools = tuple(nodes), tuple(tools)
        n_in = _check_nodes(nodes, tools)
        best: dict[tuple[int, int], Link] = {}
        for link in links:
            _check_link(link, nodes)
            key = (link.source, link.target)
            if key not in best or link.weight > best[key].weight:
                best[key] = link
        ordered = sorted(best.values(), key=lambda lk: (lk.target, lk.source))
        return cls(
            nodes=nodes,
            tools=tools,
            link_source=frozen_array(np.array([lk.source for lk in ordered], dtype=np.int64)),
            link_target=frozen_array(np.array([lk.target for lk in ordered], dtype=np.int64)),
            link_weight=frozen_array(np.array([lk.weight for lk in ordered], dtype=np.float64)),
            link_evidence=tuple(lk.evidence for lk in ordered),
            n_input_nodes=n_in,
            metadata=dict(metadata or {}),
        )

    from_arrays = classmethod(columns.from_arrays)

    # ----------------------------------------------------------------- sizes and lookups
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_tools(self) -> int:
        return len(self.tools)

    @property
    def n_links(self) -> int:
        return int(self.link_source.shape[0])

    @cached_property
    def tool_index(self) -> dict[str, int]:
        return {t.name: t.id for t in self.tools}

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {self.node_name(n.id): n.id for n in self.nodes}

    def tool(self, name_or_id: str | int) -> ToolEdge:
        if isinstance(name_or_id, int):
            return self.tools[name_or_id]
        try:
            return self.tools[self.tool_index[name_or_id]]
        except KeyError:
            raise GraphError(f"unknown tool {name_or_id!r}") from None

    def node(self, name_or_id: str | int) -> SchemaNode:
        if isinstance(name_or_id, int):
            return self.nodes[name_or_id]
        try:
            return self.nodes[self.node_index[name_or_id]]
        except KeyError:
            raise GraphError(f"unknown schema node {name_or_id!r}") from None

    def node_name(self, node_id: int) -> str:
        node = self.nodes[node_id]
        return node_key(self.tools[node.tool].name, node.kind, node.path)

    @cached_property
    def node_tool(self) -> np.ndarray:
        """Owning tool id of every node, as an array."""
        return frozen_array(np.array([n.tool for n in self.nodes], dtype=np.int64))

    # ----------------------------------------------------------------- derived views
    inputs_by_name = cached_property(views.inputs_by_name)
    preconditions_by_path = cached_property(views.preconditions_by_path)
    writing_tools = cached_property(views.writing_tools)
    unprompted_writers = cached_property(views.unprompted_writers)

    def links(self) -> Iterator[Link]:
        for k in range(self.n_links):
            yield Link(
                int(self.link_source[k]),
                int(self.link_target[k]),
                float(self.link_weight[k]),
                self.link_evidence[k],
            )

    # ----------------------------------------------------------------- matrices (Def. 5)
    link_matrix = cached_property(neighbours.link_matrix)
    producer_matrix = cached_property(neighbours.producer_matrix)
    support_by_tool = cached_property(neighbours.support_by_tool)
    support = neighbours.support

    # ----------------------------------------------------------------- neighbours (Def. 1)
    producers_of = neighbours.producers_of
    upstream = neighbours.upstream
    downstream = neighbours.downstream
    links_into = neighbours.links_into

    # ----------------------------------------------------------------- subhypergraphs
    induce = subgraph.induce

    def with_links(self, links: Iterable[Link], **metadata: Any) -> Hypergraph:
        """A new graph with the same nodes and tools and the given link set."""
        return Hypergraph.from_parts(self.nodes, self.tools, links,
                                     {**self.metadata, **metadata})


def _check_nodes(nodes: tuple[SchemaNode, ...], tools: tuple[ToolEdge, ...]) -> int:
    n_in = 0
    for i, node in enumerate(nodes):
        if node.id != i:
            raise GraphError(f"node ids must be 0..n-1 in order; got {node.id} at {i}")
        if not 0 <= node.tool < len(tools):
            raise GraphError(f"node {i} names unknown tool id {node.tool}")
        if node.kind.input_side:
            if i != n_in:
                raise GraphError("input-side nodes must precede output-side nodes")
            n_in += 1
    for j, tool in enumerate(tools):
        if tool.id != j:
            raise GraphError(f"tool ids must be 0..m-1 in order; got {tool.id} at {j}")
        for v in (*tool.inputs, *tool.outputs):
            if not 0 <= v < len(nodes):
                raise GraphError(f"tool {tool.name!r} lists node {v} outside 0..{len(nodes) - 1}")
            if nodes[v].tool != j:
                raise GraphError(f"tool {tool.name!r} lists node {v} owned by another tool")
    return n_in


def _check_link(link: Link, nodes: tuple[SchemaNode, ...]) -> None:
    n = len(nodes)
    if not (0 <= link.source < n and 0 <= link.target < n):
        raise GraphError(f"link {link} names a node outside 0..{n - 1}")
    if nodes[link.source].kind.input_side or not nodes[link.target].kind.input_side:
        raise GraphError(f"link {link} must go from an output/effect to an input node")
    if not 0.0 < link.weight <= 1.0:
        raise GraphError(f"link {link} weight must be in (0, 1]")
