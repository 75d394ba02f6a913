"""The matrices and neighbourhoods of a Tool-Schema Hypergraph (HyperAgent paper,
Definitions 1 and 5): the link matrix D, the producer matrix A_prod with ρ(e, r), a node's
producers and a tool's upstream / downstream tools. Each function takes the graph;
:class:`~hyperplan.graph.model.Hypergraph` offers them as its attributes and methods (the
matrices computed once per graph).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from hyperplan.graph.elements import Link

if TYPE_CHECKING:
    from hyperplan.graph.model import Hypergraph


def link_matrix(graph: Hypergraph) -> sp.csr_matrix:
    """D as a sparse |V| x |V| matrix, D[v_o, v_i] = w."""
    n = graph.n_nodes
    return sp.csr_matrix((graph.link_weight, (graph.link_source, graph.link_target)), shape=(n, n))


def producer_matrix(graph: Hypergraph) -> sp.csr_matrix:
    """A_prod ∈ R^{|V_I| x |E|}, A_prod(r, e) = ρ(e, r) = max_{o ∈ O(e)} W(o, r)
    (Definition 5, Eq. 3)."""
    rows = graph.link_target
    cols = graph.node_tool[graph.link_source] if graph.n_links else graph.link_source
    return _max_sparse(rows, cols, graph.link_weight, (graph.n_input_nodes, graph.n_tools))


def support_by_tool(graph: Hypergraph) -> sp.csc_matrix:
    """A_prod in CSC form: column e lists the input nodes tool e supports."""
    return graph.producer_matrix.tocsc()


def support(graph: Hypergraph, tool: int, input_node: int) -> float:
    """ρ(e, r) of Definition 5."""
    return float(graph.producer_matrix[input_node, tool])


def producers_of(graph: Hypergraph, input_node: int) -> list[tuple[int, float]]:
    """Tools e with ρ(e, r) > 0 for input node r, strongest first."""
    row = graph.producer_matrix.getrow(input_node)
    pairs = sorted(zip(row.indices.tolist(), row.data.tolist(), strict=True),
                   key=lambda p: (-p[1], p[0]))
    return [(int(e), float(w)) for e, w in pairs]


def upstream(graph: Hypergraph, tool: int) -> set[int]:
    """Nbr^-(e): tools with an output linked to an input of ``tool`` (Definition 1)."""
    inputs = list(graph.tools[tool].inputs)
    if not inputs:
        return set()
    return set(graph.producer_matrix[inputs].indices.tolist())


def downstream(graph: Hypergraph, tool: int) -> set[int]:
    """Nbr^+(e): tools with an input linked from an output of ``tool`` (Definition 1)."""
    col = graph.support_by_tool.getcol(tool)
    return {int(graph.nodes[r].tool) for r in col.indices.tolist()}


def links_into(graph: Hypergraph, input_node: int) -> list[Link]:
    """The links D(·, r) into input node r, by source."""
    lo, hi = np.searchsorted(graph.link_target, [input_node, input_node + 1])
    return [
        Link(int(graph.link_source[k]), input_node, float(graph.link_weight[k]),
             graph.link_evidence[k])
        for k in range(int(lo), int(hi))
    ]


def _max_sparse(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]
) -> sp.csr_matrix:
    """CSR matrix keeping the maximum of duplicate (row, col) entries (not their sum)."""
    if rows.size == 0:
        return sp.csr_matrix(shape, dtype=np.float64)
    order = np.lexsort((-vals, cols, rows))
    r, c, v = rows[order], cols[order], vals[order]
    first = np.ones(r.size, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    return sp.csr_matrix((v[first], (r[first], c[first])), shape=shape)
